"""Processing stored mail in batches, oldest first.

A batch of stored mails is read and parsed first, in a transaction that only reads
(on SQLite it holds no write lock, so parsing never delays intake).  The batch then
runs in one write transaction: a mail that hits a bug has the batch run again
without it, so it changes nothing and is set aside, and the others commit together
(one fsync for all).  On SQLite a batch gives way as soon as the intake waits to
store mail.

Several processes may work on one PostgreSQL database: each locks the mails it takes
(``FOR UPDATE SKIP LOCKED``), and takes a mail only if every older unprocessed mail of
the same sender is its own too, so a sender's mails are applied in the order they
came.  A mail whose processing fails is marked ``failed`` in a fresh transaction that
does not parse it again (kept, with the traceback, for the admin to inspect and
replay), so it never blocks the mails behind it.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from pbmserv.commands import is_command
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage
from pbmserv.db.problems import describe, reason_line
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, InboundStatus
from pbmserv.mail.parse import ParsedMail, Refusal, parse_message
from pbmserv.notifications.unprocessed import tell_held
from pbmserv.processing.at_rest import mask_raw
from pbmserv.processing.mail import handle
from pbmserv.service import incidents

log = logging.getLogger(__name__)
#: mails read, parsed and run together
BATCH = 50
#: in one batch, at most this many mails of one sender
PER_SENDER = 5
#: a batch is tried again this often when the database says "not now"
TRANSIENT_RETRIES = 5
#: a mail that hits a unique constraint (a race with another process) is run again
RACE_RETRIES = 3
#: a batch's transaction commits after this long, so that it never holds SQLite's
#: write lock for long from another process (the intake's, say)
BATCH_SECONDS = 0.02


@dataclass
class Stored:
    """A stored mail as read for processing: parsed, or why it could not be."""

    id: int
    sender: str
    mail: ParsedMail | None
    error: str = ""
    #: the mail as stored (its passwords are masked in the store once it has run)
    raw: bytes = b""
    #: not read yet: read and parsed once this process holds it (PostgreSQL)
    unread: bool = False


# every sender's unprocessed mails, numbered in the order they came
_QUEUED = (select(InboundMessage.id,
                  func.row_number().over(partition_by=InboundMessage.sender,
                                         order_by=InboundMessage.id).label("turn"))
           .where(InboundMessage.status == InboundStatus.NEW).subquery())
#: the next mails to run: each sender's oldest first, then their second oldest...
_NEXT = (select(_QUEUED.c.id).where(_QUEUED.c.turn <= PER_SENDER)
         .order_by(_QUEUED.c.turn, _QUEUED.c.id).limit(bindparam("limit")))
_RAW = select(InboundMessage.id, InboundMessage.raw, InboundMessage.envelope_from,
              InboundMessage.sender, InboundMessage.size
              ).where(InboundMessage.id.in_(bindparam("ids", expanding=True)))
#: the next mails themselves, in one statement (SQLite: no other process takes them)
_NEXT_MAILS = (select(InboundMessage.id, InboundMessage.raw, InboundMessage.envelope_from,
                      InboundMessage.sender, InboundMessage.size)
               .join(_QUEUED, _QUEUED.c.id == InboundMessage.id)
               .where(_QUEUED.c.turn <= PER_SENDER)
               .order_by(_QUEUED.c.turn, _QUEUED.c.id).limit(bindparam("limit")))


def read_pending(db: Database, settings: Settings, limit: int = BATCH) -> list[Stored]:
    """Unprocessed mails, parsed (no write lock held): each sender's oldest first, so
    that one sender's flood of mail never keeps the others waiting, and every
    sender's mails in the order they came.

    On PostgreSQL only their ids: several processes read the same unprocessed mails,
    and each runs only those it can lock, so a mail is read and parsed once locked
    (row locks hold up no one else; see ``run_batch``).  Read and parsed here, every
    process parsed each mail (2.3 parses a mail with two processes)."""
    with db.reading() as session:
        if db.is_postgres:
            return [Stored(i, "", None, unread=True)
                    for i in session.scalars(_NEXT, {"limit": limit})]
        rows = session.execute(_NEXT_MAILS, {"limit": limit}).all()
    return _parsed(settings, rows)


def read_one(db: Database, settings: Settings, inbound_id: int) -> list[Stored]:
    """One unprocessed mail, parsed (none if it is not new)."""
    with db.reading() as session:
        rows = session.execute(_RAW.where(InboundMessage.status == InboundStatus.NEW),
                               {"ids": [inbound_id]}).all()
    return _parsed(settings, rows)


def _parsed(settings: Settings, rows: Sequence[Any]) -> list[Stored]:
    out = []
    for row in rows:
        try:
            mail = parse_message(row.raw, settings.addresses, row.envelope_from, is_command,
                                 settings.trusted_authserv_ids)
            if row.size > settings.max_message_size and not mail.refusal:
                mail.refusal = Refusal.SIZE  # its header alone was kept: not read
            out.append(Stored(row.id, row.sender, mail, raw=row.raw))
        except Exception as exc:  # a bug in the parser: keep the mail; nobody known to tell
            out.append(Stored(row.id, row.sender, None, failure_text(exc)))
    return out


#: the claim of a batch on SQLite, the first statement of its transaction: those of
#: its mails still new
_CLAIM = (select(InboundMessage.id, InboundMessage.sender)
          .where(InboundMessage.id.in_(bindparam("ids", expanding=True)),
                 InboundMessage.status == InboundStatus.NEW))
#: on PostgreSQL a transaction locks no more than it can run in BATCH_SECONDS, so that
#: another process takes the rest of the same batch meanwhile
HELD_AT_ONCE = 10
#: (the mails themselves come with the lock: they are read once locked)
_CLAIM_LOCKED = (select(InboundMessage.id, InboundMessage.sender, InboundMessage.raw,
                        InboundMessage.envelope_from, InboundMessage.size)
                 .where(InboundMessage.id.in_(bindparam("ids", expanding=True)),
                        InboundMessage.status == InboundStatus.NEW)
                 .order_by(InboundMessage.id).limit(HELD_AT_ONCE)
                 .with_for_update(skip_locked=True))


#: of these senders, the oldest unprocessed mail below a claim's newest that is not
#: the claim's
_NOT_MINE = (select(InboundMessage.sender, func.min(InboundMessage.id))
             .where(InboundMessage.status == InboundStatus.NEW,
                    InboundMessage.sender.in_(bindparam("senders", expanding=True)),
                    InboundMessage.id < bindparam("below"),
                    InboundMessage.id.not_in(bindparam("mine", expanding=True)))
             .group_by(InboundMessage.sender))


def claim(session: Session, db: Database, batch: Sequence[Stored]) -> tuple[dict[int, Any], bool]:
    """The mails of ``batch`` this process may run now, in this transaction, by id (on
    PostgreSQL with their stored rows), and whether it holds as many as it may at once
    (PostgreSQL: see HELD_AT_ONCE)."""
    ids = [s.id for s in batch]
    if not db.is_postgres:  # one writer at a time: what is new is ours
        return {row.id: row for row in session.execute(_CLAIM, {"ids": ids})}, False
    locked = session.execute(_CLAIM_LOCKED, {"ids": ids}).all()
    if not locked:
        return {}, False
    full = len(locked) >= HELD_AT_ONCE
    mine = {row.id for row in locked}
    # every older unprocessed mail of the same sender must be ours too: for each
    # sender, the oldest that is not (one row a sender, however many wait)
    blocked: dict[str, int] = dict(session.execute(
        _NOT_MINE, {"senders": list({row.sender for row in locked}),
                    "below": max(mine), "mine": list(mine)}).tuples().all())
    return {row.id: row for row in locked
            if row.sender not in blocked or row.id < blocked[row.sender]}, full


#: a mail marked handled (it is not loaded: nothing of the session to keep in step)
_DONE = (update(InboundMessage).where(InboundMessage.id == bindparam("inbound_id"))
         .values(status=bindparam("status"), processed_at=bindparam("now"),
                 error=bindparam("error"))
         .execution_options(synchronize_session=False))
#: the same, the stored mail's passwords masked too (one statement, not two)
_DONE_MASKED = _DONE.values(raw=bindparam("raw"))


class _MailFailed(Exception):
    """A mail of the batch hit a bug (or lost a race): the batch is run again without
    it (or, for a race, with it once more)."""

    def __init__(self, inbound_id: int, error: str, race: bool) -> None:
        super().__init__(inbound_id)
        self.inbound_id = inbound_id
        self.error = error
        self.race = race


def run_batch(db: Database, settings: Settings,
              batch: list[Stored]) -> tuple[list[int], bool]:
    """Run a batch in one transaction; returns the ids handled (done, ignored or
    failed) and whether it stopped before its end (it gave way to the intake, its
    time was up, or on PostgreSQL it held as many as it may at once).

    A mail that raises takes the transaction down with it: the batch is run again
    without it, and it is marked failed afterwards.  Mails not handled (another
    process holds them or an older mail of their sender, or the batch gave way) stay
    new for a later pass.

    An unread mail (PostgreSQL) is read once this transaction holds it and parsed
    just before it runs; ``batch`` keeps it parsed (a mail left for the next pass is
    not parsed again).
    """
    failed = {s.id: s.error for s in batch if s.mail is None and not s.unread}
    races: dict[int, int] = {}
    transient = 0
    while True:
        handled: list[int] = []
        gave_way = False
        try:
            with db.transaction(lazy=True) as session:
                mine, full = claim(session, db, batch)
                now = utcnow()
                started = time.monotonic()
                for at, stored in enumerate(batch):
                    if stored.id not in mine:
                        continue
                    if handled and (db.urgent_waiting
                                    or time.monotonic() - started > BATCH_SECONDS):
                        gave_way = True  # commit what is done; the rest comes next
                        break
                    if stored.unread:
                        stored = batch[at] = _parsed(settings, [mine[stored.id]])[0]
                        if stored.mail is None:
                            failed[stored.id] = stored.error
                    if stored.id not in failed:
                        _run_one(session, settings, stored, now)
                    handled.append(stored.id)
                # locked no more than it may hold at once: the rest comes next
                gave_way = gave_way or full
            break
        except _MailFailed as exc:
            races[exc.inbound_id] = races.get(exc.inbound_id, 0) + 1
            if not exc.race or races[exc.inbound_id] >= RACE_RETRIES:
                failed[exc.inbound_id] = exc.error
        except OperationalError as exc:
            transient += 1
            log.warning("batch of %d: transient database error (try %d): %s",
                        len(batch), transient, type(exc).__name__)
            if transient < TRANSIENT_RETRIES:
                continue
            if len(batch) > 1:  # one of them may be to blame: one transaction each
                return [i for s in batch for i in run_batch(db, settings, [s])[0]], False
            failed[batch[0].id] = failure_text(exc)
            transient = 0
    by_id = {s.id: s for s in batch}
    for inbound_id in handled:
        if inbound_id in failed:
            mark_failed(db, settings, inbound_id, failed[inbound_id], by_id[inbound_id].mail)
    return handled, gave_way


def _run_one(session: Session, settings: Settings, stored: Stored, now: object) -> None:
    """Run one mail in the batch's transaction; raises _MailFailed if it cannot be."""
    assert stored.mail is not None
    mail = stored.mail
    try:
        secrets: set[str] = set()
        status = handle(session, settings, stored.id, mail, secrets)
        done = {"inbound_id": stored.id, "status": status, "now": now,
                "error": mail.silent_reason or mail.refusal or None}
        if status is InboundStatus.IGNORED:
            # bulk, robots, bounces: only the row is kept, its key to know the mail if
            # it comes again (timers.purge_mail), never the whole mail
            masked = b""
        else:
            masked = mask_raw(stored.raw, secrets) if stored.raw else stored.raw
        # (the session flushes what the mail changed before this statement runs)
        if masked != stored.raw:  # no password or code lies in the store
            session.execute(_DONE_MASKED, {**done, "raw": masked})
        else:
            session.execute(_DONE, done)
        # what this mail loaded is of no use to the next: a session that grew with
        # the batch would make every flush look through all of it
        session.expunge_all()
    except OperationalError:
        raise  # the transaction itself is in trouble: the batch is tried again
    except IntegrityError as exc:
        # two processes made the same new row (a board number) at once: again
        raise _MailFailed(stored.id, failure_text(exc), race=True) from None
    except Exception as exc:
        raise _MailFailed(stored.id, failure_text(exc), race=False) from None


