"""What "did you mean" costs for a userid nobody has (issue 34, item 7): one
'multiple' mail of 50 lines 'reset <an unknown 32-character userid>', and requests
for /players/<that userid>.

A SQLite database gets ``--unconfirmed`` accounts that never confirmed (a squatter's
signups) and ``--confirmed`` confirmed ones, all with random 32-character userids
(the worst case: every one of them is as long as the userid typed), made straight
in the database.  The mail is stored and processed like any mail (the time from
store to the reply queued); the page is requested through Starlette's TestClient
(median of 20 requests after one to warm up).

    .venv/bin/python bench/userid_guesses.py [--unconfirmed 1000] [--confirmed 1000]

To measure code from before a change, put its tree first on the path:
``PYTHONPATH=/tmp/before .venv/bin/python bench/userid_guesses.py``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import InboundMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.intake.store import store_message
from pbmserv.processing import process_message
from pbmserv.web import create_app

LINES = 50
ALPHABET = string.ascii_lowercase + string.digits


def userid(rng: random.Random, first: str) -> str:
    return first + "".join(rng.choice(ALPHABET) for _ in range(31))


def build(db: Database, unconfirmed: int, confirmed: int, rng: random.Random) -> None:
    now = utcnow()
    with db.transaction(lazy=True) as session:
        for n in range(unconfirmed + confirmed):
            uid = userid(rng, "z")  # the letter of the userids asked for
            session.add(User(key=uid, userid=uid, password_hash="!bench",
                             email=f"u{n}@bench.example", created_at=now,
                             confirmed_at=now if n >= unconfirmed else None,
                             confirm_code_hash=None if n >= unconfirmed else "x"))


def reset_mail(db: Database, settings: Settings, rng: random.Random) -> float:
    msg = EmailMessage()
    msg["From"] = "stranger@bench.example"
    msg["To"] = settings.address
    msg["Subject"] = "multiple"
    msg["Message-ID"] = "<guesses@bench.example>"
    msg.set_content("\n".join(f"reset {userid(rng, 'z')}" for _ in range(LINES)) + "\n")
    started = time.perf_counter()
    stored = store_message(db, msg.as_bytes(), "stranger@bench.example")
    assert stored is not None
    process_message(db, settings, stored)
    took = time.perf_counter() - started
    with db.reading() as session:
        status = session.scalar(select(InboundMessage.status)
                                .where(InboundMessage.id == stored))
    assert status is InboundStatus.DONE, status
    return took


def player_page(db: Database, settings: Settings, rng: random.Random) -> float:
    client = TestClient(create_app(db, settings))
    client.get(f"/players/{userid(rng, 'z')}")
    times = []
    for _ in range(20):
        started = time.perf_counter()
        assert client.get(f"/players/{userid(rng, 'z')}").status_code == 404
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unconfirmed", type=int, default=1000)
    parser.add_argument("--confirmed", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(34)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        db = Database(url)
        upgrade(db)
        settings = Settings(database_url=url, maildir=Path(folder) / "mail")
        build(db, args.unconfirmed, args.confirmed, rng)
        took = reset_mail(db, settings, rng)
        accounts = f"{args.unconfirmed:,} unconfirmed and {args.confirmed:,} confirmed accounts"
        print(f"{LINES} lines 'reset <unknown 32-character userid>', {accounts}: "
              f"{took:.2f} s")
        median = player_page(db, settings, rng)
        print(f"/players/<unknown 32-character userid>: median {median * 1000:.1f} ms")
        db.dispose()


if __name__ == "__main__":
    main()
