"""The IMAP edge: take mail from a mailbox at a provider (the ``imap`` setting).

A thread of ``serve`` logs in over TLS, selects the folder and waits with IDLE where
the server offers it (else it looks every ``imap_poll`` seconds).  Each mail it has
not taken yet is fetched and committed into the raw store together with its UID (one
transaction), and only then marked done on the server (``imap_done``: a keyword and
\\Seen, deleted, or moved to a folder).  So a crash at any point loses nothing (the
mail is still in the folder, unmarked) and takes nothing twice (its UID is in the
database, or the store knows it by its sender and Message-ID, as after a change of
UIDVALIDITY).

A dropped connection is opened again after a growing wait (1 s up to a minute).  A
login the server refuses, a folder that does not exist or a certificate that is not
trusted is one error line, kept in the database for ``pbmserv status``, and tried
again every two minutes.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from imapclient import IMAPClient
from imapclient.exceptions import LoginError
from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.config import Mailbox, Settings, SettingsError, read_password
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapMessage, ImapState
from pbmserv.db.session import Database
from pbmserv.intake.store import OverQuota, Quota, Stored, store_batch
from pbmserv.mail.text import clean_line

log = logging.getLogger(__name__)
#: the keyword that marks a mail done with ``imap_done = "flag"``
DONE_KEYWORD = "$PbmservDone"
SEEN = "\\Seen"
#: mails fetched (and committed) together
FETCH_BATCH = 20
#: how long one IDLE lasts before it is renewed (servers end it after 30 minutes)
#: (a home router may forget a silent connection after a few minutes: renewing it
#: every 4 minutes, and TCP keepalives, keep it known)
IDLE_RENEW = 240.0
#: TCP keepalive: first probe after this many idle seconds, then every KEEPALIVE_EVERY
KEEPALIVE_IDLE = 60
KEEPALIVE_EVERY = 20
KEEPALIVE_PROBES = 3
#: how often a waiting IDLE looks whether ``serve`` is stopping
IDLE_TICK = 1.0
#: the socket's timeout for anything but IDLE
TIMEOUT = 60.0
RETRY_FIRST = 1.0
RETRY_MAX = 60.0
#: how often a mailbox that refused us (login, folder, certificate) is tried again
PROBLEM_RETRY = 120.0
#: test only: SIGKILL ``serve`` at a step ("imap-fetched": the mail fetched, not yet
#: committed; "imap-stored": committed, not yet marked done on the server)
CRASH_ENV = "PBMSERV_TEST_CRASH_AT"
#: UIDs looked up in the database in one query
LOOKUP_CHUNK = 500
#: how long a mail over its sender's quota stays in the folder before it is tried again
OVER_QUOTA_RETRY = 600.0
_RETURN_PATH = re.compile(rb"(?im)^return-path:[ \t]*<([^>\r\n]{0,320})>")
_HEADER_END = re.compile(rb"\r?\n\r?\n")


class ImapProblem(Exception):
    """What keeps the intake from the mailbox until the administrator acts."""


def _checkpoint(step: str) -> None:
    """Test only: die here, as a crash or a SIGKILL would, when CRASH_ENV says so."""
    if os.environ.get(CRASH_ENV) == step:
        log.warning("%s=%s: killing this process now", CRASH_ENV, step)
        os.kill(os.getpid(), signal.SIGKILL)


def envelope_of(raw: bytes) -> str:
    """The envelope sender of a mail taken by IMAP: its Return-Path (the delivering
    server wrote it); "<>" for a bounce; "" without one (the From is used)."""
    head = _HEADER_END.split(raw[:65536], maxsplit=1)[0]
    found = _RETURN_PATH.search(head)
    if found is None:
        return ""
    return found.group(1).decode("ascii", "replace").strip() or "<>"


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def _said(exc: BaseException) -> str:
    """What a server's refusal said, in one clean line."""
    text = str(exc)
    if text.startswith(("b'", 'b"')) and text.endswith(("'", '"')):
        text = text[2:-1]
    return clean_line(text, 300) or type(exc).__name__


