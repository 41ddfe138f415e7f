"""What the bots know of Hexamoeba: controlled stacks and the safety of the Kernels.

For each side it counts the stacks it controls, its moves, and its threats: the
moves that would leave it controlling the stack that holds the enemy Kernel (a win
if it were its turn).  A side to move with a threat wins; a side facing two threats
is usually lost.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome
from pbmserv.games.hexamoeba import KERNELS, RAYS, Position, StackMove

_TOP = {"w": 0, "W": 0, "b": 1, "B": 1}


def _kernel_at(cells: Sequence[str], seat: int) -> int:
    kernel = KERNELS[seat]
    for i, stack in enumerate(cells):
        if kernel in stack:
            return i
    return -1


def side_figures(cells: Sequence[str], player: int) -> tuple[int, int, int]:
    """(threats, moves, stacks) of ``player``: moves that take the stack holding the
    enemy Kernel, all moves, stacks controlled."""
    target = _kernel_at(cells, 1 - player)
    held = target >= 0 and _TOP[cells[target][-1]] == player
    threats = moves = stacks = 0
    for i, stack in enumerate(cells):
        if not stack or _TOP[stack[-1]] != player:
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
                    threats += _TOP[stack[ray.index(target)]] == player
                elif held:
                    threats += 1
    return threats, moves, stacks


def score(cells: Sequence[str], turn: int) -> float:
    """The value for the player to move, in [-1, 1]."""
    mine = side_figures(cells, turn)
    theirs = side_figures(cells, 1 - turn)
    if mine[0]:
        return 0.95
    s = (-0.7 * min(theirs[0], 2)
         + 0.06 * (mine[2] - theirs[2])
         + 0.01 * (mine[1] - theirs[1]))
    return math.tanh(s)


class HexamoebaKnowledge(Knowledge):
    exploration = 0.6
    widen_base = 3.0
    playout_plies = 0
    iteration_scale = 1.0

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        moves = engine.legal_moves(pos)
        if moves:
            return None, moves
        return engine.outcome(pos), None

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        return seat_sign(pos.turn) * score(pos.cells, pos.turn)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        return self.order_by_evaluation(engine, pos, moves, rng)

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[StackMove],
                     deadline: float = math.inf) -> StackMove | None:
        mover = pos.turn
        for move in moves:
            outcome = engine.outcome(engine.apply(pos, move))
            if outcome is not None and outcome.winner == mover:
                return move
        return None