def failure_text(exc: BaseException) -> str:
    """What is kept of a mail's failure: the cause in one line (the database's own
    message, not SQLAlchemy's wrapping of it), then the traceback."""
    return f"{describe(exc)}\n\n{traceback.format_exc()}"


def _kept(error: str, limit: int = 8000) -> str:
    """The failure as stored: its first line (the cause) and the end of the traceback."""
    if len(error) <= limit:
        return error
    head = error.split("\n", 1)[0][:1000]
    return f"{head}\n...\n{error[-(limit - len(head) - 5):]}"


def mark_failed(db: Database, settings: Settings, inbound_id: int, error: str,
                mail: ParsedMail | None) -> str:
    """Keep the mail as failed and tell its sender, in a transaction of its own.

    Returns "failed", or "new" if even that could not be written (the mail is then
    tried again on the next pass; the ones behind it go on meanwhile).
    """
    try:
        with db.transaction() as session:
            marked = session.execute(
                update(InboundMessage)
                .where(InboundMessage.id == inbound_id,
                       InboundMessage.status == InboundStatus.NEW)
                .values(status=InboundStatus.FAILED, error=_kept(error),
                        processed_at=utcnow())
            ).rowcount  # type: ignore[attr-defined]
            if marked:  # the administrator is told (once for a burst: see incidents)
                sender = mail.reply_to if mail is not None else "an unknown sender"
                incidents.record(session, AlertKind.INBOX_FAILED,
                                 f"message {inbound_id} from {sender}: {reason_line(error)}",
                                 utcnow(), item=str(inbound_id))
            if marked and mail is not None and not mail.silent_reason:
                tell_held(session, settings, to=mail.reply_to, inbound_id=inbound_id,
                          in_reply_to=mail.message_id)
    except Exception:
        log.exception("message %s could not be marked as failed; it stays new", inbound_id)
        return InboundStatus.NEW
    log.error("message %s could not be processed; kept as failed: %s", inbound_id,
              reason_line(error))
    return InboundStatus.FAILED


