"""Bots against bots: a match of several games, colours alternating."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pbmserv.bots.players import Bot
from pbmserv.games import AnyEngine

#: a game still going after this many plies (moves of either side) is scored a draw
DEFAULT_MAX_PLIES = 300


@dataclass
class MoveTimes:
    """CPU seconds of one bot's moves."""

    count: int = 0
    total: float = 0.0
    longest: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.longest = max(self.longest, seconds)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


@dataclass(frozen=True)
class GameRecord:
    #: which bot had the first seat: "a" or "b"
    first: str
    #: "a", "b", or None for a draw
    winner: str | None
    plies: int
    reason: str
    moves: tuple[str, ...]


@dataclass
class MatchResult:
    a: str
    b: str
    games: list[GameRecord] = field(default_factory=list)
    times: dict[str, MoveTimes] = field(
        default_factory=lambda: {"a": MoveTimes(), "b": MoveTimes()})

    @property
    def wins_a(self) -> int:
        return sum(1 for g in self.games if g.winner == "a")

    @property
    def wins_b(self) -> int:
        return sum(1 for g in self.games if g.winner == "b")

    @property
    def draws(self) -> int:
        return sum(1 for g in self.games if g.winner is None)

    def score_line(self) -> str:
        return f"{self.a} {self.wins_a} - {self.b} {self.wins_b} ({self.draws} draws)"


def play_game(engine: AnyEngine, first: Bot, second: Bot, options: Sequence[str] = (),
              seed: int = 0, max_plies: int = DEFAULT_MAX_PLIES,
              on_move: Callable[[int, float], None] | None = None,
              ) -> tuple[int | None, int, str, tuple[str, ...]]:
    """One game; returns (winning seat or None, plies, how it ended, the moves).

    ``on_move(seat, seconds)`` hears of every move and the CPU time it took.  A game
    that reaches ``max_plies`` plies without ending is a draw ("move limit").
    """
    rng = random.Random(seed)
    pos = engine.new(engine.check_options(options))
    bots = (first, second)
    moves: list[str] = []
    while True:
        outcome = engine.outcome(pos)
        if outcome is not None:
            return outcome.winner, len(moves), outcome.reason, tuple(moves)
        if len(moves) >= max_plies:
            return None, len(moves), f"move limit of {max_plies} plies", tuple(moves)
        seat = engine.to_move(pos)
        decision = bots[seat].decide(engine, pos, seed=rng.randrange(2**32))
        if on_move is not None:
            on_move(seat, decision.seconds)
        pos, text = engine.play(pos, decision.text)
        moves.append(text)


def play_match(engine: AnyEngine, bot_a: Bot, bot_b: Bot, games: int,
               options: Sequence[str] = (), seed: int = 0,
               max_plies: int = DEFAULT_MAX_PLIES,
               on_game: Callable[[int, GameRecord], None] | None = None) -> MatchResult:
    """``games`` games of ``bot_a`` against ``bot_b``; ``bot_a`` moves first in the
    even-numbered games (0, 2, ...), ``bot_b`` in the others.  ``on_game(number,
    record)`` hears of each game as it ends."""
    result = MatchResult(bot_a.name, bot_b.name)
    for n in range(games):
        a_first = n % 2 == 0
        seating = ("a", "b") if a_first else ("b", "a")
        first, second = (bot_a, bot_b) if a_first else (bot_b, bot_a)

        def timed(seat: int, seconds: float, seating: tuple[str, str] = seating) -> None:
            result.times[seating[seat]].add(seconds)

        winner, plies, reason, moves = play_game(
            engine, first, second, options, seed=seed * 1_000_003 + n, max_plies=max_plies,
            on_move=timed)
        record = GameRecord(seating[0], None if winner is None else seating[winner], plies,
                            reason, moves)
        result.games.append(record)
        if on_game is not None:
            on_game(n, record)
    return result
