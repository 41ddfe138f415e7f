"""Ex nihilo, checked against shared/rules/exnihilo.md move by move."""

from __future__ import annotations

import pytest

from pbmserv.games.base import IllegalMoveError, MoveSyntaxError, OptionError, Termination
from pbmserv.games.exnihilo import ExNihilo, Position, landings

E = ExNihilo()


def board(stacks: dict[str, str], turn: int = 0, side: int = 5) -> Position:
    grid = E.new({4: ["-small"], 5: [], 6: ["-large"]}[side]).board.grid
    cells = [""] * len(grid.cells)
    for name, stack in stacks.items():
        cells[grid.index[grid.parse(name)]] = stack
    return Position(side, tuple(cells), turn)


def at(pos: Position, name: str) -> str:
    grid = pos.board.grid
    return pos.cells[grid.index[grid.parse(name)]]


def turns(pos: Position) -> list[str]:
    return sorted(E.format_move(pos, t) for t in E.legal_moves(pos))


def test_sizes_and_options() -> None:
    assert [len(E.new(o).cells) for o in ([], ["-small"], ["-large"])] == [61, 37, 91]
    with pytest.raises(OptionError, match="cannot be combined"):
        E.check_options(["-small", "-large"])


def test_sanity_figure_and_small_counts() -> None:
    assert len(E.legal_moves(E.new())) == 384


def test_zero_stack_grows_by_rings_gained() -> None:
    after, text = E.play(E.new(), "e5-e1")  # centre (ring 0) to the edge (ring 4)
    assert text == "e5-e1" and at(after, "e1") == "wwww" and at(after, "e5") == ""
    with pytest.raises(IllegalMoveError, match="may only move outward"):
        E.parse_move(after, "e2-e3")  # ring 3 to ring 2


def test_whole_stack_moves_outward_and_grows_on_top() -> None:
    pos = board({"e4": "bw"})
    after, text = E.play(pos, "e4-e2")  # ring 1 to ring 3
    assert text == "e4-e2" and at(after, "e2") == "bwww" and at(after, "e4") == ""
    with pytest.raises(IllegalMoveError, match="may only move outward"):
        E.parse_move(board({"e2": "bw"}), "e2-e3")


def test_part_move_any_direction_growth_only_outward() -> None:
    pos = board({"e2": "bww"})
    inward, text = E.play(pos, "e2:2-e4")  # ring 3 to ring 1: no growth
    assert text == "e2:2-e4" and at(inward, "e4") == "ww" and at(inward, "e2") == "b"
    outward, _ = E.play(pos, "e2:1-e1")  # ring 3 to 4: one piece gained
    assert at(outward, "e1") == "ww" and at(outward, "e2") == "bw"


def test_step_errors() -> None:
    pos = board({"e2": "wwb", "e3": "w", "e1": "w"})
    with pytest.raises(IllegalMoveError, match="topped by Black"):
        E.parse_move(pos, "e2:1-d1")
    with pytest.raises(IllegalMoveError, match="blocked at e3"):
        E.parse_move(board({"e3": "w"}), "e6-e2")
    with pytest.raises(IllegalMoveError, match="occupied"):
        E.parse_move(pos, "e4-e3")
    with pytest.raises(IllegalMoveError, match="not on one straight line"):
        E.parse_move(pos, "e5-a2")
    with pytest.raises(IllegalMoveError, match="write e3-e4"):
        E.parse_move(board({"e3": "ww"}), "e3:2-e4")
    with pytest.raises(IllegalMoveError, match="move 1 to 1 of its top"):
        E.parse_move(board({"e3": "ww"}), "e3:3-e4")
    with pytest.raises(MoveSyntaxError, match="is not a step"):
        E.parse_move(pos, "e3e4")


