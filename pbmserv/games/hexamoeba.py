"""Hexamoeba: Masahiro Nakajima's Amoeba (2010), stacks on a hexagon of 37 points.

A stack of height h moves exactly h points in a straight line: whole (landing on
top of whatever is there) or split (one piece on each point, bottom piece first).
Whoever controls the stack holding the enemy Kernel at the end of their turn wins.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pbmserv.games.base import (
    N_,
    Engine,
    IllegalMoveError,
    Outcome,
    Pick,
    PickKind,
    Termination,
)
from pbmserv.games.hexgrid import DIRECTION_NAMES, DIRECTIONS, HexGrid

GRID = HexGrid(4)
COLOURS = ("w", "b")  # White, Black; upper case is that side's Kernel
KERNELS = ("W", "B")
#: stacks taller than this are listed under the diagram instead of drawn in it
CELL_WIDTH = 5


def _setup() -> tuple[str, ...]:
    cells = [""] * len(GRID.cells)
    for names, piece in (
        ("a1 a2 a3 a4 c1 c2 c3 c4 c5 c6", "w"), ("b3", "W"),
        ("g1 g2 g3 g4 e1 e2 e3 e4 e5 e6", "b"), ("f3", "B"),
    ):
        for name in names.split():
            cells[GRID.index[GRID.parse(name)]] = piece
    return tuple(cells)


def _targets() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """For every point and direction, the points along the ray (index by distance - 1)."""
    return tuple(
        tuple(tuple(GRID.index[c] for c in GRID.ray(cell, step)) for step in DIRECTIONS)
        for cell in GRID.cells
    )


RAYS = _targets()


@dataclass(frozen=True)
class StackMove:
    start: int
    direction: int
    split: bool


@dataclass(frozen=True)
class Position:
    cells: tuple[str, ...]
    turn: int
    #: how often each position (key) has occurred, the current one included
    seen: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    @cached_property
    def key(self) -> str:
        return "/".join(self.cells) + str(self.turn)


#: the seat controlling a stack, by its top piece
CONTROL = {"w": 0, "W": 0, "b": 1, "B": 1}
#: each piece's owner (a seat) and kind
PIECES = {"w": (0, "piece"), "W": (0, "kernel"), "b": (1, "piece"), "B": (1, "kernel")}


def controller(stack: str) -> int | None:
    if not stack:
        return None
    return 0 if stack[-1] in "wW" else 1


def stack_counts(cells: Sequence[str]) -> tuple[int, int]:
    tops = [controller(s) for s in cells]
    return tops.count(0), tops.count(1)


class Hexamoeba(Engine[Position, StackMove]):
    name = "hexamoeba"
    title = N_("Hexamoeba")
    seats = ("White", "Black")
    move_forms = ("b3-b5", "c2>c4")

    def new(self, options: Sequence[str] = ()) -> Position:
        cells = _setup()
        pos = Position(cells, 0)
        return Position(cells, 0, {pos.key: 1})

    def to_move(self, pos: Position) -> int:
        return pos.turn

    # -- moves ------------------------------------------------------------------------
    def legal_moves(self, pos: Position) -> list[StackMove]:
        if self._finished(pos) is not None:
            return []
        return self._moves(pos.cells, pos.turn)

    @staticmethod
    def _moves(cells: tuple[str, ...], turn: int) -> list[StackMove]:
        out = []
        for i, stack in enumerate(cells):
            if not stack or controller(stack) != turn:
                continue
            h = len(stack)
            for d, ray in enumerate(RAYS[i]):
                if len(ray) >= h:
                    out.append(StackMove(i, d, False))
                    if h >= 2:
                        out.append(StackMove(i, d, True))
        return out

    def parse_move(self, pos: Position, text: str) -> StackMove:
        split = ">" in text
        start, end = GRID.parse_pair(
            text, ">" if split else "-",
            "write from-to for a whole stack (b3-b5) or from>to for a split (c2>c4), "
            "naming the point where the top piece lands")
        i = GRID.index[start]
        stack = pos.cells[i]
        name = GRID.name(start)
        if not stack:
            raise IllegalMoveError(f"there is no stack at {name}")
        owner = controller(stack)
        if owner != pos.turn:
            raise IllegalMoveError(f"the stack at {name} is controlled by {self.seats[owner or 0]}")
        h = len(stack)
        if split and h == 1:
            raise IllegalMoveError(
                f"the stack at {name} is a single piece: it cannot split (write {name}-...)"
            )
        line = GRID.direction(start, end)
        if line is None:
            raise IllegalMoveError(f"{name} and {GRID.name(end)} are not on one straight line")
        step, distance = line
        d = DIRECTIONS.index(step)
        where = DIRECTION_NAMES[step]
        if len(RAYS[i][d]) < h:
            raise IllegalMoveError(
                f"a stack of height {h} at {name} has no point {h} steps to the {where}"
            )
        if distance != h:
            target = GRID.name(GRID.cells[RAYS[i][d][h - 1]])
            raise IllegalMoveError(
                f"the stack at {name} has height {h}, so it moves exactly {h} "
                f"point{'s' if h > 1 else ''}: to the {where} that is {target}, "
                f"not {GRID.name(end)}"
            )
        return StackMove(i, d, split)

    def format_move(self, pos: Position, move: StackMove) -> str:
        h = len(pos.cells[move.start])
        end = RAYS[move.start][move.direction][h - 1]
        sep = ">" if move.split else "-"
        return f"{GRID.name(GRID.cells[move.start])}{sep}{GRID.name(GRID.cells[end])}"

    def apply(self, pos: Position, move: StackMove) -> Position:
        cells = list(pos.cells)
        stack = cells[move.start]
        h = len(stack)
        ray = RAYS[move.start][move.direction]
        cells[move.start] = ""
        if move.split:
            for k in range(h):
                cells[ray[k]] += stack[k]
        else:
            cells[ray[h - 1]] += stack
        new = tuple(cells)
        turn = 1 - pos.turn
        key = "/".join(new) + str(turn)
        seen = dict(pos.seen)
        seen[key] = seen.get(key, 0) + 1
        return Position(new, turn, seen)

    # -- the end ------------------------------------------------------------------------
    def _kernel_win(self, pos: Position) -> Outcome | None:
        mover = 1 - pos.turn
        enemy = KERNELS[pos.turn]
        for stack in pos.cells:
            if enemy in stack:
                if controller(stack) == mover:
                    return Outcome(mover, Termination.KERNEL,
                                   f"{self.seats[mover]} controls the stack holding "
                                          f"{self.seats[pos.turn]}'s Kernel")
                return None
        return None

    def _counted(self, cells: Sequence[str], why: str, kind: Termination) -> Outcome:
        white, black = stack_counts(cells)
        tally = f"White controls {white} stacks, Black {black}"
        if white == black:
            return Outcome(None, kind, f"{why}; {tally}")
        return Outcome(0 if white > black else 1, kind, f"{why}; {tally}")

    def _finished(self, pos: Position) -> Outcome | None:
        win = self._kernel_win(pos)
        if win is not None:
            return win
        if pos.seen.get(pos.key, 0) >= 3:
            return self._counted(pos.cells, "the same position came up a third time",
                                Termination.REPETITION)
        return None

    def outcome(self, pos: Position) -> Outcome | None:
        done = self._finished(pos)
        if done is not None:
            return done
        if not self._moves(pos.cells, pos.turn):
            return Outcome(1 - pos.turn, Termination.NO_MOVES,
                           f"{self.seats[pos.turn]} has no legal move")
        return None

    @staticmethod
    def tally(cells: Sequence[str], player: int) -> tuple[int, int, int]:
        """(threats, moves, stacks) of ``player`` on ``cells``, whoever is to move:
        the moves that would leave ``player`` controlling the stack holding the
        opponent's Kernel (a win, were it ``player``'s turn), all the moves, and the
        stacks ``player`` controls."""
        kernel = KERNELS[1 - player]
        target = next((i for i, stack in enumerate(cells) if kernel in stack), -1)
        held = target >= 0 and CONTROL[cells[target][-1]] == player
        threats = moves = stacks = 0
        for i, stack in enumerate(cells):
            if not stack or CONTROL[stack[-1]] != player:
                continue
            stacks += 1
            h = len(stack)
            for ray in RAYS[i]:
                if len(ray) < h:
                    continue
                moves += 1 if h == 1 else 2
                if i == target:  # moving the captured Kernel's stack whole keeps it
                    threats += 1
                    continue
                if ray[h - 1] == target or held:
                    threats += 1  # the whole stack lands on it, or it stays ours
                if h >= 2:
                    if target in ray[:h]:
                        threats += CONTROL[stack[ray.index(target)]] == player
                    elif held:
                        threats += 1
        return threats, moves, stacks

    def agreed_outcome(self, pos: Position) -> Outcome:
        return self._counted(pos.cells, "ended by agreement", Termination.AGREEMENT)

    # -- storage and drawing ----------------------------------------------------------
    def serialize(self, pos: Position) -> str:
        return json.dumps({"cells": list(pos.cells), "turn": pos.turn, "seen": pos.seen},
                          separators=(",", ":"), sort_keys=True)

    def deserialize(self, text: str) -> Position:
        data = json.loads(text)
        return Position(tuple(data["cells"]), int(data["turn"]),
                        {str(k): int(v) for k, v in data["seen"].items()})

    def move_path(self, pos: Position, move: StackMove) -> tuple[Pick, ...]:
        """The stack, where its top piece lands, and (a stack of two or more) whole or
        split."""
        h = len(pos.cells[move.start])
        end = RAYS[move.start][move.direction][h - 1]
        picks = (Pick(PickKind.PIECE, GRID.name(GRID.cells[move.start])),
                 Pick(PickKind.TARGET, GRID.name(GRID.cells[end])))
        if h == 1:
            return picks
        return (*picks, Pick(PickKind.SPLIT, "split" if move.split else "whole"))

    def describe(self, pos: Position) -> dict[str, Any]:
        return {"to_move": self.seats[pos.turn],
                "cells": GRID.described(pos.cells, PIECES, self.seats)}

    def view(self, pos: Position) -> dict[str, Any]:
        white, black = stack_counts(pos.cells)
        return GRID.stack_view(pos.cells, CELL_WIDTH) | {
            "counts": {"White": white, "Black": black}}
