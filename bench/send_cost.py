"""The sender's CPU per mail, as the worker spends it: a round sends the few mails
its batch of moves made (a text reply to the mover, a text and HTML board mail to
the opponent), into the Maildir; and most rounds find nothing due.

Real move mails are processed first (through pbmserv.processing, as in
bench/flat_cost.py), their outbox rows put off, then made due ``--per-round`` at a
time; only ``Sender.send_due`` is timed, in CPU seconds of this process (user and
system: the writes and syncs of the Maildir count), so other load on the machine
disturbs it little.

    .venv/bin/python bench/send_cost.py [--moves 300] [--per-round 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select, update  # noqa: E402

from bench.flat_cost import cost_per_move, database, first_moves, make_boards  # noqa: E402
from pbmserv.db.base import utcnow  # noqa: E402
from pbmserv.db.models import OutboxMessage  # noqa: E402
from pbmserv.db.session import Database  # noqa: E402
from pbmserv.db.status import OutboxStatus  # noqa: E402
from pbmserv.sender.delivery import Sender  # noqa: E402

#: rounds timed with nothing due, as most of the worker's rounds are
EMPTY_ROUNDS = 2000


def put_off(db: Database) -> list[int]:
    """Every pending row made due only in a day; returns their ids in order."""
    with db.transaction() as session:
        session.execute(update(OutboxMessage)
                        .where(OutboxMessage.status == OutboxStatus.PENDING)
                        .values(next_attempt_at=utcnow() + timedelta(days=1)))
        return list(session.scalars(select(OutboxMessage.id)
                                    .where(OutboxMessage.status == OutboxStatus.PENDING)
                                    .order_by(OutboxMessage.id)))


def make_due(db: Database, ids: list[int]) -> None:
    with db.transaction() as session:
        session.execute(update(OutboxMessage).where(OutboxMessage.id.in_(ids))
                        .values(next_attempt_at=utcnow() - timedelta(seconds=1)))


def one_run(moves: int, per_round: int) -> tuple[float, float, int]:
    """CPU ms per mail sent in rounds of ``per_round``, µs per round with nothing due,
    and how many mails were sent."""
    work = Path(tempfile.mkdtemp(prefix="pbmserv-send-"))
    try:
        db, settings = database(work, "send")
        make_boards(db, "honeydonuts", moves)
        cost_per_move(db, settings, first_moves(list(range(101, 101 + moves)),
                                                random.Random(1)))
        ids = put_off(db)
        sender = Sender(db, settings)
        spent = 0.0
        sent = 0
        for at in range(0, len(ids), per_round):
            make_due(db, ids[at:at + per_round])
            start = time.process_time()
            sent += sender.send_due()
            spent += time.process_time() - start
        with db.reading() as session:
            done = session.scalar(select(func.count()).select_from(OutboxMessage)
                                  .where(OutboxMessage.status == OutboxStatus.SENT))
        assert sent == len(ids) == done, (sent, len(ids), done)
        assert len(list((settings.maildir / "new").iterdir())) == sent
        start = time.process_time()
        for _ in range(EMPTY_ROUNDS):
            assert sender.send_due() == 0
        empty = time.process_time() - start
        db.dispose()
        return 1000 * spent / sent, 1e6 * empty / EMPTY_ROUNDS, sent
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moves", type=int, default=300)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for run in range(1, args.runs + 1):
        per_mail, empty, sent = one_run(args.moves, args.per_round)
        print(f"run {run}: {sent} mails in rounds of {args.per_round}: {per_mail:.3f} ms "
              f"CPU per mail ({2 * per_mail:.3f} per move); a round with nothing due: "
              f"{empty:.0f} µs", flush=True)


if __name__ == "__main__":
    main()
