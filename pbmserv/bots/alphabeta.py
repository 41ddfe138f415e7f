"""Alpha-beta search (negamax with iterative deepening) over the engine interface.

Games whose static evaluation is sharp and whose tactics are short (captures,
checks, mates) are played better by a full-width search a few plies deep than by
Monte Carlo tree search; a game's ``Knowledge`` chooses (``Knowledge.search``).

The search deepens one ply at a time from the position to move in, trying first
at every depth the move that was best at the one before, and at every node the
moves in the order ``Knowledge.order`` gives (the best move found there before
first, from a table of positions already searched).  At the end of the depth it
goes on with a *quiescence search*: only the moves ``Knowledge.noisy_moves`` names
(captures, as a rule), each side free to stop and take the static value instead,
so that no position is judged in the middle of an exchange.

The root considers at most ``Knowledge.root_width`` moves, in the order
``Knowledge.order`` gives at the root, and the answers to each of them at most
``Knowledge.reply_width`` moves chosen the same way from all the legal ones (so
that an answer the cheaper selection below would miss is seen where it matters
most); nodes deeper down consider the moves of ``Knowledge.tree_moves``.

The search stops when it has visited ``Budget.iterations`` positions or when its
process CPU time would pass ``Budget.seconds``, whichever comes first; it answers
with the best move of the deepest depth it finished, unless the depth under way
had already searched in full another move that beats it at that depth.  A move
never takes longer than the budget: the clock is read at every position, 5 % of
the time is kept in hand, and the answers to a root move are worked out only when
they will be ready in time (their cost is the root's own, measured first).

A won or lost game found through a selection of the moves (a narrow root, the
answers to it, ``tree_moves`` or ``noisy_moves`` that leave moves out) is likely
but not proven: the search goes on deepening, says no more than ``UNPROVEN``, and
when every move it considered at the root loses it considers all of them.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.bots.search import SAFETY, Budget, SearchResult, first_look
from pbmserv.games import AnyEngine

#: the value of a won game for the winner (static values lie in [-1, 1]); a win found
#: nearer the root is worth a little more, so that the search plays the quickest win
WIN = 2.0
#: what a win loses per ply away from the root
WIN_DECAY = 0.001
#: the deepest a search goes, counting from the root (quiescence plies included)
MAX_PLY = 64
#: a value at least this far from 0 is a won (or lost) game found by the search
DECIDED = WIN - MAX_PLY * WIN_DECAY
#: the most a value not proven by an exhaustive search may claim, either way
UNPROVEN = 0.99
#: positions kept in the table of positions already searched
TABLE_SIZE = 200_000

EXACT, LOWER, UPPER = 0, 1, 2


class OutOfBudget(Exception):
    """Raised inside the search when its budget is spent."""


class AlphaBeta:
    """One move's search; ``rng`` breaks ties between equally promising moves."""

    def __init__(self, engine: AnyEngine, knowledge: Knowledge, rng: random.Random,
                 table_size: int = TABLE_SIZE) -> None:
        self.engine = engine
        self.k = knowledge
        self.rng = rng
        self.nodes = 0
        self.node_limit = 0
        self.deadline = math.inf
        #: position -> (depth, value, bound, the best move there); a won or lost value
        #: is kept as seen from the position itself (see ``_to_table``)
        self.table: dict[Any, tuple[int, float, int, Any]] = {}
        self.table_size = table_size
        #: the answers considered to each root move, by the position it leads to
        self.replies: dict[Any, list[Candidate]] = {}
        self.slowest_replies = 0.0
        #: the deepest depth the last search finished, and its value for the mover
        self.depth = 0
        self.score = 0.0
        #: whether the depth under way has looked at a selection of the moves somewhere
        #: (then a won or lost value it finds is likely, not proven)
        self.selective = False

    def run(self, pos: Any, budget: Budget, max_depth: int = MAX_PLY - 1) -> SearchResult:
        start = time.process_time()
        engine, k = self.engine, self.k
        moves = first_look(engine, k, pos, budget, start)
        if isinstance(moves, SearchResult):
            return moves
        seat = engine.to_move(pos)
        self.deadline = start + SAFETY * budget.seconds
        self.node_limit = budget.iterations
        ordered = k.order(engine, pos, moves, self.rng, True)
        cands = ordered[:k.root_width or None]
        afters: list[Any] = [c.after for c in cands]
        # working out a root move's answers is the same work as the root's own moves
        self.slowest_replies = time.process_time() - start
        best_index, best_value, proven = 0, -math.inf, False
        depth = 1
        while depth <= max_depth:
            self.selective = len(cands) < len(ordered)
            try:
                index, value = self._root(pos, cands, afters, depth, best_index)
            except OutOfBudget as stop:
                partial = stop.args[0] if stop.args else None
                if partial is not None:
                    best_index, best_value = partial
                break
            best_index, best_value, self.depth, self.score = index, value, depth, value
            proven = not self.selective and abs(value) >= DECIDED
            if proven:
                break  # a forced result: deeper search cannot change it
            if value <= -DECIDED and len(cands) < len(ordered):
                # every move considered loses: consider them all, at the same depth
                cands = ordered
                afters.extend(c.after for c in ordered[len(afters):])
                continue
            depth += 1
        if best_value == -math.inf:
            mover_value = 0.0
        else:
            bound = 1.0 if proven else UNPROVEN
            mover_value = max(-bound, min(bound, best_value))
        reason = "proven win" if proven and best_value >= DECIDED else "search"
        return SearchResult(cands[best_index].move, seat_sign(seat) * mover_value,
                            self.nodes, time.process_time() - start, reason)

    # -- the budget ------------------------------------------------------------------
    def _visit(self) -> None:
        if self.nodes >= self.node_limit or time.process_time() > self.deadline:
            raise OutOfBudget()
        self.nodes += 1

    # -- the root --------------------------------------------------------------------
    def _root(self, pos: Any, cands: list[Candidate], afters: list[Any], depth: int,
              first: int) -> tuple[int, float]:
        """The best move at ``depth`` plies (its index in ``cands``) and its value for
        the mover; the move ``first`` (the best at the depth before) is tried first."""
        engine = self.engine
        order = [first, *(i for i in range(len(cands)) if i != first)]
        alpha, beta = -math.inf, math.inf
        best_index, best_value = first, -math.inf
        for i in order:
            try:
                after = afters[i]
                if after is None:
                    after = afters[i] = engine.apply(pos, cands[i].move)
                value = -self._negamax(after, depth - 1, -beta, -alpha, 1)
            except OutOfBudget:
                # the moves searched so far at this depth are searched in full: keep the
                # best of them when it beats the move that was best the depth before
                raise OutOfBudget((best_index, best_value) if best_index != first
                                  and best_value > -math.inf else None) from None
            if value > best_value:
                best_index, best_value = i, value
                alpha = max(alpha, value)
        return best_index, best_value

    # -- below the root --------------------------------------------------------------
    def _terminal(self, pos: Any, ply: int) -> tuple[float | None, list[Any] | None]:
        """The value of a finished game for the player to move (else None), and the
        legal moves when they were found on the way."""
        outcome, moves = self.k.probe(self.engine, pos)
        if outcome is None:
            return None, moves
        if outcome.winner is None:
            return 0.0, None
        won = WIN - ply * WIN_DECAY
        return (won if outcome.winner == self.engine.to_move(pos) else -won), None

    def _static(self, pos: Any) -> float:
        return seat_sign(self.engine.to_move(pos)) * self.k.evaluate(self.engine, pos)

    def _negamax(self, pos: Any, depth: int, alpha: float, beta: float, ply: int) -> float:
        self._visit()
        done, _ = self._terminal(pos, ply)
        if done is not None:
            return done
        if depth <= 0 or ply >= MAX_PLY:
            return self._quiesce(pos, alpha, beta, ply)
        engine, k = self.engine, self.k
        alpha_in = alpha
        entry = self.table.get(pos)
        hint = None
        if entry is not None:
            e_depth, e_value, e_bound, hint = entry
            e_value = _from_table(e_value, ply)
            if e_depth >= depth:
                if e_bound == EXACT:
                    return e_value
                if e_bound == LOWER and e_value >= beta:
                    return e_value
                if e_bound == UPPER and e_value <= alpha:
                    return e_value
        if ply == 1 and k.reply_width:
            cands = self._replies(pos)
        else:
            moves, complete = k.tree_moves(engine, pos)
            if not complete:
                self.selective = True
            cands = k.order(engine, pos, moves, self.rng, False) if moves else []
        if not cands:  # an engine that reports no outcome yet has no move: call it even
            return 0.0
        if hint is not None:
            for n, cand in enumerate(cands):
                if cand.move == hint:
                    cands.insert(0, cands.pop(n))
                    break
        best, best_move = -math.inf, cands[0].move
        for cand in cands:
            after = cand.after if cand.after is not None else engine.apply(pos, cand.move)
            value = -self._negamax(after, depth - 1, -beta, -alpha, ply + 1)
            if value > best:
                best, best_move = value, cand.move
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        bound = LOWER if best >= beta else UPPER if best <= alpha_in else EXACT
        if self.table_size:
            if len(self.table) >= self.table_size:
                self.table.clear()
            self.table[pos] = (depth, _to_table(best, ply), bound, best_move)
        return best

    def _replies(self, pos: Any) -> list[Candidate]:
        """The answers considered to a root move (``Knowledge.reply_width``), worked out
        once a search."""
        cands = self.replies.get(pos)
        if cands is None:
            # working them out takes far longer than a position: start it only when
            # it ends before the deadline even if it takes half as long again as the
            # slowest so far
            now = time.process_time()
            if now + 1.5 * self.slowest_replies > self.deadline:
                raise OutOfBudget()
            k = self.k
            moves = k.moves(self.engine, pos)
            cands = self.replies[pos] = k.order(self.engine, pos, moves, self.rng,
                                                True)[:k.reply_width]
            self.slowest_replies = max(self.slowest_replies, time.process_time() - now)
        if len(cands) == self.k.reply_width:
            self.selective = True  # (perhaps) not every answer
        return cands

    def _quiesce(self, pos: Any, alpha: float, beta: float, ply: int) -> float:
        """The value for the player to move once the noisy moves are played out."""
        stand = self._static(pos)
        if ply >= MAX_PLY:
            return stand
        engine, k = self.engine, self.k
        noisy = k.noisy_moves(engine, pos)
        if noisy is None:
            return stand
        moves, forced = noisy
        if forced:
            self.selective = True  # ``noisy_moves`` need not hold every way out
        best = -math.inf if forced else stand
        if best >= beta:
            return best
        alpha = max(alpha, best)
        for cand in k.order(engine, pos, moves, self.rng, False):
            self._visit()
            after = engine.apply(pos, cand.move)
            done, _ = self._terminal(after, ply + 1)
            value = -done if done is not None else -self._quiesce(after, -beta, -alpha, ply + 1)
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        return best if best > -math.inf else stand


def _to_table(value: float, ply: int) -> float:
    """A value found at ``ply`` as seen from the position itself: a win or loss
    ``n`` plies below the root is ``n - ply`` plies below the position."""
    if value >= DECIDED:
        return value + ply * WIN_DECAY
    if value <= -DECIDED:
        return value - ply * WIN_DECAY
    return value


def _from_table(value: float, ply: int) -> float:
    """The inverse of ``_to_table``: a table value met again at ``ply``."""
    if value >= DECIDED:
        return value - ply * WIN_DECAY
    if value <= -DECIDED:
        return value + ply * WIN_DECAY
    return value
