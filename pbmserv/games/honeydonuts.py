"""Honey Donuts (Masahiro Nakajima, 2011): push a line round the ring of hexagons.

The board is a hexagon of side 3 whose centre is a hole.  A move shifts a whole
line one cell; the piece pushed off the end re-enters at the other end, unless it
is a King, which ends the game.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pbmserv.games.base import (
    N_,
    Engine,
    GameOption,
    IllegalMoveError,
    Outcome,
    Pick,
    PickKind,
    Termination,
)
from pbmserv.games.hexgrid import AXES, Cell, HexGrid

GRID = HexGrid(3)
HOLE = "#"
EMPTY = "."
OWN = ("rR", "bB")
KINGS = ("R", "B")
#: each piece's owner (a seat, None for the white pieces) and kind
PIECES: dict[str, tuple[int | None, str]] = {
    "r": (0, "piece"), "R": (0, "king"), "b": (1, "piece"), "B": (1, "king"),
    "o": (None, "piece")}


def _start_cells() -> str:
    cells = ["o"] * len(GRID.cells)
    for name, piece in {"a1": "r", "a2": "R", "a3": "r", "e1": "b", "e2": "B", "e3": "b"}.items():
        cells[GRID.index[GRID.parse(name)]] = piece
    cells[GRID.index[GRID.centre]] = HOLE
    return "".join(cells)


def _lines() -> tuple[tuple[int, ...], ...]:
    """Every maximal run of at least two cells along an axis, the hole ending runs."""
    out: list[tuple[int, ...]] = []
    for axis in AXES:
        for cell in GRID.cells:
            back = (cell[0] - axis[0], cell[1] - axis[1])
            if cell == GRID.centre or (GRID.contains(back) and back != GRID.centre):
                continue  # not the first cell of a run
            run = [cell]
            for nxt in GRID.ray(cell, axis):
                if nxt == GRID.centre:
                    break
                run.append(nxt)
            if len(run) >= 2:
                out.append(tuple(GRID.index[c] for c in run))
    return tuple(out)


LINES = _lines()


def _pushes() -> tuple[tuple[tuple[int, bool], ...], ...]:
    """For every cell, the (line, forward) shifts that push the piece on it off."""
    out: list[list[tuple[int, bool]]] = [[] for _ in GRID.cells]
    for n, line in enumerate(LINES):
        out[line[-1]].append((n, True))
        out[line[0]].append((n, False))
    return tuple(tuple(p) for p in out)


#: the shifts that push the piece on each cell off the board: (line, forward)
PUSHES = _pushes()


def _clockwise(cell: Cell) -> float:
    """A cell's angle round the centre as drawn (rows go up, west is left), falling
    clockwise."""
    col, row = cell[0] - GRID.centre[0], cell[1] - GRID.centre[1]
    return -math.atan2(row * math.sqrt(3) / 2, col - row / 2)


def _rings() -> tuple[tuple[Cell, ...], ...]:
    """The cells round the hole, ring by ring from the inside, each clockwise from its
    bottom left cell."""
    out = []
    for distance in range(1, GRID.side):
        ring = sorted((c for c in GRID.cells if GRID.ring(c) == distance), key=_clockwise)
        start = min(range(len(ring)), key=lambda i: (ring[i][1], ring[i][0]))
        out.append(tuple(ring[start:] + ring[:start]))
    return tuple(out)


#: the rings of cells round the hole, the inner first, each clockwise
RINGS = _rings()
#: the lines through each cell
THROUGH: tuple[tuple[int, ...], ...] = tuple(
    tuple(n for n, line in enumerate(LINES) if cell in line) for cell in range(len(GRID.cells)))


@dataclass(frozen=True)
class Shift:
    """Shift line ``line`` one cell; ``forward`` moves pieces toward its last cell."""

    line: int
    forward: bool

    @property
    def ends(self) -> tuple[int, int]:
        """(trailing cell, pushed-out cell) as board indexes."""
        cells = LINES[self.line]
        return (cells[0], cells[-1]) if self.forward else (cells[-1], cells[0])


@dataclass(frozen=True)
class Position:
    cells: str
    turn: int
    simple: bool
    seen: frozenset[str]
    last: Shift | None = None

    @cached_property
    def key(self) -> str:
        return f"{self.cells}{self.turn}"


def _shifted(cells: str, move: Shift) -> str:
    line = LINES[move.line]
    order = line if move.forward else line[::-1]
    out = list(cells)
    values = [cells[i] for i in order]
    pushed = values[-1]
    for i, value in zip(order[1:], values[:-1], strict=True):
        out[i] = value
    out[order[0]] = EMPTY if pushed in KINGS else pushed
    return "".join(out)


#: every move there is, legal or not: each line shifted either way
_ALL_SHIFTS = tuple(Shift(i, fwd) for i in range(len(LINES)) for fwd in (True, False))


class HoneyDonuts(Engine[Position, Shift]):
    name = "honeydonuts"
    title = N_("Honey Donuts")
    seats = ("Red", "Blue")
    options = (
        GameOption(
            "-simple",
            "the lighter repetition rule: only turning back the line your "
            "opponent just turned is barred",
        ),
    )
    move_forms = ("a1-a2",)

    def new(self, options: Sequence[str] = ()) -> Position:
        cells = _start_cells()
        simple = "-simple" in options
        return Position(cells, 0, simple, frozenset() if simple else frozenset({f"{cells}0"}))

    def to_move(self, pos: Position) -> int:
        return pos.turn

    # -- legality ---------------------------------------------------------------------
    def _refusal(self, pos: Position, move: Shift) -> str | None:
        """Why ``move`` is illegal in ``pos``, or None if it is legal."""
        line = LINES[move.line]
        if not any(pos.cells[i] in OWN[pos.turn] for i in line):
            return f"the line {self._line_name(line)} holds none of your pieces"
        if pos.cells[move.ends[1]] == KINGS[pos.turn]:
            return (
                f"that move would push your own King off the board at "
                f"{GRID.name(GRID.cells[move.ends[1]])}"
            )
        if self.pushes_king_off(pos, move):
            return None  # winning moves are never refused for repetition
        if pos.simple:
            last = pos.last
            if last is not None and last.line == move.line and last.forward != move.forward:
                return (
                    f"you may not move the line {self._line_name(line)} straight back "
                    "the way your opponent just moved it"
                )
        elif f"{_shifted(pos.cells, move)}{1 - pos.turn}" in pos.seen:
            return "that move would bring back a position the game has already had"
        return None

    def legal_moves(self, pos: Position) -> list[Shift]:
        if self.king_lost(pos.cells) is not None:
            return []
        return [m for m in _ALL_SHIFTS if self._refusal(pos, m) is None]

    def parse_move(self, pos: Position, text: str) -> Shift:
        move = self._read(text)
        reason = self._refusal(pos, move)
        if reason is not None:
            raise IllegalMoveError(reason)
        return move

    def _read(self, text: str) -> Shift:
        a, b = GRID.parse_pair(
            text, "-", "name two neighbouring cells of a line, like a1-a2 (the line "
            "shifts from the first toward the second)")
        for cell in (a, b):
            if cell == GRID.centre:
                raise IllegalMoveError(f"{GRID.name(cell)} is the hole in the middle of the board")
        ia, ib = GRID.index[a], GRID.index[b]
        for n, line in enumerate(LINES):
            if ia in line and ib in line:
                pa, pb = line.index(ia), line.index(ib)
                if abs(pa - pb) == 1:
                    return Shift(n, pb > pa)
        raise IllegalMoveError(
            f"{GRID.name(a)} and {GRID.name(b)} are not neighbouring cells of one line"
        )

    def format_move(self, pos: Position, move: Shift) -> str:
        line = LINES[move.line]
        first, second = (line[0], line[1]) if move.forward else (line[-1], line[-2])
        return f"{GRID.name(GRID.cells[first])}-{GRID.name(GRID.cells[second])}"

    @staticmethod
    def _line_name(line: tuple[int, ...]) -> str:
        return "-".join(GRID.name(GRID.cells[i]) for i in line)

    # -- playing ------------------------------------------------------------------------
    def apply(self, pos: Position, move: Shift) -> Position:
        cells = _shifted(pos.cells, move)
        turn = 1 - pos.turn
        seen = pos.seen if pos.simple else pos.seen | {f"{cells}{turn}"}
        return Position(cells, turn, pos.simple, seen, move)

    @staticmethod
    def king_lost(cells: str) -> int | None:
        """The seat whose King has been pushed off the board, if one has."""
        for seat, king in enumerate(KINGS):
            if king not in cells:
                return seat
        return None

    def outcome(self, pos: Position) -> Outcome | None:
        lost = self.king_lost(pos.cells)
        if lost is not None:
            return Outcome(1 - lost, Termination.KING_OFF,
                           f"{self.seats[lost]}'s King was pushed off the board")
        # one legal move is enough (every move played asks this: not all of them)
        if not any(self._refusal(pos, m) is None for m in _ALL_SHIFTS):
            return Outcome(1 - pos.turn, Termination.NO_MOVES,
                           f"{self.seats[pos.turn]} has no legal move")
        return None

    # -- the Kings' danger (what a player can see coming) -------------------------------
    @staticmethod
    def pushes_king_off(pos: Position, move: Shift) -> bool:
        """Whether ``move`` pushes the opponent's King off the board (wins at once)."""
        return pos.cells[move.ends[1]] == KINGS[1 - pos.turn]

    @staticmethod
    def king_threats(cells: str, player: int) -> int:
        """How many shifts of ``player`` would push the opponent's King off right now
        (legal ones: the line holds a piece of ``player``)."""
        king = cells.find(KINGS[1 - player])
        if king < 0:
            return 0
        own = OWN[player]
        return sum(1 for n, _ in PUSHES[king] if any(cells[i] in own for i in LINES[n]))

    @staticmethod
    def king_exposure(cells: str, player: int) -> int:
        """On how many line ends ``player``'s King stands (shifts that could push it
        off, whoever may make them)."""
        king = cells.find(KINGS[player])
        return len(PUSHES[king]) if king >= 0 else 0

    @staticmethod
    def king_reach(cells: str, player: int) -> int:
        """How many lines through the opponent's King ``player`` may shift (they hold a
        piece of ``player``): ways to move that King toward a line end, or away."""
        king = cells.find(KINGS[1 - player])
        if king < 0:
            return 0
        own = OWN[player]
        return sum(1 for n in THROUGH[king] if any(cells[i] in own for i in LINES[n]))

    # -- storage ------------------------------------------------------------------------
    def serialize(self, pos: Position) -> str:
        data: dict[str, Any] = {"cells": pos.cells, "turn": pos.turn, "simple": pos.simple}
        if pos.last is not None:
            data["last"] = [pos.last.line, pos.last.forward]
        if not pos.simple:
            data["seen"] = sorted(pos.seen)
        return json.dumps(data, separators=(",", ":"))

    def deserialize(self, text: str) -> Position:
        data = json.loads(text)
        last = Shift(data["last"][0], bool(data["last"][1])) if "last" in data else None
        return Position(
            data["cells"], int(data["turn"]), bool(data["simple"]),
            frozenset(data.get("seen", ())), last,
        )

    def move_path(self, pos: Position, move: Shift) -> tuple[Pick, ...]:
        """The end of the line it pushes from, and the next cell, the way it goes."""
        line = LINES[move.line]
        first, second = (line[0], line[1]) if move.forward else (line[-1], line[-2])
        return (Pick(PickKind.LINE_END, GRID.name(GRID.cells[first])),
                Pick(PickKind.TOWARD, GRID.name(GRID.cells[second])))

    def describe(self, pos: Position) -> dict[str, Any]:
        return {"to_move": self.seats[pos.turn],
                "cells": GRID.described(pos.cells, PIECES, self.seats),
                "rings": [[GRID.name(c) for c in ring] for ring in RINGS]}

    def view(self, pos: Position) -> dict[str, Any]:
        return GRID.stack_view(pos.cells, 1) | {"simple": pos.simple,
                                                "empty": EMPTY in pos.cells}
