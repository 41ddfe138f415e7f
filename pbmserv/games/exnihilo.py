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
    Engine,
    GameOption,
    IllegalMoveError,
    MoveSyntaxError,
    Outcome,
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


class ExNihilo(Engine[Position, Turn]):
    name = "exnihilo"
    title = "Ex nihilo"
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

    # -- single steps -------------------------------------------------------------------
    @staticmethod
    def _steps(cells: Sequence[str], board: Board, mover: int, starts: Sequence[int] | None,
               hostage: bool) -> list[Step]:
        """Every step for ``mover``: from ``starts`` (hostages) or from anywhere."""
        out: list[Step] = []
        colour = COLOURS[mover]
        sources = range(len(cells)) if starts is None else starts
        for a in sources:
            stack = cells[a]
            if not hostage and stack and stack[-1] != colour:
                continue
            ring_a = board.ring[a]
            h = len(stack)
            for ray in board.rays[a]:
                for b in ray:
                    if cells[b]:
                        break
                    outward = board.ring[b] > ring_a
                    if not stack:
                        if outward:
                            out.append(Step(a, b, 0))
                        continue
                    if outward:
                        out.append(Step(a, b, h))
                    for k in range(1, h):
                        out.append(Step(a, b, k))
        return out

    @staticmethod
    def _play_step(cells: list[str], board: Board, mover: int, step: Step) -> None:
        """Apply one step in place (already known to be legal)."""
        gain = max(0, board.ring[step.dst] - board.ring[step.src])
        stack = cells[step.src]
        if step.count == 0:
            moving = ""
        else:
            moving = stack[len(stack) - step.count:]
            cells[step.src] = stack[: len(stack) - step.count]
        cells[step.dst] = moving + COLOURS[mover] * gain

    @staticmethod
    def _flanked(cells: Sequence[str], board: Board, mover: int, at: int) -> list[int]:
        """Enemy stacks the stack at ``at`` flanks (it must be topped by the mover)."""
        stack = cells[at]
        colour = COLOURS[mover]
        if not stack or stack[-1] != colour:
            return []
        h = len(stack)
        out = []
        for ray in board.rays[at]:
            # the first stack along the ray is the candidate hostage (cells before it empty)
            for m, e in enumerate(ray, start=1):
                if not cells[e]:
                    continue
                enemy = cells[e]
                if enemy[-1] == colour or len(enemy) != h or len(ray) < 2 * m:
                    break
                if any(cells[c] for c in ray[m: 2 * m - 1]):
                    break
                partner = cells[ray[2 * m - 1]]
                if partner and partner[-1] == colour and len(partner) == h:
                    out.append(e)
                break
        return out

    # -- whole turns --------------------------------------------------------------------
    def _turns(self, pos: Position) -> list[Turn]:
        board = pos.board
        mover = pos.turn
        cells = list(pos.cells)
        out: list[Turn] = []
        self._extend(cells, board, mover, None, (), out)
        return out

    def _options(self, cells: list[str], board: Board, mover: int,
                 hostages: Sequence[int] | None) -> list[tuple[Step, list[int]]]:
        """Steps allowed here with what each flanks, capture being compulsory."""
        scored = []
        for step in self._steps(cells, board, mover, hostages, hostage=hostages is not None):
            src, dst = cells[step.src], cells[step.dst]
            self._play_step(cells, board, mover, step)  # try it in place, then undo
            scored.append((step, self._flanked(cells, board, mover, step.dst)))
            cells[step.src], cells[step.dst] = src, dst
        if any(f for _, f in scored):
            scored = [(s, f) for s, f in scored if f]
        return scored

    def _extend(self, cells: list[str], board: Board, mover: int,
                hostages: Sequence[int] | None, done: Turn, out: list[Turn]) -> None:
        if len(done) > MAX_CHAIN:
            return
        for step, flanked in self._options(cells, board, mover, hostages):
            turn = (*done, step)
            if not flanked:
                out.append(turn)
                continue
            after = list(cells)
            self._play_step(after, board, mover, step)
            self._extend(after, board, mover, flanked, turn, out)

    def legal_moves(self, pos: Position) -> list[Turn]:
        return self._turns(pos)

    def apply(self, pos: Position, move: Turn) -> Position:
        cells = list(pos.cells)
        for step in move:
            self._play_step(cells, pos.board, pos.turn, step)
        return Position(pos.side, tuple(cells), 1 - pos.turn)

    def outcome(self, pos: Position) -> Outcome | None:
        if self._turns(pos):
            return None
        return Outcome(1 - pos.turn, Termination.NO_MOVES,
                       f"{self.seats[pos.turn]} has no legal turn")

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
            self._play_step(cells, pos.board, pos.turn, step)
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
        cells = list(pos.cells)
        parts = [p for p in text.strip().lower().split(",")]
        hostages: list[int] | None = None
        steps: list[Step] = []
        for n, part in enumerate(parts):
            step = self._read_step(pos, cells, part)
            name = part if len(parts) > 1 else "this step"
            label = f"{part}: " if len(parts) > 1 else ""
            options = self._options(cells, board, pos.turn, hostages)
            allowed = {s: f for s, f in options}
            if step not in allowed:
                basic = self._steps(cells, board, pos.turn, hostages, hostage=hostages is not None)
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
            self._play_step(cells, board, pos.turn, step)
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
        if turn not in self._turns(pos):  # e.g. a chain that cannot be completed
            raise IllegalMoveError(f"{text.strip()} is not a complete legal turn")
        return turn

    # -- storage and drawing ------------------------------------------------------------
    def serialize(self, pos: Position) -> str:
        return json.dumps({"side": pos.side, "cells": list(pos.cells), "turn": pos.turn},
                          separators=(",", ":"))

    def deserialize(self, text: str) -> Position:
        data = json.loads(text)
        return Position(int(data["side"]), tuple(data["cells"]), int(data["turn"]))

    def view(self, pos: Position) -> dict[str, Any]:
        return pos.board.grid.stack_view(pos.cells, 4) | {"side": pos.side}
