"""Flat cost: a move costs the same however many boards there are and however long
the game has gone on.

1. Two databases, one with 100 boards and one with 100,000 (boards made directly
   through the game service, not by mail); on each, the same move mails are stored
   and processed, and the processing time per move is compared.
2. On one database, two amoeba boards: one at move 10, one at move 1,000 (knights
   going back and forth: Amoeba has no repetition rule); the next moves of each are
   mailed and processed, and the time per move is compared.

Times are CPU seconds of this process (the work is all in it), so other load on the
machine disturbs them little.

    .venv/bin/python bench/flat_cost.py [--boards 100000] [--moves 200]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbmserv.config import Settings  # noqa: E402
from pbmserv.db.base import utcnow  # noqa: E402
from pbmserv.db.migrate import upgrade  # noqa: E402
from pbmserv.db.session import Database  # noqa: E402
from pbmserv.games import get_engine  # noqa: E402
from pbmserv.intake.store import store_message  # noqa: E402
from pbmserv.processing import process_pending  # noqa: E402
from pbmserv.service.accounts import open_account  # noqa: E402
from pbmserv.service.boards import load_board  # noqa: E402
from pbmserv.service.games import GameService  # noqa: E402
from tests.conftest import make_mail  # noqa: E402

PLAYERS = 200
SHUFFLE = ["Nc3", "Nc7", "Nb1", "Nb9"]


def database(work: Path, name: str) -> tuple[Database, Settings]:
    url = f"sqlite:///{work / name}.sqlite3"
    db = Database(url)
    upgrade(db)
    return db, Settings(database_url=url, maildir=work / f"{name}-mail")


def make_boards(db: Database, game: str, count: int) -> float:
    """``count`` boards between PLAYERS players; returns the seconds it took."""
    engine = get_engine(game)
    assert engine is not None
    with db.transaction() as session:
        users = [open_account(session, f"p{i}", f"pw{i}-bench", f"p{i}@bench.example")
                 for i in range(PLAYERS)]
        for user in users:  # as if each had answered its confirmation mail
            user.confirmed_at = utcnow()
        session.flush()
        ids = [u.id for u in users]
    start = time.monotonic()
    done = 0
    while done < count:
        with db.transaction(lazy=True) as session:
            from pbmserv.db.models import User

            people = {u.id: u for u in session.query(User).filter(User.id.in_(ids))}
            service = GameService(session)
            for n in range(done, min(count, done + 2000)):
                a, b = ids[(2 * n) % PLAYERS], ids[(2 * n + 1) % PLAYERS]
                service.challenge(engine, [people[a], people[b]], [])
            done = min(count, done + 2000)
    return time.monotonic() - start


def cost_per_move(db: Database, settings: Settings, mails: list[bytes]) -> float:
    """CPU milliseconds to process each of ``mails`` (stored first)."""
    for raw in mails:
        store_message(db, raw, "bench@bench.example")
    start = time.process_time()
    done = process_pending(db, settings)
    assert done == len(mails), (done, len(mails))
    return 1000 * (time.process_time() - start) / done


def first_moves(boards: list[int], rng: random.Random) -> list[bytes]:
    """A first move on each board (honeydonuts: Red, the first player, moves)."""
    engine = get_engine("honeydonuts")
    assert engine is not None
    out = []
    for number in boards:
        pos = engine.new()
        move = engine.format_move(pos, rng.choice(engine.legal_moves(pos)))
        user = f"p{(2 * (number - 101)) % PLAYERS}"
        out.append(make_mail(f"honeydonuts move {number} {user} pw{user[1:]}-bench {move}#1",
                             sender=f"{user}@bench.example"))
    return out


def shuffle_to(db: Database, number: int, plies: int) -> None:
    """Play ``plies`` knight moves on amoeba board ``number`` through the service."""
    engine = get_engine("amoeba")
    assert engine is not None
    with db.transaction(lazy=True) as session:
        board = load_board(session, engine, number, lock=True)
        service = GameService(session)
        for ply in range(plies):
            user = board.players[board.to_move].user
            service.play(board, user, SHUFFLE[ply % 4])


def shuffle_mails(number: int, first_ply: int, count: int) -> list[bytes]:
    out = []
    for ply in range(first_ply, first_ply + count):
        seat = ply % 2
        user = f"p{(2 * (number - 101) + seat) % PLAYERS}"
        out.append(make_mail(f"amoeba move {number} {user} pw{user[1:]}-bench "
                             f"{SHUFFLE[ply % 4]}#{ply + 1}", sender=f"{user}@bench.example"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", type=int, default=100_000)
    ap.add_argument("--moves", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pbmserv-flat-"))
    rng = random.Random(1)

    small_db, small = database(work, "small")
    make_boards(small_db, "honeydonuts", 100)
    big_db, big = database(work, "big")
    took = make_boards(big_db, "honeydonuts", args.boards)
    print(f"{args.boards:,} boards made through the game service in {took:.1f} s "
          f"({args.boards / took:,.0f} boards/s)")
    sample = list(range(101, 101 + min(100, args.moves)))
    small_cost = cost_per_move(small_db, small, first_moves(sample, rng))
    big_cost = cost_per_move(big_db, big, first_moves(sample, rng))
    print(f"a move with 100 boards: {small_cost:.2f} ms; with {args.boards:,} boards: "
          f"{big_cost:.2f} ms; ratio {big_cost / small_cost:.2f}")

    game_db, game = database(work, "game")
    engine = get_engine("amoeba")
    assert engine is not None
    make_boards(game_db, "amoeba", 2)
    shuffle_to(game_db, 101, 10)
    shuffle_to(game_db, 102, 1000)
    short = cost_per_move(game_db, game, shuffle_mails(101, 10, 40))
    long = cost_per_move(game_db, game, shuffle_mails(102, 1000, 40))
    print(f"a move at move 10: {short:.2f} ms; at move 1,000: {long:.2f} ms; "
          f"ratio {long / short:.2f}")


if __name__ == "__main__":
    main()