def test_worked_capture_from_the_help() -> None:
    pos = board({"e1": "w", "e2": "b", "a1": "b"})
    assert turns(pos) == sorted([
        f"{first},e2-{dest}" for first in ("e4-e3", "e6-e3")
        for dest in ("i2", "f1", "d1", "a2")])
    after, text = E.play(pos, "e4-e3,e2-d1")
    assert text == "e4-e3,e2-d1"
    assert at(after, "d1") == "bw" and at(after, "e3") == "w" and at(after, "e2") == ""


def test_stopping_before_the_hostage_step_names_the_flanked_stacks() -> None:
    pos = board({"e1": "w", "e2": "b", "a1": "b"})
    with pytest.raises(IllegalMoveError,
                       match="this step flanks the enemy stack at e2: the turn must go on"):
        E.parse_move(pos, "e4-e3")


def test_capture_is_compulsory_and_an_example_is_named() -> None:
    pos = board({"e1": "w", "e2": "b", "a1": "b"})
    with pytest.raises(IllegalMoveError,
                       match=r"this step captures nothing, but a capturing step is available, "
                             r"and capturing is compulsory \(for example e4-e3\)"):
        E.parse_move(pos, "e5-c3")


def test_hostage_step_must_move_a_flanked_stack() -> None:
    pos = board({"e1": "w", "e2": "b", "a1": "b"})
    with pytest.raises(IllegalMoveError, match="must move a flanked stack: e2"):
        E.parse_move(pos, "e4-e3,a1-a2")
    with pytest.raises(IllegalMoveError, match="flanks nothing, so no hostage step"):
        E.parse_move(board({"a1": "b"}), "e5-e1,a1-a2")


def test_immovable_hostage_leaves_no_legal_turn() -> None:
    # Black's single piece on the edge at a2, White's at a1. The only flanking steps
    # (b3-a3, b4-a3) must be taken, and their hostage a2 can never move: no legal turn.
    pos = board({"a1": "w", "a2": "b"})
    assert E.legal_moves(pos) == []
    outcome = E.outcome(pos)
    assert outcome is not None and outcome.winner == 1
    assert outcome.reason == (
        "White has no legal turn, because capturing is compulsory and Black's stack on a2, "
        "the only one White could capture, cannot move as a hostage (a single piece on the "
        "edge never can)")
    assert outcome.termination is Termination.NO_MOVES
    with pytest.raises(IllegalMoveError, match="capturing is compulsory"):
        E.parse_move(pos, "e5-e1")
    with pytest.raises(IllegalMoveError, match="flanks the enemy stack at a2"):
        E.parse_move(pos, "b3-a3")
    with pytest.raises(IllegalMoveError, match=r"^a1-b1: the hostage step must move a flanked"):
        E.parse_move(pos, "b3-a3,a1-b1")


def test_chain_of_two_hostage_steps() -> None:
    pos = board({"a1": "w", "b4": "b", "d3": "b", "d5": "bw", "e2": "w", "e4": "wb"}, side=4)
    after, text = E.play(pos, "d4-c3,d3-f3,e4-e5")
    assert text == "d4-c3,d3-f3,e4-e5"
    assert [at(after, n) for n in ("c3", "d3", "f3", "e4", "e5")] == ["w", "", "bw", "",
                                                                       "wbw"]
    with pytest.raises(IllegalMoveError, match="d3-f3 flanks the enemy stack at e4"):
        E.parse_move(pos, "d4-c3,d3-f3")
    assert "d4-c3,d3-f3,e4-e5" in turns(pos)


def test_no_legal_turn_loses() -> None:
    # Small board, Black to move. Every empty cell is on the edge or next to the only
    # white... simplest: a full board leaves no empty cell to move to.
    pos = board({n: "w" for n in [f"{r}{i}" for r, k in zip("abcdefg", [4, 5, 6, 7, 6, 5, 4],
                                                          strict=True)
                                  for i in range(1, k + 1)]}, turn=1, side=4)
    assert E.legal_moves(pos) == []
    outcome = E.outcome(pos)
    assert outcome is not None and outcome.winner == 0
    assert outcome.reason == "Black has no legal turn, because no stack of Black's can move"


