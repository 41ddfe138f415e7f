"""What the bots know of Honey Donuts: where each King can be pushed off.

A King is in danger on a cell at the end of a line (the board's edge or the hole):
shifting that line toward it pushes it off.  Whoever has a piece on such a line may
shift it, so a line with the enemy King at one end and one of your own pieces on it
is a threat, and a threat on your turn is a win.  The engine counts them
(``HoneyDonuts.king_threats`` and its neighbours); this module weighs them.
"""

from __future__ import annotations

import math

from pbmserv.bots.knowledge import ScoredKnowledge
from pbmserv.games import AnyEngine
from pbmserv.games.honeydonuts import HoneyDonuts, Position, Shift

RULES = HoneyDonuts


def score(cells: str, turn: int) -> float:
    """The value for the player to move, in [-1, 1]."""
    lost = RULES.king_lost(cells)
    if lost is not None:
        return -1.0 if lost == turn else 1.0
    if RULES.king_threats(cells, turn):
        return 0.95
    other = 1 - turn
    against = RULES.king_threats(cells, other)
    s = (-0.7 * min(against, 2)
         + 0.15 * (RULES.king_exposure(cells, other) - RULES.king_exposure(cells, turn))
         + 0.08 * (RULES.king_reach(cells, turn) - RULES.king_reach(cells, other)))
    return math.tanh(s)


class HoneyDonutsKnowledge(ScoredKnowledge):
    widen_base = 4.0

    def mover_value(self, pos: Position) -> float:
        return score(pos.cells, pos.turn)

    def wins_at_once(self, engine: AnyEngine, pos: Position, move: Shift) -> bool:
        return RULES.pushes_king_off(pos, move)
