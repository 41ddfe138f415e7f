"""The administrator's operations on the server as a whole: its health, a check of
its settings, the inbox and the outbox, and the account and board operations that
send mail (through the Notifier, in the same transaction as the change).

The command line calls these; a web admin could call them the same way.  Each opens
its own transactions; errors that the administrator must fix are PlayerErrors (or
the database's own, which ``pbmserv.problems`` explains).
"""

from __future__ import annotations

import grp
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import ColumnElement, func, or_, select, text, update

from pbmserv.commands.account import mail_reset_code
from pbmserv.config import Settings, relay_url
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapState, InboundMessage, OutboxMessage
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus
from pbmserv.intake.imap import check_mailbox
from pbmserv.notifications import Notifier
from pbmserv.notifications.views import board_summary
from pbmserv.processing import process_message
from pbmserv.sender.delivery import Sender
from pbmserv.sender.relay import RelayConnection, RelayDown
from pbmserv.sender.relay import check as check_relay
from pbmserv.service import admin, incidents
from pbmserv.service.accounts import existing_user
from pbmserv.service.boards import engine_of
from pbmserv.service.bounces import problem_counts
from pbmserv.service.errors import PlayerError
from pbmserv.service.games import GameService
from pbmserv.timers import purge_mail

#: mail stored this long ago and still not processed: nothing is processing it
INBOX_LATE = incidents.INBOX_LATE
#: outgoing mail due this long ago and still not sent: nothing is sending it
OUTBOX_LATE = incidents.OUTBOX_LATE
#: ``pbmserv status`` exits with these: the server is down (or its database, or mail
#: is not moving), or it runs but something waits for a person
EXIT_DOWN = 1
EXIT_ATTENTION = 3


# -- status -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Status:
    """How the server stands, as far as its database tells."""

    #: the database's schema revision, and the one this code needs
    revision: str | None = None
    head: str = ""
    #: mails waiting to be processed, and the age of the oldest
    waiting: int = 0
    oldest_waiting: timedelta | None = None
    #: mails kept as failed (a bug while processing them): for the administrator
    failed_in: int = 0
    #: outgoing mails not yet sent, the age of the oldest, and how many of them are due
    #: for longer than ``OUTBOX_LATE`` (nobody sends them)
    pending: int = 0
    oldest_pending: timedelta | None = None
    overdue: int = 0
    #: outgoing mails the relay refused for good
    failed_out: int = 0
    #: what is wrong, in words; none: healthy
    problems: list[str] = field(default_factory=list)
    #: what waits for a person (the server itself runs), in words
    attention: list[str] = field(default_factory=list)
    #: addresses no longer mailed because they bounce
    suspended: int = 0
    #: whether the database answered, and whether the queues were counted
    reachable: bool = True
    counted: bool = False
    #: how the IMAP intake stands, when one is set ("" when none is)
    imap: str = ""
    #: how the daily sending limit stands, when one is set
    sending: str = ""

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        """0: all well; EXIT_DOWN: unhealthy; EXIT_ATTENTION: healthy, but something
        needs a person."""
        return EXIT_DOWN if self.problems else EXIT_ATTENTION if self.attention else 0


def _age(now: datetime, then: datetime | None) -> timedelta | None:
    return None if then is None else max(now - then, timedelta(0))