def test_the_openings_that_lose_at_once() -> None:
    """shared/rules/exnihilo.md, "Fine points": "a stack on the edge of height 1 can
    never move, so a player can be forced to capture it and lose within the first few
    moves". On the small board the White openings that Black can answer so that White
    has no legal turn (Black puts a single piece of its own on the edge, between White's
    and a cell White can reach with one piece: White must capture it, and cannot) are
    exactly the 72 of 162 that make a single piece on the edge, as 'exnihilo help' says;
    no opening lets White win at once."""
    pos = E.new(["-small"])
    edge = max(pos.board.ring)
    lost, lone_on_edge = set(), set()
    for turn in E.legal_moves(pos):
        after = E.apply(pos, turn)
        assert E.outcome(after) is None
        [(cell, stack)] = [(c, s) for c, s in enumerate(after.cells) if s]
        if stack == "w" and pos.board.ring[cell] == edge:
            lone_on_edge.add(turn)
        if any(E.outcome(E.apply(after, reply)) is not None for reply in E.legal_moves(after)):
            lost.add(turn)
    assert len(E.legal_moves(pos)) == 162
    assert lost == lone_on_edge and len(lost) == 72


def test_serialisation_round_trips() -> None:
    pos = E.play_all(E.new(["-large"]), ["f6-a1", "f6-k1"])
    assert E.deserialize(E.serialize(pos)) == pos


# 384 is the sanity figure of shared/rules/exnihilo.md; every figure here is counted
# again by the independent count of the first two plies below
@pytest.mark.parametrize(("options", "counts"), [
    (["-small"], [1, 162, 24606]),
    ([], [1, 384, 140700]),
    (["-large"], [1, 750]),
])
def test_perft(options: list[str], counts: list[int]) -> None:
    pos = E.new(options)
    assert [E.perft(pos, d) for d in range(len(counts))] == counts


# -- an independent count of the first two plies ----------------------------------------
def _ref_cells(side: int) -> list[tuple[int, int, int]]:
    n = side - 1
    return [(x, y, -x - y) for x in range(-n, n + 1) for y in range(-n, n + 1)
            if abs(x + y) <= n]


def _ref_zero_stack_turns(side: int, occupied: set[tuple[int, int, int]]) -> list[
        tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """0-stack steps only: enough for the first two plies, where nothing can be flanked
    (a flank needs two stacks of the mover) and no stack of the mover exists to move."""
    cells = set(_ref_cells(side))
    ring = {c: max(map(abs, c)) for c in cells}
    out = []
    for a in cells - occupied:
        for d in ((1, -1, 0), (-1, 1, 0), (1, 0, -1), (-1, 0, 1), (0, 1, -1), (0, -1, 1)):
            b = a
            while True:
                b = (b[0] + d[0], b[1] + d[1], b[2] + d[2])
                if b not in cells or b in occupied:
                    break
                if ring[b] > ring[a]:
                    out.append((a, b))
    return out


@pytest.mark.parametrize(("options", "side"), [(["-small"], 4), ([], 5), (["-large"], 6)])
def test_first_two_plies_match_an_independent_count(options: list[str], side: int) -> None:
    first = _ref_zero_stack_turns(side, set())
    second = sum(len(_ref_zero_stack_turns(side, {b})) for _, b in first)
    assert len(first) == len(E.legal_moves(E.new(options)))
    assert second == E.perft(E.new(options), 2)


def test_landings_find_the_cell_a_capture_arrives_on() -> None:
    pos = E.play_all(E.new(), ("b2-b6", "c2-c7"))
    # White must flank c7 (Black, on the edge) by arriving on d8 with one piece, its
    # partner b6 beyond; c7 cannot move as a hostage, so White has no legal turn
    grid = pos.board.grid
    land = landings(pos.cells, pos.board, "w")
    assert {grid.name(grid.cells[c]): h for c, h in land.items()} == {"d8": {1}}
    assert E.turn_status(pos) == (False, True) and E.outcome(pos) is not None
    assert landings(E.new().cells, pos.board, "w") == {}
