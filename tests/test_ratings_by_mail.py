"""Ratings, standings, history and records by mail, checked against an independent
Glicko-2 (the second implementation in tests/test_glicko2.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, BoardRating, PlayerRating, User
from pbmserv.db.session import Database
from pbmserv.records import parse_text
from pbmserv.timers import run_clocks
from tests.conftest import Mailer
from tests.test_clocks import time_passes
from tests.test_glicko2 import _reference

SCALE = 400 / math.log(10)


@dataclass
class Expected:
    """The independent side: each player's values, worked out here."""

    rating: float = 1500.0
    rd: float = 350.0
    vol: float = 0.06
    last: datetime | None = None

    def aged(self, now: datetime) -> Expected:
        rd = self.rd
        if self.last is not None:
            for _ in range(int((now - self.last).total_seconds() // (30 * 86400))):
                rd = min(350.0, math.sqrt(rd**2 + (SCALE * self.vol) ** 2))
        return Expected(self.rating, rd, self.vol, self.last)


def play(expected: dict[str, Expected], a: str, b: str, score_a: float, now: datetime) -> None:
    ea, eb = expected[a].aged(now), expected[b].aged(now)
    ra = _reference(ea.rating, ea.rd, ea.vol, [(eb.rating, eb.rd, score_a)])
    rb = _reference(eb.rating, eb.rd, eb.vol, [(ea.rating, ea.rd, 1 - score_a)])
    expected[a] = Expected(*ra, last=now)
    expected[b] = Expected(*rb, last=now)


def ended(db: Database, number: int) -> datetime:
    with db.transaction() as s:
        board = s.scalar(select(Board).where(Board.number == number))
        assert board is not None
        return board.updated_at


def stored(db: Database) -> dict[str, tuple[float, float, float]]:
    with db.transaction() as s:
        return {r.user.userid: (r.rating, r.rd, r.volatility)
                for r in s.scalars(select(PlayerRating))}


def check(db: Database, expected: dict[str, Expected]) -> None:
    got = stored(db)
    assert sorted(got) == sorted(expected)
    for uid, e in expected.items():
        assert got[uid] == pytest.approx((e.rating, e.rd, e.vol), abs=1e-3), uid


def move(mailer: Mailer, uid: str, number: int, word: str, body: str = "") -> str:
    return mailer.reply(f"amoeba move {number} {uid} pw-{uid} {word}", body,
                        sender=f"{uid}@example.org")


def shown(rating: float, rd: float) -> str:
    return f"{round(rating)}{'?' if rd > 110 else ''}"


def test_ratings_follow_glicko2_for_every_ending(mailer: Mailer, db: Database,
                                                 settings: Settings) -> None:
    mailer.signup("alice", "bob", "carol")
    expected: dict[str, Expected] = {}
    # 101: alice beats bob by resignation, after a move with a comment
    mailer.reply("amoeba challenge alice bob")
    move(mailer, "alice", 101, "e2-e4", "Good luck!")
    out = mailer.send("amoeba resign 101 bob pw-bob", sender="bob@example.org")
    expected |= {"alice": Expected(), "bob": Expected()}
    play(expected, "alice", "bob", 1.0, ended(db, 101))
    check(db, expected)
    alice = next(m for m in out if m.to_addr == "alice@example.org").body
    a, b = expected["alice"], expected["bob"]
    assert f"alice 1500? -> {shown(a.rating, a.rd)} (+{round(a.rating) - 1500})" in alice
    assert f"bob 1500? -> {shown(b.rating, b.rd)} (-{1500 - round(b.rating)})" in alice
    assert "alice 1500? -> 1662? (+162)" in alice  # the example
    # 102: bob and carol agree a draw
    mailer.reply("amoeba challenge bob carol")
    move(mailer, "bob", 102, "propose")
    move(mailer, "carol", 102, "accept")
    expected["carol"] = Expected()
    play(expected, "bob", "carol", 0.5, ended(db, 102))
    check(db, expected)
    # 103: declined, not rated
    mailer.reply("amoeba challenge carol alice")
    move(mailer, "carol", 103, "decline")
    check(db, expected)
    # 104: carol loses to alice on time (both took the board up: it is theirs)
    mailer.reply("amoeba challenge carol alice")
    mailer.reply("amoeba accept 104 carol pw-carol", sender="carol@example.org")
    mailer.reply("amoeba accept 104 alice pw-alice", sender="alice@example.org")
    time_passes(db, 22)
    run_clocks(db, settings)
    play(expected, "carol", "alice", 0.0, ended(db, 104))
    check(db, expected)
    # 105: alice comes back after 65 idle days, as an established player: her RD
    # grows twice (by the paper's step 6) before the game is rated
    with db.transaction() as s:
        row = s.scalar(select(PlayerRating).join(User).where(User.userid == "alice"))
        assert row is not None
        row.rating, row.rd, row.rated_at = 1700.0, 60.0, row.rated_at - timedelta(days=65)
        expected["alice"] = Expected(1700.0, 60.0, row.volatility, row.rated_at)
    mailer.reply("amoeba challenge bob alice")
    mailer.reply("amoeba accept 105 bob pw-bob", sender="bob@example.org")
    text = move(mailer, "alice", 105, "resign")
    before = expected["alice"].aged(ended(db, 105))
    assert 60.9 < before.rd < 62  # grown twice, not three times
    play(expected, "bob", "alice", 1.0, ended(db, 105))
    check(db, expected)
    a = expected["alice"]
    assert f"alice 1700 -> {shown(a.rating, a.rd)} (-{1700 - round(a.rating)})" in text
    with db.transaction() as s:
        change = s.scalar(select(BoardRating).join(User).where(User.userid == "alice")
                          .order_by(BoardRating.id.desc()))
        assert change is not None and change.rd_before == pytest.approx(before.rd, abs=1e-3)

    # the rating list, best first, as an independent implementation has it
    text = mailer.reply("amoeba ratings")
    rows = re.findall(r"^\s+(\d+)\s+(\w+)\s+(\d+\??)\s+(\d+)\s+(\d+)$", text, re.M)
    order = sorted(expected, key=lambda u: -expected[u].rating)
    assert [r[1] for r in rows] == order
    games = {"alice": 3, "bob": 3, "carol": 2}
    for _, uid, rating, rd, count in rows:
        e = expected[uid]
        assert (rating, int(rd), int(count)) == (shown(e.rating, e.rd), round(e.rd), games[uid])
    one = " ".join(mailer.reply("amoeba ratings carol").split())
    assert f"rating {expected['carol'].rating:.2f}, RD {expected['carol'].rd:.2f}" in one
    assert "after 2 rated games" in one
    assert "has no rated Hexamoeba game yet" in mailer.reply("hexamoeba ratings carol")

    standings = mailer.reply("amoeba standings")
    # the declined board 103 counts for nothing
    assert re.search(r"1\s+alice\s+3\s+2\s+1\s+0\s+2$", standings, re.M)
    assert re.search(r"2\s+bob\s+3\s+1\s+1\s+1\s+1.5$", standings, re.M)
    assert re.search(r"3\s+carol\s+2\s+0\s+1\s+1\s+0.5$", standings, re.M)

    history = " ".join(mailer.reply("amoeba history alice").split())
    assert "Board 105, ended " in history
    assert ("lost as Black against bob (resignation: alice resigned). Rating: alice 1700 -> "
            in history)
    assert "Board 103, " in history
    assert "no result as Black against carol (carol declined the game)" in history
    assert "won as Black against carol (time: carol did not move for 21 days)" in history

    record = mailer.reply("amoeba record 101")
    assert "It is proper PGN" in " ".join(record.split())
    text = record[record.index('[Event "?"]'):record.index("\n\n--\n")]
    [parsed] = parse_text(text)
    assert parsed.players == ("alice", "bob") and parsed.result == "1-0"
    assert [m.notation for m in parsed.moves] == ["e2-e4"]
    assert parsed.moves[0].comment == "Good luck!"
    assert [(c.userid, c.before, c.after) for c in parsed.ratings] == [
        ("alice", 1500.0, 1662.31), ("bob", 1500.0, 1337.69)]


@pytest.fixture
def pg_mailer(pg_url: str, tmp_path: Path) -> Iterator[tuple[Mailer, Database, Settings]]:
    db = Database(pg_url)
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    try:
        yield Mailer(db, settings), db, settings
    finally:
        db.dispose()


@pytest.mark.postgres
def test_ratings_on_postgres(pg_mailer: tuple[Mailer, Database, Settings]) -> None:
    test_ratings_follow_glicko2_for_every_ending(*pg_mailer)
