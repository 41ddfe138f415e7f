"""The games of a tournament as plain values, shared by pairing and standings."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

#: what a bye scores (Swiss only; in a round robin the player who sits out scores nothing)
BYE_POINTS = 1.0
#: the scores a finished game may give its first player
SCORES = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Pairing(Generic[T]):
    """One board of a round, or a bye when ``second`` is None.

    ``score`` is the first player's score (1 win, 0.5 draw, 0 loss), None while the
    game is not finished.  A bye needs no score: it is always worth ``BYE_POINTS``.
    """

    round: int
    first: T
    second: T | None = None
    score: float | None = None

    def __post_init__(self) -> None:
        if self.second is not None and self.second == self.first:
            raise ValueError(f"{self.first!r} cannot play itself")
        if self.score is not None and self.score not in SCORES:
            raise ValueError(f"a game scores 0, 0.5 or 1 for its first player, not {self.score}")

    @property
    def is_bye(self) -> bool:
        return self.second is None

    @property
    def finished(self) -> bool:
        return self.is_bye or self.score is not None

    def points(self, player: T) -> float:
        """What ``player`` scored here (0 while unfinished)."""
        if self.is_bye:
            return BYE_POINTS if player == self.first else 0.0
        if self.score is None:
            return 0.0
        if player == self.first:
            return self.score
        if player == self.second:
            return 1.0 - self.score
        return 0.0

    def opponent(self, player: T) -> T | None:
        if player == self.first:
            return self.second
        if player == self.second:
            return self.first
        return None