def tls_context(verify: bool, ca_file: Path | None) -> ssl.SSLContext:
    """TLS with the certificate checked against ``ca_file`` (else the system's
    authorities); ``verify`` False checks nothing (a test host only)."""
    context = ssl.create_default_context(cafile=None if ca_file is None else str(ca_file))
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def connect(settings: Settings) -> IMAPClient:
    """A logged-in session with the mailbox of ``settings``; ImapProblem for what the
    administrator must put right (the login, the certificate, no STARTTLS)."""
    box = settings.imap
    assert box is not None
    context = tls_context(settings.imap_verify, settings.imap_ca_file)
    try:
        client = IMAPClient(box.host, box.port, ssl=box.scheme == "imaps",
                            ssl_context=context, timeout=TIMEOUT)
        if box.scheme == "imap":
            if not client.has_capability("STARTTLS"):
                client.shutdown()
                raise ImapProblem(f"{box.host}:{box.port} offers no STARTTLS, and the "
                                  "password is never sent in the clear: use imaps://")
            client.starttls(context)
    except ssl.SSLCertVerificationError as exc:
        raise ImapProblem(
            f"the certificate of {box.host}:{box.port} is not trusted "
            f"({exc.verify_message}): set imap_ca_file to the certificate that signs "
            "it (or, for a test host only, imap_verify = false)") from None
    try:
        password = read_password(settings.imap_password, settings.imap_password_file,
                                 "the IMAP")
    except SettingsError as exc:
        client.shutdown()
        raise ImapProblem(str(exc)) from None
    if password is None:
        client.shutdown()
        raise ImapProblem("no password for the mailbox: set imap_password_file "
                          "(or PBMSERV_IMAP_PASSWORD)")
    try:
        client.login(box.user, password)
    except LoginError as exc:
        client.shutdown()
        raise ImapProblem(
            f"{box.host} refused the login of {box.user} ({_said(exc)}): check the "
            "password (imap_password_file), and whether the provider wants an app "
            "password or IMAP turned on") from None
    return client


def _folder_problem(client: IMAPClient, box: Mailbox, folder: str, what: str) -> ImapProblem:
    names = sorted(str(name) for _, _, name in client.list_folders())
    return ImapProblem(f"{what} {folder!r} does not exist in the mailbox of {box.user} at "
                       f"{box.host}; it has: " + (", ".join(names[:20]) or "no folders"))


def select_folder(client: IMAPClient, settings: Settings) -> int:
    """Select the folder (checking the one ``imap_done`` moves mail to as well); its
    UIDVALIDITY."""
    box = settings.imap
    assert box is not None
    done = settings.imap_done
    if done.startswith("move:") and not client.folder_exists(done[5:]):
        raise _folder_problem(client, box, done[5:], "the folder imap_done moves to,")
    if not client.folder_exists(box.folder):
        raise _folder_problem(client, box, box.folder, "the folder")
    info = client.select_folder(box.folder)
    return int(info[b"UIDVALIDITY"])


def _buffered(client: IMAPClient) -> bool:
    """Whether the server's words already wait in the client's read buffer: a mail that
    came between the SEARCH and the IDLE is told ("* 3 EXISTS") together with the
    server's "+ idling", read with it into the buffer, and no poll of the socket would
    ever see it."""
    peek = getattr(getattr(client._imap, "file", None), "peek", None)
    if peek is None:
        return False
    sock = client.socket()
    sock.setblocking(False)
    try:
        return bool(peek(1))
    except (OSError, ValueError):  # nothing buffered, nothing on the socket
        return False
    finally:
        sock.setblocking(True)
        client._set_read_timeout()


def _keep_alive(client: IMAPClient) -> None:
    """TCP keepalives on the connection: a NAT router keeps it, and a peer that is gone
    without a word is noticed in minutes, not hours."""
    sock = client.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPINTVL", KEEPALIVE_EVERY),
                          ("TCP_KEEPCNT", KEEPALIVE_PROBES)):
        if hasattr(socket, option):  # Linux; elsewhere the system's defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _close(client: IMAPClient) -> None:
    try:
        client.logout()
    except Exception:
        try:
            client.shutdown()
        except Exception:
            log.debug("IMAP connection closed uncleanly", exc_info=True)


def check_mailbox(settings: Settings) -> str | None:
    """None if the mailbox of ``settings`` can be read (logged in, the folder there),
    else why not (for ``pbmserv config check``)."""
    box = settings.imap
    assert box is not None
    try:
        client = connect(settings)
    except ImapProblem as exc:
        return str(exc)
    except Exception as exc:
        return f"no IMAP answer from {box.host}:{box.port} ({_said(exc)})"
    try:
        select_folder(client, settings)
        return None
    except Exception as exc:
        return str(exc) if isinstance(exc, ImapProblem) else _said(exc)
    finally:
        _close(client)


