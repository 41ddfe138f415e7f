"""The clock worker: boards whose clock is due get their nag or lose on time.

Each batch of due boards is one transaction: the board's new clock state, its events
and the mails they call for commit together, so a crash between the decision and
the mail loses nothing and repeats nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.notifications import Notifier
from pbmserv.service.games import GameService

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
