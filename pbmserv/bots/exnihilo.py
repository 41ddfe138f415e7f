"""What the bots know of Ex nihilo: mobility and hostages.

The player to move who has no legal turn loses, so a position is judged by how many
steps each side's own stacks could make (steps of 0-stacks from empty cells are
open to both sides alike and cancel out) and by the stacks each side controls
(``ExNihilo.stack_figures``); moves that leave the opponent a capture to make
(``ExNihilo.turn_status``) are tried first.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.exnihilo import COLOURS, ExNihilo, Position

RULES = ExNihilo


def score(pos: Position) -> float:
    """The value for the player to move, in [-1, 1]."""
    board = pos.board
    mine = RULES.stack_figures(pos.cells, board, COLOURS[pos.turn])
    theirs = RULES.stack_figures(pos.cells, board, COLOURS[1 - pos.turn])
    s = 0.25 * (mine[0] - theirs[0]) + 0.02 * (mine[1] - theirs[1])
    return math.tanh(s)


class ExNihiloKnowledge(Knowledge):
    exploration = 0.6
    widen_base = 2.0
    playout_plies = 0
    iteration_scale = 0.3

    #: how much the static judgement counts against the wins and losses the search finds
    value_scale = 1.0

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        return self.value_scale * seat_sign(pos.turn) * score(pos)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        """Wins first (the opponent is left without a turn), then the moves that force
        the opponent to capture, then the rest; each group by the static value."""
        sign = seat_sign(pos.turn)
        judged = []
        for move in moves:
            after = engine.apply(pos, move)
            alive, forced = RULES.turn_status(after)
            if alive:
                value = self.evaluate(engine, after)
                rank = 1 if forced else 0
            else:
                value, rank = sign, 2
            judged.append((rank, sign * value, rng.random(), Candidate(move, after, value)))
        judged.sort(key=lambda t: t[:3], reverse=True)
        return [c for *_, c in judged]
