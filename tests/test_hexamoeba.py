"""Hexamoeba, checked against shared/rules/hexamoeba.md move by move."""

from __future__ import annotations

import random

import pytest

from pbmserv.games.base import IllegalMoveError, MoveSyntaxError, Termination
from pbmserv.games.hexamoeba import GRID, Hexamoeba, Position

E = Hexamoeba()


def board(stacks: dict[str, str], turn: int = 0) -> Position:
    cells = [""] * len(GRID.cells)
    for name, stack in stacks.items():
        cells[GRID.index[GRID.parse(name)]] = stack
    pos = Position(tuple(cells), turn)
    return Position(pos.cells, turn, {pos.key: 1})


def at(pos: Position, name: str) -> str:
    return pos.cells[GRID.index[GRID.parse(name)]]


def moves(pos: Position) -> list[str]:
    return sorted(E.format_move(pos, m) for m in E.legal_moves(pos))


def test_setup() -> None:
    pos = E.new()
    assert [at(pos, n) for n in ("a1", "a4", "c1", "c6", "b3")] == ["w", "w", "w", "w", "W"]
    assert [at(pos, n) for n in ("g1", "g4", "e1", "e6", "f3")] == ["b", "b", "b", "b", "B"]
    assert sum(1 for c in pos.cells if c) == 22


def test_sanity_figures() -> None:
    # the sanity figures of shared/rules/hexamoeba.md
    assert len(E.legal_moves(E.new())) == 52
    assert E.perft(E.new(), 2) == 2704


def test_simple_move_jumps_and_lands_on_top() -> None:
    pos = board({"b3": "wb", "b4": "B", "b5": "w", "d4": "W"}, turn=1)
    after, text = E.play(pos, "b3-b5")
    assert text == "b3-b5"
    assert at(after, "b3") == "" and at(after, "b4") == "B" and at(after, "b5") == "wwb"


def test_split_move_deals_bottom_first() -> None:
    pos = board({"c2": "wbW", "c3": "b", "g1": "B"})
    after, text = E.play(pos, "c2>c5")
    assert text == "c2>c5"
    assert (at(after, "c2"), at(after, "c3"), at(after, "c4"), at(after, "c5")) == (
        "", "bw", "b", "W")


def test_height_one_cannot_split_and_distance_must_equal_height() -> None:
    pos = E.new()
    with pytest.raises(IllegalMoveError, match="single piece: it cannot split"):
        E.parse_move(pos, "a1>a2")
    message = "height 1, so it moves exactly 1 point: to the east that is a2, not a3"
    with pytest.raises(IllegalMoveError, match=message):
        E.parse_move(pos, "a1-a3")


def test_errors_name_the_problem() -> None:
    pos = board({"c2": "www", "d4": "B", "a1": "W"})
    with pytest.raises(IllegalMoveError, match="to the north-east that is f3, not d3"):
        E.parse_move(pos, "c2-d3")
    high = board({"e5": "www", "d4": "B"})
    with pytest.raises(IllegalMoveError,
                       match="a stack of height 3 at e5 has no point 3 steps to the north-east"):
        E.parse_move(high, "e5-f5")
    with pytest.raises(IllegalMoveError, match="controlled by Black"):
        E.parse_move(pos, "d4-d5")
    with pytest.raises(IllegalMoveError, match="no stack at d1"):
        E.parse_move(pos, "d1-d2")
    with pytest.raises(IllegalMoveError, match="not on one straight line"):
        E.parse_move(pos, "c2-d4")
    with pytest.raises(MoveSyntaxError, match="is not a move"):
        E.parse_move(pos, "c2")
    with pytest.raises(MoveSyntaxError, match="no cell h1"):
        E.parse_move(pos, "c2-h1")


def test_nothing_blocks_and_the_edge_limits() -> None:
    pos = board({"d1": "ww", "d2": "b", "d3": "b", "g4": "B"})
    assert "d1-d3" in moves(pos) and "d1>d3" in moves(pos)
    # from d1 a height-2 stack has no room to the west, south-west or north-west:
    # east over d2 (d3), and two points up or down the board's edge diagonals
    assert sorted(m for m in moves(pos) if m.startswith("d1")) == [
        "d1-b1", "d1-d3", "d1-f1", "d1>b1", "d1>d3", "d1>f1"]


def test_capturing_the_enemy_kernel_wins() -> None:
    pos = board({"d4": "B", "d3": "w", "a1": "W", "g1": "b"})
    after, _ = E.play(pos, "d3-d4")
    outcome = E.outcome(after)
    assert outcome is not None and outcome.winner == 0
    assert outcome.reason == "White controls the stack holding Black's Kernel"
    assert outcome.termination is Termination.KERNEL
    assert E.legal_moves(after) == []


def test_handing_over_your_own_kernel_is_judged_after_the_opponents_turn() -> None:
    # White splits d2 ("bw"): the black piece lands on White's Kernel at d3.
    pos = board({"d2": "bw", "d3": "W", "g4": "B", "a1": "w"})
    after, _ = E.play(pos, "d2>d4")
    assert at(after, "d3") == "Wb" and E.outcome(after) is None  # judged for White only
    escaped, _ = E.play(after, "d3-d5")  # Black moves the stack on: still holds it
    outcome = E.outcome(escaped)
    assert outcome is not None and outcome.winner == 1
    assert outcome.reason == "Black controls the stack holding White's Kernel"


def test_no_legal_move_loses() -> None:
    pos = board({"d1": "wwwwwww", "d7": "B"})  # height 7: no point 7 steps away anywhere
    assert E.legal_moves(pos) == []
    outcome = E.outcome(pos)
    assert outcome is not None and outcome.winner == 1
    assert outcome.reason == "White has no legal move"
    assert outcome.termination is Termination.NO_MOVES


