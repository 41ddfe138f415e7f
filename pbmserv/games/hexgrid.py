"""Coordinates of a hexagonal board of side N (the convention of shared hex games).

Rows are lettered from the bottom (``a``), cells numbered from 1 at the left.
Internally a cell is an axial pair ``(col, row)`` with 0 <= col, row <= 2N-2 and
|col - row| <= N-1; the six neighbours differ by the directions below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pbmserv.games.base import MoveSyntaxError

Cell = tuple[int, int]

#: the six directions, as (dcol, drow), and a name a player can read
DIRECTIONS: tuple[tuple[int, int], ...] = ((1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1))
DIRECTION_NAMES: dict[tuple[int, int], str] = {
    (1, 0): "east",
    (1, 1): "north-east",
    (0, 1): "north-west",
    (-1, 0): "west",
    (-1, -1): "south-west",
    (0, -1): "south-east",
}
#: the three line directions (one of each opposite pair)
AXES: tuple[tuple[int, int], ...] = ((1, 0), (0, 1), (1, 1))

_CELL_RE = re.compile(r"^([a-z])(\d{1,2})$")


class CoordinateError(ValueError):
    pass


@dataclass(frozen=True)
class HexGrid:
    side: int

    @property
    def rows(self) -> int:
        return 2 * self.side - 1

    @property
    def centre(self) -> Cell:
        return (self.side - 1, self.side - 1)

    def contains(self, cell: Cell) -> bool:
        col, row = cell
        last = self.rows - 1
        return 0 <= col <= last and 0 <= row <= last and abs(col - row) <= self.side - 1

    def row_length(self, row: int) -> int:
        return self.side + min(row, self.rows - 1 - row)

    def first_col(self, row: int) -> int:
        return max(0, row - (self.side - 1))

    @cached_property
    def cells(self) -> tuple[Cell, ...]:
        """All cells, bottom row first, left to right."""
        return tuple(
            (self.first_col(row) + i, row)
            for row in range(self.rows)
            for i in range(self.row_length(row))
        )

    @cached_property
    def index(self) -> dict[Cell, int]:
        return {cell: i for i, cell in enumerate(self.cells)}

    def name(self, cell: Cell) -> str:
        col, row = cell
        return f"{chr(ord('a') + row)}{col - self.first_col(row) + 1}"

    def parse(self, text: str) -> Cell:
        m = _CELL_RE.match(text.strip().lower())
        if not m:
            raise CoordinateError(f"{text!r} is not a cell name (a letter and a number, like c3)")
        row = ord(m.group(1)) - ord("a")
        num = int(m.group(2))
        if not 0 <= row < self.rows or not 1 <= num <= self.row_length(row):
            raise CoordinateError(f"there is no cell {text.strip().lower()} on this board")
        return (self.first_col(row) + num - 1, row)

    def parse_pair(self, text: str, sep: str, usage: str) -> tuple[Cell, Cell]:
        """Two cells written ``a1<sep>a2``; ``usage`` tells the player the right form."""
        parts = text.strip().lower().split(sep)
        if len(parts) != 2:
            raise MoveSyntaxError(f"{text!r} is not a move; {usage}")
        try:
            return self.parse(parts[0]), self.parse(parts[1])
        except CoordinateError as exc:
            raise MoveSyntaxError(str(exc)) from None

    def stack_view(self, stacks: Sequence[str], width: int) -> dict[str, Any]:
        """Rows of stacks (or one-letter pieces) for the hex board template; stacks
        wider than ``width`` (at least 1) are drawn as a mark like [1] and listed in
        ``tall``."""
        rows = []
        tall: list[dict[str, str]] = []
        for letter, cells, indices, numbers in self._drawn_rows:
            shown = [stacks[i] or "." for i in indices]
            if tall or max(map(len, shown)) > width:
                for k, i in enumerate(indices):
                    if len(stacks[i]) > width:
                        tall.append({"mark": f"[{len(tall) + 1}]",
                                     "name": self.name(cells[k]), "stack": stacks[i]})
                        shown[k] = tall[-1]["mark"]
            rows.append({"letter": letter, "cells": shown, "numbers": list(numbers)})
        return {"rows": rows, "width": self.side * 2 - 1, "tall": tall}

    def described(self, stacks: Sequence[str], pieces: Mapping[str, tuple[int | None, str]],
                  seats: Sequence[str]) -> list[dict[str, Any]]:
        """Every cell for ``Engine.describe``, top row first: ``pieces`` gives each
        piece letter's owner (a seat, None for no one's) and kind; "#" is a hole, ""
        and "." empty.  The top piece's owner controls a stack."""
        out = []
        for _, cells, indices, _ in self._drawn_rows:
            for cell, i in zip(cells, indices, strict=True):
                stack = stacks[i]
                hole = stack == "#"
                shown = [] if hole or stack in ("", ".") else [
                    ["" if owner is None else seats[owner], kind]
                    for owner, kind in (pieces[p] for p in stack)]
                out.append({"name": self.name(cell), "hole": hole,
                            "owner": shown[-1][0] if shown else "", "pieces": shown})
        return out

    @cached_property
    def _drawn_rows(self) -> tuple[tuple[str, list[Cell], tuple[int, ...], tuple[str, ...]],
                                   ...]:
        """``display_rows`` with each cell's index and number (they never change)."""
        return tuple((letter, cells, tuple(self.index[c] for c in cells),
                      tuple(str(i + 1) for i in range(len(cells))))
                     for letter, cells in self.display_rows())

    def distance(self, a: Cell, b: Cell) -> int:
        dc, dr = a[0] - b[0], a[1] - b[1]
        return max(abs(dc), abs(dr), abs(dc - dr))

    def ring(self, cell: Cell) -> int:
        return self.distance(cell, self.centre)

    def neighbours(self, cell: Cell) -> list[Cell]:
        col, row = cell
        out = [(col + dc, row + dr) for dc, dr in DIRECTIONS]
        return [c for c in out if self.contains(c)]

    def direction(self, a: Cell, b: Cell) -> tuple[tuple[int, int], int] | None:
        """The unit direction and step count from a to b along a straight line, if any."""
        dc, dr = b[0] - a[0], b[1] - a[1]
        if (dc, dr) == (0, 0):
            return None
        steps = max(abs(dc), abs(dr), abs(dc - dr))
        unit = (dc // steps if dc else 0, dr // steps if dr else 0)
        if (unit[0] * steps, unit[1] * steps) != (dc, dr) or unit not in DIRECTION_NAMES:
            return None
        return unit, steps

    def ray(self, start: Cell, step: tuple[int, int]) -> list[Cell]:
        """The cells from ``start`` (excluded) to the edge in one direction."""
        out: list[Cell] = []
        col, row = start
        while True:
            col, row = col + step[0], row + step[1]
            if not self.contains((col, row)):
                return out
            out.append((col, row))

    def display_rows(self) -> list[tuple[str, list[Cell]]]:
        """Rows top first for drawing: (letter, cells left to right)."""
        return [
            (chr(ord("a") + row),
             [(self.first_col(row) + i, row) for i in range(self.row_length(row))])
            for row in reversed(range(self.rows))
        ]
