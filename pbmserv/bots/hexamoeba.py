"""What the bots know of Hexamoeba: controlled stacks and the safety of the Kernels.

For each side the engine counts the stacks it controls, its moves, and its threats
(``Hexamoeba.tally``): the moves that would leave it controlling the stack that
holds the enemy Kernel (a win if it were its turn).  A side to move with a threat
wins; a side facing two threats is usually lost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pbmserv.bots.knowledge import ScoredKnowledge
from pbmserv.games.hexamoeba import Hexamoeba, Position


def score(cells: Sequence[str], turn: int) -> float:
    """The value for the player to move, in [-1, 1]."""
    mine = Hexamoeba.tally(cells, turn)
    theirs = Hexamoeba.tally(cells, 1 - turn)
    if mine[0]:
        return 0.95
    s = (-0.7 * min(theirs[0], 2)
         + 0.06 * (mine[2] - theirs[2])
         + 0.01 * (mine[1] - theirs[1]))
    return math.tanh(s)


class HexamoebaKnowledge(ScoredKnowledge):
    widen_base = 3.0

    def mover_value(self, pos: Position) -> float:
        return score(pos.cells, pos.turn)
