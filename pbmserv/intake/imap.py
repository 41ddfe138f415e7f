"""The IMAP edge: take mail from a mailbox at a provider (the ``imap`` setting).

A thread of ``serve`` takes the mailbox for itself (one reader per mailbox: a lock in
the database, ``imap_state.reader``, renewed by its heartbeat), logs in over TLS,
selects the folder and waits with IDLE where the server offers it (else it looks
every ``imap_poll`` seconds).  Each mail it has not taken yet is fetched and
committed into the raw store together with its UID and its key (one transaction),
and only then marked done on the server (``imap_done``: a keyword and \\Seen,
deleted, or moved to a folder).  So a crash at any point loses nothing (the mail is
still in the folder, unmarked) and takes nothing twice (its UID is in the database,
or its key, as after a change of UIDVALIDITY or a mail moved back into the folder,
however long ago its stored copy was purged).

Never blind: each look begins with a NOOP (a server such as Dovecot brings a
session's view of the folder up to date at the end of a command, so a SEARCH alone
misses what came since the one before) and is made again as long as the server told
of new mail (EXISTS) while it was being taken; the IDLE is read here, not by
imapclient's ``idle_check`` (which takes a reset or an end of the connection for
"nothing yet"), so a connection cut without a word is noticed at once; and at least
every ``imap_keepalive`` seconds the IDLE ends and the reader looks (a NOOP that must
be answered within ``ANSWER_WAIT``), which notices a connection that went silent and
beats the heart that ``pbmserv status`` reads.

Which mail is answered (``imap_since``): by default only what comes after the first
read of the mailbox ("now"); the mail already there is left as it is, never answered,
and one line in the log says how many.  A mail over ``max_size`` is stored as its
header alone, answered with the limit, and left in the folder unmarked.

A dropped connection is opened again at once, then after a growing wait (1 s up to a
minute).  A login the server refuses, a folder that does not exist or a certificate
that is not trusted is one error line, kept in the database for ``pbmserv status``,
and tried again after 2 minutes, then twice as long each time up to half an hour.
"""

from __future__ import annotations

import contextlib
import imaplib
import logging
import os
import re
import select
import signal
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from imapclient import IMAPClient
from imapclient.exceptions import LoginError
from sqlalchemy import select as query
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from pbmserv.backoff import backoff
from pbmserv.config import Mailbox, Settings, SettingsError, read_password
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapMessage, ImapState
from pbmserv.db.session import Database
from pbmserv.intake.store import OverQuota, Quota, Stored, message_key, store_batch
from pbmserv.mail.text import clean_line

log = logging.getLogger(__name__)
#: the keyword that marks a mail done with ``imap_done = "flag"``
DONE_KEYWORD = "$PbmservDone"
SEEN = "\\Seen"
#: mails fetched (and committed) together
FETCH_BATCH = 20
#: TCP keepalive: first probe after this many idle seconds, then every KEEPALIVE_EVERY
KEEPALIVE_IDLE = 60
KEEPALIVE_EVERY = 20
KEEPALIVE_PROBES = 3
#: how often a waiting IDLE looks whether ``serve`` is stopping
IDLE_TICK = 1.0
#: the socket's timeout for a command that moves mail (SEARCH, FETCH, STORE)
TIMEOUT = 60.0
#: the longest the server may take to answer a NOOP or the end of an IDLE, or to end
#: a line it began, before the connection counts as dead
ANSWER_WAIT = 20.0
RETRY_FIRST = 1.0
RETRY_MAX = 60.0
#: how long a mailbox that refused us (login, folder, certificate) is left alone, the
#: first time and at most
PROBLEM_RETRY = 120.0
PROBLEM_RETRY_MAX = 1800.0
#: the most looks one after the other while the server tells of new mail
MAX_LOOKS = 20
#: the heartbeat is written at most this often (each look would write it)
BEAT_EVERY = 5.0
#: beyond ``imap_keepalive``, how long the reader's hold on the mailbox lasts without a
#: heartbeat before another ``serve`` may take it (the status's grace as well)
HOLD_GRACE = 90.0
#: test only: SIGKILL ``serve`` at a step ("imap-fetched": the mail fetched, not yet
#: committed; "imap-stored": committed, not yet marked done on the server)
CRASH_ENV = "PBMSERV_TEST_CRASH_AT"
#: UIDs (and keys) looked up in the database in one query
LOOKUP_CHUNK = 500
#: how long a mail over its sender's quota stays in the folder before it is tried again
OVER_QUOTA_RETRY = 600.0
#: the most of an over-size mail's header that is fetched (and stored)
HEADER_BYTES = 65536
#: what the server's words say of new mail
_NEW_MAIL = (b"EXISTS", b"RECENT")
_RETURN_PATH = re.compile(rb"(?im)^return-path:[ \t]*<([^>\r\n]{0,320})>")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HOLDER = re.compile(r" pid (\d+) \((\w+)-")
#: this process, as the readers it runs name it: a process of another run with the same
#: pid (a container started again) is not taken for it
_PROCESS = uuid.uuid4().hex[:6]