def status(db: Database, now: datetime | None = None, *, inbox_late: timedelta = INBOX_LATE,
           outbox_late: timedelta = OUTBOX_LATE, mailbox: str | None = None,
           daily_send_limit: int = 0) -> Status:
    """The server's health: unhealthy if the database cannot be read, its schema is not
    this code's, stored mail waits longer than ``inbox_late``, outgoing mail is due
    for longer than ``outbox_late`` or ``serve`` cannot read the IMAP ``mailbox``
    (user@host/folder).  Mail held back by a ``daily_send_limit`` that is reached is
    waiting by design, not overdue.  Failed mail and a bounce storm are not held against it: they
    need a person, not a restart (``attention``)."""
    now = now or utcnow()
    head = migrate.head()
    try:
        revision = migrate.current(db)
    except Exception as exc:
        return Status(head=head, problems=[f"database: {describe(exc, db.url)}"],
                      reachable=False)
    if revision != head:
        try:
            migrate.check(db)
        except Exception as exc:
            return Status(revision, head, problems=[describe(exc, db.url)])
    with db.reading() as session:
        waiting, oldest_in = session.execute(
            select(func.count(), func.min(InboundMessage.received_at))
            .where(InboundMessage.status == InboundStatus.NEW)).one()
        failed_in = session.scalar(select(func.count()).select_from(InboundMessage)
                                   .where(InboundMessage.status == InboundStatus.FAILED))
        pending, oldest_out = session.execute(
            select(func.count(), func.min(OutboxMessage.created_at))
            .where(OutboxMessage.status == OutboxStatus.PENDING)).one()
        overdue = session.scalar(select(func.count()).select_from(OutboxMessage).where(
            OutboxMessage.status == OutboxStatus.PENDING,
            OutboxMessage.next_attempt_at < now - outbox_late))
        failed_out = session.scalar(select(func.count()).select_from(OutboxMessage)
                                    .where(OutboxMessage.status == OutboxStatus.FAILED))
        counts = problem_counts(session, now)
        storms = [a for a in incidents.open_alerts(session)
                  if a.kind == AlertKind.BOUNCE_STORM]
        imap = None if mailbox is None else session.get(ImapState, mailbox)
        sent_today = 0 if not daily_send_limit else session.scalar(
            select(func.count()).select_from(OutboxMessage).where(
                OutboxMessage.status == OutboxStatus.SENT,
                OutboxMessage.sent_at > now - timedelta(hours=24))) or 0
    imap_text = "" if mailbox is None else f"{mailbox}: not read yet (is 'pbmserv serve' running?)"
    if imap is not None:
        imap_text = (f"{mailbox}: cannot be read since {imap.since:%Y-%m-%d %H:%M} UTC"
                     if imap.problem else
                     f"{mailbox}: read since {imap.since:%Y-%m-%d %H:%M} UTC, "
                     + ("waiting with IDLE" if imap.idle else "polled"))
    capped = bool(daily_send_limit) and sent_today >= daily_send_limit
    sending = ""
    if capped:
        sending = (f"daily_send_limit reached: {sent_today} mails sent in the last 24 hours; "
                   f"{pending or 0} wait until older ones are a day old")
    elif daily_send_limit:
        sending = f"{sent_today} of daily_send_limit {daily_send_limit} sent in the last 24 hours"
    result = Status(revision, head, waiting, _age(now, oldest_in), failed_in or 0, pending,
                    _age(now, oldest_out), overdue or 0, failed_out or 0, counted=True,
                    imap=imap_text, sending=sending, suspended=counts.suspended)
    if failed_in:
        result.attention.append(f"{failed_in} incoming mail(s) failed: 'pbmserv inbox list "
                                "--status failed', then 'pbmserv inbox replay --all-failed'")
    if failed_out:
        result.attention.append(f"{failed_out} outgoing mail(s) refused for good: 'pbmserv "
                                "outbox list --status failed', then 'pbmserv outbox retry "
                                "--all' or 'pbmserv outbox discard ID'")
    for storm in storms:
        result.attention.append(f"a bounce storm since {storm.opened_at:%Y-%m-%d %H:%M} UTC "
                                f"({storm.count} bounces): 'pbmserv users bounces'")
    if result.oldest_waiting is not None and result.oldest_waiting > inbox_late:
        result.problems.append(
            f"stored mail is not being processed: the oldest waits since "
            f"{oldest_in:%Y-%m-%d %H:%M} UTC (is 'pbmserv serve' or 'pbmserv work --loop' "
            "running?)")
    if imap is not None and imap.problem:
        result.problems.append(f"IMAP {mailbox}: {imap.problem}")
    if result.overdue and not capped:
        result.problems.append(
            f"outgoing mail is not going out: {result.overdue} mail(s) due for more than "
            f"{int(outbox_late.total_seconds() // 60)} minutes (is the relay down, or "
            "nothing running that sends? 'pbmserv outbox list' shows the last error)")
    return result


