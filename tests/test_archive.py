"""pbmserv export and import: every finished game out and back in, identical."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.models import Board, BoardRating, ImportedBoard, PlayerRating, User
from pbmserv.db.session import Database
from pbmserv.records.model import format_time, parse_time
from pbmserv.service.accounts import authenticate
from pbmserv.service.errors import PlayerError
from pbmserv.timers import run_clocks
from tests.conftest import Mailer
from tests.test_clocks import time_passes as clock_time_passes


def run(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"PBMSERV_DATABASE_URL": url})


def time_passes(db: Database, days: float) -> None:
    """As tests.test_clocks has it, the ratings' instants moved back too."""
    clock_time_passes(db, days)
    with db.transaction() as s:
        for rating in s.scalars(select(PlayerRating)):
            rating.rated_at -= timedelta(days=days)
        for change in s.scalars(select(BoardRating)):
            change.created_at -= timedelta(days=days)


def say(mailer: Mailer, uid: str, command: str, body: str = "") -> str:
    return mailer.reply(command.format(pw=f"pw-{uid}"), body, sender=f"{uid}@example.org")


def play_some_games(mailer: Mailer, db: Database, settings: Settings) -> None:
    """Finished games of every kind of ending, with comments, a tournament, ratings."""
    mailer.signup("alice", "bob", "carol")
    mailer.reply("amoeba challenge alice bob -small")
    say(mailer, "alice", "amoeba move 101 alice {pw} c2-c3", "Braces {like} these\nand a }")
    say(mailer, "bob", "amoeba move 101 bob {pw} c6-c5")
    say(mailer, "alice", "amoeba move 101 alice {pw} c1-d3,f1-g1#3")
    say(mailer, "bob", "amoeba resign 101 bob {pw}", "Well played, ünïcödé ♞")
    mailer.reply("amoeba challenge bob carol")
    say(mailer, "bob", "amoeba move 102 bob {pw} propose")
    say(mailer, "carol", "amoeba move 102 carol {pw} accept")
    mailer.reply("amoeba challenge carol alice")
    say(mailer, "carol", "amoeba decline 103 carol {pw}")
    mailer.reply("hexamoeba challenge alice carol")
    say(mailer, "alice", "hexamoeba move 101 alice {pw} c2-d2")
    say(mailer, "carol", "hexamoeba accept 101 carol {pw}")  # so she can lose it on time
    # a round robin of Honey Donuts: three boards, all resigned
    say(mailer, "alice", "tournament create Cup honeydonuts alice {pw} -roundrobin")
    say(mailer, "bob", "tournament join Cup bob {pw}")
    say(mailer, "carol", "tournament join Cup carol {pw}")
    say(mailer, "alice", "tournament start Cup alice {pw}")
    with db.transaction() as s:
        boards = [(b.number, [p.user.userid for p in b.players])
                  for b in s.scalars(select(Board).where(Board.game == "honeydonuts"))]
    for number, (first, _) in boards:
        say(mailer, first, f"honeydonuts resign {number} {first} {{pw}}")
    # hexamoeba 101 is lost on time (it stays the one board in play until then)
    mailer.reply("amoeba challenge alice carol")
    say(mailer, "carol", "amoeba accept 104 carol {pw}")  # rated: both took it up
    say(mailer, "alice", "amoeba move 104 alice {pw} resign")
    time_passes(db, 22)
    run_clocks(db, settings)
    with db.transaction() as s:
        assert s.scalar(select(Board).where(Board.status == "active")) is None


@pytest.fixture
def empty_url(tmp_path: Path, migrated_file: Path) -> Iterator[str]:
    path = tmp_path / "empty.sqlite3"
    shutil.copy(migrated_file, path)
    yield f"sqlite:///{path}"


def ratings_of(url: str) -> dict[tuple[str, str], tuple[float, float, float, object]]:
    db = Database(url)
    try:
        with db.transaction() as s:
            # records say when a game ended to the second: so does an import
            return {(r.user.userid, r.game): (r.rating, r.rd, r.volatility,
                                              r.rated_at.replace(microsecond=0))
                    for r in s.scalars(select(PlayerRating))}
    finally:
        db.dispose()


def round_trip(source: str, target: str, form: str, tmp_path: Path) -> str:
    first = tmp_path / f"first.{form}"
    second = tmp_path / f"second.{form}"
    out = run(source, "export", "--format", form, "-o", str(first))
    assert out.exit_code == 0, out.output
    assert "exported 8 game(s)" in out.output
    result = run(target, "import", str(first))
    assert result.exit_code == 0, result.output
    assert "imported 8 game(s)" in result.output
    assert "new disabled accounts: " in result.output
    out = run(target, "export", "--format", form, "-o", str(second))
    assert out.exit_code == 0, out.output
    text = first.read_text(encoding="utf-8")
    assert second.read_text(encoding="utf-8") == text
    # the players' ratings come back exactly as they were
    assert ratings_of(target) == ratings_of(source)
    return text