class ImapProblem(Exception):
    """What keeps the intake from the mailbox until the administrator acts."""


class ConnectionLost(Exception):
    """The connection ended without the server's word, or the server said BYE."""


class Displaced(Exception):
    """Another ``serve`` took the mailbox: this reader's hold on it ran out."""


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
    client.normalise_times = False  # INTERNALDATE as the server says it, with its zone
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


def _readable(client: IMAPClient, timeout: float) -> bool:
    """Whether the server said something (or the connection ended: a reset or its end
    reads as something too) within ``timeout`` seconds."""
    sock = client.socket()
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    if _buffered(client):
        return True
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(timeout, 0.0) * 1000))


def _read_line(client: IMAPClient) -> bytes:
    """One line of the server's: ConnectionLost if the connection ended or broke, or
    the line does not come whole within ANSWER_WAIT."""
    sock = client.socket()
    sock.settimeout(ANSWER_WAIT)
    try:
        line: bytes = client._imap._get_line()
    except (OSError, imaplib.IMAP4.abort, ValueError) as exc:
        raise ConnectionLost(f"the connection ended while waiting with IDLE "
                             f"({_said(exc)})") from None
    finally:
        with contextlib.suppress(OSError):
            client._set_read_timeout()
    if line.upper().startswith(b"* BYE"):
        said = clean_line(line.decode("utf-8", "replace"), 200)
        raise ConnectionLost(f"the server said {said}")
    return line


def _tells_of_mail(line: bytes) -> bool:
    """Whether an untagged line of the server's tells of new mail ("* 4 EXISTS")."""
    words = line.split()
    return len(words) >= 3 and words[0] == b"*" and words[2].upper() in _NEW_MAIL


class Announcements:
    """What the server told of the folder in its answers to our commands (imaplib keeps
    each untagged answer; they are read, and forgotten, here): new mail is a count of
    mails ("* 5 EXISTS") other than the last one told, or any count told after mails
    left the folder ("* 3 EXPUNGE").  A server that repeats an unchanged count at every
    command is not taken for one telling of new mail."""

    def __init__(self) -> None:
        self.count: int | None = None
        self.expunged = False

    def new_mail(self, client: IMAPClient) -> bool:
        kept = client._imap.untagged_responses
        counts = kept.pop("EXISTS", None) or []
        kept.pop("RECENT", None)
        expunged = bool(kept.pop("EXPUNGE", None))
        kept.pop("FETCH", None)  # flags changed by others: read by nobody
        told = False
        if counts:
            try:
                count = int(counts[-1])
            except (TypeError, ValueError):
                count = -1
            told = count != self.count or self.expunged or expunged
            self.count, self.expunged = count, False
        elif expunged:
            self.expunged = True
        return told


