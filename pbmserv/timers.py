"""Work done at its time: boards whose clock is due get their nag or lose on time,
and players whose digest is due get it.

Each batch is one transaction: the new state (a board's clock, a digest's starting
point), its events and the mails commit together, so a crash between the decision
and the mail loses nothing and repeats nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import BoardEvent, MailPrefs, User
from pbmserv.db.session import Database
from pbmserv.db.status import DigestMode
from pbmserv.notifications import Notifier
from pbmserv.notifications.digest import digest
from pbmserv.notifications.outbox import queue_mail
from pbmserv.service.games import GameService
from pbmserv.service.mail_prefs import next_digest

log = logging.getLogger(__name__)
BATCH = 50
MAX_BATCHES = 100


def run_clocks(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Look at every board whose clock is due; returns how many were looked at."""
    done = 0
    for _ in range(MAX_BATCHES):
        with db.transaction(lazy=True) as session:
            service = GameService(session, now)
            boards = service.due_boards(BATCH)
            for board in boards:
                service.check_clock(board)
            mails = Notifier(session, settings).notify(service.events)
        done += len(boards)
        if boards:
            log.info("clock: %d board(s) looked at, %d mail(s) queued", len(boards), mails)
        if len(boards) < BATCH:
            break
    return done


def run_digests(db: Database, settings: Settings, now: datetime | None = None) -> int:
    """Send every digest that is due; returns how many players were looked at."""
    done = 0
    for _ in range(MAX_BATCHES):
        with db.transaction(lazy=True) as session:
            when = now or utcnow()
            query = (select(MailPrefs)
                     .where(MailPrefs.digest != DigestMode.OFF, MailPrefs.digest_next_at <= when)
                     .order_by(MailPrefs.digest_next_at).limit(BATCH))
            if db.is_postgres:
                query = query.with_for_update(skip_locked=True)
            due = list(session.scalars(query))
            upto = int(session.scalar(select(func.max(BoardEvent.id))) or 0)
            for prefs in due:
                user = session.get(User, prefs.user_id)
                mail = None if user is None or user.closed_at else digest(
                    session, user, prefs.digest_event_id, upto)
                if user is not None and mail is not None:
                    queue_mail(session, settings, to=user.email, subject=mail[0], body=mail[1])
                prefs.digest_event_id = upto
                prefs.digest_next_at = next_digest(prefs.digest, prefs.digest_hour, when)
        done += len(due)
        if len(due) < BATCH:
            break
    return done
