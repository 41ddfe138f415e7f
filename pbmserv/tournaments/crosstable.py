"""The crosstable of a tournament as plain strings, laid out to fit a mail line.

Rows come in standings order and are numbered 1, 2, ...; cells name opponents by
these numbers.

- Round robin: one column per opponent.  A cell holds one mark per game against that
  opponent: ``1`` won, ``=`` drawn, ``0`` lost, ``.`` not finished.  In a double
  round robin the first mark is the game in which the row's player was first.  The
  row's own column is ``*``.
- Swiss: one column per round.  A cell is the row player's seat initial (``W`` or
  ``B`` for White and Black), the opponent's number and the result: ``+`` won,
  ``=`` drawn, ``-`` lost, ``?`` not finished (``W3+``, ``B12=``).  ``bye`` is a
  bye, ``-`` a round without a game.

When the columns do not fit in the width, they are split into blocks of columns,
each shown as a table of its own with the same rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from pbmserv.tournaments.results import Pairing
from pbmserv.tournaments.standings import TieBreak, standings

T = TypeVar("T", bound=Hashable)

LINE_WIDTH = 76
#: longest shown name; longer ones are cut and end in "~"
NAME_WIDTH = 12
POINTS_WIDTH = 5
TIEBREAK_WIDTH = 6


class TournamentKind(StrEnum):
    ROUND_ROBIN = "round-robin"
    SWISS = "swiss"


@dataclass(frozen=True)
class CrosstableRow:
    number: int
    name: str
    points: str
    tiebreak: str
    #: every column's cell, all blocks together
    cells: tuple[str, ...]


@dataclass(frozen=True)
class CrosstableBlock:
    headers: tuple[str, ...]
    #: for each row (same order as ``Crosstable.rows``) its cells in this block
    cells: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Crosstable:
    kind: TournamentKind
    tiebreak: str
    name_width: int
    cell_width: int
    rows: tuple[CrosstableRow, ...]
    blocks: tuple[CrosstableBlock, ...]


def number_text(value: float) -> str:
    """3 -> "3", 2.5 -> "2.5", 7.25 -> "7.25"."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _initials(seats: tuple[str, str]) -> tuple[str, str]:
    a, b = (s[:1].upper() for s in seats)
    return (a, b) if a and b and a != b else ("1", "2")


def _cut(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "~"


def crosstable(players: Sequence[T], games: Sequence[Pairing[T]], kind: TournamentKind,
               *,
               name: Callable[[T], str] = str,
               seats: tuple[str, str] = ("White", "Black"),
               width: int = LINE_WIDTH) -> Crosstable:
    """The crosstable of ``games`` (finished or not) for ``players`` in seed order."""
    round_robin = kind is TournamentKind.ROUND_ROBIN
    tiebreak = TieBreak.SONNEBORN_BERGER if round_robin else TieBreak.BUCHHOLZ
    table = standings(players, games, tiebreak)
    number = {s.player: n for n, s in enumerate(table, start=1)}
    if round_robin:
        headers = [str(n) for n in range(1, len(table) + 1)]
        order = [s.player for s in table]
        meetings = Counter(frozenset((g.first, g.second)) for g in games if not g.is_bye)
        per_pair = max(meetings.values(), default=1)
        cells = [_round_robin_cells(p, order, games, per_pair) for p in order]
    else:
        last = max((g.round for g in games), default=0)
        headers = [f"R{r}" for r in range(1, last + 1)]
        cells = [[_swiss_cell(s.player, r, games, number, _initials(seats))
                  for r in range(1, last + 1)] for s in table]
    cell_width = max([len(h) for h in headers] + [len(c) for row in cells for c in row] + [1])
    name_width = min(NAME_WIDTH, max([len(name(s.player)) for s in table] + [4]))
    rows = tuple(
        CrosstableRow(n, _cut(name(s.player), name_width), number_text(s.points),
                      number_text(s.tiebreak), tuple(row))
        for n, (s, row) in enumerate(zip(table, cells, strict=True), start=1)
    )
    fixed = 3 + 1 + name_width + 1 + POINTS_WIDTH + 1 + TIEBREAK_WIDTH
    per_block = max(1, (width - fixed) // (cell_width + 1))
    blocks = tuple(
        CrosstableBlock(tuple(headers[i: i + per_block]),
                        tuple(tuple(row[i: i + per_block]) for row in cells))
        for i in range(0, len(headers), per_block)
    ) or (CrosstableBlock((), tuple(() for _ in rows)),)
    return Crosstable(kind, str(tiebreak), name_width, cell_width, rows, blocks)


def _mark(game: Pairing[T], player: T) -> str:
    if not game.finished:
        return "."
    return {1.0: "1", 0.5: "=", 0.0: "0"}[game.points(player)]


def _round_robin_cells(player: T, order: Sequence[T], games: Sequence[Pairing[T]],
                       per_pair: int) -> list[str]:
    mine = [g for g in games if not g.is_bye and player in (g.first, g.second)]
    out = []
    for other in order:
        if other == player:
            out.append("*" * per_pair)
            continue
        met = sorted((g for g in mine if g.opponent(player) == other),
                     key=lambda g: (g.first != player, g.round))
        out.append("".join(_mark(g, player) for g in met).ljust(per_pair, "."))
    return out


def _swiss_cell(player: T, round_: int, games: Sequence[Pairing[T]], number: dict[T, int],
                initials: tuple[str, str]) -> str:
    for game in games:
        if game.round != round_ or player not in (game.first, game.second):
            continue
        if game.second is None:
            return "bye"
        other = game.opponent(player)
        seat = initials[0] if game.first == player else initials[1]
        result = {1.0: "+", 0.5: "=", 0.0: "-"}[game.points(player)] if game.finished else "?"
        return f"{seat}{number[other] if other is not None else '?'}{result}"
    return "-"
