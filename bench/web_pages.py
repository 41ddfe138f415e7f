"""Web pages on a big database: how long each page takes with 100,000 boards.

A SQLite database is built through the game service (not by mail): 200 players,
100,000 boards of the four games, 200 Honeydonuts boards 30 moves on, 100 of them
finished (and rated), an Amoeba board at move 1,000, an Ex nihilo board at move 30,
100 open challenges and a round robin tournament of 8 players.  Then every kind of
page is requested through Starlette's TestClient (the whole ASGI stack, in this
process) and the wall time of each request is measured: median and 95th percentile.

    .venv/bin/python bench/web_pages.py [--boards 100000] [--requests 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from pbmserv.config import Settings  # noqa: E402
from pbmserv.db.base import utcnow  # noqa: E402
from pbmserv.db.migrate import upgrade  # noqa: E402
from pbmserv.db.models import Board, User  # noqa: E402
from pbmserv.db.session import Database  # noqa: E402
from pbmserv.games import ENGINES, AnyEngine, get_engine  # noqa: E402
from pbmserv.service.accounts import open_account  # noqa: E402
from pbmserv.service.boards import load_board, position_of  # noqa: E402
from pbmserv.service.games import GameService  # noqa: E402
from pbmserv.service.reply_tokens import ReplyToken, make_token, server_secret  # noqa: E402
from pbmserv.service.tournaments import Setup, TournamentService  # noqa: E402
from pbmserv.tournaments import TournamentKind  # noqa: E402
from pbmserv.web import create_app  # noqa: E402

PLAYERS = 200
BATCH = 2000
SHUFFLE = ["Nc3", "Nc7", "Nb1", "Nb9"]


def engine(name: str) -> AnyEngine:
    found = get_engine(name)
    assert found is not None
    return found


def make_players(db: Database) -> None:
    with db.transaction(lazy=True) as session:
        for i in range(PLAYERS):
            # as if it had answered its confirmation mail
            open_account(session, f"p{i}", f"pw{i}-bench",
                         f"p{i}@bench.example").confirmed_at = utcnow()


def make_boards(db: Database, count: int) -> None:
    """``count`` boards, the games taking turns, between pairs of players."""
    games = [engine(name) for name in ENGINES]
    done = 0
    while done < count:
        with db.transaction(lazy=True) as session:
            people = list(session.scalars(select(User).where(User.bot.is_(None))
                                          .order_by(User.id)))
            service = GameService(session)
            for n in range(done, min(count, done + BATCH)):
                pair = [people[(2 * n) % PLAYERS], people[(2 * n + 1) % PLAYERS]]
                service.challenge(games[n % len(games)], pair, [])
        done = min(count, done + BATCH)


def play_random(db: Database, game: str, number: int, plies: int, rng: random.Random) -> None:
    e = engine(game)
    with db.transaction(lazy=True) as session:
        board = load_board(session, e, number, lock=True)
        service = GameService(session)
        for _ in range(plies):
            pos = position_of(e, board)
            if e.outcome(pos) is not None or board.finished:
                return
            move = e.format_move(pos, rng.choice(e.legal_moves(pos)))
            service.play(board, board.players[board.to_move].user, move)


def shuffle(db: Database, number: int, plies: int) -> None:
    e = engine("amoeba")
    with db.transaction(lazy=True) as session:
        board = load_board(session, e, number, lock=True)
        service = GameService(session)
        for ply in range(plies):
            service.play(board, board.players[board.to_move].user, SHUFFLE[ply % 4],
                         comment="a comment" if ply % 10 == 0 else "")


def resign(db: Database, game: str, number: int) -> None:
    e = engine(game)
    with db.transaction(lazy=True) as session:
        board = load_board(session, e, number, lock=True)
        if not board.finished:
            GameService(session).resign(board, board.players[board.to_move].user)


def seeks_and_tournament(db: Database) -> None:
    with db.transaction(lazy=True) as session:
        people = list(session.scalars(select(User).order_by(User.id)))
        service = GameService(session)
        for i in range(100):
            service.seek(engine(list(ENGINES)[i % len(ENGINES)]), people[i], [])
        tournaments = TournamentService(service)
        tournaments.create(people[0], "bench", engine("honeydonuts"),
                           Setup(TournamentKind.ROUND_ROBIN))
        for person in people[1:8]:
            tournaments.join("bench", person)
        tournaments.start("bench", people[0])


def move_page(db: Database, game: str, number: int) -> str:
    """The move page of the player to move on a board (the link of their board mail)."""
    e = engine(game)
    with db.transaction() as session:
        board = load_board(session, e, number)
        user = board.players[board.to_move].user
        token = make_token(server_secret(session, None),
                           ReplyToken(board.id, user.id, board.ply + 1, board.takebacks),
                           user.credential_changes)
    return f"/move/{token}"


def waiting(db: Database, numbers: list[int], game: str = "honeydonuts") -> int:
    """The first of these boards of ``game`` still in play."""
    e = engine(game)
    with db.reading() as session:
        return next(n for n in numbers if not load_board(session, e, n).finished)


def highest(db: Database, game: str) -> int:
    with db.reading() as session:
        return int(session.scalar(select(func.max(Board.number)).where(Board.game == game))
                   or 0)


def build(work: Path, boards: int) -> tuple[Database, dict[str, str]]:
    """The database and the pages to time (name -> path)."""
    url = f"sqlite:///{work / 'web.sqlite3'}"
    db = Database(url)
    upgrade(db)
    rng = random.Random(1)
    started = time.monotonic()
    make_players(db)
    make_boards(db, boards)
    print(f"{boards} boards made in {time.monotonic() - started:.0f} s", flush=True)
    top = highest(db, "honeydonuts")
    played = list(range(top - 199, top + 1))
    for number in played:
        play_random(db, "honeydonuts", number, 30, rng)
    for number in played[:100]:
        resign(db, "honeydonuts", number)
    long_game = highest(db, "amoeba")
    shuffle(db, long_game, 1000)
    nihil = highest(db, "exnihilo")
    play_random(db, "exnihilo", nihil, 30, rng)
    for number in range(nihil - 5, nihil):  # boards in play at move 10 (or so)
        play_random(db, "exnihilo", number, 10, rng)
    seeks_and_tournament(db)
    print(f"moves, results and a tournament added; {time.monotonic() - started:.0f} s in all",
          flush=True)
    with db.reading() as session:
        user = session.scalar(select(User).where(User.key == "p7"))
        assert user is not None
        middle_id = boards // 2
    live = played[-1]
    pages = {
        "front page (games, open challenges)": "/",
        "a game's boards, newest": "/games/honeydonuts",
        "a game's boards, a page in the middle": f"/games/honeydonuts?before={top - boards // 8}",
        "a board at move 30 (last move)": f"/boards/honeydonuts/{live}",
        "the same board at move 15": f"/boards/honeydonuts/{live}?ply=15",
        "a finished, rated board": f"/boards/honeydonuts/{played[0]}",
        "an amoeba board at move 1000": f"/boards/amoeba/{long_game}",
        "the same board at move 500": f"/boards/amoeba/{long_game}?ply=500",
        "an exnihilo board at move 15 of 30": f"/boards/exnihilo/{nihil}?ply=15",
        "a player with 1,000 boards": "/players/p7",
        "the same player, a page in the middle": f"/players/p7?before={middle_id}",
        "tournaments": "/tournaments",
        "a round robin of 8": "/tournaments/bench",
    }
    # the move pages (issue 39): Amoeba's thousand moves a position, its slides listed
    fresh = highest(db, "amoeba") - 4
    amoeba = move_page(db, "amoeba", fresh)
    long_moves = move_page(db, "amoeba", long_game)
    pages |= {
        "move page: Amoeba, the pieces (1,098 legal turns)": amoeba,
        "move page: Amoeba, the slides after e2-e4": f"{amoeba}?p=e2,e4",
        "move page: Amoeba, the preview of e2-e4,b3-b4": f"{amoeba}?p=e2,e4,b3,b4",
        "move page: Amoeba at move 1000, the pieces": long_moves,
        "move page: Ex nihilo at move 10": move_page(
            db, "exnihilo", waiting(db, list(range(nihil - 5, nihil)), "exnihilo")),
        "move page: Honey Donuts at move 30": move_page(db, "honeydonuts",
                                                        waiting(db, played[100:])),
    }
    return db, pages


def time_pages(client: TestClient, pages: dict[str, str], requests: int) -> None:
    print(f"\n| page | median ms | p95 ms |  ({requests} requests each)\n|---|---:|---:|")
    for name, path in pages.items():
        for _ in range(3):  # warm up: templates compiled, caches filled
            assert client.get(path).status_code == 200, path
        times = []
        for _ in range(requests):
            start = time.perf_counter()
            response = client.get(path)
            times.append(1000 * (time.perf_counter() - start))
            assert response.status_code == 200, path
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
        print(f"| {name} `{path}` | {statistics.median(times):.1f} | {p95:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=50)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pbmserv-web-"))
    db, pages = build(work, args.boards)
    settings = Settings(database_url=db.url, maildir=work / "mail")
    with TestClient(create_app(db, settings)) as client:
        time_pages(client, pages, args.requests)
    db.dispose()


if __name__ == "__main__":
    main()
