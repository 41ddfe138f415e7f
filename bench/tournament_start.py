"""How long a tournament's start holds the database's write lock.

A double round robin of 32 players is 992 boards and some 2,000 mails.  The start is
done in steps (pbmserv.service.tournaments: ``START_STEP`` boards a transaction, the
rest by the worker's next rounds), so the longest write transaction is what this
measures: the mail that starts it, then each step, on SQLite (a file, WAL), as the
worker runs them.

    .venv/bin/python bench/tournament_start.py [--players 32] [--single]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import Board, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.intake.store import store_message
from pbmserv.processing import process_message
from pbmserv.service.passwords import hash_password

try:
    from pbmserv.timers import run_tournament_steps
except ImportError:  # code from before the start came in steps
    run_tournament_steps = None  # type: ignore[assignment]
from tests.conftest import make_mail


def mail(db: Database, settings: Settings, subject: str, sender: str) -> float:
    """Store and process one mail; the seconds its processing took."""
    stored = store_message(db, make_mail(subject, sender=sender), sender)
    assert stored is not None
    began = time.perf_counter()
    process_message(db, settings, stored)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=32)
    parser.add_argument("--single", action="store_true", help="a single round robin")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        settings = Settings(database_url=url, maildir=Path(tmp) / "mail")
        db = Database(url)
        upgrade(db)
        names = [f"p{n:02d}" for n in range(args.players)]
        hashed = hash_password("secret-pw")
        with db.transaction() as s:
            now = utcnow()
            s.add_all(User(key=n, userid=n, password_hash=hashed, email=f"{n}@example.org",
                           confirmed_at=now) for n in names)
        double = "" if args.single else " -double"
        mail(db, settings, f"tournament create Big honeydonuts p00 secret-pw -roundrobin{double}",
             "p00@example.org")
        for n in names[1:]:
            mail(db, settings, f"tournament join Big {n} secret-pw", f"{n}@example.org")
        start = mail(db, settings, "tournament start Big p00 secret-pw", "p00@example.org")
        steps: list[float] = []
        while run_tournament_steps is not None:
            began = time.perf_counter()
            done = run_tournament_steps(db, settings)
            if not done:
                break
            steps.append(time.perf_counter() - began)
        with db.reading() as s:
            boards = s.scalar(select(func.count()).select_from(Board))
            mails = s.scalar(select(func.count()).select_from(OutboxMessage))
        print(f"{args.players} players, {'single' if args.single else 'double'} round robin: "
              f"{boards} boards, {mails} outbox rows")
        print(f"the start mail: {start:.2f} s in one transaction")
        if steps:
            print(f"then {len(steps)} steps: longest {max(steps):.2f} s, "
                  f"total {sum(steps):.2f} s")
        db.dispose()


if __name__ == "__main__":
    main()
