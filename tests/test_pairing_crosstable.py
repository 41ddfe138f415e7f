"""Crosstables: the rows as data, and the mail template within 76 columns."""

from __future__ import annotations

import random

from pbmserv.render import render
from pbmserv.tournaments import (
    Pairing,
    TournamentKind,
    crosstable,
    number_text,
    pair_swiss,
    round_robin,
    swiss_players,
)


def _show(title: str, table: object) -> str:
    return render("tournament/crosstable.txt.j2", title=title, table=table)


def _double_rr() -> tuple[list[str], list[Pairing[str]]]:
    players = ["ann", "ben", "cat", "dan"]
    winners = {frozenset({"ann", "ben"}): "ann", frozenset({"cat", "dan"}): None,
               frozenset({"ann", "cat"}): "cat", frozenset({"ben", "dan"}): "ben",
               frozenset({"ann", "dan"}): "ann", frozenset({"ben", "cat"}): None}
    games = []
    for number, rnd in enumerate(round_robin(players, double=True), start=1):
        for a, b in rnd:
            if number == 6:
                games.append(Pairing(number, a, b))  # the last round is still in play
                continue
            w = winners[frozenset({a, b})]
            games.append(Pairing(number, a, b, 0.5 if w is None else float(w == a)))
    return players, games


def test_round_robin_crosstable_exact() -> None:
    players, games = _double_rr()
    table = crosstable(players, games, TournamentKind.ROUND_ROBIN)
    # ann: beat dan and ben twice each, lost to cat (SB 1+1+2+2); cat: drew ben and
    # dan twice, beat ann (SB 1+1+0.5+0.5+4); ben: drew cat twice, beat dan once
    assert [(r.number, r.name, r.points, r.tiebreak) for r in table.rows] == [
        (1, "ann", "4", "6"), (2, "cat", "3", "7"), (3, "ben", "2", "4"),
        (4, "dan", "1", "3")]
    text = _show("Spring double round robin, after round 5", table)
    assert text.splitlines()[:7] == [
        "Spring double round robin, after round 5",
        "",
        "  # Name   Pts     SB  1  2  3  4",
        "  1 ann      4      6 ** .0 11 11",
        "  2 cat      3      7 1. ** == ==",
        "  3 ben      2      4 00 == ** 1.",
        "  4 dan      1      3 00 == .0 **",
    ]
    assert all(len(line) <= 76 for line in text.splitlines())


def test_swiss_crosstable_exact() -> None:
    players = ["ann", "ben", "cat", "dan", "eve"]
    games = [
        Pairing(1, "ann", "cat", 1.0), Pairing(1, "dan", "ben", 1.0), Pairing(1, "eve"),
        Pairing(2, "dan", "ann", 0.5), Pairing(2, "ben", "eve", 1.0), Pairing(2, "cat"),
        Pairing(3, "eve", "ann"), Pairing(3, "cat", "dan", 1.0), Pairing(3, "ben"),
    ]
    table = crosstable(players, games, TournamentKind.SWISS)
    text = _show("Club Swiss, round 3 in play", table)
    # cat and ben tie on 2 points; cat met ann and dan (1.5 each), ben dan and eve
    assert text.splitlines()[2:8] == [
        "  # Name   Pts     BH  R1  R2  R3",
        "  1 cat      2      3 B4- bye W3+",
        "  2 ben      2    2.5 B3- W5+ bye",
        "  3 dan    1.5    5.5 W2+ W4= B1-",
        "  4 ann    1.5    3.5 W1+ B3= B5?",
        "  5 eve      1      2 bye B2- W4?",
    ]


def test_honeydonuts_seats_give_their_initials() -> None:
    table = crosstable(["a", "b"], [Pairing(1, "a", "b", 1.0)], TournamentKind.SWISS,
                       seats=("Red", "Blue"))
    assert [r.cells for r in table.rows] == [("R2+",), ("B1-",)]
    same = crosstable(["a", "b"], [Pairing(1, "a", "b", 0.5)], TournamentKind.SWISS,
                      seats=("Black", "Blue"))
    assert [r.cells for r in same.rows] == [("12=",), ("21=",)]


def test_long_names_are_cut() -> None:
    table = crosstable(["averyveryverylongname", "bo"], [Pairing(1, "bo", "averyveryverylongname",
                                                                 0.0)], TournamentKind.ROUND_ROBIN)
    assert [r.name for r in table.rows] == ["averyveryve~", "bo"]


def test_big_round_robin_splits_into_blocks_within_76_columns() -> None:
    players = [f"player{i:02d}" for i in range(24)]
    games = [Pairing(r, a, b, 1.0) for r, rnd in enumerate(round_robin(players, double=True), 1)
             for a, b in rnd]
    table = crosstable(players, games, TournamentKind.ROUND_ROBIN)
    assert len(table.blocks) > 1
    assert sum(len(b.headers) for b in table.blocks) == 24
    text = _show("A very big double round robin", table)
    assert max(len(line) for line in text.splitlines()) <= 76
    assert text.count("player00") == len(table.blocks)


def test_twelve_player_swiss_fits_in_one_block() -> None:
    rng = random.Random(7)
    players = [f"user{i}" for i in range(12)]
    games: list[Pairing[str]] = []
    for number in range(1, 8):
        rnd = pair_swiss(swiss_players(players, games))
        games += [Pairing(number, a, b, rng.choice((0.0, 0.5, 1.0))) for a, b in rnd.pairs]
    table = crosstable(players, games, TournamentKind.SWISS)
    assert len(table.blocks) == 1
    text = _show("Twelve players, seven rounds", table)
    assert max(len(line) for line in text.splitlines()) <= 76
    assert "BH" in text and "Buchholz" in text


def test_empty_tournament() -> None:
    table = crosstable(["a", "b", "c"], [], TournamentKind.SWISS)
    text = _show("Nothing yet", table)
    assert "  1 a" in text


def test_number_text() -> None:
    assert [number_text(x) for x in (3.0, 2.5, 7.25, 0.0, 10.75)] == [
        "3", "2.5", "7.25", "0", "10.75"]
