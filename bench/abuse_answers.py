"""The two unbounded answers of issue 20, measured: a 9.6 KB 'multiple' mail whose
ten 'list' lines name one game 1,370 times, and the page /tournaments with 1,000 tournaments.

A SQLite database is built through the game service: 20 players, ``--boards`` Amoeba
boards and ``--tournaments`` open tournaments.  Then the list mail is stored and
processed like any mail (the time from store to the reply queued, and the reply's
size), and /tournaments is requested through Starlette's TestClient (median of 10
requests after one to warm up).

    .venv/bin/python bench/abuse_answers.py [--boards 100] [--tournaments 1000]

To measure code from before a change, put its tree first on the path:
``PYTHONPATH=/tmp/before .venv/bin/python bench/abuse_answers.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.intake.store import store_message
from pbmserv.processing import process_message
from pbmserv.service.accounts import open_account
from pbmserv.service.games import GameService
from pbmserv.service.tournaments import Setup, TournamentService
from pbmserv.tournaments import TournamentKind
from pbmserv.web import create_app

PLAYERS = 20


def build(db: Database, boards: int, tournaments: int) -> None:
    amoeba, honey = get_engine("amoeba"), get_engine("honeydonuts")
    assert amoeba is not None and honey is not None
    with db.transaction(lazy=True) as session:
        for i in range(PLAYERS):
            open_account(session, f"p{i}", f"password{i}", f"p{i}@bench.example")
    with db.transaction(lazy=True) as session:
        service = GameService(session)
        people = list(session.scalars(select(User).where(User.bot.is_(None))
                                      .order_by(User.id)))
        for n in range(boards):
            service.challenge(amoeba, [people[n % PLAYERS], people[(n + 1) % PLAYERS]], [])
        cups = TournamentService(service)
        for n in range(tournaments):
            cups.create(people[n % PLAYERS], f"cup{n}", honey,
                        Setup(TournamentKind.ROUND_ROBIN))


def list_mail(db: Database, settings: Settings) -> tuple[int, float, int]:
    msg = EmailMessage()
    msg["From"] = "stranger@bench.example"
    msg["To"] = settings.address
    msg["Subject"] = "multiple"
    msg["Message-ID"] = "<list-bench@bench.example>"
    # ten lines of 137 names each: a command line is at most 1,000 characters
    msg.set_content("\n".join(["list" + " amoeba" * 137] * 10) + "\n")
    raw = msg.as_bytes()
    started = time.perf_counter()
    stored = store_message(db, raw, "stranger@bench.example")
    assert stored is not None
    process_message(db, settings, stored)
    took = time.perf_counter() - started
    with db.reading() as session:
        body = session.scalar(select(OutboxMessage.body)
                              .where(OutboxMessage.inbound_id == stored))
    return len(raw), took, len((body or "").encode())


def tournaments_page(db: Database, settings: Settings) -> tuple[float, int]:
    client = TestClient(create_app(db, settings))
    client.get("/tournaments")
    times = []
    size = 0
    for _ in range(10):
        started = time.perf_counter()
        response = client.get("/tournaments")
        times.append(time.perf_counter() - started)
        size = len(response.content)
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", type=int, default=100)
    parser.add_argument("--tournaments", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        db = Database(url)
        upgrade(db)
        settings = Settings(database_url=url, maildir=Path(folder) / "mail")
        build(db, args.boards, args.tournaments)
        size, took, reply = list_mail(db, settings)
        print(f"list mail of {size:,} bytes naming amoeba 1,370 times, {args.boards} boards: "
              f"reply of {reply:,} bytes after {took:.2f} s")
        median, page = tournaments_page(db, settings)
        print(f"/tournaments with {args.tournaments:,} tournaments: median "
              f"{median * 1000:.0f} ms, {page:,} bytes")
        db.dispose()


if __name__ == "__main__":
    main()
