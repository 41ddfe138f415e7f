"""Instructions a move costs the worker, counted by callgrind (not seconds).

CPU seconds of one run move by a fifth on a shared machine; the instructions a
process runs are the same for the same work, whatever else the machine does. This
runs the worker alone, in one process: BOARDS Honey Donuts boards, every move mailed,
stored and processed one mail a batch, a sender round after each (as a worker does
when moves come one by one), for two lengths of game; the difference of the two
totals divided by the moves between them is what a move costs, setup, imports and
argon2 (a player's password is checked once a process) left out.

    .venv/bin/python bench/move_instructions.py            # both runs under valgrind
    .venv/bin/python bench/move_instructions.py --plies 6  # one run, no valgrind

Needs valgrind (Debian's package). Each run under callgrind takes a minute or two.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BOARDS = 5
SHORT, LONG = 6, 16


def play(plies: int, work: Path) -> None:
    """The measured work: BOARDS boards, ``plies`` moves each, by mail."""
    from sqlalchemy import select

    from pbmserv.config import Settings
    from pbmserv.db.base import utcnow
    from pbmserv.db.migrate import upgrade
    from pbmserv.db.models import Board
    from pbmserv.db.session import Database
    from pbmserv.games import get_engine
    from pbmserv.intake.store import store_message
    from pbmserv.processing import process_pending
    from pbmserv.sender.delivery import Sender
    from pbmserv.service.accounts import open_account
    from pbmserv.service.games import GameService
    from tests.conftest import make_mail

    url = f"sqlite:///{work / 'bench.sqlite3'}"
    db = Database(url)
    upgrade(db)
    # the bench's players mail far faster than people do: the hourly caps are set above
    # what they send
    settings = Settings(database_url=url, maildir=work / "mail", replies_per_sender_hour=10_000,
                        mails_per_address_hour=10_000)
    engine = get_engine("honeydonuts")
    assert engine is not None
    with db.transaction() as session:
        users = [open_account(session, f"p{i}", f"pw{i}-bench", f"p{i}@bench.example")
                 for i in range(2 * BOARDS)]
        for user in users:  # as if each had answered its confirmation mail
            user.confirmed_at = utcnow()
        service = GameService(session)
        numbers = [service.challenge(engine, users[2 * b:2 * b + 2], [], sender=users[2 * b]
                                     .email).number for b in range(BOARDS)]
    sender = Sender(db, settings)
    positions = [engine.new(()) for _ in range(BOARDS)]
    for ply in range(1, plies + 1):
        for b, number in enumerate(numbers):
            pos = positions[b]
            seat = engine.to_move(pos)
            userid = f"p{2 * b + seat}"
            move = engine.format_move(pos, engine.legal_moves(pos)[0])
            positions[b] = engine.apply(pos, engine.legal_moves(pos)[0])
            raw = make_mail(f"honeydonuts move {number} {userid} pw{2 * b + seat}-bench "
                            f"{move}#{ply}", sender=f"{userid}@bench.example")
            store_message(db, raw)
            process_pending(db, settings, reads=1)
            sender.send_due()
    with db.reading() as session:  # every move was played (a refused one costs less)
        plied = session.scalars(select(Board.ply).where(Board.number.in_(numbers))).all()
    assert plied == [plies] * BOARDS, f"boards at plies {plied}, not {plies}"
    db.dispose()


def counted(plies: int) -> int:
    """Instructions of one run of ``plies`` plies under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        target = Path(out) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={target}",
                        sys.executable, __file__, "--plies", str(plies)],
                       check=True, capture_output=True)
        summary = re.search(r"^summary:\s+(\d+)", target.read_text(), re.M)
        assert summary is not None, "callgrind wrote no summary"
        return int(summary.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plies", type=int, help="one run of this many plies, uncounted")
    args = parser.parse_args()
    if args.plies is not None:
        with tempfile.TemporaryDirectory() as work:
            play(args.plies, Path(work))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    short, long = counted(SHORT), counted(LONG)
    moves = (LONG - SHORT) * BOARDS
    print(f"{SHORT} plies: {short:,} instructions; {LONG} plies: {long:,}")
    print(f"a move: {(long - short) / moves / 1e6:.2f} million instructions "
          f"({moves} moves between the two runs)")


if __name__ == "__main__":
    main()