# -- checking the settings ----------------------------------------------------------------
OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    name: str
    level: str
    text: str


def _writable(folder: Path) -> str | None:
    """None if files can be made in ``folder`` (made if missing), else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe_file = folder / f".pbmserv-check-{uuid.uuid4().hex}"
        probe_file.write_bytes(b"")
        probe_file.unlink()
    except OSError as exc:
        return describe(exc)
    return None


#: the fewest characters of a configured ``secret``, and of different ones among them
SECRET_LENGTH = 32
SECRET_KINDS = 10


def _secret_check(secret: str | None) -> Check:
    """Whether the key of move-by-reply addresses is long and random enough: anyone who
    guesses it can move for any player."""
    if secret is None:
        return Check("secret", OK, "none set: the server made one and keeps it in the "
                     "database")
    if len(secret) < SECRET_LENGTH or len(set(secret)) < SECRET_KINDS:
        return Check("secret", FAIL, f"too weak to sign move-by-reply addresses (anyone who "
                     f"guesses it can move for any player): give at least {SECRET_LENGTH} "
                     "random characters, for example the output of 'openssl rand -hex 32', "
                     "or leave it empty for one the server makes")
    return Check("secret", OK, f"{len(secret)} characters")


def check_settings(settings: Settings) -> list[Check]:
    """One line per thing the settings need: the file, the database and its schema,
    the relay or the Maildir, the log file."""
    out = [Check("settings", OK, f"read from {settings.source}" if settings.source
                 else "no settings file: defaults and PBMSERV_* variables")]
    out += [Check("settings", WARN, warning) for warning in settings.warnings]
    out.append(_secret_check(settings.secret))
    db = Database(settings.database_url)
    try:
        try:
            with db.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
            out.append(Check("database", OK, f"reachable ({db.engine.dialect.name})"))
            out.append(Check("schema", OK, f"revision {migrate.check(db)}, current"))
        except Exception as exc:
            name = "schema" if isinstance(exc, migrate.SchemaError) else "database"
            out.append(Check(name, FAIL, describe(exc, settings.database_url)))
    finally:
        db.dispose()
    if db.is_sqlite and not settings.database_url.startswith("sqlite:////"):
        out.append(Check("database_url", WARN, "a relative SQLite path depends on the "
                         f"working directory (here: {os.getcwd()}); give an absolute one"))
    relay = settings.relay_target
    if relay is not None:
        host, port = relay.host, relay.port
        problem = check_relay(relay, settings.relay_ca_file)
        if problem is not None:
            problem = f"{relay_url(settings)}: {problem}"
            if relay.scheme == "smtp":
                problem = (f"no SMTP answer from {host}:{port}: is the MTA running and "
                           "listening there?")
        elif relay.user:
            try:
                RelayConnection(relay, settings.address, settings=settings).send_nothing()
            except RelayDown as exc:
                problem = f"{relay_url(settings)}: {exc}"
        out.append(Check("relay", FAIL, problem) if problem
                   else Check("relay", OK, f"{host}:{port} answers"
                              + (f" and takes the login of {relay.user}" if relay.user else "")))
        if settings.daily_send_limit:
            out.append(Check("sending", OK, f"at most {settings.daily_send_limit} mails in "
                             "any 24 hours; the rest wait"))
    if settings.imap is not None:
        problem = check_mailbox(settings)
        out.append(Check("imap", FAIL, f"{settings.imap}: {problem}") if problem
                   else Check("imap", OK, f"{settings.imap}: logged in, the folder is there"))
    if relay is None:
        problem = _writable(settings.maildir / "tmp")
        out.append(Check("maildir", FAIL, f"{settings.maildir}: {problem}") if problem
                   else Check("maildir", OK, f"{settings.maildir.resolve()} is writable "
                              "(no relay: replies are kept there)"))
        if not settings.maildir.is_absolute():
            out.append(Check("maildir", WARN, "a relative path depends on the working "
                             "directory; give an absolute one"))
    if settings.log_file is not None:
        try:
            with settings.log_file.open("a"):
                pass
            out.append(Check("log_file", OK, f"{settings.log_file} is writable"))
        except OSError as exc:
            out.append(Check("log_file", FAIL, f"{settings.log_file}: {describe(exc)}"))
    if settings.lmtp is not None and settings.lmtp.startswith("/"):
        out.append(_socket_group(settings))
    return out


def _socket_group(settings: Settings) -> Check:
    """Whether the LMTP socket can be given to its group: the group exists, and this
    user may give files to it (root, or a member)."""
    mode = f"{settings.lmtp_socket_mode:04o}"
    if settings.lmtp_socket_group is None:
        return Check("lmtp_socket", OK, f"{settings.lmtp}: mode {mode}, the service's own "
                     "group (set lmtp_socket_group for the MTA's, e.g. postfix)")
    try:
        group = grp.getgrnam(settings.lmtp_socket_group)
    except KeyError:
        return Check("lmtp_socket", FAIL, f"lmtp_socket_group: there is no group "
                     f"{settings.lmtp_socket_group!r} on this host")
    if os.geteuid() != 0 and group.gr_gid not in os.getgroups():
        return Check("lmtp_socket", FAIL, f"this user (uid {os.geteuid()}) is not in group "
                     f"{group.gr_name}, so cannot give it the socket: adduser pbmserv "
                     f"{group.gr_name}, or SupplementaryGroups= in the unit")
    return Check("lmtp_socket", OK, f"{settings.lmtp}: mode {mode}, group {group.gr_name}")


# -- the inbox ----------------------------------------------------------------------------
def replay(db: Database, settings: Settings, inbound_id: int) -> str:
    """Process a failed (or ignored) mail again; returns its status afterwards."""
    with db.transaction() as session:
        m = session.get(InboundMessage, inbound_id)
        if m is None:
            raise PlayerError(f"no stored message {inbound_id}")
        if m.status is InboundStatus.DONE:
            raise PlayerError(f"message {inbound_id} was processed already")
        if m.size and not m.raw:
            raise PlayerError(f"message {inbound_id} was ignored, and its text was not kept: "
                              "ask its sender to send it again")
        m.status, m.error = InboundStatus.NEW, None
    return process_message(db, settings, inbound_id)


def replay_failed(db: Database, settings: Settings) -> list[tuple[int, str]]:
    """Process every failed mail again, oldest first; (id, status afterwards) each."""
    with db.reading() as session:
        ids = list(session.scalars(select(InboundMessage.id)
                                   .where(InboundMessage.status == InboundStatus.FAILED)
                                   .order_by(InboundMessage.id)))
    return [(i, replay(db, settings, i)) for i in ids]


@dataclass(frozen=True)
class Purged:
    inbox: int
    outbox: int


def purge(db: Database, older_than: timedelta, now: datetime | None = None) -> Purged:
    """Delete processed mail (done or ignored) received, and outgoing mail (sent or
    discarded) made, before ``older_than`` ago; failed and waiting mail stays.  A
    purged mail's Message-ID is forgotten with it: were it delivered again, it would
    be processed again.  (``serve`` does this by itself, see ``timers.run_purge``.)"""
    inbox, out = purge_mail(db, older_than, now)
    return Purged(inbox, out)


# -- the outbox ---------------------------------------------------------------------------
def retry(db: Database, outbox_id: int | None = None) -> int:
    """Make a pending or failed outgoing mail (every one, if ``outbox_id`` is None) due
    at once, its back-off forgotten; returns how many."""
    query = update(OutboxMessage).where(
        OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.FAILED)), _not_sending())
    if outbox_id is not None:
        _outbox_row(db, outbox_id, "retried")
        query = query.where(OutboxMessage.id == outbox_id)
    with db.transaction() as session:
        return int(session.execute(
            query.values(status=OutboxStatus.PENDING, leased_by=None,
                         next_attempt_at=OutboxMessage.created_at)
            .execution_options(synchronize_session=False)).rowcount)  # type: ignore[attr-defined]


def discard(db: Database, outbox_id: int) -> None:
    """Never send a pending or failed outgoing mail (kept, marked discarded)."""
    _outbox_row(db, outbox_id, "discarded")
    with db.transaction() as session:
        changed = session.execute(update(OutboxMessage)
                                  .where(OutboxMessage.id == outbox_id, _not_sending())
                                  .values(status=OutboxStatus.DISCARDED, leased_by=None)
                                  .execution_options(synchronize_session=False)).rowcount  # type: ignore[attr-defined]
    if not changed:  # a sender took it between the look and the change
        _outbox_row(db, outbox_id, "discarded")
        raise PlayerError(f"outgoing mail {outbox_id} is being sent right now: it cannot be "
                          "discarded; look again with 'pbmserv outbox list' in a few minutes")


def _not_sending() -> ColumnElement[bool]:
    """Rows no sender holds now: one that does may be sending the mail this instant,
    and a row changed under it would be sent again (or sent though discarded)."""
    return or_(OutboxMessage.leased_by.is_(None), OutboxMessage.next_attempt_at <= utcnow())


def _outbox_row(db: Database, outbox_id: int, verb: str) -> None:
    with db.reading() as session:
        found = session.execute(select(OutboxMessage.status, _not_sending())
                                .where(OutboxMessage.id == outbox_id)).first()
    if found is None:
        raise PlayerError(f"there is no outgoing mail {outbox_id}")
    status, idle = found
    if status not in (OutboxStatus.PENDING, OutboxStatus.FAILED):
        raise PlayerError(f"outgoing mail {outbox_id} is {status}: it cannot be {verb}")
    if not idle:
        raise PlayerError(f"outgoing mail {outbox_id} is being sent right now: it cannot be "
                          f"{verb}; look again with 'pbmserv outbox list' in a few minutes")


def send_now(db: Database, settings: Settings) -> int:
    """Send every due mail now; returns how many went out."""
    return Sender(db, settings).send_due(limit=100_000)


# -- accounts and boards that send mail ---------------------------------------------------
def mail_reset(db: Database, settings: Settings, userid: str) -> tuple[bool, datetime]:
    """Mail the account a one-time code to set a new password with; returns whether a
    code went out (no: one went out lately) and until when the account's code is
    valid."""
    now = utcnow()
    with db.transaction() as session:
        sent, row = mail_reset_code(session, settings, existing_user(session, userid), now)
        return sent, row.expires_at


@dataclass(frozen=True)
class Ended:
    """A board the administrator ended: how it stands now, and the mails queued."""

    summary: str
    mails: int


def end_board(db: Database, settings: Settings, game: str, number: int,
              winner: str | None, reason: str | None = None) -> Ended:
    """Abandon a board (``winner`` None: no result) or adjudicate it (``winner`` a
    userid or ``draw``); its players, subscribers and notify list are mailed as for any
    end of a game, in the same transaction."""
    with db.transaction() as session:
        service = GameService(session)
        if winner is None:
            board = admin.abandon(service, game, number, reason)
        else:
            board = admin.adjudicate(service, game, number, winner, reason)
        mails = Notifier(session, settings).notify(service.events)
        return Ended(board_summary(session, engine_of(board), board), mails)


def board_text(db: Database, game: str, number: int) -> str:
    """A board's summary, every move listed."""
    with db.reading() as session:
        board = admin.find_board(session, game, number)
        return board_summary(session, engine_of(board), board, full=True)
