"""The administrator's operations on the server as a whole (its health is
pbmserv.service.health, shared with the web pages' ``/healthz``): a check of its
settings, the inbox and the outbox, and the account and board operations that
send mail (through the Notifier, in the same transaction as the change).

The command line calls these; a web admin could call them the same way.  Each opens
its own transactions; errors that the administrator must fix are PlayerErrors (or
the database's own, which ``pbmserv.problems`` explains).
"""

from __future__ import annotations

import errno
import grp
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import ColumnElement, or_, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from pbmserv.config import Settings, relay_url
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage, OutboxMessage
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.i18n import N_
from pbmserv.intake.imap import check_mailbox
from pbmserv.logs import LOG_FILE_MODE
from pbmserv.mail.addresses import address_key
from pbmserv.notifications import Notifier
from pbmserv.notifications.accounts import mail_reset_code
from pbmserv.notifications.views import board_summary
from pbmserv.processing import process_message
from pbmserv.sender.delivery import Sender, envelope_sender
from pbmserv.sender.relay import RelayConnection, RelayDown
from pbmserv.sender.relay import check as check_relay
from pbmserv.sender.standing import forget_backoff
from pbmserv.service import admin, resets
from pbmserv.service.accounts import existing_user
from pbmserv.service.boards import engine_of
from pbmserv.service.errors import PlayerError
from pbmserv.service.games import GameService
from pbmserv.timers import purge_mail

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


def secret_check(secret: str | None) -> Check:
    """Whether the key of move-by-reply addresses is long and random enough: anyone who
    guesses it can move for any player."""
    if secret is None:
        return Check("secret", OK, "none set: the server makes one at its first start and "
                     "keeps it in the database")
    if len(secret) < SECRET_LENGTH or len(set(secret)) < SECRET_KINDS:
        return Check("secret", FAIL, f"too weak to sign move-by-reply addresses (anyone who "
                     f"guesses it can move for any player): give at least {SECRET_LENGTH} "
                     "random characters, for example the output of 'openssl rand -hex 32', "
                     "or leave it empty for one the server makes")
    return Check("secret", OK, f"{len(secret)} characters")


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL (None for another database, or in memory)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(str(parsed.database))


def _database_checks(settings: Settings) -> list[Check]:
    """Whether the database answers, with this pbmserv's schema.  Nothing is made: a
    SQLite file that is not there yet is said so, not created."""
    missing = _sqlite_file(settings.database_url)
    if missing is not None and not missing.exists():
        return [Check("database", WARN, f"{missing} does not exist yet: 'pbmserv serve' makes "
                      "it at its first start (or 'pbmserv db upgrade' now)")]
    out = []
    db = Database(settings.database_url)
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
    return out


def _sender_check(settings: Settings, sender: str, refused: str | None) -> Check:
    """What the relay thinks of the envelope sender it is given (``verp``)."""
    kind = ("one address per mail, VERP: bounces name the mail" if settings.uses_verp
            else "the login's own address" if sender == settings.login_address != settings.address
            else "the game address")
    if refused is None:
        return Check("sender", OK, f"the relay takes mail from <{sender}> ({kind})")
    hint = (f"set verp = false (mail then goes from <{settings.login_address}>)"
            if settings.uses_verp else
            "the provider wants another sender: log in as the game address, or ask the "
            "provider to let this login send as it")
    return Check("sender", FAIL, f"the relay refuses mail from <{sender}> ({kind}): it "
                 f"answered {refused}; {hint}")


def check_settings(settings: Settings) -> list[Check]:
    """One line per thing the settings need: the file, the database and its schema,
    the relay or the Maildir, the log file."""
    out = [Check("settings", OK, f"read from {settings.source}" if settings.source
                 else "no settings file: defaults and PBMSERV_* variables")]
    out += [Check("settings", WARN, warning) for warning in settings.warnings]
    out.append(secret_check(settings.secret))
    out += _database_checks(settings)
    if settings.database_url.startswith("sqlite:") and not settings.database_url.startswith(
            "sqlite:////"):
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
        else:
            sender = envelope_sender(settings, b"config-check", 1)
            try:
                refused = RelayConnection(relay, sender, settings=settings).try_sender(sender)
            except RelayDown as exc:
                problem = f"{relay_url(settings)}: {exc}"
            else:
                out.append(_sender_check(settings, sender, refused))
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
            os.close(os.open(settings.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                             LOG_FILE_MODE))  # made as the log makes it
            out.append(Check("log_file", OK, f"{settings.log_file} is writable"))
        except OSError as exc:
            out.append(Check("log_file", FAIL, f"{settings.log_file}: {describe(exc)}"))
    if settings.lmtp is not None and settings.lmtp.startswith("/"):
        out.append(_socket_group(settings))
    out += [_listen_check(name, where) for name, where in (("smtp", settings.smtp),
                                                           ("lmtp", settings.lmtp))
            if where is not None]
    relay_failed = any(c.name in ("relay", "sender") and c.level == FAIL for c in out)
    out.append(admin_check(settings, relay_failed=relay_failed))
    return out