def _keep_alive(client: IMAPClient) -> None:
    """TCP keepalives on the connection: a NAT router keeps it, and a peer that is gone
    without a word is noticed even by a command waiting for its answer."""
    sock = client.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPINTVL", KEEPALIVE_EVERY),
                          ("TCP_KEEPCNT", KEEPALIVE_PROBES)):
        if hasattr(socket, option):  # Linux; elsewhere the system's defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _close(client: IMAPClient) -> None:
    try:
        client.socket().settimeout(ANSWER_WAIT)
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Since:
    """Which mail of the folder is taken (``imap_since``): from ``uid`` on under the
    UIDVALIDITY of the first read, else what the server dates ``day`` or later and,
    if ``at`` is set, came at or after it."""

    uid: int | None = None
    day: date | None = None
    at: datetime | None = None


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
        self.keepalive = float(settings.imap_keepalive)
        #: who this reader is, as the database and ``pbmserv status`` name it
        self.me = f"{socket.gethostname()} pid {os.getpid()} ({_PROCESS}-{uuid.uuid4().hex[:4]})"
        #: mails left in the folder, over their sender's quota: UID -> when to try again
        self._later: dict[int, float] = {}
        self._stopping = threading.Event()
        self._reported: str | None = None
        self._client: IMAPClient | None = None
        #: whether the last session got as far as reading the folder
        self._was_reading = False
        #: since when the last session read the folder (monotonic)
        self._reading_since = 0.0
        self._beaten = -BEAT_EVERY
        self._holding = False
        #: the other reader that holds the mailbox, as last said in the log
        self._held_by: str | None = None
        #: which mail is taken, per UIDVALIDITY (read once a session)
        self._since: dict[int, Since] = {}
        self._told = Announcements()
        #: set while the reader waits for mail (IDLE, or between two looks)
        self.waiting = threading.Event()

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=30)

    # -- the loop ---------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        finally:
            self._let_go()

    def _run(self) -> None:
        wait = RETRY_FIRST
        problems = 0
        while not self._stopping.is_set():
            try:
                held = self._hold()
            except SQLAlchemyError as exc:
                self._report(f"the database does not answer ({_said(exc)})", lasting=False,
                             retry=RETRY_MAX)
                self._pause(RETRY_MAX)
                continue
            if not held:  # another serve reads the mailbox: wait for its end
                self._pause(self.keepalive)
                continue
            try:
                self._session()
                wait, problems = RETRY_FIRST, 0
                continue
            except ImapProblem as exc:
                problems += 1
                pause = backoff(problems, PROBLEM_RETRY, PROBLEM_RETRY_MAX)
                self._report(str(exc), retry=pause)
                self._pause(pause)
                continue
            except Displaced as exc:
                log.error("IMAP %s: %s; this reader stops reading it", self.key, exc)
                self._holding = False
                continue
            except Exception as exc:  # the network, the server going away, the database
                if self._was_reading:  # a drop after a good session starts the waits
                    # anew: at once after a session that read for a while (one that is
                    # dropped as soon as it reads is opened no more often than that)
                    read_for = time.monotonic() - self._reading_since
                    wait = 0.0 if read_for >= RETRY_FIRST else RETRY_FIRST
                    problems = 0
                problem = (f"the connection to {self.mailbox.host}:{self.mailbox.port} "
                           f"failed ({type(exc).__name__}: {_said(exc)})")
                self._report(problem, lasting=False, retry=wait)
            self._pause(wait)
            wait = min(max(wait * 2, RETRY_FIRST), RETRY_MAX)

    def _session(self) -> None:
        self._was_reading = False
        client = connect(self.settings)
        self._client = client
        try:
            _keep_alive(client)
            uidvalidity = select_folder(client, self.settings)
            self._since, self._told = {}, Announcements()
            self.since(client, uidvalidity)  # the first read is made before anything
            idle = client.has_capability("IDLE")
            self._report(None, idle=idle)
            self._was_reading, self._reading_since = True, time.monotonic()
            while not self._stopping.is_set():
                self.look(client, uidvalidity)
                if idle:
                    self._idle(client)
                else:
                    self._poll(client)
        finally:
            self._client = None
            _close(client)

    def _pause(self, seconds: float) -> None:
        """Wait (until ``serve`` stops), the heart beating meanwhile."""
        until = time.monotonic() + seconds
        while not self._stopping.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return
            self._stopping.wait(min(left, self.keepalive))
            if self._holding and not self._stopping.is_set():
                try:
                    self._beat()
                except Displaced as exc:
                    log.error("IMAP %s: %s", self.key, exc)
                    return

    # -- talking to the server --------------------------------------------------------
    def look(self, client: IMAPClient, uidvalidity: int) -> int:
        """Take what is new in the folder, again as long as the server tells of more
        while it is taken; returns how many mails were stored."""
        stored = 0
        for _ in range(MAX_LOOKS):
            self._beat()
            self._told.new_mail(client)
            client.socket().settimeout(ANSWER_WAIT)
            try:
                client.noop()  # the session's view of the folder brought up to date
            finally:
                client._set_read_timeout()
            self._told.new_mail(client)  # what the NOOP told of, the SEARCH sees
            stored += self.take_new(client, uidvalidity)
            if not self._told.new_mail(client) or self._stopping.is_set():
                break
        return stored

    def _idle(self, client: IMAPClient) -> None:
        """Wait with IDLE until the server tells of new mail, or ``imap_keepalive``
        passes; ConnectionLost if the connection ends meanwhile."""
        client.idle()
        until = time.monotonic() + self.keepalive
        self.waiting.set()
        try:
            while not self._stopping.is_set():
                left = until - time.monotonic()
                if left <= 0:
                    break
                if _readable(client, min(IDLE_TICK, left)) and _tells_of_mail(
                        _read_line(client)):
                    break
        finally:
            self.waiting.clear()
        client.socket().settimeout(ANSWER_WAIT)
        try:
            client.idle_done()
        finally:
            client._set_read_timeout()

    def _poll(self, client: IMAPClient) -> None:
        """Wait ``imap_poll`` seconds, with a NOOP every ``imap_keepalive`` seconds (it
        ends the wait if the server tells of new mail in its answer)."""
        until = time.monotonic() + self.settings.imap_poll
        while not self._stopping.is_set():
            left = until - time.monotonic()
            if left <= 0:
                return
            self.waiting.set()
            try:
                self._stopping.wait(min(left, self.keepalive))
            finally:
                self.waiting.clear()
            if until - time.monotonic() <= 0 or self._stopping.is_set():
                return
            self._beat()
            client.socket().settimeout(ANSWER_WAIT)
            try:
                client.noop()
            finally:
                client._set_read_timeout()
            if self._told.new_mail(client):
                return

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

    # -- one reader per mailbox, and its heartbeat -------------------------------------
    def _state(self, session: Session) -> ImapState:
        state = session.get(ImapState, self.key, with_for_update=True)
        if state is None:
            state = ImapState(mailbox=self.key, since=utcnow())
            session.add(state)
        return state

    def _hold(self) -> bool:
        """Take the mailbox for this reader (unless another serve holds it, and beats,
        or runs on this host); whether it is this reader's."""
        if self._holding:
            return True
        now = utcnow()
        other: ImapState | None = None
        try:
            with self.db.transaction() as session:
                state = self._state(session)
                holder = state.reader
                if holder not in (None, self.me) and not self._gone(holder, state, now):
                    session.expunge(state)
                    other = state
                else:
                    state.reader = self.me
                    state.beat_at = now
                    state.held_until = now + timedelta(seconds=self.keepalive + HOLD_GRACE)
        except IntegrityError:  # another reader made the row at the same time
            return False
        if other is not None:
            if other.reader != self._held_by:
                self._held_by = other.reader
                log.error("IMAP %s is read by another pbmserv (%s, its last heartbeat at "
                          "%s UTC): one reader per mailbox; this one waits, and reads it "
                          "if that one stops", self.key, other.reader,
                          f"{other.beat_at:%Y-%m-%d %H:%M:%S}" if other.beat_at else "-")
            return False
        if self._held_by is not None:
            log.warning("IMAP %s: the other reader (%s) is gone; this one reads it now",
                        self.key, self._held_by)
            self._held_by = None
        self._holding = True
        self._beaten = time.monotonic()
        return True

    @staticmethod
    def _gone(holder: str | None, state: ImapState, now: datetime) -> bool:
        """Whether the reader that holds the mailbox is gone: its hold ran out, or it
        ran on this host and its process is no more (a SIGKILL, a crash; a container
        started again, whose new process may have the old one's pid)."""
        if state.held_until is None or state.held_until < now:
            return True
        found = _HOLDER.search(holder or "")
        if found is None or not (holder or "").startswith(socket.gethostname() + " "):
            return False
        pid, process = int(found.group(1)), found.group(2)
        if pid == os.getpid():
            return process != _PROCESS
        return not _alive(pid)

    def _beat(self, *, force: bool = False) -> None:
        """The heartbeat, which renews the hold on the mailbox (at most every
        BEAT_EVERY seconds); Displaced if another reader took it meanwhile."""
        if not self._holding:
            return
        now = time.monotonic()
        if not force and now - self._beaten < BEAT_EVERY:
            return
        at = utcnow()
        try:
            with self.db.transaction(lazy=True) as session:
                kept = session.execute(
                    update(ImapState)
                    .where(ImapState.mailbox == self.key, ImapState.reader == self.me)
                    .values(beat_at=at,
                            held_until=at + timedelta(seconds=self.keepalive + HOLD_GRACE))
                    .execution_options(synchronize_session=False)).rowcount  # type: ignore[attr-defined]
        except SQLAlchemyError as exc:  # the database is for the status; mail waits
            log.warning("IMAP %s: cannot write its heartbeat: %s", self.key, _said(exc))
            return
        self._beaten = now
        if not kept:
            self._holding = False
            raise Displaced("another pbmserv took the mailbox while this reader did not beat")

    def _let_go(self) -> None:
        """Give the mailbox up (``serve`` stops): the status says since when it is not
        read, and another serve may take it at once."""
        if not self._holding:
            return
        self._holding = False
        try:
            with self.db.transaction() as session:
                session.execute(update(ImapState)
                                .where(ImapState.mailbox == self.key,
                                       ImapState.reader == self.me)
                                .values(reader=None, held_until=None, beat_at=utcnow())
                                .execution_options(synchronize_session=False))
        except SQLAlchemyError as exc:
            log.warning("IMAP %s: cannot give up the mailbox: %s", self.key, _said(exc))

    # -- which mail is taken ----------------------------------------------------------
    def since(self, client: IMAPClient, uidvalidity: int) -> Since:
        """Which mail of the folder is taken (``imap_since``).  The first read of the
        mailbox is recorded (when, and the first UID after it), and with "now" the mail
        already there is left alone: one line in the log says how many."""
        known = self._since.get(uidvalidity)
        if known is not None:
            return known
        setting = self.settings.imap_since
        with self.db.reading() as session:
            state = session.get(ImapState, self.key)
            first = None if state is None or state.first_read_at is None else (
                state.first_read_at, state.first_uidvalidity, state.first_uid)
        if first is None:
            first = self._first_read(client, uidvalidity, setting)
        if setting == "all":
            since = Since()
        elif setting != "now":
            since = Since(day=date.fromisoformat(setting))
            if uidvalidity not in self._since:
                self._count_left(client, since)
        elif first[1] == uidvalidity and first[2] is not None:
            since = Since(uid=first[2])
        else:  # the folder rebuilt (or read before there were first reads): by date, to
            # the second (what the server dates a mail to)
            since = Since(day=first[0].date() - timedelta(days=1),
                          at=first[0].replace(microsecond=0))
        self._since[uidvalidity] = since
        return since

    def _first_read(self, client: IMAPClient, uidvalidity: int,
                    setting: str) -> tuple[datetime, int | None, int | None]:
        there = sorted(int(u) for u in client.search(self._criteria()))
        first_uid = (there[-1] + 1) if there else 1
        at = utcnow()
        with self.db.transaction() as session:
            state = self._state(session)
            if state.first_read_at is None:
                state.first_read_at, state.first_uidvalidity, state.first_uid = (
                    at, uidvalidity, first_uid)
            taken = (state.first_read_at, state.first_uidvalidity, state.first_uid)
        if setting == "now" and taken[0] == at:
            if there:
                log.warning("IMAP %s: first read: %d mail(s) already in the folder are left "
                            "as they are and never answered (imap_since = \"now\"); set "
                            "imap_since to \"all\" or to a day to answer them", self.key,
                            len(there))
            else:
                log.info("IMAP %s: first read: the folder holds no mail yet", self.key)
        return taken

    def _count_left(self, client: IMAPClient, since: Since) -> None:
        assert since.day is not None
        left = client.search([*self._criteria(), "BEFORE", since.day])
        if left:
            log.warning("IMAP %s: %d mail(s) from before %s are left as they are, never "
                        "answered (imap_since)", self.key, len(left), since.day.isoformat())

    def _criteria(self) -> list[object]:
        criteria: list[object] = ["NOT", "DELETED"]
        if self.settings.imap_done == "flag":
            criteria += ["UNKEYWORD", DONE_KEYWORD]
        return criteria

    # -- taking mail ------------------------------------------------------------------
    def _known(self, uidvalidity: int, uids: list[int]) -> dict[int, str]:
        """The outcome of each of ``uids`` taken before."""
        out: dict[int, str] = {}
        with self.db.reading() as session:
            for chunk in _chunks(uids, LOOKUP_CHUNK):
                for uid, outcome in session.execute(
                        query(ImapMessage.uid, ImapMessage.outcome)
                        .where(ImapMessage.mailbox == self.key,
                               ImapMessage.uidvalidity == uidvalidity,
                               ImapMessage.uid.in_(chunk))):
                    out[uid] = outcome
        return out

    def _known_keys(self, keys: list[str]) -> dict[str, str]:
        """The outcome of each of ``keys`` taken before, under any UID."""
        if not keys:
            return {}
        with self.db.reading() as session:
            return {key: outcome for key, outcome in session.execute(
                query(ImapMessage.key, ImapMessage.outcome)
                .where(ImapMessage.mailbox == self.key, ImapMessage.key.in_(keys)))
                if key is not None}

    def take_new(self, client: IMAPClient, uidvalidity: int) -> int:
        """Store every mail of the folder not taken yet, then mark it done; returns
        how many were stored."""
        since = self.since(client, uidvalidity)
        criteria = self._criteria()
        if self.settings.imap_done == "delete":
            self._expunge_left_over(client, uidvalidity)
        if since.uid is not None:
            criteria += ["UID", f"{since.uid}:*"]
        elif since.day is not None:
            criteria += ["SINCE", since.day]
        uids = sorted(int(u) for u in client.search(criteria))
        if since.uid is not None:  # "N:*" holds the highest UID even if it is below N
            uids = [u for u in uids if u >= since.uid]
        if not uids:
            return 0
        known = self._known(uidvalidity, uids)
        # stored before a crash kept them from being marked: marked now, not stored again
        unmarked = [u for u in uids if known.get(u) in ("stored", "again")]
        if unmarked:
            self._mark_done(client, unmarked)
        stored = 0
        now = time.monotonic()
        self._later = {u: at for u, at in self._later.items() if at > now}
        for chunk in _chunks([u for u in uids if u not in known and u not in self._later],
                             FETCH_BATCH):
            stored += self._take(client, uidvalidity, chunk, since)
        return stored

    def _expunge_left_over(self, client: IMAPClient, uidvalidity: int) -> None:
        """Expunge the stored mails marked deleted by a process that died before it
        expunged them (no one else's: those stay as they are)."""
        deleted = sorted(int(u) for u in client.search(["DELETED"]))
        known = self._known(uidvalidity, deleted) if deleted else {}
        mine = [u for u in deleted if known.get(u) in ("stored", "again")]
        if mine:
            self._expunge_uids(client, mine)

    def _take(self, client: IMAPClient, uidvalidity: int, uids: list[int],
              since: Since) -> int:
        limit = self.settings.max_message_size
        items = ["RFC822.SIZE"] + (["INTERNALDATE"] if since.at is not None else [])
        sizes = client.fetch(uids, items)
        old = [u for u in uids if u in sizes and since.at is not None
               and _arrived(sizes[u]) < since.at]
        big = [u for u in uids if u in sizes and u not in old
               and int(sizes[u][b"RFC822.SIZE"]) > limit]
        small = [u for u in uids if u in sizes and u not in old and u not in big]
        fetched = client.fetch(small, ["BODY.PEEK[]"]) if small else {}
        heads = client.fetch(big, [f"BODY.PEEK[HEADER]<0.{HEADER_BYTES}>"]) if big else {}
        mails = [(u, bytes(fetched[u][b"BODY[]"])) for u in small if u in fetched]
        mails = sorted(mails + [(u, _head(heads[u])) for u in big if u in heads])
        _checkpoint("imap-fetched")
        keys = {uid: message_key(raw, envelope_of(raw)) for uid, raw in mails}
        before = self._known_keys(sorted(set(keys.values())))
        again = {uid: before[keys[uid]] for uid, _ in mails if keys[uid] in before}
        new = [(uid, raw) for uid, raw in mails if uid not in again]
        real = {u: int(sizes[u][b"RFC822.SIZE"]) for u in big}

        def record(session: Session, ids: list[Stored]) -> None:
            now = utcnow()
            for (uid, _), stored in zip(new, ids, strict=True):
                if isinstance(stored, OverQuota):  # not taken: tried again later
                    continue
                session.add(ImapMessage(mailbox=self.key, uidvalidity=uidvalidity, uid=uid,
                                        inbound_id=stored, taken_at=now, key=keys[uid],
                                        outcome="too big" if uid in real else "stored"))
            for uid, outcome in again.items():
                session.add(ImapMessage(mailbox=self.key, uidvalidity=uidvalidity, uid=uid,
                                        key=keys[uid], taken_at=now,
                                        outcome="too big" if outcome == "too big" else "again"))
            for uid in old:
                session.add(ImapMessage(mailbox=self.key, uidvalidity=uidvalidity, uid=uid,
                                        outcome="old", taken_at=now))

        ids = store_batch(self.db, [(raw, envelope_of(raw)) for _, raw in new], also=record,
                          quota=self.quota, sizes=[real.get(uid) for uid, _ in new])
        _checkpoint("imap-stored")
        over = []
        for (uid, _), stored in zip(new, ids, strict=True):
            if isinstance(stored, OverQuota):  # left in the folder, unmarked
                over.append(uid)
                self._later[uid] = time.monotonic() + OVER_QUOTA_RETRY
                log.warning("IMAP %s: the mail with UID %s is not taken: %s; left in the "
                            "folder, tried again in %d minutes", self.key, uid, stored,
                            OVER_QUOTA_RETRY // 60)
        for uid in big:
            log.warning("IMAP %s: the mail with UID %s is %s bytes, over max_message_size (%s): "
                        "answered with the limit, left in the folder unmarked", self.key, uid,
                        real[uid], limit)
        if again:
            log.info("IMAP %s: %d mail(s) taken before under another UID (the folder "
                     "rebuilt, or the mail put back): not answered again", self.key,
                     len(again))
        if old:
            log.info("IMAP %s: %d mail(s) from before the first read left alone "
                     "(imap_since)", self.key, len(old))
        fresh = [i for i in ids if isinstance(i, int)]
        if fresh:
            self.on_stored(fresh)
        taken = [u for u, _ in new if u not in over and u not in real]
        taken += [u for u, outcome in again.items() if outcome != "too big"]
        if taken:
            self._mark_done(client, sorted(taken))
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
                state = self._state(session)
                now = utcnow()
                if changed or state.since is None:
                    state.since = now
                state.problem, state.checked_at, state.idle = problem, now, idle
                if state.reader == self.me:
                    state.beat_at = now
        except Exception as exc:  # the state is for the status only
            log.warning("IMAP %s: cannot record its state: %s", self.key, _said(exc))


def _arrived(item: dict[bytes, object]) -> datetime:
    """A fetched mail's INTERNALDATE, in UTC (a date without a zone is taken as UTC)."""
    value = item.get(b"INTERNALDATE")
    if not isinstance(value, datetime):
        return datetime.max.replace(tzinfo=UTC)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _head(item: dict[bytes, object]) -> bytes:
    """The header of an over-size mail, as fetched (its blank line closing it)."""
    for name, value in item.items():
        if name.startswith(b"BODY[HEADER]") and isinstance(value, bytes):
            return value if value.endswith(b"\n\n") or value.endswith(b"\r\n\r\n") else (
                value + b"\r\n")
    return b"\r\n"
