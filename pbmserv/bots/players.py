"""The bots players meet: a random mover and three levels of search.

Every bot answers with the canonical notation of a legal move.  The three search
levels differ only in their thinking budget (``LEVELS``): a number of search
iterations (positions visited, for alpha-beta; fewer in games whose positions are
slow to work out, see ``Knowledge.iteration_scale``) and a hard cap in CPU seconds
that a move never exceeds.

Draw offers and undo requests follow one rule for every bot (``accepts_draw``,
``accepts_undo``): a bot accepts an offer to end the game when the agreed result is
a win for it; a draw when its own estimate of the position (on a scale from -1,
lost, to +1, won) is ``DRAW_MARGIN`` or more below even, or, once the game has run
``DRAW_PLIES`` plies, when it is not more than ``DRAW_MARGIN`` above even (so that a
game drawn at once, to gain rating from a stronger bot, is never agreed); it never
agrees to lose; it grants every undo request.
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from pbmserv.bots.alphabeta import AlphaBeta
from pbmserv.bots.knowledge import Knowledge, seat_sign
from pbmserv.bots.mcts import Search
from pbmserv.bots.per_game import knowledge_for
from pbmserv.bots.search import Budget
from pbmserv.games import AnyEngine

#: a bot agrees to a draw when it rates its own position this far below even, or,
#: after ``DRAW_PLIES`` plies, unless it rates it more than this above even
DRAW_MARGIN = 0.25
#: plies (moves of either side) after which a bot agrees to draw an even game
DRAW_PLIES = 40


@dataclass(frozen=True)
class Decision:
    """A bot's move and how it came to it."""

    text: str
    move: Any
    #: the bot's estimate of the position for seat 0, in [-1, 1]
    value: float
    iterations: int
    #: CPU seconds the choice took
    seconds: float
    reason: str


def _check_not_over(engine: AnyEngine, pos: Any) -> None:
    outcome = engine.outcome(pos)
    if outcome is not None:
        raise ValueError(f"the game is over: {outcome.reason}")


class Bot(ABC):
    """A computer player.  Bots keep no state between calls."""

    name: str
    summary: str

    @abstractmethod
    def decide(self, engine: AnyEngine, pos: Any, *, seed: int | None = None) -> Decision:
        """Choose a move; the same seed gives the same move.  ValueError if the game
        is over."""

    def choose(self, engine: AnyEngine, pos: Any, *, seed: int | None = None) -> str:
        """The canonical notation of the move to play in ``pos``."""
        return self.decide(engine, pos, seed=seed).text

    @abstractmethod
    def estimate(self, engine: AnyEngine, pos: Any, seat: int) -> float:
        """How good ``pos`` is for ``seat``, from -1 (lost) to +1 (won)."""

    def accepts_draw(self, engine: AnyEngine, pos: Any, seat: int, *, plies: int) -> bool:
        """Whether the bot playing ``seat`` agrees to end the game now by agreement
        (``engine.agreed_outcome``: a draw in most games; in hexamoeba the side with
        more stacks wins), ``plies`` plies into the game."""
        _check_not_over(engine, pos)
        agreed = engine.agreed_outcome(pos)
        if agreed.winner is not None:
            return agreed.winner == seat
        estimate = self.estimate(engine, pos, seat)
        return estimate <= -DRAW_MARGIN or (plies >= DRAW_PLIES and estimate <= DRAW_MARGIN)

    def accepts_undo(self, engine: AnyEngine, pos: Any, seat: int) -> bool:
        """Whether the bot playing ``seat`` lets its opponent take back a move: always."""
        return True


class RandomBot(Bot):
    """Plays a legal move chosen at random; has no opinion of any position."""

    name = "random"
    summary = "plays a random legal move"

    def decide(self, engine: AnyEngine, pos: Any, *, seed: int | None = None) -> Decision:
        start = time.process_time()
        _check_not_over(engine, pos)
        moves = engine.legal_moves(pos)
        if not moves:
            raise ValueError("there is no legal move")
        move = random.Random(seed).choice(moves)
        return Decision(engine.format_move(pos, move), move, 0.0, 0,
                        time.process_time() - start, "random")

    def estimate(self, engine: AnyEngine, pos: Any, seat: int) -> float:
        return 0.0


@dataclass(frozen=True)
class Level:
    name: str
    #: search iterations, before ``Knowledge.iteration_scale``
    iterations: int
    #: the hard cap: CPU seconds a move never exceeds
    seconds: float
    summary: str


LEVELS: tuple[Level, ...] = (
    Level("bot1", 400, 0.25, "quick: at most 0.25 s of thought a move"),
    Level("bot2", 2000, 1.0, "steady: at most 1 s of thought a move"),
    Level("bot3", 6000, 3.0, "strong: at most 3 s of thought a move"),
)


class SearchBot(Bot):
    """The game's search (``Knowledge.search``: Monte Carlo tree search, or alpha-beta)
    with the game's knowledge, on a level's budget."""

    def __init__(self, level: Level, knowledge: Knowledge | None = None) -> None:
        self.level = level
        self.name = level.name
        self.summary = level.summary
        #: the knowledge to use in every game instead of each game's own (for experiments)
        self.knowledge = knowledge

    def knowledge_for(self, engine: AnyEngine) -> Knowledge:
        return self.knowledge if self.knowledge is not None else knowledge_for(engine)

    def budget(self, engine: AnyEngine) -> Budget:
        scale = self.knowledge_for(engine).iteration_scale
        return Budget(max(1, round(self.level.iterations * scale)), self.level.seconds)

    def decide(self, engine: AnyEngine, pos: Any, *, seed: int | None = None) -> Decision:
        knowledge = self.knowledge_for(engine)
        searcher = AlphaBeta if knowledge.search == "alphabeta" else Search
        found = searcher(engine, knowledge, random.Random(seed)).run(pos, self.budget(engine))
        text = engine.format_move(pos, found.move)
        return Decision(text, found.move, found.value, found.iterations, found.seconds,
                        found.reason)

    def estimate(self, engine: AnyEngine, pos: Any, seat: int) -> float:
        """The value of its own search from ``pos`` (seed 0, so repeatable)."""
        return seat_sign(seat) * self.decide(engine, pos, seed=0).value