def admin_check(settings: Settings, *, relay_failed: bool = False) -> Check:
    """Whether alerts can reach ``alert_address`` by the configured path: not a game
    address (they would come back to the server), and taken by the relay (a Postfix
    whose relay domain knows only the game addresses refuses postmaster@ with "User
    unknown" until ``pbmserv postfix-maps`` maps it to the administrator)."""
    admin = settings.alert_address
    name = "admin_address"
    if admin in settings.addresses:
        return Check(name, FAIL, f"{admin} is a game address: alerts would come back to the "
                     "server; set admin_address to a mailbox you read")
    relay = settings.relay_target
    if relay is None:
        return Check(name, WARN, f"{admin}: with no relay, alerts are written into the "
                     f"Maildir {settings.maildir} with the rest of the mail; set "
                     "alert_command too, or a relay")
    if relay_failed:
        return Check(name, FAIL, f"{admin}: not tried, the relay does not take our mail "
                     "(above): alerts wait with the rest of the mail"
                     + ("" if settings.alert_command else "; set alert_command for a "
                        "second route"))
    sender = envelope_sender(settings, b"config-check", 1)
    try:
        refused = RelayConnection(relay, sender, settings=settings).try_recipient(sender, admin)
    except RelayDown as exc:
        return Check(name, FAIL, f"{admin}: cannot be tried, the relay {relay_url(settings)} "
                     f"does not answer ({exc}): alerts wait with the rest of the mail"
                     + ("" if settings.alert_command else "; set alert_command for a "
                        "second route"))
    if refused is not None:
        domain_hint = (" (the game domain's postmaster@ and abuse@ must go somewhere: 'pbmserv "
                       "postfix-maps --output-dir /etc/postfix' maps them to admin_address, "
                       "with virtual_alias_maps in main.cf; docs/admin.md, section 5)"
                       if admin.rpartition("@")[2] in {a.rpartition("@")[2]
                                                       for a in settings.addresses} else "")
        return Check(name, FAIL, f"the relay refuses mail to {admin}: {refused}; alerts "
                     f"would not arrive{domain_hint}; or set admin_address to a mailbox you "
                     "read")
    return Check(name, OK, f"the relay takes mail for {admin} (a bounce later is told by "
                 "'pbmserv status' and the log)")


def _listen_check(name: str, where: str) -> Check:
    """Whether ``serve`` can listen at ``where`` (host:port, or a Unix socket's path):
    the host is one of this machine's addresses, the port free (or taken: by a
    running serve?), the socket's folder there."""
    if where.startswith("/"):
        folder = Path(where).parent
        if not folder.is_dir():
            return Check(name, FAIL, f"{where}: the folder {folder} does not exist (the unit's "
                         "RuntimeDirectory=pbmserv makes /run/pbmserv)")
        return Check(name, OK, f"{where}: its folder is there")
    host, _, port = where.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError as exc:
        return Check(name, FAIL, f"{where}: {host} is no address of this host: {describe(exc)}")
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return Check(name, WARN, f"{where}: the port is in use (by a 'pbmserv serve' "
                             "that runs? else 'ss -ltnp' names who holds it)")
            return Check(name, FAIL, f"{where}: cannot listen there: {describe(exc)}")
    return Check(name, OK, f"{where}: free to listen on")


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
def retry(db: Database, outbox_id: int | None = None, settings: Settings | None = None) -> int:
    """Make a pending or failed outgoing mail (every one, if ``outbox_id`` is None) due
    at once, its back-off forgotten, and the relay of ``settings`` tried at once
    whatever it answered last (a 421, a refused login); returns how many."""
    query = update(OutboxMessage).where(
        OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.FAILED)), _not_sending())
    if outbox_id is not None:
        _outbox_row(db, outbox_id, "retried")
        query = query.where(OutboxMessage.id == outbox_id)
    if settings is not None and settings.relay is not None:
        forget_backoff(db, settings)  # the relay is tried at once, whatever it said
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


#: what a bulk discard takes: mail not sent yet (waiting, held to be folded, failed)
DISCARDABLE = (OutboxStatus.PENDING, OutboxStatus.HELD, OutboxStatus.FAILED)


def discard_matching(db: Database, *, older_than: timedelta | None = None,
                     to: str | None = None, now: datetime | None = None) -> int:
    """Never send the outgoing mails not sent yet (pending, held or failed) that were
    made before ``older_than`` ago and go ``to`` an address (any +tag or case of it);
    at least one of the two.  Kept, marked discarded; one a sender holds this instant
    is left alone.  Returns how many."""
    if older_than is None and to is None:
        raise PlayerError(N_("say which mail to discard: --older-than, --to, or both"))
    conditions = [OutboxMessage.status.in_(DISCARDABLE), _not_sending()]
    if older_than is not None:
        conditions.append(OutboxMessage.created_at < (now or utcnow()) - older_than)
    if to is not None:
        conditions.append(OutboxMessage.to_key == address_key(to))
    with db.transaction() as session:
        return int(session.execute(
            update(OutboxMessage).where(*conditions)
            .values(status=OutboxStatus.DISCARDED, leased_by=None)
            .execution_options(synchronize_session=False)).rowcount)  # type: ignore[attr-defined]


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
        user = existing_user(session, userid)
        code, row = resets.issue(session, user, now)
        if code is not None:
            mail_reset_code(session, settings, to=user.email, userid=user.userid, code=code,
                            expires=row.expires_at)
        return code is not None, row.expires_at


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