class ImapIntake(threading.Thread):
    """Takes the mail of one IMAP folder into the store while ``serve`` runs."""

    def __init__(self, db: Database, settings: Settings,
                 on_stored: Callable[[list[int]], None] = lambda ids: None) -> None:
        super().__init__(name="imap-intake", daemon=True)
        assert settings.imap is not None
        self.db = db
        self.settings = settings
        self.mailbox: Mailbox = settings.imap
        self.key = str(self.mailbox)
        self.on_stored = on_stored
        self.quota = Quota.of(settings)
        #: mails left in the folder, over their sender's quota: UID -> when to try again
        self._later: dict[int, float] = {}
        self._stopping = threading.Event()
        self._reported: str | None = None
        self._client: IMAPClient | None = None
        #: whether the last session got as far as reading the folder
        self._was_reading = False

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=30)

    # -- the loop ---------------------------------------------------------------------
    def run(self) -> None:
        wait = RETRY_FIRST
        while not self._stopping.is_set():
            try:
                self._session()
                wait = RETRY_FIRST
                continue
            except ImapProblem as exc:
                self._report(str(exc))
                self._stopping.wait(PROBLEM_RETRY)
                continue
            except Exception as exc:  # the network, the server going away, the database
                if self._was_reading:  # a drop after a good session starts the waits anew
                    wait = RETRY_FIRST
                problem = (f"the connection to {self.mailbox.host}:{self.mailbox.port} "
                           f"failed ({type(exc).__name__}: {_said(exc)})")
                self._report(problem, lasting=False, retry=wait)
            self._stopping.wait(wait)
            wait = min(wait * 2, RETRY_MAX)

    def _session(self) -> None:
        self._was_reading = False
        client = connect(self.settings)
        self._client = client
        try:
            _keep_alive(client)
            uidvalidity = select_folder(client, self.settings)
            idle = client.has_capability("IDLE")
            self._report(None, idle=idle)
            self._was_reading = True
            while not self._stopping.is_set():
                self.take_new(client, uidvalidity)
                if idle:
                    self._idle(client)
                else:
                    self._stopping.wait(self.settings.imap_poll)
        finally:
            self._client = None
            _close(client)

    # -- talking to the server --------------------------------------------------------
    def _idle(self, client: IMAPClient) -> None:
        """Wait until the server says the folder changed (or IDLE_RENEW passes)."""
        client.idle()
        try:
            if _buffered(client):
                return
            until = time.monotonic() + IDLE_RENEW
            while not self._stopping.is_set() and time.monotonic() < until:
                if client.idle_check(timeout=IDLE_TICK):
                    return
        finally:
            client.idle_done()

    def _mark_done(self, client: IMAPClient, uids: list[int]) -> None:
        done = self.settings.imap_done
        if done == "flag":
            client.add_flags(uids, [DONE_KEYWORD, SEEN], silent=True)
        elif done.startswith("move:"):
            if client.has_capability("MOVE"):
                client.move(uids, done[5:])
            else:
                client.copy(uids, done[5:])
                self._expunge_uids(client, uids)
        else:
            self._expunge_uids(client, uids)

    @staticmethod
    def _expunge_uids(client: IMAPClient, uids: list[int]) -> None:
        client.delete_messages(uids, silent=True)
        if client.has_capability("UIDPLUS"):
            client.uid_expunge(uids)
        else:
            client.expunge()

    # -- taking mail ------------------------------------------------------------------
    def _known(self, uidvalidity: int, uids: list[int]) -> dict[int, str]:
        """The outcome of each of ``uids`` taken before."""
        out: dict[int, str] = {}
        with self.db.reading() as session:
            for chunk in _chunks(uids, LOOKUP_CHUNK):
                for uid, outcome in session.execute(
                        select(ImapMessage.uid, ImapMessage.outcome)
                        .where(ImapMessage.mailbox == self.key,
                               ImapMessage.uidvalidity == uidvalidity,
                               ImapMessage.uid.in_(chunk))):
                    out[uid] = outcome
        return out

    def take_new(self, client: IMAPClient, uidvalidity: int) -> int:
        """Store every mail of the folder not taken yet, then mark it done; returns
        how many were stored."""
        criteria: list[str] = ["NOT", "DELETED"]
        if self.settings.imap_done == "flag":
            criteria += ["UNKEYWORD", DONE_KEYWORD]
        elif self.settings.imap_done == "delete":
            self._expunge_left_over(client, uidvalidity)
        uids = sorted(int(u) for u in client.search(criteria))
        if not uids:
            return 0
        known = self._known(uidvalidity, uids)
        # stored before a crash kept them from being marked: marked now, not stored again
        unmarked = [u for u in uids if known.get(u) == "stored"]
        if unmarked:
            self._mark_done(client, unmarked)
        stored = 0
        now = time.monotonic()
        self._later = {u: at for u, at in self._later.items() if at > now}
        for chunk in _chunks([u for u in uids if u not in known and u not in self._later],
                             FETCH_BATCH):
            stored += self._take(client, uidvalidity, chunk)
        return stored

    def _expunge_left_over(self, client: IMAPClient, uidvalidity: int) -> None:
        """Expunge the stored mails marked deleted by a process that died before it
        expunged them (no one else's: those stay as they are)."""
        deleted = sorted(int(u) for u in client.search(["DELETED"]))
        known = self._known(uidvalidity, deleted) if deleted else {}
        mine = [u for u in deleted if known.get(u) == "stored"]
        if mine:
            self._expunge_uids(client, mine)

    def _take(self, client: IMAPClient, uidvalidity: int, uids: list[int]) -> int:
        limit = self.settings.max_message_size
        sizes = client.fetch(uids, ["RFC822.SIZE"])
        big = [u for u in uids if u in sizes and int(sizes[u][b"RFC822.SIZE"]) > limit]
        small = [u for u in uids if u in sizes and u not in big]
        fetched = client.fetch(small, ["BODY.PEEK[]"]) if small else {}
        mails = [(u, bytes(fetched[u][b"BODY[]"])) for u in small if u in fetched]
        _checkpoint("imap-fetched")

        def record(session: Session, ids: list[Stored]) -> None:
            now = utcnow()
            for (uid, _), stored in zip(mails, ids, strict=True):
                if isinstance(stored, OverQuota):  # not taken: tried again later
                    continue
                session.add(ImapMessage(mailbox=self.key, uidvalidity=uidvalidity, uid=uid,
                                        inbound_id=stored, outcome="stored", taken_at=now))
            for uid in big:
                session.add(ImapMessage(mailbox=self.key, uidvalidity=uidvalidity, uid=uid,
                                        outcome="too big", taken_at=now))

        ids = store_batch(self.db, [(raw, envelope_of(raw)) for _, raw in mails], also=record,
                          quota=self.quota)
        _checkpoint("imap-stored")
        over = []
        for (uid, _), stored in zip(mails, ids, strict=True):
            if isinstance(stored, OverQuota):  # left in the folder, unmarked
                over.append(uid)
                self._later[uid] = time.monotonic() + OVER_QUOTA_RETRY
                log.warning("IMAP %s: the mail with UID %s is not taken: %s; left in the "
                            "folder, tried again in %d minutes", self.key, uid, stored,
                            OVER_QUOTA_RETRY // 60)
        for uid in big:
            log.warning("IMAP %s: the mail with UID %s is %s bytes, over max_size (%s): "
                        "left in the folder, not taken", self.key, uid,
                        sizes[uid][b"RFC822.SIZE"], limit)
        fresh = [i for i in ids if isinstance(i, int)]
        if fresh:
            self.on_stored(fresh)
        taken = [u for u, _ in mails if u not in over]
        if taken:
            self._mark_done(client, taken)
        return len(fresh)

    # -- telling the administrator ----------------------------------------------------
    def _report(self, problem: str | None, *, idle: bool = False, lasting: bool = True,
                retry: float = PROBLEM_RETRY) -> None:
        """Log a problem once (and its end), and keep the state for ``pbmserv status``."""
        if problem is None:
            if self._reported is not None:
                log.warning("IMAP %s: readable again", self.key)
            log.info("IMAP %s: reading it, %s", self.key,
                     "waiting with IDLE" if idle else
                     f"looking every {self.settings.imap_poll}s (the server has no IDLE)")
        elif problem != self._reported:
            (log.error if lasting else log.warning)(
                "IMAP %s: %s; trying again in %ss", self.key, problem, int(retry))
        else:
            log.debug("IMAP %s: still %s", self.key, problem)
        changed = problem != self._reported
        self._reported = problem
        try:
            with self.db.transaction() as session:
                state = session.get(ImapState, self.key)
                if state is None:
                    state = ImapState(mailbox=self.key)
                    session.add(state)
                now = utcnow()
                if changed or state.since is None:
                    state.since = now
                state.problem, state.checked_at, state.idle = problem, now, idle
        except Exception as exc:  # the state is for the status only
            log.warning("IMAP %s: cannot record its state: %s", self.key, _said(exc))

