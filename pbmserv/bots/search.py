"""What every search shares: its budget, its answer, and its first look at the
position (``pbmserv.bots.mcts`` and ``pbmserv.bots.alphabeta`` both start here)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pbmserv.bots.knowledge import Knowledge, seat_sign
from pbmserv.games import AnyEngine


@dataclass(frozen=True)
class Budget:
    """How long a search may think: iterations, and a hard cap in CPU seconds."""

    iterations: int
    seconds: float


@dataclass(frozen=True)
class SearchResult:
    move: Any
    #: the search's estimate of the position for seat 0, in [-1, 1]
    value: float
    iterations: int
    #: CPU seconds spent
    seconds: float
    #: why this move: "only move", "wins at once", "proven win" or "search"
    reason: str


#: the share of ``Budget.seconds`` that the search itself may use
SAFETY = 0.95


def first_look(engine: AnyEngine, k: Knowledge, pos: Any, budget: Budget, start: float
               ) -> SearchResult | list[Any]:
    """The answer when no search is needed (the only move, or a win at once), else the
    legal moves to search.  ValueError when the game is over or has no move.

    ``start`` is the process CPU time the search began at: the scan for a win in one
    may use half the budget (it takes far less as a rule)."""
    outcome, moves = k.probe(engine, pos)
    if outcome is not None:
        raise ValueError(f"the game is over: {outcome.reason}")
    if moves is None:
        moves = k.moves(engine, pos)
    if not moves:
        raise ValueError("there is no legal move")
    if len(moves) == 1:
        return SearchResult(moves[0], 0.0, 0, time.process_time() - start, "only move")
    win = k.winning_move(engine, pos, moves, start + 0.5 * budget.seconds)
    if win is not None:
        return SearchResult(win, seat_sign(engine.to_move(pos)), 0,
                            time.process_time() - start, "wins at once")
    return moves
