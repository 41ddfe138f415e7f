"""Monte Carlo tree search (UCT) over the engine interface.

One search grows a tree from the position to move in.  Each iteration walks down
from the root, choosing at every node the child with the best UCT score among the
moves the node may consider yet, until it reaches a move not tried before; it makes
that move, values the new position (``Knowledge.leaf_value``: random playouts, a
static evaluation, or both) and adds the value to every node on the way.

Three refinements make it usable for games with hundreds or thousands of moves per
position and cheap for games with few:

- *progressive widening*: a node with n visits considers only its first
  ``widen_base * n ** widen_power`` moves, in the order ``Knowledge.order`` gives;
- *a solver*: finished games carry their exact value up the tree, so a move that
  wins by force is found and played, and a move that loses by force is avoided;
- *a win-in-one scan* at the root before the search (``Knowledge.winning_move``).

The search stops after ``Budget.iterations`` iterations or when its process CPU
time would pass ``Budget.seconds``, whichever comes first: it keeps 5 % of the time
in hand and never starts an iteration that might end after that (it assumes the next
one may take half as long again as the slowest so far).
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, outcome_value, seat_sign
from pbmserv.bots.search import SAFETY, Budget, SearchResult, first_look
from pbmserv.games import AnyEngine


class Node:
    __slots__ = ("cands", "children", "complete", "moves", "pos", "result", "seat", "total",
                 "visits")

    def __init__(self, pos: Any, seat: int) -> None:
        self.pos = pos
        self.seat = seat
        self.moves: list[Any] | None = None
        #: whether ``cands`` holds every legal move (else only a selection)
        self.complete = True
        self.cands: list[Candidate] | None = None
        self.children: list[Node | None] = []
        self.visits = 0
        #: sum of the values (for seat 0) of every iteration through this node
        self.total = 0.0
        #: the exact value for seat 0 once known (game over here, or solved)
        self.result: float | None = None

    def mean(self) -> float:
        if self.result is not None:
            return self.result
        return self.total / self.visits if self.visits else 0.0


class Search:
    """One move's search; ``rng`` makes it repeatable."""

    def __init__(self, engine: AnyEngine, knowledge: Knowledge, rng: random.Random) -> None:
        self.engine = engine
        self.k = knowledge
        self.rng = rng

    def run(self, pos: Any, budget: Budget) -> SearchResult:
        start = time.process_time()
        engine, k = self.engine, self.k
        moves = first_look(engine, k, pos, budget, start)
        if isinstance(moves, SearchResult):
            return moves
        root = Node(pos, engine.to_move(pos))
        root.moves = moves
        root.cands = k.order(engine, pos, moves, self.rng, True)
        root.children = [None] * len(root.cands)
        # keep 5 % of the time in hand, and assume the next iteration may take half as
        # long again as the slowest so far: a move must never exceed its budget
        deadline = start + SAFETY * budget.seconds
        iterations = 0
        slowest = 0.0
        while iterations < budget.iterations and root.result is None:
            now = time.process_time()
            if now + 1.5 * slowest > deadline:
                break
            self._iterate(root)
            iterations += 1
            slowest = max(slowest, time.process_time() - now)
        move, reason = self._best(root)
        value = root.result if root.result is not None else root.mean()
        return SearchResult(move, value, iterations, time.process_time() - start, reason)

    # -- one iteration -------------------------------------------------------------------
    def _iterate(self, root: Node) -> None:
        path = [root]
        node = root
        while True:
            if node.result is not None:
                value = node.result
                break
            if node.cands is None:
                self._expand(node)
                if node.result is not None:
                    value = node.result
                    break
            index, value_new = self._select(node)
            child = node.children[index]
            assert child is not None
            path.append(child)
            if value_new is not None:
                value = value_new
                break
            node = child
        for n in path:
            n.visits += 1
            n.total += value
        for parent in reversed(path[:-1]):
            if not self._solve(parent):
                break

    def _expand(self, node: Node) -> None:
        if node.moves is not None:
            moves, node.complete = node.moves, True
        else:
            moves, node.complete = self.k.tree_moves(self.engine, node.pos)
        node.moves = None
        if not moves:  # an engine that reports no outcome yet has no move: call it even
            outcome = self.engine.outcome(node.pos)
            node.result = outcome_value(outcome) if outcome is not None else 0.0
            return
        node.cands = self.k.order(self.engine, node.pos, moves, self.rng, False)
        node.children = [None] * len(node.cands)

    def _width(self, node: Node) -> int:
        k = self.k
        assert node.cands is not None
        wide = max(k.widen_min, int(k.widen_base * node.visits ** k.widen_power))
        return min(len(node.cands), wide)

    def _select(self, node: Node) -> tuple[int, float | None]:
        """The child to go to; creates it (and returns its first value) if it is new."""
        width = self._width(node)
        children = node.children
        for i in range(width):
            if children[i] is None:
                return i, self._create(node, i)
        sign = seat_sign(node.seat)
        log_n = math.log(node.visits)
        c = self.k.exploration
        best, best_score = -1, -math.inf
        for i in range(width):
            child = children[i]
            assert child is not None
            if child.result is not None:
                score = sign * child.result
                if score <= -1.0:
                    continue  # a proven loss is never worth another look
            else:
                score = sign * child.total / child.visits
            score += c * math.sqrt(log_n / child.visits)
            if score > best_score:
                best, best_score = i, score
        if best < 0:  # every move considered so far loses: look at one more
            if width < len(children):
                return width, self._create(node, width)
            best = 0
        return best, None

    def _create(self, node: Node, index: int) -> float:
        engine, k = self.engine, self.k
        assert node.cands is not None
        cand = node.cands[index]
        after = cand.after if cand.after is not None else engine.apply(node.pos, cand.move)
        cand.after = None  # the child keeps it
        child = Node(after, engine.to_move(after))
        node.children[index] = child
        outcome, moves = k.probe(engine, after)
        if outcome is not None:
            child.result = outcome_value(outcome)
            return child.result
        child.moves = moves
        if cand.value is not None:
            return cand.value
        return k.leaf_value(engine, after, self.rng)

    def _solve(self, node: Node) -> bool:
        """Mark ``node`` solved if its children decide it; True if it is solved."""
        if node.result is not None:
            return True
        sign = seat_sign(node.seat)
        best = -math.inf
        complete = True
        for child in node.children:
            if child is None or child.result is None:
                complete = False
                continue
            score = sign * child.result
            if score >= 1.0:
                node.result = child.result
                return True
            best = max(best, score)
        if complete and node.complete and node.children:
            node.result = sign * best
            return True
        return False

    # -- the answer ----------------------------------------------------------------------
    def _best(self, root: Node) -> tuple[Any, str]:
        assert root.cands is not None
        sign = seat_sign(root.seat)
        best, best_key = 0, (-math.inf, -math.inf, -math.inf)
        for i, child in enumerate(root.children):
            if child is None:
                continue
            if child.result is not None and sign * child.result >= 1.0:
                return root.cands[i].move, "proven win"
            lost = child.result is not None and sign * child.result <= -1.0
            key = (0.0 if lost else 1.0, float(child.visits), sign * child.mean())
            if key > best_key:
                best, best_key = i, key
        return root.cands[best].move, "search"
