"""Honey Donuts, checked against shared/rules/honeydonuts.md move by move."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise

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


# -- an independent count, from shared/rules/honeydonuts.md alone ----------------------
# Nothing here comes from the engine: its own coordinates (axial, rows lettered from the
# bottom and cells numbered from the left, as hexboards.md says), its own lines, shifts
# and repetition rules, slow and plain.
RefCell = tuple[int, int]
RefBoard = tuple[str, ...]  # the piece on each of REF_CELLS, in order
REF_HOLE: RefCell = (0, 0)


def _ref_names() -> dict[RefCell, str]:
    """The hexhex of side 3: axial (q, r), r = -2 for row a, q growing to the right."""
    out = {}
    for r in range(-2, 3):
        first = max(-2, -2 - r)
        for q in range(first, min(2, 2 - r) + 1):
            out[(q, r)] = f"{'abcde'[r + 2]}{q - first + 1}"
    return out


REF_NAMES = _ref_names()
REF_CELLS = sorted(REF_NAMES)


def _ref_lines() -> list[tuple[int, ...]]:
    """Maximal runs of two cells or more along each of the three directions, ended by
    the edge and the hole (as positions in REF_CELLS)."""
    cells = set(REF_CELLS) - {REF_HOLE}
    out = []
    for dq, dr in ((1, 0), (0, 1), (-1, 1)):
        for start in cells:
            if (start[0] - dq, start[1] - dr) in cells:
                continue  # inside a run, not at its start
            run = [start]
            while (run[-1][0] + dq, run[-1][1] + dr) in cells:
                run.append((run[-1][0] + dq, run[-1][1] + dr))
            if len(run) > 1:
                out.append(tuple(REF_CELLS.index(c) for c in run))
    return out


REF_LINES = _ref_lines()


def _ref_start() -> RefBoard:
    placed = {"a1": "r", "a2": "R", "a3": "r", "e1": "b", "e2": "B", "e3": "b", "c3": "#"}
    return tuple(placed.get(REF_NAMES[c], "o") for c in REF_CELLS)


def _ref_turns(board: RefBoard, turn: int, history: frozenset[tuple[RefBoard, int]],
               last: tuple[int, bool] | None, simple: bool
               ) -> list[tuple[RefBoard, tuple[int, bool]]]:
    """Every legal move as (board after it, (line, forward)): a line holding a piece of
    the mover's shifted one cell, the piece pushed off its leading end put on the cell
    its trailing end leaves (a King pushed out is not: the game is over)."""
    own, king, theirs = ("rR", "R", "B") if turn == 0 else ("bB", "B", "R")
    out = []
    for number, line in enumerate(REF_LINES):
        if not any(board[i] in own for i in line):
            continue
        for forward in (True, False):
            order = line if forward else line[::-1]
            pushed = board[order[-1]]
            if pushed == king:
                continue
            after = list(board)
            for a, b in pairwise(order):
                after[b] = board[a]
            after[order[0]] = "." if pushed == theirs else pushed
            new = tuple(after)
            if pushed != theirs:  # pushing the enemy King out is never refused
                if simple and last == (number, not forward):
                    continue
                if not simple and (new, 1 - turn) in history:
                    continue
            out.append((new, (number, forward)))
    return out


def _ref_perft(depth: int, simple: bool, board: RefBoard | None = None, turn: int = 0,
               history: frozenset[tuple[RefBoard, int]] | None = None,
               last: tuple[int, bool] | None = None) -> int:
    board = board or _ref_start()
    history = history if history is not None else frozenset({(board, 0)})
    if depth == 0:
        return 1
    if "R" not in board or "B" not in board:  # a King was pushed out
        return 0
    turns = _ref_turns(board, turn, history, last, simple)
    return sum(_ref_perft(depth - 1, simple, after, 1 - turn, history | {(after, 1 - turn)},
                          move) for after, move in turns)


def test_the_reference_board_is_the_rules_board() -> None:
    assert sorted(len(line) for line in REF_LINES) == [2] * 6 + [3] * 6 + [4] * 6
    assert len(REF_CELLS) == 19 and REF_NAMES[REF_HOLE] == "c3"
    assert len(_ref_turns(_ref_start(), 0, frozenset(), None, False)) == 12  # sanity figure


# Depths 1 and 2 also follow from the hand count above (Blue's twelve replies are
# untouched by any first move of Red); every depth is counted again by the reference
# above, written from the rules text; the two repetition rules part at depth 4.
@pytest.mark.parametrize(("options", "counts"), [
    ((), [1, 12, 144, 1814, 22386]),
    (("-simple",), [1, 12, 144, 1814, 22632]),
])
def test_perft(options: tuple[str, ...], counts: list[int]) -> None:
    pos = E.new(options)
    assert [_ref_perft(d, "-simple" in options) for d in range(len(counts))] == counts
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
