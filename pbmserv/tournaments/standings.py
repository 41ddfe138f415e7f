"""Standings: points, then a tie-break (Sonneborn-Berger or Buchholz), then wins.

Definitions (only finished games count; a game still being played counts for
nothing yet):

- points: 1 a win, 1/2 a draw, 0 a loss, ``BYE_POINTS`` (1) a Swiss bye;
- Sonneborn-Berger (round robin): the sum, over one's games, of the opponent's points
  times one's own score in that game (all of a beaten opponent's points, half of a
  drawn one's, none of a lost-to one's); each game of a double round robin counts;
- Buchholz (Swiss): the sum of the points of every opponent met in a finished game
  (a game against the same opponent twice counts twice).  A bye adds nothing to its
  receiver's Buchholz; the bye's point does count in the receiver's own points and so
  in the Buchholz of those who met it;
- wins: games won over the board (a bye is not a win).

Order: more points, then the higher tie-break, then more wins, then the order the
players were given in (seed or rating order).  Players equal in points, tie-break
and wins share a rank (the ``rank`` field; their order among themselves stays the
given one).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from pbmserv.tournaments.results import Pairing

T = TypeVar("T", bound=Hashable)


class TieBreak(StrEnum):
    SONNEBORN_BERGER = "SB"
    BUCHHOLZ = "BH"


@dataclass(frozen=True)
class Standing(Generic[T]):
    player: T
    #: 1 for the leader; players equal in points, tie-break and wins share a rank
    rank: int
    points: float
    tiebreak: float
    wins: int
    #: finished games (byes not included)
    played: int
    byes: int


def standings(players: Sequence[T], games: Iterable[Pairing[T]],
              tiebreak: TieBreak) -> list[Standing[T]]:
    """The table, best first.  ``players`` are in seed order; every game's players
    must be among them."""
    index = {p: i for i, p in enumerate(players)}
    if len(index) != len(players):
        raise ValueError("a player is listed twice")
    finished = [g for g in games if g.finished]
    for game in finished:
        for p in (game.first, game.second):
            if p is not None and p not in index:
                raise ValueError(f"{p!r} plays in the tournament but is not one of its players")
    points = {p: 0.0 for p in players}
    wins = dict.fromkeys(players, 0)
    played = dict.fromkeys(players, 0)
    byes = dict.fromkeys(players, 0)
    for game in finished:
        if game.second is None:
            points[game.first] += game.points(game.first)
            byes[game.first] += 1
            continue
        for p in (game.first, game.second):
            got = game.points(p)
            points[p] += got
            played[p] += 1
            wins[p] += got == 1.0
    breaks = dict.fromkeys(players, 0.0)
    for game in finished:
        if game.second is None:
            continue
        for p, other in ((game.first, game.second), (game.second, game.first)):
            weight = game.points(p) if tiebreak is TieBreak.SONNEBORN_BERGER else 1.0
            breaks[p] += weight * points[other]

    def key(p: T) -> tuple[float, float, int]:
        return (-points[p], -breaks[p], -wins[p])

    ordered = sorted(players, key=lambda p: (key(p), index[p]))
    out: list[Standing[T]] = []
    for pos, p in enumerate(ordered):
        rank = out[-1].rank if out and key(out[-1].player) == key(p) else pos + 1
        out.append(Standing(p, rank, points[p], breaks[p], wins[p], played[p], byes[p]))
    return out
