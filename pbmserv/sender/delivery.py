"""Delivering the outbox: to the relay when one is set, else into a Maildir.

No other sender (another thread, ``pbmserv work``, another process or host) may take
a mail while one sends it.  The worker asks for due mail every round, mostly in
vain: that is one indexed read, which takes no write lock.  Rows are read as plain
rows, not ORM objects.

- Into a Maildir, a batch is taken, written and recorded in one transaction: its
  rows are held by the transaction itself (SQLite's write lock; on PostgreSQL row
  locks taken with ``SKIP LOCKED``, so senders never wait for each other).  The
  files are on disk, and in new/, before the commit that counts them sent; a
  crash before it leaves the rows due, and a file's name comes from its row, so
  sending them again rewrites the same files.  The write lock is held a few
  milliseconds longer than a record alone would take, and each round costs one
  transaction, not two, and writes each row once.
- To a relay, rows are leased first, in the name of one claim of one sender: a
  claim is one statement that leases a batch for half a minute and returns it (on
  PostgreSQL with ``SKIP LOCKED``); its commit need not reach the disk, as a lost
  claim only leaves its rows due.  Each mail's lease is renewed (for two minutes,
  longer than one send can take) just before it is sent, and its result recorded
  as soon as it is known, in one transaction with the next mail's renewal.  A mail
  whose claim ran out before its turn is left to whoever claimed it since.  So a
  mail that went out is never sent again by anyone while nothing crashed; a crash
  mid-send may repeat the one being sent.

A relay that cannot be reached charges no mail with a back-off: the mails stay due,
the sender probes the relay every few seconds, and the backlog goes out as soon as
it answers.  A relay that answers "not now" to the session (421: a provider's rate
limit) or refuses the login is not probed: every sender keeps away from it for a
minute (five after a refused login), twice as long after each refusal in a row, up
to 15 minutes (an hour), each wait drawn within a fifth of its length
(pbmserv.sender.standing), and says so in the log once, not at each try.  Only the
relay's answer to one mail (4xx) delays that mail.  What the relay answered, and
since when nothing it was given got through, is kept for ``pbmserv status``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from itertools import count
from typing import Any, NamedTuple

from sqlalchemy import bindparam, case, func, select, update
from sqlalchemy.orm import Session

from pbmserv.bounces.scoring import probe_ids, suspended_among
from pbmserv.config import Relay, Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.mail.addresses import subaddress
from pbmserv.sender.maildir import deliver_all
from pbmserv.sender.message import OutboxMail, envelope_address, message_bytes
from pbmserv.sender.refusals import failed_for_good, refused, suppressed
from pbmserv.sender.relay import (
    LoginRefused,
    PermanentFailure,
    RelayConnection,
    RelayDown,
    TemporaryFailure,
    Throttled,
    probe,
)
from pbmserv.sender.standing import Standing
from pbmserv.service.reply_tokens import bounce_tag, server_secret

#: what is done with a row in the transaction that records its result
After = Callable[[Session], None]

log = logging.getLogger(__name__)
#: how long a claimed row is left alone before it is due again for anyone
LEASE = timedelta(seconds=30)
#: a relay mail's lease, renewed just before it is sent: longer than one send takes
SEND_LEASE = timedelta(minutes=2)
#: rows claimed together
BATCH = 100
MAX_BACKOFF = 3600
#: how often an unreachable relay is tried again
PROBE_EVERY = 2.0
#: how long senders keep away from a relay that said 421 (a provider's rate limit),
#: the first time and at most (the waits double between)
THROTTLED_FIRST = 60.0
THROTTLED_LONGEST = 900.0
#: the same after a refused login (a provider may lock an account that keeps giving
#: a wrong password)
LOGIN_FIRST = 300.0
LOGIN_LONGEST = 3600.0
#: the span of ``daily_send_limit``
DAY = timedelta(hours=24)


def backoff_seconds(attempts: int) -> int:
    return int(min(30 * 2 ** max(attempts - 1, 0), MAX_BACKOFF))


#: what is kept of a sent mail that held a live secret (a reset or confirmation code)
BLANKED = "(blanked once sent: it held a one-time code)"
#: its Subject (a confirmation's Subject is the command with the code)
BLANKED_SUBJECT = "(blanked once sent)"


def _sent() -> dict[str, Any]:
    """A sent mail; one that held a live secret keeps no copy of it."""
    return {"status": OutboxStatus.SENT, "sent_at": utcnow(), "last_error": None,
            "leased_by": None,
            "subject": case((OutboxMessage.blank_after_send, BLANKED_SUBJECT),
                            else_=OutboxMessage.subject),
            "body": case((OutboxMessage.blank_after_send, BLANKED), else_=OutboxMessage.body),
            "html_body": case((OutboxMessage.blank_after_send, None),
                              else_=OutboxMessage.html_body)}


# -- the statements of a round
_O = OutboxMessage
_DUE = (_O.status == OutboxStatus.PENDING) & (_O.next_attempt_at <= bindparam("now"))
#: whether anything is due (the index on status and next_attempt_at answers it)
_ANY_DUE = select(_O.id).where(_DUE).limit(1)
#: the columns a mail is made of (OutboxMail)
_MAIL = (_O.id, _O.created_at, _O.message_id, _O.to_addr, _O.subject, _O.body,
         _O.in_reply_to, _O.reply_to, _O.html_body, _O.attempts, _O.list_id, _O.unsubscribe)
#: rows written by statements are not held as objects by the session
_UNHELD = {"synchronize_session": False}


def _taking(statement: Any, skip_locked: bool) -> Any:
    return statement.with_for_update(skip_locked=True) if skip_locked else statement


class DueMail(NamedTuple):
    """An outbox row as the Maildir sender takes it (the columns of _MAIL)."""

    id: int
    created_at: datetime
    message_id: str
    to_addr: str
    subject: str
    body: str
    in_reply_to: str | None
    reply_to: str | None
    html_body: str | None
    attempts: int
    list_id: str | None
    unsubscribe: str | None


#: the due rows of a batch, oldest first, for a transaction to hold (Maildir)
_TAKE = {skip: _taking(select(*_MAIL).where(_DUE).order_by(_O.id).limit(bindparam("limit")),
                        skip)
         for skip in (False, True)}
#: a claim: the due rows of a batch leased and returned (relay)
_CLAIM = {skip: update(_O)
          .where(_O.id.in_(_taking(select(_O.id).where(_DUE).order_by(_O.id)
                                   .limit(bindparam("limit")), skip).scalar_subquery()))
          .values(next_attempt_at=bindparam("until"), leased_by=bindparam("token"))
          .returning(*_MAIL).execution_options(**_UNHELD)
          for skip in (False, True)}
#: the rows this transaction holds recorded as sent (see _sent)
_SENT = (update(_O)
         .where(_O.id.in_(bindparam("ids", expanding=True)))
         .values(status=OutboxStatus.SENT, sent_at=bindparam("at"), last_error=None,
                 leased_by=None, attempts=_O.attempts + 1,
                 subject=case((_O.blank_after_send, BLANKED_SUBJECT), else_=_O.subject),
                 body=case((_O.blank_after_send, BLANKED), else_=_O.body),
                 html_body=case((_O.blank_after_send, None), else_=_O.html_body))
         .execution_options(**_UNHELD))
def _address(row: OutboxMail) -> str:
    """The address as suspensions are kept (pbmserv.bounces.scoring)."""
    return row.to_addr.strip().lower()


def _deferred(row: OutboxMail, error: str) -> dict[str, Any]:
    delay = backoff_seconds(row.attempts + 1)
    log.warning("outbox %s not sent (%s); next try in %ss", row.id, error[:200], delay)
    return {"last_error": error[:2000], "leased_by": None,
            "next_attempt_at": utcnow() + timedelta(seconds=delay)}


def _failed(row: OutboxMail, error: str) -> dict[str, Any]:
    log.warning("outbox %s refused for good: %s", row.id, error[:200])
    return {"status": OutboxStatus.FAILED, "last_error": error[:2000], "leased_by": None}


def envelope_sender(settings: Settings, secret: bytes, outbox_id: int) -> str:
    """The envelope sender of outgoing mail ``outbox_id``.  With VERP (``verp``; by
    default without a relay login) bounces of it come back to
    ``pbmserv+bounce-o<id>-<signature>@domain`` (signed with ``secret``), naming the
    mail and so its address, whatever form the bounce takes; else it is the login's
    own address (a provider's submission server refuses any other), and a bounce is
    known by the mail it returns."""
    if not settings.uses_verp:
        return settings.login_address
    if not settings.subaddressing:  # a mailbox without sub-addresses: the bounce
        return settings.address     # is known by the mail it returns
    return subaddress(settings.address, bounce_tag(secret, outbox_id))


class Sender:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._name = uuid.uuid4().hex[:24]
        self._claims = count(1)
        self.relay_down = False
        self._next_probe = 0.0
        #: whether the daily sending limit held mail back at the last look
        self.capped = False
        self._secret: bytes | None = None
        #: how the relay stands, shared with every other sender through the database
        self.standing = Standing(db, settings)

    def bounce_address(self, row: OutboxMail) -> str:
        """The envelope sender of ``row``'s mail (see ``envelope_sender``)."""
        if not self.settings.uses_verp or not self.settings.subaddressing:
            return envelope_sender(self.settings, b"", row.id)
        return envelope_sender(self.settings, self._know_secret(), row.id)

    def _know_secret(self) -> bytes:
        """The key of the bounce addresses: asked once (in a transaction of its own, so
        before a batch's transaction begins)."""
        if self._secret is None:
            with self.db.transaction() as session:
                self._secret = server_secret(session, self.settings.secret)
        return self._secret

    # -- taking rows --------------------------------------------------------------------
    def _anything_due(self) -> bool:
        """Whether a mail is due: one indexed read, no write lock (the worker asks every
        round, mostly when nothing is)."""
        with self.db.reading() as session:
            return session.scalar(_ANY_DUE, {"now": utcnow()}) is not None

    def _claim(self, limit: int) -> tuple[str, list[OutboxMail], list[OutboxMail]]:
        """Lease up to ``limit`` due rows for a new claim; returns its token, the rows
        and those of them to send (a mail to a suspended address is marked suppressed
        in the same transaction)."""
        token = f"{self._name}:{next(self._claims)}"
        now = utcnow()
        with self.db.transaction(lazy=True) as session:
            rows: list[OutboxMail] = sorted(
                session.execute(_CLAIM[self.db.is_postgres],
                                {"now": now, "limit": limit, "until": now + LEASE,
                                 "token": token}).all(),
                key=lambda row: row.id)
            send = self._hold_back(session, token, rows)
        return token, rows, send

    def _hold_back(self, session: Session, token: str | None,
                   rows: Sequence[OutboxMail]) -> list[OutboxMail]:
        """The rows to send: those to a suspended address are marked suppressed, but
        its probe (pbmserv.bounces.notices.send_probes)."""
        if not rows:
            return []
        held = suspended_among(session, {_address(r) for r in rows})
        if not held:
            return list(rows)
        probes = probe_ids(session, held)  # a probe goes to a suspended address
        held_rows = [row for row in rows if _address(row) in held and row.id not in probes]
        for row in held_rows:
            self._record(session, token, [row.id], suppressed(), charged=False)
        if held_rows:
            log.info("outbox: %d mail(s) not sent: their address bounces", len(held_rows))
        return [row for row in rows if _address(row) not in held or row.id in probes]

    def _record(self, session: Session, token: str | None, row_ids: list[int],
                values: dict[str, Any], *, charged: bool = True,
                after: After | None = None) -> None:
        """Record a result of rows the claim ``token`` holds (None: rows this
        transaction holds); ``after`` runs in the same transaction if they were still
        held (a bounce counted, an incident opened)."""
        attempts = {"attempts": OutboxMessage.attempts + 1} if charged else {}
        held = [] if token is None else [OutboxMessage.leased_by == token]
        changed = session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id.in_(row_ids), *held)
            .values(**values, **attempts)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        if changed and after is not None:
            after(session)

    def _renew(self, session: Session, token: str, row_id: int) -> bool:
        return bool(session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id, OutboxMessage.leased_by == token,
                   OutboxMessage.status == OutboxStatus.PENDING)
            .values(next_attempt_at=utcnow() + SEND_LEASE)
            .execution_options(synchronize_session=False)
        ).rowcount)  # type: ignore[attr-defined]

    def _release(self, token: str, rows: list[OutboxMail]) -> None:
        """Give rows back untried: due again at once, for any sender."""
        if not rows:
            return
        with self.db.transaction() as session:
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.id.in_([r.id for r in rows]),
                       OutboxMessage.leased_by == token)
                .values(leased_by=None, next_attempt_at=utcnow())
                .execution_options(synchronize_session=False)
            )

    # -- sending ----------------------------------------------------------------------
    def send_due(self, limit: int = 10_000) -> int:
        """Send due messages, a batch at a time (each tried once, at most ``limit``);
        returns how many went out."""
        if not self._anything_due():
            return 0
        relay = self.settings.relay_target
        if relay is None:
            return self._into_maildir(limit)
        if self.standing.held_off() is not None:  # a 421 or a refused login: not yet
            return 0
        if self.relay_down:
            if time.monotonic() < self._next_probe:
                return 0
            if not probe(relay, self.settings.relay_ca_file):
                self._next_probe = time.monotonic() + PROBE_EVERY
                return 0
            log.warning("relay %s:%s answers again; sending the backlog", relay.host,
                        relay.port)
            self.relay_down = False
        if self.settings.daily_send_limit:
            limit = min(limit, self._room_today())
            if limit <= 0:
                return 0
        sent = tried = 0
        while tried < limit and not self.relay_down:
            wanted = min(BATCH, limit - tried)
            token, claimed, rows = self._claim(wanted)
            if not claimed:
                break
            tried += len(claimed)
            sent += self._to_relay(relay, token, rows)
            if len(claimed) < wanted:
                break  # all that was due: no claim (a write) that finds nothing
        return sent

    def _room_today(self) -> int:
        """How many more mails the daily sending limit lets go out now: the limit less
        those sent in the last 24 hours."""
        cap = self.settings.daily_send_limit
        with self.db.reading() as session:
            sent = session.scalar(select(func.count()).select_from(OutboxMessage).where(
                OutboxMessage.status == OutboxStatus.SENT,
                OutboxMessage.sent_at > utcnow() - DAY)) or 0
        room = max(cap - sent, 0)
        if not room and not self.capped:
            log.warning("daily_send_limit reached: %d mails sent in the last 24 hours; "
                        "the rest wait in the outbox until older ones are a day old", sent)
        elif room and self.capped:
            log.warning("daily_send_limit: %d more may go out now; sending", room)
        self.capped = not room
        return room

    def _build(self, rows: list[OutboxMail]) -> tuple[list[tuple[OutboxMail, bytes]],
                                                     list[tuple[OutboxMail, str]]]:
        """The mails that can be made of ``rows``, and those that cannot, with why (a
        bug, never a reason to stop the others)."""
        built: list[tuple[OutboxMail, bytes]] = []
        broken: list[tuple[OutboxMail, str]] = []
        for row in rows:
            try:
                built.append((row, message_bytes(self.settings, row)))
            except Exception as exc:
                log.exception("outbox %s cannot be made into a mail", row.id)
                broken.append((row, f"cannot be made into a mail: {type(exc).__name__}: {exc}"))
        return built, broken

    def _into_maildir(self, limit: int) -> int:
        """Batches into the Maildir until nothing is due (at most ``limit`` rows)."""
        sent = tried = 0
        while tried < limit:
            wanted = min(BATCH, limit - tried)
            found, done = self._maildir_batch(wanted)
            tried, sent = tried + found, sent + done
            if found < wanted:
                break  # all that was due
        return sent

    def _maildir_batch(self, limit: int) -> tuple[int, int]:
        """Take up to ``limit`` due rows, write their mails into the Maildir and record
        them, in one transaction that holds the rows; returns how many rows were taken,
        and how many mails went out."""
        self._know_secret()
        with self.db.transaction() as session:
            rows = [DueMail(*row) for row in session.execute(
                _TAKE[self.db.is_postgres], {"now": utcnow(), "limit": limit})]
            built, broken = self._build(self._hold_back(session, None, rows))
            # as a delivery agent does, the envelope sender goes in Return-Path
            built = [(row, f"Return-Path: <{self.bounce_address(row)}>\n".encode() + data)
                     for row, data in built]
            errors = deliver_all(self.settings.maildir, built)
            done = [row for (row, _), error in zip(built, errors, strict=True)
                    if error is None]
            if done:
                session.execute(_SENT, {"ids": [row.id for row in done], "at": utcnow()})
            for (row, _), error in zip(built, errors, strict=True):
                if error is not None:
                    self._record(session, None, [row.id], _deferred(row, error))
            for row, why in broken:
                self._record(session, None, [row.id], _failed(row, why),
                             after=failed_for_good(self.settings, row, why))
        for row in done:
            log.info("sent outbox %s: %s to <%s>, into the Maildir", row.id,
                     row.message_id, row.to_addr)
        return len(rows), len(done)

    def _to_relay(self, relay: Relay, token: str, rows: list[OutboxMail]) -> int:
        sent = 0
        # a result not yet recorded: the row, its values, what goes with them
        pending: tuple[int, dict[str, Any], After | None] | None = None
        with RelayConnection(relay, self.settings.address,
                             settings=self.settings) as connection:
            for i, row in enumerate(rows):
                with self.db.transaction() as session:
                    if pending is not None:
                        self._record(session, token, [pending[0]], pending[1],
                                     after=pending[2])
                        pending = None
                    mine = self._renew(session, token, row.id)
                    # a bounce counted since the claim may have suspended the address
                    if mine and suspended_among(session, [row.to_addr]) and \
                            row.id not in probe_ids(session, [row.to_addr]):
                        self._record(session, token, [row.id], suppressed(), charged=False)
                        mine = False
                if not mine:
                    continue
                built, broken = self._build([row])
                if broken:
                    pending = (row.id, _failed(row, broken[0][1]),
                               failed_for_good(self.settings, row, broken[0][1]))
                    continue
                try:
                    answer = connection.send(built[0][1], envelope_address(row.to_addr),
                                             self.bounce_address(row))
                except RelayDown as exc:
                    self._relay_down(relay, exc)
                    with self.db.transaction() as session:
                        self._record(session, token, [row.id],
                                     {"last_error": str(exc)[:2000]}, charged=False)
                    self._release(token, rows[i:])
                    return sent
                except PermanentFailure as exc:
                    log.warning("outbox %s refused for good: %s", row.id, str(exc)[:200])
                    pending = (row.id, *refused(self.settings, row, exc))
                    if exc.about != "recipient":  # the relay's fault, not the address's
                        self.standing.failed(str(exc))
                    continue
                except TemporaryFailure as exc:
                    pending = (row.id, _deferred(row, str(exc)), None)
                    self.standing.failed(str(exc))
                    continue
                pending = (row.id, _sent(), None)
                if self.standing.took():
                    log.warning("relay %s:%s takes mail again", relay.host, relay.port)
                sent += 1
                log.info("sent outbox %s: %s to <%s>, relay answered %s", row.id,
                         row.message_id, row.to_addr, answer)
        if pending is not None:
            with self.db.transaction() as session:
                self._record(session, token, [pending[0]], pending[1], after=pending[2])
        return sent

    def _relay_down(self, relay: Relay, exc: RelayDown) -> None:
        """The relay refused the session or cannot be reached: keep away from it (for
        minutes after a 421 or a refused login, probing every few seconds when it did
        not answer), and say so once."""
        if isinstance(exc, LoginRefused | Throttled):
            first, longest = ((LOGIN_FIRST, LOGIN_LONGEST) if isinstance(exc, LoginRefused)
                              else (THROTTLED_FIRST, THROTTLED_LONGEST))
            wait, new = self.standing.refused(str(exc), first, longest)
            (log.error if new else log.info)(
                "relay %s:%s: %s; no mail is tried for %ss (longer if it goes on, at most "
                "%d minutes)", relay.host, relay.port, exc, int(wait), longest // 60)
            return
        if self.standing.failed(str(exc)):
            log.warning("relay %s:%s cannot be reached (%s); probing every %ss",
                        relay.host, relay.port, exc, PROBE_EVERY)
        self.relay_down = True
        self._next_probe = time.monotonic() + PROBE_EVERY
