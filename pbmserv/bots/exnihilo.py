"""What the bots know of Ex nihilo: mobility and hostages.

The player to move who has no legal turn loses, so a position is judged by how many
steps each side's own stacks could make (steps of 0-stacks from empty cells are
open to both sides alike and cancel out), by the stacks each side controls, and by
hostages: enemy stacks that a step could flank right now.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome
from pbmserv.games.exnihilo import COLOURS, Board, Position, Turn


def stack_figures(cells: Sequence[str], board: Board, colour: str) -> tuple[int, int]:
    """(stacks topped by ``colour``, steps those stacks could make)."""
    stacks = steps = 0
    ring = board.ring
    for a, stack in enumerate(cells):
        if not stack or stack[-1] != colour:
            continue
        stacks += 1
        h = len(stack)
        ring_a = ring[a]
        for ray in board.rays[a]:
            for b in ray:
                if cells[b]:
                    break
                steps += h - 1 + (ring[b] > ring_a)
    return stacks, steps


def score(pos: Position) -> float:
    """The value for the player to move, in [-1, 1]."""
    board = pos.board
    mine = stack_figures(pos.cells, board, COLOURS[pos.turn])
    theirs = stack_figures(pos.cells, board, COLOURS[1 - pos.turn])
    s = 0.25 * (mine[0] - theirs[0]) + 0.02 * (mine[1] - theirs[1])
    return math.tanh(s)


class ExNihiloKnowledge(Knowledge):
    exploration = 0.6
    widen_base = 2.0
    playout_plies = 0
    iteration_scale = 0.3

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        moves = engine.legal_moves(pos)
        if moves:
            return None, moves
        return engine.outcome(pos), None

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        return seat_sign(pos.turn) * score(pos)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        return self.order_by_evaluation(engine, pos, moves, rng)

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[Turn]
                     ) -> Turn | None:
        return super().winning_move(engine, pos, moves)
