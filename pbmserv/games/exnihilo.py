"""Ex nihilo (Michael Amundsen, 2020): stacks grown from nothing on a hexhex board.

A step moves a stack (or a "0-stack" from an empty cell) in a straight line through
empty cells to an empty cell, growing by the rings it gains.  A step whose stack
then flanks enemy stacks of its height obliges a hostage step, and so on: a turn is
the first step with all its hostage steps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pbmserv.games.base import (
    N_,
    Engine,
    GameOption,
    IllegalMoveError,
    MoveSyntaxError,
    Outcome,
    Pick,
    PickKind,
    Termination,
)
from pbmserv.games.hexgrid import DIRECTIONS, CoordinateError, HexGrid

COLOURS = ("w", "b")
SIZES = {"-small": 4, "": 5, "-large": 6}
MAX_CHAIN = 64
_STEP_RE = re.compile(r"^([a-z]\d{1,2})(?::(\d+))?-([a-z]\d{1,2})$")


@dataclass(frozen=True)
class Step:
    """Move ``count`` pieces from ``src`` to ``dst``: 0 for a 0-stack, else the top ones."""

    src: int
    dst: int
    count: int


Turn = tuple[Step, ...]


@dataclass(frozen=True)
class Board:
    """The geometry of one board size, computed once."""

    grid: HexGrid
    rays: tuple[tuple[tuple[int, ...], ...], ...]
    ring: tuple[int, ...]


@cache
def board_of(side: int) -> Board:
    grid = HexGrid(side)
    rays = tuple(
        tuple(tuple(grid.index[c] for c in grid.ray(cell, step)) for step in DIRECTIONS)
        for cell in grid.cells
    )
    return Board(grid, rays, tuple(grid.ring(c) for c in grid.cells))


@dataclass(frozen=True)
class Position:
    side: int
    cells: tuple[str, ...]
    turn: int

    @property
    def board(self) -> Board:
        return board_of(self.side)


# -- every legal turn, quickly ---------------------------------------------------------
# Whether a step flanks is answered from a table of the first stack along every line
# from every cell: a step changes only its start and end cells, so only the line from
# the end cell back through the start cell needs a fresh look.


class _Lines:
    """What a step needs to know to see whether it flanks, worked out on demand for
    the board as it is before the step."""

    def __init__(self, cells: Sequence[str], board: Board, colour: str) -> None:
        self.cells = cells
        self.rays = board.rays
        self.colour = colour
        self._around: dict[int, list[tuple[int, int, int]]] = {}
        self._first: dict[tuple[int, int], int] = {}

    def first(self, cell: int, d: int) -> int:
        """The position along ray ``d`` from ``cell`` of the first stack, or -1."""
        key = (cell, d)
        at = self._first.get(key)
        if at is None:
            at = -1
            cells = self.cells
            for n, b in enumerate(self.rays[cell][d]):
                if cells[b]:
                    at = n
                    break
            self._first[key] = at
        return at

    def flanked_at(self, ray: Sequence[int], at: int, enemy: str, height: int) -> bool:
        """Whether a stack of ``height`` at the start of ``ray`` flanks ``enemy``, the
        first stack along it (position ``at``)."""
        colour = self.colour
        m = at + 1
        if enemy[-1] == colour or len(enemy) != height or len(ray) < 2 * m:
            return False
        cells = self.cells
        if any(cells[c] for c in ray[m: 2 * m - 1]):
            return False
        partner = cells[ray[2 * m - 1]]
        return bool(partner) and partner[-1] == colour and len(partner) == height

    def around(self, cell: int) -> list[tuple[int, int, int]]:
        """(direction, enemy cell, height) of every enemy stack that a stack of that
        height arriving on the empty ``cell`` would flank along that direction."""
        found = self._around.get(cell)
        if found is None:
            found = []
            for d, ray in enumerate(self.rays[cell]):
                at = self.first(cell, d)
                if at >= 0:
                    enemy = self.cells[ray[at]]
                    if self.flanked_at(ray, at, enemy, len(enemy)):
                        found.append((d, ray[at], len(enemy)))
            self._around[cell] = found
        return found

    def flanks(self, src: int, dst: int, back: int, dist: int, rest: str, height: int
               ) -> list[int]:
        """The enemy stacks that a stack of ``height`` (topped by the mover) moved from
        ``src`` to ``dst``, ``dist`` cells along ray ``back`` from ``dst``, flanks;
        ``rest`` is what stays on ``src``."""
        out = []
        for d, enemy_cell, h in self.around(dst):
            if d < back and h == height:
                out.append(enemy_cell)
        ray = self.rays[dst][back]
        if rest:
            if self.flanked_at(ray, dist - 1, rest, height):
                out.append(src)
        else:
            beyond = self.first(src, back)
            if beyond >= 0:
                at = dist + beyond
                if self.flanked_at(ray, at, self.cells[ray[at]], height):
                    out.append(ray[at])
        for d, enemy_cell, h in self.around(dst):
            if d > back and h == height:
                out.append(enemy_cell)
        return out


def _options(cells: list[str], board: Board, colour: str, hostages: Sequence[int] | None,
             compulsory: bool = True) -> list[tuple[Step, list[int]]]:
    """The steps allowed here with the stacks each flanks: only those that flank
    something when any does (capture is compulsory), unless not ``compulsory``.

    ``hostages``: the stacks a hostage step must move (any piece of them, whole only
    outward), or None for the first step of a turn."""
    hostage = hostages is not None
    lines = _Lines(cells, board, colour)
    ring = board.ring
    land = landings(cells, board, colour, hostages)
    scored: list[tuple[Step, list[int]]] = []
    any_flank = False
    for a in range(len(cells)) if hostages is None else hostages:
        stack = cells[a]
        if not hostage and stack and stack[-1] != colour:
            continue
        ring_a = ring[a]
        h = len(stack)
        for d, ray in enumerate(board.rays[a]):
            back = (d + 3) % 6
            for dist, b in enumerate(ray, start=1):
                if cells[b]:
                    break
                gain = ring[b] - ring_a
                tall = land.get(b)
                if not stack:
                    if gain > 0:
                        flanked = (lines.flanks(a, b, back, dist, "", gain)
                                   if tall and gain in tall else [])
                        any_flank = any_flank or bool(flanked)
                        scored.append((Step(a, b, 0), flanked))
                    continue
                if gain > 0:
                    height = h + gain
                    flanked = (lines.flanks(a, b, back, dist, "", height)
                               if tall and height in tall else [])
                    any_flank = any_flank or bool(flanked)
                    scored.append((Step(a, b, h), flanked))
                for k in range(1, h):
                    rest = stack[: h - k]
                    height = k + max(gain, 0)
                    top = colour if gain > 0 else stack[-1]
                    if top == colour and tall and height in tall:
                        flanked = lines.flanks(a, b, back, dist, rest, height)
                        any_flank = any_flank or bool(flanked)
                    else:
                        flanked = []
                    scored.append((Step(a, b, k), flanked))
    if any_flank and compulsory:
        scored = [(s, f) for s, f in scored if f]
    return scored


def play_step(cells: list[str], board: Board, colour: str, step: Step) -> None:
    """Apply one step of ``colour`` in place (already known to be legal)."""
    gain = max(0, board.ring[step.dst] - board.ring[step.src])
    stack = cells[step.src]
    if step.count == 0:
        moving = ""
    else:
        moving = stack[len(stack) - step.count:]
        cells[step.src] = stack[: len(stack) - step.count]
    cells[step.dst] = moving + colour * gain


def _extend(cells: list[str], board: Board, colour: str, hostages: Sequence[int] | None,
            done: Turn, out: list[Turn], first: bool) -> bool:
    """Add the turns that go on from ``done``; with ``first``, stop at the first one
    found (returns whether one was)."""
    if len(done) > MAX_CHAIN:
        return False
    for step, flanked in _options(cells, board, colour, hostages):
        turn = (*done, step)
        if not flanked:
            out.append(turn)
        else:
            after = list(cells)
            play_step(after, board, colour, step)
            _extend(after, board, colour, flanked, turn, out, first)
        if first and out:
            return True
    return bool(out)


def _any_step(cells: Sequence[str], board: Board, colour: str) -> bool:
    """Whether ``colour`` has any step at all (captures left aside)."""
    ring = board.ring
    for a, stack in enumerate(cells):
        if stack and (stack[-1] != colour):
            continue
        if len(stack) >= 2:
            if any(not cells[ray[0]] for ray in board.rays[a] if ray):
                return True
            continue
        for ray in board.rays[a]:
            for b in ray:
                if cells[b]:
                    break
                if ring[b] > ring[a]:
                    return True
    return False


def landings(cells: Sequence[str], board: Board, colour: str,
             hostages: Sequence[int] | None = None) -> dict[int, set[int]]:
    """Where a stack of ``colour`` must arrive, and how tall it must be, to flank.

    A flanked stack E, topped by the enemy, stands on the board already or is what a
    step leaves of the stack it starts from (a stack of ``colour``, or one of the
    ``hostages`` in a hostage step); the first stack beyond it on some line is a
    partner of ``colour`` as tall as E, m cells away; and the flanking stack arrives m
    cells away on the other side, on a cell that is empty before the step.  No step
    that arrives elsewhere, or with another height, flanks anything.
    """
    rays = board.rays
    out: dict[int, set[int]] = {}
    for e, stack in enumerate(cells):
        if not stack:
            continue
        if stack[-1] != colour:
            heights = [len(stack)]
            if hostages is not None and e in hostages:  # what a hostage step leaves
                heights += [k for k in range(len(stack) - 1, 0, -1)
                            if stack[k - 1] != colour]
        else:
            heights = [k for k in range(len(stack) - 1, 0, -1) if stack[k - 1] != colour]
            if not heights:
                continue
        around = rays[e]
        for d in range(6):
            for m, p in enumerate(around[d], start=1):
                partner = cells[p]
                if not partner:
                    continue
                if partner[-1] == colour and len(partner) in heights:
                    other = around[(d + 3) % 6]
                    if len(other) >= m and not cells[other[m - 1]]:
                        out.setdefault(other[m - 1], set()).add(len(partner))
                break
    return out


def _flanking_steps(cells: list[str], board: Board, colour: str,
                    land: dict[int, set[int]]) -> list[tuple[Step, list[int]]]:
    """The steps that flank something, with what they flank (found from the cells
    where they must arrive, looking back along each line for what could come)."""
    lines = _Lines(cells, board, colour)
    ring = board.ring
    out = []
    for b, tall in land.items():
        for back, ray in enumerate(board.rays[b]):
            for dist, a in enumerate(ray, start=1):
                stack = cells[a]
                gain = ring[b] - ring[a]
                if not stack:
                    if gain > 0 and gain in tall:
                        flanked = lines.flanks(a, b, back, dist, "", gain)
                        if flanked:
                            out.append((Step(a, b, 0), flanked))
                    continue
                if stack[-1] == colour:
                    h = len(stack)
                    if gain > 0 and h + gain in tall:
                        flanked = lines.flanks(a, b, back, dist, "", h + gain)
                        if flanked:
                            out.append((Step(a, b, h), flanked))
                    for k in range(1, h):
                        if k + max(gain, 0) in tall:
                            flanked = lines.flanks(a, b, back, dist, stack[: h - k],
                                                   k + max(gain, 0))
                            if flanked:
                                out.append((Step(a, b, k), flanked))
                break
    return out


class ExNihilo(Engine[Position, Turn]):
    name = "exnihilo"
    title = N_("Ex nihilo")
    seats = ("White", "Black")
    options = (
        GameOption("-small", "a board of side 4 (37 cells) instead of side 5 (61)"),
        GameOption("-large", "a board of side 6 (91 cells) instead of side 5 (61)"),
    )
    exclusive_options = (frozenset({"-small", "-large"}),)
    move_forms = ("c3-e5", "d4:2-d6", "c3-e5,d4-f6")

    def new(self, options: Sequence[str] = ()) -> Position:
        side = next((SIZES[o] for o in options if o in SIZES), SIZES[""])
        return Position(side, ("",) * len(board_of(side).grid.cells), 0)

    def to_move(self, pos: Position) -> int:
        return pos.turn

    # -- turns ------------------------------------------------------------------------
    def legal_moves(self, pos: Position) -> list[Turn]:
        out: list[Turn] = []
        _extend(list(pos.cells), pos.board, COLOURS[pos.turn], None, (), out, False)
        return out

    @staticmethod
    def turn_status(pos: Position) -> tuple[bool, bool]:
        """(whether the player to move has a legal turn, whether it must capture),
        found without listing the turns."""
        colour = COLOURS[pos.turn]
        cells = list(pos.cells)
        land = landings(cells, pos.board, colour)
        if land:
            flanking = _flanking_steps(cells, pos.board, colour, land)
            if flanking:  # capture is compulsory: one of these must be completed
                for step, flanked in flanking:
                    after = list(cells)
                    play_step(after, pos.board, colour, step)
                    if _extend(after, pos.board, colour, flanked, (step,), [], True):
                        return True, True
                return False, True
        return _any_step(cells, pos.board, colour), False

    def apply(self, pos: Position, move: Turn) -> Position:
        cells = list(pos.cells)
        colour = COLOURS[pos.turn]
        for step in move:
            play_step(cells, pos.board, colour, step)
        return Position(pos.side, tuple(cells), 1 - pos.turn)

    def outcome(self, pos: Position) -> Outcome | None:
        has_turn, must_capture = self.turn_status(pos)
        if has_turn:
            return None
        player = self.seats[pos.turn]
        if not must_capture:
            return Outcome(1 - pos.turn, Termination.NO_MOVES,
                           f"{player} has no legal turn, because no stack of {player}'s can move")
        return Outcome(1 - pos.turn, Termination.NO_MOVES,
                       f"{player} has no legal turn, because {self.stuck_hostages(pos)}")

    def stuck_hostages(self, pos: Position) -> str:
        """Why a player who must capture has no turn, in words: capturing is
        compulsory, and every stack they could capture cannot move as a hostage
        (a single piece on the edge never can)."""
        board = pos.board
        cells = list(pos.cells)
        colour = COLOURS[pos.turn]
        flanking = _flanking_steps(cells, board, colour, landings(cells, board, colour))
        hostages = sorted({c for _, flanked in flanking for c in flanked})
        names = [board.grid.name(board.grid.cells[c]) for c in hostages]
        edge = max(board.ring)
        lone = all(len(cells[c]) == 1 and board.ring[c] == edge for c in hostages)
        player, enemy = self.seats[pos.turn], self.seats[1 - pos.turn]
        one = len(names) == 1
        return (f"capturing is compulsory and {enemy}'s "
                + (f"stack on {names[0]}, the only one" if one
                   else f"stacks on {', '.join(names[:-1])} and {names[-1]}, the only ones")
                + f" {player} could capture, cannot move as "
                + ("a hostage" if one else "hostages")
                + (" (a single piece on the edge never can)" if lone else ""))

    @staticmethod
    def stack_figures(cells: Sequence[str], board: Board, colour: str) -> tuple[int, int]:
        """(stacks topped by ``colour``, the steps those stacks could make), captures
        and hostage steps left aside."""
        stacks = steps = 0
        ring = board.ring
        for a, stack in enumerate(cells):
            if not stack or stack[-1] != colour:
                continue
            stacks += 1
            h = len(stack)
            ring_a = ring[a]
            for ray in board.rays[a]:
                for b in ray:
                    if cells[b]:
                        break
                    steps += h - 1 + (ring[b] > ring_a)
        return stacks, steps

    # -- notation -----------------------------------------------------------------------
    def format_step(self, pos: Position, cells: Sequence[str], step: Step) -> str:
        grid = pos.board.grid
        src, dst = grid.name(grid.cells[step.src]), grid.name(grid.cells[step.dst])
        whole = step.count in (0, len(cells[step.src]))
        return f"{src}-{dst}" if whole else f"{src}:{step.count}-{dst}"

    def format_move(self, pos: Position, move: Turn) -> str:
        cells = list(pos.cells)
        parts = []
        for step in move:
            parts.append(self.format_step(pos, cells, step))
            play_step(cells, pos.board, COLOURS[pos.turn], step)
        return ",".join(parts)

    def _read_step(self, pos: Position, cells: Sequence[str], text: str) -> Step:
        grid = pos.board.grid
        m = _STEP_RE.match(text)
        if not m:
            raise MoveSyntaxError(
                f"{text!r} is not a step; write from-to (c3-e5), from:k-to to move the top k "
                "pieces (d4:2-d6), and hostage steps after commas (c3-e5,d4-f6)"
            )
        try:
            a, b = grid.parse(m.group(1)), grid.parse(m.group(3))
        except CoordinateError as exc:
            raise MoveSyntaxError(str(exc)) from None
        ia, ib = grid.index[a], grid.index[b]
        h = len(cells[ia])
        if m.group(2) is None:
            return Step(ia, ib, h)
        k = int(m.group(2))
        if k == h and h > 0:
            raise IllegalMoveError(f"to move the whole stack write {m.group(1)}-{m.group(3)}")
        if not 1 <= k < h:
            raise IllegalMoveError(
                f"the stack at {m.group(1)} has height {h}: move 1 to {h - 1} of its top "
                f"pieces with {m.group(1)}:k-{m.group(3)}" if h > 1 else
                f"the stack at {m.group(1)} has height {h}: it cannot be split"
            )
        return Step(ia, ib, k)

    def _why_not(self, pos: Position, cells: Sequence[str], step: Step, hostage: bool) -> str:
        """Why a step is not among the basic legal steps here."""
        board = pos.board
        grid = board.grid
        src, dst = grid.name(grid.cells[step.src]), grid.name(grid.cells[step.dst])
        stack = cells[step.src]
        if stack and not hostage and stack[-1] != COLOURS[pos.turn]:
            return (f"the stack at {src} is topped by {self.seats[1 - pos.turn]}: you may move "
                    "only stacks with your colour on top")
        line = grid.direction(grid.cells[step.src], grid.cells[step.dst])
        if line is None:
            return f"{src} and {dst} are not on one straight line"
        if cells[step.dst]:
            return f"{dst} is occupied: stacks never land on other stacks"
        ray = board.rays[step.src][DIRECTIONS.index(line[0])]
        for c in ray[: line[1] - 1]:
            if cells[c]:
                return f"the way from {src} to {dst} is blocked at {grid.name(grid.cells[c])}"
        what = "a new stack" if not stack else "a whole stack"
        return (f"{what} may only move outward, and {dst} is not farther from the centre "
                f"than {src}")

    def parse_move(self, pos: Position, text: str) -> Turn:
        board = pos.board
        grid = board.grid
        colour = COLOURS[pos.turn]
        cells = list(pos.cells)
        parts = [p for p in text.strip().lower().split(",")]
        hostages: list[int] | None = None
        steps: list[Step] = []
        for n, part in enumerate(parts):
            step = self._read_step(pos, cells, part)
            name = part if len(parts) > 1 else "this step"
            label = f"{part}: " if len(parts) > 1 else ""
            options = _options(cells, board, colour, hostages)
            allowed = {s: f for s, f in options}
            if step not in allowed:
                basic = [s for s, _ in _options(cells, board, colour, hostages, False)]
                if hostages is not None and step.src not in hostages:
                    names = ", ".join(grid.name(grid.cells[h]) for h in hostages)
                    raise IllegalMoveError(
                        f"{label}the hostage step must move a flanked stack: {names}")
                if step in basic and hostages is not None and step.count == len(cells[step.src]):
                    raise IllegalMoveError(f"{label}a hostage moved whole must move outward")
                if step in basic and options:
                    example = self.format_step(pos, cells, options[0][0])
                    raise IllegalMoveError(
                        f"{name} captures nothing, but a capturing step is available, and "
                        f"capturing is compulsory (for example {example})")
                if step in basic:
                    raise IllegalMoveError(f"{name} is not allowed here")
                why = self._why_not(pos, cells, step, hostages is not None)
                raise IllegalMoveError(f"{label}{why}")
            steps.append(step)
            play_step(cells, board, colour, step)
            flanked = allowed[step]
            if flanked and n == len(parts) - 1:
                names = ", ".join(grid.name(grid.cells[h]) for h in flanked)
                raise IllegalMoveError(
                    f"{name} flanks the enemy stack{'s' if len(flanked) > 1 else ''} at {names}: "
                    f"the turn must go on with a hostage step moving "
                    f"{'one of them' if len(flanked) > 1 else 'it'} (add it after a comma)")
            if not flanked and n < len(parts) - 1:
                raise IllegalMoveError(f"{name} flanks nothing, so no hostage step may follow it")
            hostages = flanked
        turn = tuple(steps)
        if turn not in self.legal_moves(pos):  # e.g. a chain that cannot be completed
            raise IllegalMoveError(f"{text.strip()} is not a complete legal turn")
        return turn

    # -- storage and drawing ------------------------------------------------------------
    def serialize(self, pos: Position) -> str:
        return json.dumps({"side": pos.side, "cells": list(pos.cells), "turn": pos.turn},
                          separators=(",", ":"))

    def deserialize(self, text: str) -> Position:
        data = json.loads(text)
        return Position(int(data["side"]), tuple(data["cells"]), int(data["turn"]))

    def move_path(self, pos: Position, move: Turn) -> tuple[Pick, ...]:
        """For each step: the stack (an empty cell for a new one; a hostage step's the
        flanked stack), where it goes, and for a stack of two or more how many of its
        top pieces move ("all", or a number)."""
        grid = pos.board.grid
        cells = list(pos.cells)
        picks: list[Pick] = []
        for n, step in enumerate(move):
            picks += [Pick(PickKind.PIECE if n == 0 else PickKind.HOSTAGE,
                           grid.name(grid.cells[step.src])),
                      Pick(PickKind.TARGET, grid.name(grid.cells[step.dst]))]
            height = len(cells[step.src])
            if height >= 2:
                picks.append(Pick(PickKind.COUNT,
                                  "all" if step.count == height else str(step.count)))
            play_step(cells, pos.board, COLOURS[pos.turn], step)
        return tuple(picks)

    def describe(self, pos: Position) -> dict[str, Any]:
        pieces: dict[str, tuple[int | None, str]] = {"w": (0, "piece"), "b": (1, "piece")}
        return {"to_move": self.seats[pos.turn],
                "cells": pos.board.grid.described(pos.cells, pieces, self.seats)}

    def view(self, pos: Position) -> dict[str, Any]:
        return pos.board.grid.stack_view(pos.cells, 4) | {"side": pos.side}
