"""What the bots know of Honey Donuts: where each King can be pushed off.

A King is in danger on a cell at the end of a line (the board's edge or the hole):
shifting that line toward it pushes it out.  Whoever has a piece on such a line may
shift it, so a line with the enemy King at one end and one of your own pieces on it
is a threat, and a threat on your turn is a win.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome
from pbmserv.games.honeydonuts import KINGS, LINES, OWN, Position, Shift


def _pushes() -> tuple[tuple[tuple[int, bool], ...], ...]:
    """For every cell, the (line, forward) shifts that push the piece on it out."""
    out: list[list[tuple[int, bool]]] = [[] for _ in range(19)]
    for n, line in enumerate(LINES):
        out[line[-1]].append((n, True))
        out[line[0]].append((n, False))
    return tuple(tuple(p) for p in out)


PUSHES = _pushes()
#: the lines through each cell
THROUGH: tuple[tuple[int, ...], ...] = tuple(
    tuple(n for n, line in enumerate(LINES) if cell in line) for cell in range(19))


def threats(cells: str, player: int) -> int:
    """How many shifts of ``player`` would push the enemy King out right now."""
    king = cells.find(KINGS[1 - player])
    if king < 0:
        return 0
    own = OWN[player]
    return sum(1 for n, _ in PUSHES[king] if any(cells[i] in own for i in LINES[n]))


def exposure(cells: str, player: int) -> int:
    """On how many line ends ``player``'s King stands."""
    king = cells.find(KINGS[player])
    return len(PUSHES[king]) if king >= 0 else 0


def reach(cells: str, player: int) -> int:
    """Lines through the enemy King that hold a piece of ``player`` (shifts that move
    the enemy King: ways to bring it to an edge, or off it)."""
    king = cells.find(KINGS[1 - player])
    if king < 0:
        return 0
    own = OWN[player]
    return sum(1 for n in THROUGH[king] if any(cells[i] in own for i in LINES[n]))


def score(cells: str, turn: int) -> float:
    """The value for the player to move, in [-1, 1]."""
    other = 1 - turn
    if KINGS[turn] not in cells:
        return -1.0
    if KINGS[other] not in cells:
        return 1.0
    if threats(cells, turn):
        return 0.95
    against = threats(cells, other)
    s = (-0.7 * min(against, 2)
         + 0.15 * (exposure(cells, other) - exposure(cells, turn))
         + 0.08 * (reach(cells, turn) - reach(cells, other)))
    return math.tanh(s)


class HoneyDonutsKnowledge(Knowledge):
    exploration = 0.6
    widen_base = 4.0
    playout_plies = 0
    iteration_scale = 1.0

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        if KINGS[0] in pos.cells and KINGS[1] in pos.cells:
            moves = engine.legal_moves(pos)
            if moves:
                return None, moves
        return engine.outcome(pos), None

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        return seat_sign(pos.turn) * score(pos.cells, pos.turn)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        return self.order_by_evaluation(engine, pos, moves, rng)

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[Shift],
                     deadline: float = math.inf) -> Shift | None:
        enemy = KINGS[1 - pos.turn]
        for move in moves:
            if pos.cells[move.ends[1]] == enemy:
                return move
        return None
