"""Honey Donuts, checked against shared/rules/honeydonuts.md move by move."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from pbmserv.games.base import IllegalMoveError, MoveSyntaxError, Termination
from pbmserv.games.honeydonuts import GRID, LINES, HoneyDonuts, Position

E = HoneyDonuts()


def cells_of(pos: Position) -> dict[str, str]:
    return {GRID.name(c): pos.cells[GRID.index[c]] for c in GRID.cells}


def moves(pos: Position) -> list[str]:
    return [E.format_move(pos, m) for m in E.legal_moves(pos)]


def test_board_has_eighteen_lines_six_of_each_length() -> None:
    assert sorted(len(line) for line in LINES) == [2] * 6 + [3] * 6 + [4] * 6


def test_setup() -> None:
    c = cells_of(E.new())
    assert (c["a1"], c["a2"], c["a3"]) == ("r", "R", "r")
    assert (c["e1"], c["e2"], c["e3"]) == ("b", "B", "b")
    assert c["c3"] == "#"
    assert sorted(v for k, v in c.items() if k[0] in "bcd" and k != "c3") == ["o"] * 12


def test_red_has_twelve_first_moves() -> None:
    # Row a (2), a1-b1-c1 (2), a1-b2 (2), a3-b3 (2), a3-b4-c5 (2), and the two 4-lines
    # ending in the King at a2, each only away from the King (1 + 1).
    assert sorted(moves(E.new())) == sorted([
        "a1-a2", "a3-a2", "a1-b1", "c1-b1", "a1-b2", "b2-a1", "a3-b3", "b3-a3",
        "a3-b4", "c5-b4", "a2-b2", "a2-b3",
    ])


def test_shift_rotates_the_line() -> None:
    pos, text = E.play(E.new(), "a1-a2")
    assert text == "a1-a2"
    c = cells_of(pos)
    assert (c["a1"], c["a2"], c["a3"]) == ("r", "r", "R")  # a3's piece came back on a1


def test_any_adjacent_pair_in_the_same_direction_is_the_same_move() -> None:
    pos = E.new()
    assert E.play(pos, "a2-a3")[1] == "a1-a2"
    assert E.play(pos, "A3-A2")[1] == "a3-a2"


def test_four_line_shift_pushes_the_far_piece_into_the_rear() -> None:
    pos, text = E.play(E.new(), "b2-c2")  # line a2 b2 c2 d1, toward d1
    assert text == "a2-b2"
    c = cells_of(pos)
    assert (c["a2"], c["b2"], c["c2"], c["d1"]) == ("o", "R", "o", "o")


def test_two_cell_line_directions_are_two_moves() -> None:
    pos = E.new()
    a, _ = E.play(pos, "a3-b3")
    b, _ = E.play(pos, "b3-a3")
    assert a.cells == b.cells  # same arrangement
    assert E.format_move(pos, E.parse_move(pos, "a3-b3")) != E.format_move(
        pos, E.parse_move(pos, "b3-a3"))


def test_may_not_push_out_own_king() -> None:
    with pytest.raises(IllegalMoveError, match="your own King"):
        E.parse_move(E.new(), "b2-a2")


def test_line_without_own_piece_is_refused() -> None:
    with pytest.raises(IllegalMoveError, match="none of your pieces"):
        E.parse_move(E.new(), "e1-e2")


@pytest.mark.parametrize(("text", "message"), [
    ("a1", "is not a move"),
    ("a1-a3", "not neighbouring"),
    ("c3-c4", "hole"),
    ("1a-a1", "not a cell name"),
    ("z9-a1", "no cell z9"),
    ("f1-a1", "no cell f1"),
])
def test_bad_move_text(text: str, message: str) -> None:
    with pytest.raises((IllegalMoveError, MoveSyntaxError), match=message):
        E.parse_move(E.new(), text)


def make_position(pieces: dict[str, str], turn: int = 0, simple: bool = False) -> Position:
    """A position with the given pieces and white pieces everywhere else."""
    cells = ["o"] * len(GRID.cells)
    cells[GRID.index[GRID.centre]] = "#"
    for name, piece in pieces.items():
        cells[GRID.index[GRID.parse(name)]] = piece
    text = "".join(cells)
    return Position(text, turn, simple, frozenset() if simple else frozenset({f"{text}{turn}"}))


def test_pushing_out_enemy_king_wins_and_leaves_the_cell_empty() -> None:
    pos = make_position({"a2": "R", "b1": "B", "b2": "r"})
    after, text = E.play(pos, "b2-b1")  # row b shifts toward b1: the Blue King falls off
    assert text == "b4-b3"
    assert "B" not in after.cells
    assert cells_of(after)["b4"] == "."
    outcome = E.outcome(after)
    assert outcome is not None and outcome.winner == 0
    assert "Blue's King" in outcome.reason
    assert outcome.termination is Termination.KING_OFF
    assert E.legal_moves(after) == []


def test_winning_move_is_never_refused_for_repetition() -> None:
    pos = make_position({"a2": "R", "b1": "B", "b2": "r"})
    move = E.parse_move(pos, "b2-b1")
    after = E.apply(pos, move)
    pos = replace(pos, seen=pos.seen | {f"{after.cells}1"})
    assert E.parse_move(pos, "b2-b1") == move


def test_strict_rule_forbids_a_move_that_recreates_a_position() -> None:
    pos = E.play_all(E.new(), ["a1-b2", "e3-d3", "a1-b2"])  # swaps, Red swapped back
    with pytest.raises(IllegalMoveError, match="already had"):
        E.parse_move(pos, "e3-d3")  # would give the start position, Red to move
    # both ways round the two-cell line give that position: 12 - 2 moves remain
    assert len(E.legal_moves(pos)) == 10
    assert "d3-e3" not in moves(pos)


def test_simple_rule_allows_recreating_a_position() -> None:
    pos = E.play_all(E.new(["-simple"]), ["a1-b2", "e3-d3", "a1-b2"])
    assert E.play(pos, "e3-d3")[0].cells == E.new().cells


def test_simple_rule_bars_turning_back_the_opponents_line() -> None:
    pos = make_position({"a2": "R", "e2": "B", "b2": "r", "b3": "b"}, simple=True)
    pos, _ = E.play(pos, "b1-b2")  # Red shifts row b toward b4
    with pytest.raises(IllegalMoveError, match="straight back"):
        E.parse_move(pos, "b4-b3")
    assert E.play(pos, "b1-b2")[1] == "b1-b2"  # the same way again is fine


def test_simple_rule_on_a_two_cell_line_allows_the_same_direction() -> None:
    pos = make_position({"a2": "R", "e2": "B", "c1": "r", "c2": "b"}, simple=True)
    start = pos.cells
    pos, text = E.play(pos, "c1-c2")
    assert text == "c1-c2"
    with pytest.raises(IllegalMoveError, match="straight back"):
        E.parse_move(pos, "c2-c1")
    assert E.play(pos, "c1-c2")[0].cells == start


def test_player_without_legal_move_loses() -> None:
    pos = make_position({"a1": "R", "e2": "B"})
    legal = E.legal_moves(pos)
    assert sorted(E.format_move(pos, m) for m in legal) == ["a1-a2", "a1-b1", "a1-b2"]
    blocked = replace(pos, seen=pos.seen | {f"{E.apply(pos, m).cells}1" for m in legal})
    assert E.legal_moves(blocked) == []
    outcome = E.outcome(blocked)
    assert outcome is not None and outcome.winner == 1
    assert outcome.reason == "Red has no legal move"
    assert outcome.termination is Termination.NO_MOVES


@pytest.mark.parametrize("options", [(), ("-simple",)])
def test_serialisation_round_trips(options: tuple[str, ...]) -> None:
    pos = E.play_all(E.new(options), ["a1-a2", "e1-e2", "a2-b2"])
    again = E.deserialize(E.serialize(pos))
    assert again == pos
    assert moves(again) == moves(pos)


# Depths 1 and 2 follow from the hand count above (Blue's twelve replies are untouched
# by any first move of Red); depths 3 and 4 were counted by this engine and pin it down.
@pytest.mark.parametrize(("options", "counts"), [
    ((), [1, 12, 144, 1814, 22386]),
    (("-simple",), [1, 12, 144, 1814, 22632]),
])
def test_perft(options: tuple[str, ...], counts: list[int]) -> None:
    pos = E.new(options)
    assert [E.perft(pos, d) for d in range(len(counts))] == counts


def test_king_threats_count_the_shifts_that_push_a_king_off() -> None:
    start = E.new()
    assert E.king_threats(start.cells, 0) == E.king_threats(start.cells, 1) == 0
    threatened = E.play_all(start, ("a1-b1",))
    assert E.king_threats(threatened.cells, 0) == 1  # b1-c2 would push Blue's King off
    assert E.king_exposure(start.cells, 0) == 2  # a2: the end of two lines
    assert E.king_reach(start.cells, 0) == 0
    for seed in range(40):  # the count is that of the legal moves that win at once
        rng = random.Random(seed)
        pos = start
        for _ in range(rng.randrange(1, 30)):
            if E.outcome(pos) is not None:
                break
            winning = [m for m in E.legal_moves(pos) if E.pushes_king_off(pos, m)]
            assert E.king_threats(pos.cells, pos.turn) == len(winning)
            assert all(E.king_lost(E.apply(pos, m).cells) == 1 - pos.turn for m in winning)
            pos = E.apply(pos, rng.choice(E.legal_moves(pos)))
