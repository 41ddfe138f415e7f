"""What a bot knows of a game beyond its rules.

The search (``pbmserv.bots.mcts`` or ``pbmserv.bots.alphabeta``, as
``Knowledge.search`` says) sees a game only through the engine interface
and through a ``Knowledge``: how to value a position it does not search further,
which moves to look at first, and how to spot a win in one quickly.  The base class
knows nothing of any game and works for every engine: it values a position by
random playouts and tries moves in random order.  Per-game subclasses live in the
modules named after the games.

Values are always from the first seat's point of view: +1 a certain win for seat 0,
-1 a certain win for seat 1, 0 even.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome


def outcome_value(outcome: Outcome) -> float:
    """The exact value of a finished game for seat 0."""
    if outcome.winner is None:
        return 0.0
    return 1.0 if outcome.winner == 0 else -1.0


def seat_sign(seat: int) -> float:
    """+1 for seat 0, -1 for seat 1: turns a seat-0 value into ``seat``'s view."""
    return 1.0 if seat == 0 else -1.0


@dataclass
class Candidate:
    """A move as the search first sees it: the position after it, when already
    computed to order the moves, and that position's value when already known."""

    move: Any
    after: Any = None
    value: float | None = None


class Knowledge:
    """The default, game-blind knowledge.  Override what a game needs."""

    #: UCT exploration constant (values lie in [-1, 1])
    exploration: float = 0.7
    #: progressive widening: a node with n visits considers its first
    #: ``max(widen_min, widen_base * n ** widen_power)`` moves, in the order of ``order``
    widen_base: float = 2.0
    widen_power: float = 0.5
    widen_min: int = 2
    #: random plies played out beyond a new leaf before it is valued (0: value it at once)
    playout_plies: int = 200
    #: how many search iterations one level "iteration" counts for in this game; slow
    #: games get fewer iterations from the same level (see ``pbmserv.bots.players``)
    iteration_scale: float = 1.0
    #: the search that plays this game: "mcts" (``pbmserv.bots.mcts``) or "alphabeta"
    #: (``pbmserv.bots.alphabeta``, where an iteration is one position visited)
    search: str = "mcts"
    #: how many of the root's moves, in the order of ``order``, alpha-beta considers
    #: (0: all of them)
    root_width: int = 0
    #: how many answers to each of the root's moves alpha-beta considers, chosen from
    #: all the legal moves as the root's are (``order`` with ``root`` True); 0: the
    #: answers are ``tree_moves``, as deeper down
    reply_width: int = 0

    # -- the rules, as the engine gives them -------------------------------------------
    def probe(self, engine: AnyEngine, pos: Any) -> tuple[Outcome | None, list[Any] | None]:
        """Whether the game is over in ``pos``; also the legal moves when they were
        computed on the way (else None: ``moves`` is asked later if needed)."""
        return engine.outcome(pos), None

    def moves(self, engine: AnyEngine, pos: Any) -> list[Any]:
        return engine.legal_moves(pos)

    def tree_moves(self, engine: AnyEngine, pos: Any) -> tuple[list[Any], bool]:
        """The moves the search considers below the root, and whether they are all the
        legal moves (a selection lets the search prove wins there, never losses)."""
        return self.moves(engine, pos), True

    def noisy_moves(self, engine: AnyEngine, pos: Any) -> tuple[list[Any], bool] | None:
        """The moves alpha-beta plays out beyond its depth (captures, as a rule) and
        whether the player to move must make one of them (True when in check, say: it
        may not stop and take the static value); None when there are none to play out."""
        return None

    # -- judgement -----------------------------------------------------------------
    def evaluate(self, engine: AnyEngine, pos: Any) -> float:
        """A static value of a position that is not over, for seat 0, in [-1, 1]."""
        return 0.0

    def leaf_value(self, engine: AnyEngine, pos: Any, rng: random.Random) -> float:
        """The value of a new leaf (not over): up to ``playout_plies`` random plies,
        then the exact result if the game ended, else ``evaluate``."""
        for _ in range(self.playout_plies):
            outcome, moves = self.probe(engine, pos)
            if outcome is not None:
                return outcome_value(outcome)
            if moves is None:
                moves = self.moves(engine, pos)
            pos = engine.apply(pos, rng.choice(moves))
        outcome, _ = self.probe(engine, pos)
        return outcome_value(outcome) if outcome is not None else self.evaluate(engine, pos)

    def order(self, engine: AnyEngine, pos: Any, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        """The moves, most promising first (the default: a random order)."""
        shuffled = list(moves)
        rng.shuffle(shuffled)
        return [Candidate(m) for m in shuffled]

    def order_by_evaluation(self, engine: AnyEngine, pos: Any, moves: Sequence[Any],
                            rng: random.Random) -> list[Candidate]:
        """The moves by the static value of the position each leads to, best for the
        mover first (ties in random order); each candidate keeps that position and value,
        so ``leaf_value`` should then be ``evaluate`` (``playout_plies`` 0)."""
        sign = seat_sign(engine.to_move(pos))
        judged = []
        for move in moves:
            after = engine.apply(pos, move)
            value = self.evaluate(engine, after)
            judged.append((sign * value, rng.random(), Candidate(move, after, value)))
        judged.sort(key=lambda t: (t[0], t[1]), reverse=True)
        return [c for *_, c in judged]

    def winning_move(self, engine: AnyEngine, pos: Any, moves: Sequence[Any],
                     deadline: float = math.inf) -> Any | None:
        """A move that wins at once (``wins_at_once``), if there is one.  It may give
        up, finding none, once ``time.process_time()`` passes ``deadline``."""
        for move in moves:
            if self.wins_at_once(engine, pos, move):
                return move
            if time.process_time() > deadline:
                break
        return None

    def wins_at_once(self, engine: AnyEngine, pos: Any, move: Any) -> bool:
        """Whether ``move`` ends the game in a win for its player (the default plays it
        and asks the engine; a game may know a quicker way to see it)."""
        outcome, _ = self.probe(engine, engine.apply(pos, move))
        return outcome is not None and outcome.winner == engine.to_move(pos)


class ScoredKnowledge(Knowledge):
    """The knowledge of a game whose moves are few and quick to list: a position is
    valued at once by ``mover_value`` (no playouts), the moves are listed as soon as a
    position is reached, and they are ordered by the value of the position each leads
    to."""

    exploration = 0.6
    playout_plies = 0

    def mover_value(self, pos: Any) -> float:
        """The value of a position for the player to move, in [-1, 1]."""
        raise NotImplementedError

    def evaluate(self, engine: AnyEngine, pos: Any) -> float:
        return seat_sign(engine.to_move(pos)) * self.mover_value(pos)

    def probe(self, engine: AnyEngine, pos: Any) -> tuple[Outcome | None, list[Any] | None]:
        # the game is over exactly when the player to move has no move
        moves = engine.legal_moves(pos)
        if moves:
            return None, moves
        return engine.outcome(pos), None

    def order(self, engine: AnyEngine, pos: Any, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        return self.order_by_evaluation(engine, pos, moves, rng)
