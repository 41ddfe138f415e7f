"""One mail, or one page, costs a bounded amount of work, whatever it holds and however
long the game (issue 34, items 6 and 8): looks back replay from the positions kept
every CHECKPOINT_EVERY moves, and a mail's work budget refuses what does not fit.

The work is counted (moves the engine plays, records written), never timed; the
figures of CPU seconds are bench/attacks.py's (docs/benchmarks.md)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from starlette.testclient import TestClient

import pbmserv.commands.results
import pbmserv.notifications.views
from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import Move
from pbmserv.db.session import Database
from pbmserv.games import AnyEngine, get_engine
from pbmserv.notifications.views import diagram
from pbmserv.service.accounts import find_user
from pbmserv.service.boards import CHECKPOINT_EVERY, load_board
from pbmserv.service.budget import HISTORY_COST, MOVES_LIST_COST, move_cost
from pbmserv.service.games import GameService
from pbmserv.web import create_app
from tests.conftest import Mailer

SHUFFLE = ["Nc3", "Nc7", "Nb1", "Nb9"]
LINES = 50


def flat(text: str) -> str:
    """``text`` with its lines joined: a reply wraps at 76 columns."""
    return " ".join(text.split())


def engine(name: str) -> AnyEngine:
    found = get_engine(name)
    assert found is not None
    return found


@dataclass
class Plays:
    """How many moves an engine played (checked or replayed) since it was set up."""

    count: int = 0


@pytest.fixture
def plays(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Plays]:
    def counting(game: str) -> Plays:
        counted = Plays()
        found = engine(game)
        original = found.play

        def play(pos: Any, notation: str, *, live: bool = False) -> Any:
            counted.count += 1
            return original(pos, notation, live=live)

        monkeypatch.setattr(found, "play", play)
        return counted
    return counting


def shuffle(db: Database, number: int, plies: int) -> None:
    """Amoeba board ``number``: ``plies`` more knight moves, back and forth (Amoeba has
    no repetition rule), through the game service as mail plays them."""
    with db.transaction() as session:
        board = load_board(session, engine("amoeba"), number, lock=True)
        service = GameService(session)
        for _ in range(plies):
            service.play(board, board.players[board.to_move].user, SHUFFLE[board.ply % 4])


def long_amoeba(mailer: Mailer, plies: int) -> None:
    """alice and bob, and Amoeba board 101 at move ``plies``."""
    mailer.signup("alice", "bob")
    mailer.reply("amoeba challenge alice bob")
    shuffle(mailer.db, 101, plies)


def replayed(game: str, notations: list[str], options: tuple[str, ...] = ()) -> Any:
    """The position after ``notations``, played from the start."""
    found = engine(game)
    position = found.new(options)
    for notation in notations:
        position, _ = found.play(position, notation)
    return position


def notations(db: Database, board_id: int = 1) -> list[str]:
    with db.reading() as session:
        return list(session.scalars(select(Move.notation).where(Move.board_id == board_id)
                                    .order_by(Move.ply)))


def exnihilo_line(length: int) -> list[str]:
    """Legal Ex nihilo moves from the start of the large board, none ending the game."""
    ex = engine("exnihilo")
    rng = random.Random(7)
    position, line = ex.new(("-large",)), list[str]()
    while len(line) < length:
        moves = [ex.format_move(position, m) for m in ex.legal_moves(position)]
        rng.shuffle(moves)
        for move in moves:
            after, _ = ex.play(position, move)
            if ex.outcome(after) is None:
                break
        position = after
        line.append(move)
    return line


def test_a_move_keeps_the_position_every_eighth_move(mailer: Mailer) -> None:
    long_amoeba(mailer, 100)
    played = notations(mailer.db)
    with mailer.db.reading() as session:
        kept = session.execute(select(Move.ply, Move.position).where(
            Move.position.is_not(None)).order_by(Move.ply)).tuples().all()
    assert [ply for ply, _ in kept] == [8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96]
    amoeba = engine("amoeba")
    for ply, position in kept:
        assert position == amoeba.serialize(replayed("amoeba", played[:ply]))


def test_a_look_back_at_a_long_game_replays_a_few_moves(
        mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    long_amoeba(mailer, 600)
    truth = diagram(engine("amoeba"), replayed("amoeba", notations(mailer.db)[:598]))
    counted = plays("amoeba")
    reply = mailer.reply("multiple", "\n".join(["amoeba show 101#598"] * LINES),
                         sender="stranger@example.net")
    assert reply.count(truth) == LINES  # the board as it was, every time
    # from the position kept after move 592: six moves a look, not 598
    assert counted.count == LINES * (598 - 592) < LINES * CHECKPOINT_EVERY


def test_an_undo_on_a_long_game_replays_a_few_moves(
        mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    long_amoeba(mailer, 300)  # alice (White) to move: her last move and bob's go back
    played = notations(mailer.db)
    mailer.reply("amoeba move 101 alice pw-alice undo", sender="alice@example.org")
    counted = plays("amoeba")
    mailer.reply("amoeba move 101 bob pw-bob accept", sender="bob@example.org")
    # from the position kept after move 296, not from the start (595 moves): moves 297
    # and 298 for the second move back, then 297 for the board mails' drawing of the
    # position before the last move
    assert counted.count == 3
    with mailer.db.reading() as session:
        board = load_board(session, engine("amoeba"), 101)
        assert board.ply == 298
        assert board.position == engine("amoeba").serialize(replayed("amoeba", played[:298]))


def test_the_web_page_of_a_long_game_costs_what_a_short_one_does(
        mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    long_amoeba(mailer, 600)
    counted = plays("amoeba")
    with TestClient(create_app(mailer.db, mailer.settings)) as client:
        page = client.get("/boards/amoeba/101?ply=410").text
        # the board after move 410: the position kept after 408, moves 409 and 410
        assert counted.count == 2
        first = client.get("/boards/amoeba/101?ply=1").text
    listed = [int(n) for n in re.findall(r'<td[^>]*><a href="/boards/amoeba/101\?ply=(\d+)"',
                                         page)]
    # a hundred rounds around the move shown, not all 600 moves
    assert listed == list(range(309, 509))
    assert '<a href="/boards/amoeba/101?ply=308" rel="prev">earlier moves</a>' in page
    assert '<a href="/boards/amoeba/101?ply=509" rel="next">later moves</a>' in page
    assert 'class="here"><a href="/boards/amoeba/101?ply=410"' in page
    assert "earlier moves" not in first and "Moves 201 to 600 are not listed here" in first


def test_previews_past_the_work_budget_are_refused_unplayed(
        mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("exnihilo challenge alice bob -large")
    line = " ".join(exnihilo_line(10))
    counted = plays("exnihilo")
    out = mailer.send("multiple", "\n".join([f"exnihilo preview 101 {line}"] * LINES),
                      sender="stranger@example.net")
    fit = mailer.settings.work_per_mail // (10 * move_cost("exnihilo"))
    assert counted.count == 10 * fit < 10 * LINES
    [reply] = out
    body = flat(reply.body)
    assert body.count("Preview of Ex nihilo Board 101 after") == fit
    assert ("ERROR: a preview of 10 Ex nihilo moves would take 400 units of work, and the "
            "commands before it in this mail have used 2,000 of the 2,000 one mail may "
            "make the server do") in body
    assert f"(and {LINES - fit - 1} more lines of this mail refused" in body


def test_a_preview_too_long_for_any_mail_says_how_long_one_may_be(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("amoeba challenge alice bob")
    moves = " ".join(SHUFFLE * 10)
    small = Mailer(mailer.db, replace(mailer.settings, work_per_mail=30))
    reply = small.reply(f"amoeba preview 101 {moves}", sender="stranger@example.net")
    assert ("ERROR: a preview of 40 Amoeba moves would take 40 units of work, more than "
            "one mail may make the server do (30 units;") in flat(reply)
    assert "A mail may preview 30 Amoeba moves at most." in flat(reply)


def test_a_queue_is_charged_its_moves(mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("exnihilo challenge alice bob -large")
    pairs = " ".join(exnihilo_line(10))  # alice's five moves, and bob's answers
    counted = plays("exnihilo")
    out = mailer.send("multiple", "\n".join([f"exnihilo queue 101 bob pw-bob {pairs}"] * LINES),
                      sender="bob@example.org")
    fit = mailer.settings.work_per_mail // (10 * move_cost("exnihilo"))
    assert counted.count == 10 * fit < 10 * LINES
    assert "checking a queue of 10 Ex nihilo moves would take 400 units of work" \
        in flat(out[0].body)


def test_records_lists_and_histories_are_charged(
        mailer: Mailer, monkeypatch: pytest.MonkeyPatch) -> None:
    long_amoeba(mailer, 600)
    calls: dict[str, int] = {}

    def counting(name: str) -> None:
        original = getattr(pbmserv.commands.results, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return original(*args, **kwargs)
        monkeypatch.setattr(pbmserv.commands.results, name, counted)

    counting("record_of")
    counting("history")
    amoeba = engine("amoeba")
    original_moves = amoeba.legal_moves

    def legal_moves(pos: Any) -> Any:
        calls["legal_moves"] = calls.get("legal_moves", 0) + 1
        return original_moves(pos)

    monkeypatch.setattr(amoeba, "legal_moves", legal_moves)
    budget = mailer.settings.work_per_mail
    for line in ("amoeba record 101", "amoeba record 101 json", "amoeba moves 101",
                 "amoeba history alice"):
        mailer.send("multiple", "\n".join([line] * LINES), sender="stranger@example.net")
    # a record of 600 moves costs 301 units: 8 of them to a mail, not 50
    assert calls["record_of"] == 2 * (budget // 301)
    assert calls["legal_moves"] == budget // MOVES_LIST_COST < LINES
    assert calls["history"] == budget // HISTORY_COST < LINES


def test_a_record_too_long_for_any_mail_points_to_the_export(mailer: Mailer) -> None:
    long_amoeba(mailer, 600)
    small = Mailer(mailer.db, replace(mailer.settings, work_per_mail=200))
    reply = small.reply("amoeba record 101", sender="stranger@example.net")
    assert ("ERROR: the record of board 101 (600 moves) would take 301 units of work, more "
            "than one mail may make the server do (200 units;") in flat(reply)
    assert ("A mail carries the record of a board of 398 moves at most; the administrator "
            "can export any record ('pbmserv export').") in flat(reply)


def test_show_lists_the_latest_moves_of_a_very_long_game(
        mailer: Mailer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pbmserv.notifications.views, "LISTED_ROUNDS", 100)
    long_amoeba(mailer, 600)
    reply = mailer.reply("amoeba show 101 all", sender="stranger@example.net")
    assert "Moves 1 to 400 are not shown here: a mail lists the latest 200 moves at most" \
        in flat(reply)
    assert re.search(r"^ +201\. ", reply, re.M) and not re.search(r"^ +200\. ", reply, re.M)


def old_boards(url: str) -> list[str]:
    """A database at revision 0015 with two Amoeba boards played before positions were
    kept: 101 at move 100, 102 at move 20; returns the moves of 101."""
    db = Database(url)
    upgrade(db, "0015")
    played = [SHUFFLE[ply % 4] for ply in range(100)]
    canonical = []
    amoeba = engine("amoeba")
    position = amoeba.new(())
    for move in played:
        position, notation = amoeba.play(position, move)
        canonical.append(notation)
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO users (key, userid, password_hash, email, created_at, "
                          "credential_changes) VALUES ('a', 'a', 'x', 'a@x.org', :t, 0), "
                          "('b', 'b', 'x', 'b@x.org', :t, 0)"), {"t": "2026-11-01 10:00:00"})
        for board_id, plies in ((1, 100), (2, 20)):
            conn.execute(text(
                "INSERT INTO boards (id, game, number, options, position, position_version, "
                "ply, to_move, status, created_at, updated_at, turn_started_at, nags_sent, "
                "nag_days, forfeit_days, takebacks, watchers, queued) VALUES (:id, 'amoeba', "
                ":n, '', 'x', 1, :ply, 0, 'active', :t, :t, :t, 0, 7, 21, 0, 0, 0)"),
                {"id": board_id, "n": 100 + board_id, "ply": plies, "t": "2026-11-01 10:00:00"})
            conn.execute(text(
                "INSERT INTO moves (board_id, ply, seat, notation, created_at, nags_before, "
                "seconds_used, automatic) VALUES (:b, :ply, :seat, :notation, :t, 0, 0, :f)"),
                [{"b": board_id, "ply": n, "seat": (n - 1) % 2, "notation": canonical[n - 1],
                  "t": "2026-11-01 10:00:00", "f": False} for n in range(1, plies + 1)])
    upgrade(db)
    db.dispose()
    return canonical


def check_old_boards(url: str, played: list[str]) -> None:
    db = Database(url)
    try:
        with db.reading() as session:
            kept = session.execute(select(Move.board_id, Move.ply, Move.position).where(
                Move.position.is_not(None)).order_by(Move.board_id, Move.ply)).tuples().all()
    finally:
        db.dispose()
    amoeba = engine("amoeba")
    # board 101 (100 moves) replayed by the migration; 102 (20) too short to need it
    assert [(board, ply) for board, ply, _ in kept] == [(1, 8 * n) for n in range(1, 13)]
    for _, ply, position in kept:
        assert position == amoeba.serialize(replayed("amoeba", played[:ply]))


def test_boards_played_before_are_given_their_positions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    check_old_boards(url, old_boards(url))


@pytest.mark.postgres
def test_boards_played_before_are_given_their_positions_on_postgres(pg_blank_url: str) -> None:
    check_old_boards(pg_blank_url, old_boards(pg_blank_url))


@pytest.fixture
def pg_mailer(pg_url: str, tmp_path: Path) -> Iterator[Mailer]:
    db = Database(pg_url)
    yield Mailer(db, Settings(database_url=pg_url, maildir=tmp_path / "mail"))
    db.dispose()


@pytest.mark.postgres
def test_a_look_back_replays_a_few_moves_on_postgres(
        pg_mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    long_amoeba(pg_mailer, 300)
    truth = diagram(engine("amoeba"), replayed("amoeba", notations(pg_mailer.db)[:295]))
    counted = plays("amoeba")
    reply = pg_mailer.reply("amoeba show 101#295", sender="stranger@example.net")
    assert truth in reply and counted.count == 295 - 288


def test_a_mail_of_every_costly_command_stays_within_its_budget(
        mailer: Mailer, plays: Callable[[str], Plays]) -> None:
    """Fifty lines mixing every command that charges the budget: the work done is
    what the budget allows, and every line past it is refused, not run."""
    long_amoeba(mailer, 600)
    with mailer.db.transaction() as session:
        alice, bob = find_user(session, "alice"), find_user(session, "bob")
        assert alice is not None and bob is not None
        GameService(session).challenge(engine("exnihilo"), [alice, bob], ["-large"])
    counted = plays("amoeba")
    ex = plays("exnihilo")
    mix = ["amoeba show 101#598", "amoeba preview 101 " + " ".join(SHUFFLE * 60),
           "amoeba record 101", "exnihilo preview 101 " + " ".join(exnihilo_line(10)),
           "amoeba moves 101", "amoeba history alice", "amoeba show 101"]
    mailer.send("multiple", "\n".join((mix * 8)[:LINES]), sender="stranger@example.net")
    # without a budget: 8 x (6 + 240 + 10 x 40) = 5,168 units of moves alone
    assert counted.count + ex.count * move_cost("exnihilo") <= mailer.settings.work_per_mail


def test_a_games_tables_are_read_once_a_mail_and_ratings_a_page_at_a_time(
        mailer: Mailer, monkeypatch: pytest.MonkeyPatch) -> None:
    mailer.signup("alice", "bob", "carol")
    honey = engine("honeydonuts")
    with mailer.db.transaction() as session:
        service = GameService(session)
        users = [find_user(session, userid) for userid in ("alice", "bob", "carol")]
        for first, second in ((0, 1), (1, 2), (2, 0)):
            pair = [users[first], users[second]]
            board = service.challenge(honey, pair, [])  # type: ignore[arg-type]
            for user in pair:
                service.accept(board, user)  # type: ignore[arg-type]
            service.resign(board, users[second])  # type: ignore[arg-type]
    reads: dict[str, int] = {}
    for name in ("standings", "rating_list"):
        original = getattr(pbmserv.commands.results, name)

        def counted(*args: Any, name: str = name, original: Any = original) -> Any:
            reads[name] = reads.get(name, 0) + 1
            return original(*args)
        monkeypatch.setattr(pbmserv.commands.results, name, counted)
    monkeypatch.setattr(pbmserv.commands.results, "RATINGS_SHOWN", 2)
    body = flat(mailer.reply("multiple", "\n".join(["honeydonuts standings",
                                                    "honeydonuts ratings"] * 25),
                             sender="stranger@example.net"))
    # fifty lines, each table read once: with 100,000 finished boards a read of the
    # standings costs some 0.2 s
    assert reads == {"standings": 1, "rating_list": 1}
    assert body.count("Honey Donuts standings:") == 25
    assert body.count("(and 1 more player below these)") == 25  # ratings: 2 of 3 listed