def test_export_import_export_is_identical_as_text(mailer: Mailer, db: Database,
                                                   settings: Settings, empty_url: str,
                                                   tmp_path: Path) -> None:
    play_some_games(mailer, db, settings)
    text = round_trip(settings.database_url, empty_url, "text", tmp_path)
    assert '[Event "Cup"]' in text and '[Round "3"]' in text
    assert '[Termination "declined"]' in text and '[Termination "time"]' in text
    # a declined board has no result: "*", as history says (not a draw)
    [declined] = [g for g in text.split("\n\n[Event") if '"declined"' in g]
    assert '[Result "*"]' in declined and declined.rstrip().endswith("*")
    flat = " ".join(text.split())
    assert "{Braces {like\\u007d these\\nand a \\u007d}" in flat
    assert "2. c1-d3 {[%ts " in flat and " [%then f1-g1]}" in flat
    assert '[Ratings "alice 1500.00 1662.31; bob 1500.00 1337.69"]' in text
    # one game's, by game and date
    only = run(settings.database_url, "export", "--game", "hexamoeba")
    assert only.output.count("[Event") == 1 and '[Game "hexamoeba"]' in only.output
    none = run(settings.database_url, "export", "--since", "2999-01-01")
    assert none.exit_code == 0 and "exported 0 game(s)" in none.output
    # imported players cannot log in: their accounts are disabled
    target = Database(empty_url)
    try:
        with target.transaction() as s:
            with pytest.raises(PlayerError):
                authenticate(s, "alice", "pw-alice", "alice@example.org")
            alice = s.scalar(select(User).where(User.key == "alice"))
            assert alice is not None and alice.email == "alice@imported.invalid"
            assert len(s.scalars(select(ImportedBoard)).all()) == 8
    finally:
        target.dispose()
    # the administrator hands an account to its player
    enabled = CliRunner().invoke(main, ["users", "enable", "alice", "alice@example.org"],
                                 env={"PBMSERV_DATABASE_URL": empty_url},
                                 input="new-secret\nnew-secret\n")
    assert enabled.exit_code == 0, enabled.output
    assert "new-secret" not in enabled.output
    target = Database(empty_url)
    try:
        with target.transaction() as s:
            assert authenticate(s, "alice", "new-secret", "x@example.org").email == (
                "alice@example.org")
    finally:
        target.dispose()
    # a second import of the same file changes nothing
    path = tmp_path / "first.text"
    again = run(empty_url, "import", str(path))
    assert again.exit_code == 0 and "imported 0 game(s), skipped 8 already here" in again.output


def test_export_import_export_is_identical_as_json(mailer: Mailer, db: Database,
                                                   settings: Settings, empty_url: str,
                                                   tmp_path: Path) -> None:
    play_some_games(mailer, db, settings)
    data = json.loads(round_trip(settings.database_url, empty_url, "json", tmp_path))
    first = data[0]
    assert (first["game"], first["options"], first["result"]) == ("amoeba", ["-small"], "1-0")
    assert [m["notation"] for m in first["moves"]] == ["c2-c3", "c6-c5", "c1-d3,f1-g1"]
    assert first["moves"][0]["comment"] == "Braces {like} these\nand a }"
    assert first["ratings"] == [{"userid": "alice", "before": 1500.0, "after": 1662.31},
                                {"userid": "bob", "before": 1500.0, "after": 1337.69}]
    [declined] = [g for g in data if g["termination"] == "declined"]
    assert (declined["result"], declined["winner"]) == ("*", None)


def test_an_illegal_move_is_refused_with_its_number(mailer: Mailer, db: Database,
                                                    settings: Settings, empty_url: str,
                                                    tmp_path: Path) -> None:
    play_some_games(mailer, db, settings)
    path = tmp_path / "games.pgn"
    run(settings.database_url, "export", "-o", str(path))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("2. c1-d3", "2. c1-c6", 1), encoding="utf-8")
    result = run(empty_url, "import", str(path))
    assert result.exit_code == 1
    assert ("nothing imported: record 1 (amoeba board 101): move 3 (2. c1-c6,f1-g1) is illegal"
            in result.output)
    target = Database(empty_url)
    try:
        with target.transaction() as s:
            assert s.scalars(select(Board)).all() == []
            assert s.scalars(select(User).where(User.bot.is_(None))).all() == []
    finally:
        target.dispose()
    path.write_text("[Event", encoding="utf-8")
    assert "nothing imported: " in run(empty_url, "import", str(path)).output


def test_imported_boards_take_free_numbers(mailer: Mailer, db: Database, settings: Settings,
                                           tmp_path: Path) -> None:
    play_some_games(mailer, db, settings)
    path = tmp_path / "games.json"
    run(settings.database_url, "export", "--format", "json", "--game", "amoeba", "-o", str(path))
    data = json.loads(path.read_text(encoding="utf-8"))
    for record in data:  # the same games, as if from elsewhere: not already here
        started = parse_time(record["started"], "started") - timedelta(seconds=1)
        record["started"] = format_time(started)
        record["site"] = "elsewhere"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run(settings.database_url, "import", str(path))
    assert result.exit_code == 0, result.output
    assert "imported 4 game(s)" in result.output and "disabled" not in result.output
    with db.transaction() as s:
        numbers = sorted(b.number for b in s.scalars(select(Board).where(Board.game == "amoeba")))
        assert numbers == [101, 102, 103, 104, 105, 106, 107, 108]
        # rated once each: the imported games keep their recorded rating changes
        assert len(s.scalars(select(BoardRating)).all()) == 2 * (3 + 3 + 1 + 3)
    out = run(settings.database_url, "export", "--game", "amoeba")
    assert out.output.count('[Site "elsewhere"]') == 4


@pytest.mark.postgres
def test_export_import_on_postgres(pg_url: str, tmp_path: Path, migrated_file: Path) -> None:
    db = Database(pg_url)
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    try:
        play_some_games(Mailer(db, settings), db, settings)
        path = tmp_path / "empty.sqlite3"
        shutil.copy(migrated_file, path)
        round_trip(pg_url, f"sqlite:///{path}", "json", tmp_path)
    finally:
        db.dispose()
