"""Round-robin schedules by the circle method, with Berger-table colours.

Every pair meets once (twice with ``double``: once with each player first).  A
tournament by mail starts all its boards at once, so the rounds only group the
boards; they still come out as a table could use them: nobody plays twice in a round,
and each player's colours alternate with at most two alike in a row.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def round_robin(players: Sequence[T], double: bool = False) -> list[list[tuple[T, T]]]:
    """The rounds of a round robin: lists of (first player, second player).

    With an odd number of players one player sits each round out (no game, no
    point).  Each player is first in half of its games, or one more or one fewer when
    the count is odd.  ``double`` adds a second cycle: the same rounds with the seats
    swapped, so every pair meets once with each player first.
    """
    if len(set(players)) != len(players):
        raise ValueError("a player is listed twice")
    if len(players) < 2:
        raise ValueError("a round robin needs at least two players")
    n = len(players)
    m = n + (n % 2)  # with a sitter-out: the player paired with seat m-1 rests
    fixed = m - 1
    step = m // 2  # rotating by half the circle gives Berger's alternating colours
    rounds: list[list[tuple[T, T]]] = []
    for r in range(m - 1):
        seat = [(k + r * step) % (m - 1) for k in range(m - 1)]
        pairs = [(seat[0], fixed) if r % 2 == 0 else (fixed, seat[0])]
        pairs += [(seat[k], seat[m - 1 - k]) for k in range(1, m // 2)]
        rounds.append([(players[a], players[b]) for a, b in pairs if a < n and b < n])
    if double:
        rounds += [[(b, a) for a, b in pairs] for pairs in rounds]
    return rounds
