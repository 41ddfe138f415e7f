"""Work done at its time: boards whose clock is due get their nag or lose on time,
players whose digest is due get it, processed mail older than ``purge_days`` (what
is left of ignored mail after a week) is deleted, and the administrator gets the
mails the incidents call for (and the daily report).

Each batch is one transaction: the new state (a board's clock, a digest's starting
point), its events and the mails commit together, so a crash between the decision
and the mail loses nothing and repeats nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import Select, and_, delete, func, or_, select, update

from pbmserv.bounces.notices import send_probes
from pbmserv.bounces.scoring import lift_answered
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    BoardEvent,
    InboundMessage,
    MailPrefs,
    OutboxMessage,
    PasswordReset,
    User,
)
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.db.status import DigestMode, InboundStatus, OutboxStatus
from pbmserv.notifications import Notifier, alert_route
from pbmserv.notifications.alerts import Untold, mail_alerts
from pbmserv.notifications.digest import mail_digest
from pbmserv.notifications.held import fold_held
from pbmserv.service.confirmations import lapse_due
from pbmserv.service.games import GameService
from pbmserv.service.mail_prefs import next_digest
from pbmserv.service.tournaments import boards_waiting, start_waiting_boards

log = logging.getLogger(__name__)
BATCH = 50
MAX_BATCHES = 100
#: how long a board whose clock failed waits before it is tried again
RETRY_AFTER = timedelta(hours=1)


def run_clocks(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Look at every board whose clock is due; returns how many were looked at.  A
    board whose clock cannot be run (a bug, a position that will not load) has it put
    off by ``RETRY_AFTER`` and is logged, so it keeps no other board waiting."""
    done = 0
    for _ in range(MAX_BATCHES):
        try:
            looked = _clock_batch(db, settings, now, None)
        except Exception as exc:
            log.warning("clock: the batch of due boards failed (%s); each board is tried "
                        "alone", describe(exc, db.url), exc_info=True)
            looked = _clock_one_by_one(db, settings, now)
        done += looked
        if looked < BATCH:
            break
    return done


def _clock_batch(db: Database, settings: Settings, now: datetime | None,
                 board_id: int | None) -> int:
    with db.transaction(lazy=True) as session:
        service = GameService(session, now)
        boards = service.due_boards(BATCH if board_id is None else 1, board_id=board_id)
        for board in boards:
            service.check_clock(board)
        mails = Notifier(session, settings).notify(service.events)
    if boards:
        log.info("clock: %d board(s) looked at, %d mail(s) queued", len(boards), mails)
    return len(boards)


def _clock_one_by_one(db: Database, settings: Settings, now: datetime | None) -> int:
    """The batch failed: each due board in a transaction of its own."""
    with db.reading() as session:
        ids = [board.id for board in GameService(session, now).due_boards(BATCH)]
    for board_id in ids:
        try:
            _clock_batch(db, settings, now, board_id)
        except Exception:
            log.exception("clock of board id %s failed; it is tried again in %s",
                          board_id, RETRY_AFTER)
            with db.transaction() as session:
                GameService(session, now).postpone_clock(board_id, RETRY_AFTER)
    return len(ids)


def run_tournament_steps(db: Database, settings: Settings) -> int:
    """One step of the tournaments' starts (``START_STEP`` boards, their board mails),
    in a transaction of its own; returns how many games it settled (0: none waits)."""
    # looked for first without the write lock: the worker asks after every batch of
    # mail, and almost always nothing waits
    with db.reading() as session:
        if not boards_waiting(session):
            return 0
    with db.transaction(lazy=True) as session:
        service = GameService(session)
        done = start_waiting_boards(service)
        mails = Notifier(session, settings).notify(service.events) if done else 0
    if done:
        log.info("tournaments: %d board(s) started, %d mail(s) queued", done, mails)
    return done