def process_pending(db: Database, settings: Settings, *, reads: int | None = None) -> int:
    """Process every stored message not yet processed, oldest first (or only those of
    the first ``reads`` batches read); returns how many were handled.  One that stays
    new (held elsewhere, or even marking it failed failed) waits for the next call."""
    done = 0
    seen: set[int] = set()  # what stays new (held elsewhere) is read again next call
    batch: list[Stored] = []
    while True:
        if not batch:
            if reads is not None:
                if reads == 0:
                    return done
                reads -= 1
            batch = [s for s in read_pending(db, settings) if s.id not in seen]
            if not batch:
                return done
            seen.update(s.id for s in batch)
        handled, gave_way = run_batch(db, settings, batch)
        done += len(handled)
        # after giving way, go on with the rest of the batch (parsed already)
        done_now = set(handled)
        batch = [s for s in batch if s.id not in done_now] if gave_way else []


def process_message(db: Database, settings: Settings, inbound_id: int) -> str:
    """Process one stored message (if still new); returns its status afterwards."""
    batch = read_one(db, settings, inbound_id)
    if batch:
        run_batch(db, settings, batch)
    with db.reading() as session:
        status = session.scalar(select(InboundMessage.status)
                                .where(InboundMessage.id == inbound_id))
    return "skipped" if status is None else str(status)