def test_threefold_repetition_counts_stacks() -> None:
    pos = board({"a1": "w", "a4": "w", "g1": "B", "b3": "W"})
    cycle = ["a1-a2", "g1-g2", "a2-a1", "g2-g1"]
    pos = E.play_all(pos, cycle)
    assert E.outcome(pos) is None  # second occurrence
    pos = E.play_all(pos, cycle)
    outcome = E.outcome(pos)
    assert outcome is not None and outcome.winner == 0
    assert outcome.termination is Termination.REPETITION
    assert outcome.reason == ("the same position came up a third time; "
                              "White controls 3 stacks, Black 1")


def test_repetition_with_equal_stacks_is_a_draw() -> None:
    pos = board({"a1": "W", "g1": "B"})
    pos = E.play_all(pos, ["a1-a2", "g1-g2", "a2-a1", "g2-g1"] * 2)
    outcome = E.outcome(pos)
    assert outcome is not None and outcome.winner is None


def test_agreed_end_counts_stacks() -> None:
    outcome = E.agreed_outcome(board({"a1": "W", "a2": "w", "g1": "B"}))
    assert outcome.winner == 0 and "White controls 2 stacks, Black 1" in outcome.reason


def test_serialisation_round_trips() -> None:
    pos = E.play_all(E.new(), ["c2-d2", "e2-d2", "c3-d3", "d2>b2"])
    again = E.deserialize(E.serialize(pos))
    assert again == pos and again.seen == pos.seen
    assert moves(again) == moves(pos)


# -- an independent reference: plain text coordinates, no shared code ------------------
ROWS = "abcdefg"
LENGTHS = [4, 5, 6, 7, 6, 5, 4]


def _cube(name: str) -> tuple[int, int]:
    r = ROWS.index(name[0])
    n = int(name[1:]) - 1
    return (n + max(0, r - 3), r)


def _ref_moves(stacks: dict[str, str], turn: int) -> list[tuple[str, str, bool]]:
    names = {(_cube(f"{ROWS[r]}{n + 1}")): f"{ROWS[r]}{n + 1}"
             for r in range(7) for n in range(LENGTHS[r])}
    out = []
    for name, stack in stacks.items():
        if not stack or (stack[-1] in "wW") != (turn == 0):
            continue
        x, y = _cube(name)
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1)):
            h = len(stack)
            far = names.get((x + dx * h, y + dy * h))
            if far:
                out.append((name, far, False))
                if h > 1:
                    out.append((name, far, True))
    return out


def _ref_apply(stacks: dict[str, str], move: tuple[str, str, bool]) -> dict[str, str]:
    start, far, split = move
    out = dict(stacks)
    stack = out.pop(start)
    if not split:
        out[far] = out.get(far, "") + stack
        return out
    (x0, y0), (x1, y1) = _cube(start), _cube(far)
    h = len(stack)
    for k in range(1, h + 1):
        cell = (x0 + (x1 - x0) // h * k, y0 + (y1 - y0) // h * k)
        name = next(f"{ROWS[r]}{n + 1}" for r in range(7) for n in range(LENGTHS[r])
                    if _cube(f"{ROWS[r]}{n + 1}") == cell)
        out[name] = out.get(name, "") + stack[k - 1]
    return out


def _ref_perft(stacks: dict[str, str], turn: int, depth: int) -> int:
    if depth == 0:
        return 1
    total = 0
    for move in _ref_moves(stacks, turn):
        total += _ref_perft(_ref_apply(stacks, move), 1 - turn, depth - 1)
    return total


def test_perft_three_matches_an_independent_count() -> None:
    start = {GRID.name(c): s for c, s in zip(GRID.cells, E.new().cells, strict=True) if s}
    expected = _ref_perft(start, 0, 3)  # no Kernel can be reached in three plies
    assert expected == 138506
    assert E.perft(E.new(), 3) == expected


def test_deeper_perft_pinned() -> None:
    # counted by this engine (the reference above agrees to depth 3)
    assert E.perft(E.new(), 4) == 7079544


def test_drawing_lists_stacks_too_tall_for_their_point() -> None:
    from pbmserv.render import render

    text = render(E.board_template(), view=E.view(board({"d4": "wwbbwB", "a1": "W"})))
    assert "[1]" in text and "  [1] d4: wwbbwB (height 6)" in text
    assert "Stacks controlled: White 1, Black 1." in text
    assert all(len(line) <= 72 for line in text.splitlines())


def test_tally_counts_threats_moves_and_stacks() -> None:
    pos = E.play_all(E.new(), ("b3-c3", "f3-e4"))
    threats, count, stacks = E.tally(pos.cells, 0)
    assert threats == 2  # c3-e4 and c3>e4 both end on the Black Kernel with White on top
    assert count == len(E.legal_moves(pos))
    assert stacks == 10


def test_tally_threats_are_the_moves_that_take_the_kernel() -> None:
    rng = random.Random(9)
    checked = 0
    for _ in range(10):
        pos = E.new()
        for _ in range(60):
            if E.outcome(pos) is not None:
                break
            moves = E.legal_moves(pos)
            wins = sum(1 for m in moves
                       if (o := E.outcome(E.apply(pos, m))) is not None
                       and o.winner == pos.turn and o.termination == Termination.KERNEL)
            assert E.tally(pos.cells, pos.turn)[:2] == (wins, len(moves))
            checked += wins > 0
            pos = E.apply(pos, rng.choice(moves))
    assert checked > 0