def run_folds(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Send the mails held for an address once their hour is up, folded into one."""
    with db.transaction() as session:
        return fold_held(session, settings, now)


def run_lapses(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Close the accounts whose confirmation never came (``confirm_hours``); returns
    how many."""
    with db.transaction() as session:
        closed = lapse_due(session, now or utcnow(), settings.confirm_hours)
    if closed:
        log.info("accounts: %d unconfirmed account(s) lapsed", closed)
    return closed


def run_digests(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Send every digest that is due; returns how many players were looked at.  A
    digest that cannot be made is put off by ``RETRY_AFTER`` and logged."""
    done = 0
    for _ in range(MAX_BATCHES):
        try:
            looked = _digest_batch(db, settings, now, None)
        except Exception as exc:
            log.warning("digests: the batch of due digests failed (%s); each digest is "
                        "tried alone", describe(exc, db.url), exc_info=True)
            looked = _digests_one_by_one(db, settings, now)
        done += looked
        if looked < BATCH:
            break
    return done


def _due_digests(db: Database, when: datetime, limit: int,
                 user_id: int | None) -> Select[tuple[MailPrefs]]:
    query = (select(MailPrefs)
             .where(MailPrefs.digest != DigestMode.OFF, MailPrefs.digest_next_at <= when)
             .order_by(MailPrefs.digest_next_at).limit(limit))
    if user_id is not None:
        query = query.where(MailPrefs.user_id == user_id)
    if db.is_postgres:
        query = query.with_for_update(skip_locked=True)
    return query


def _digest_batch(db: Database, settings: Settings, now: datetime | None,
                  user_id: int | None) -> int:
    with db.transaction(lazy=True) as session:
        when = now or utcnow()
        due = list(session.scalars(
            _due_digests(db, when, BATCH if user_id is None else 1, user_id)))
        upto = int(session.scalar(select(func.max(BoardEvent.id))) or 0)
        for prefs in due:
            user = session.get(User, prefs.user_id)
            if user is not None and not user.closed_at:
                mail_digest(session, settings, user, prefs.digest_event_id, upto, when)
            prefs.digest_event_id = upto
            prefs.digest_next_at = next_digest(prefs.digest, prefs.digest_hour, when)
    return len(due)


def _digests_one_by_one(db: Database, settings: Settings, now: datetime | None) -> int:
    """The batch failed: each due digest in a transaction of its own."""
    when = now or utcnow()
    with db.reading() as session:
        ids = [prefs.user_id for prefs in session.scalars(_due_digests(db, when, BATCH, None))]
    for user_id in ids:
        try:
            _digest_batch(db, settings, now, user_id)
        except Exception:
            log.exception("digest of user id %s failed; it is tried again in %s",
                          user_id, RETRY_AFTER)
            with db.transaction() as session:
                session.execute(update(MailPrefs).where(MailPrefs.user_id == user_id)
                                .values(digest_next_at=when + RETRY_AFTER))
    return len(ids)


#: rows deleted in one transaction by a purge (so it never holds the write lock long)
PURGE_BATCH = 1000
#: how long what is left of an ignored mail is kept (its row: sender, reason and the
#: key that knows it if it comes again; its text goes when it is processed): longer
#: than any MTA tries a mail again (Postfix: 5 days)
IGNORED_KEPT = timedelta(days=7)


def purge_mail(db: Database, older_than: timedelta, now: datetime | None = None,
               ignored_older_than: timedelta | None = None) -> tuple[int, int]:
    """Delete processed mail (done or ignored) received, and outgoing mail (sent,
    discarded, bounced or held back from a bouncing address) made, before
    ``older_than`` ago (ignored mail before ``ignored_older_than`` ago, if sooner),
    and reset codes expired by then; failed and waiting mail stays.  Returns how many
    (incoming, outgoing) mails went.  A thousand rows a transaction."""
    cutoff = (now or utcnow()) - older_than
    ignored_cutoff = max(cutoff, (now or utcnow()) - (ignored_older_than or older_than))
    old_in = (select(InboundMessage.id)
              .where(or_(and_(InboundMessage.status == InboundStatus.DONE,
                              InboundMessage.received_at < cutoff),
                         and_(InboundMessage.status == InboundStatus.IGNORED,
                              InboundMessage.received_at < ignored_cutoff)))
              .order_by(InboundMessage.id).limit(PURGE_BATCH))
    old_out = (select(OutboxMessage.id)
               .where(OutboxMessage.status.in_((OutboxStatus.SENT, OutboxStatus.DISCARDED,
                                                OutboxStatus.BOUNCED,
                                                OutboxStatus.SUPPRESSED, OutboxStatus.FOLDED)),
                      OutboxMessage.created_at < cutoff)
               .order_by(OutboxMessage.id).limit(PURGE_BATCH))
    inbox = out = 0
    while True:
        with db.transaction() as session:
            out_ids = list(session.scalars(old_out))
            if out_ids:
                session.execute(delete(OutboxMessage).where(OutboxMessage.id.in_(out_ids))
                                .execution_options(synchronize_session=False))
            in_ids = list(session.scalars(old_in))
            if in_ids:
                # outgoing mail that stays forgets the purged mail it answered
                session.execute(update(OutboxMessage)
                                .where(OutboxMessage.inbound_id.in_(in_ids))
                                .values(inbound_id=None)
                                .execution_options(synchronize_session=False))
                session.execute(delete(InboundMessage).where(InboundMessage.id.in_(in_ids))
                                .execution_options(synchronize_session=False))
        inbox, out = inbox + len(in_ids), out + len(out_ids)
        if len(in_ids) < PURGE_BATCH and len(out_ids) < PURGE_BATCH:
            break
    with db.transaction() as session:
        session.execute(delete(PasswordReset).where(PasswordReset.expires_at < cutoff))
    return inbox, out


def run_purge(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Delete the processed mail older than ``purge_days``, ignored mail older than
    ``IGNORED_KEPT`` (none if ``purge_days`` is 0); returns how many mails (incoming
    and outgoing) went."""
    if not settings.purge_days:
        return 0
    inbox, out = purge_mail(db, timedelta(days=settings.purge_days), now, IGNORED_KEPT)
    if inbox or out:
        log.info("purge: %d incoming and %d outgoing mail(s) older than %d days deleted",
                 inbox, out, settings.purge_days)
    return inbox + out


def run_alerts(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Look for late queues, mail the administrator what the incidents call for;
    returns how many mails were queued."""
    untold: list[Untold] = []
    with db.transaction() as session:
        queued = mail_alerts(session, settings, now or utcnow(), untold)
    for alert in untold:  # once committed: a command may take its time
        alert_route.tell(settings, alert.subject, alert.text, alert.why)
    return queued


def run_bounce_probes(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Mail again each suspended address whose probe went out a day ago and did not
    bounce, and probe those due one (pbmserv.bounces.notices); returns how many probes
    were queued."""
    now = now or utcnow()
    with db.transaction() as session:
        for lifted in lift_answered(session, now):
            log.info("bounces: the probe to %s did not bounce: it is mailed again (%d mail(s) "
                     "were held back since %s)", lifted.address, lifted.held,
                     f"{lifted.since:%Y-%m-%d %H:%M}")
        return send_probes(session, settings, now)
