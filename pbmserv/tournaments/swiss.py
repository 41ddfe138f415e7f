"""Swiss pairing: score groups, no pair twice, balanced colours, one bye at most each.

The pairer is a search, so it finds a legal pairing whenever one exists:

1. Order the players by score, then by the order given (seed or rating order).
2. With an odd count, the bye goes to the lowest player in that order who has not had
   one and for whom the others can still be paired; only when no such player exists
   does a player get a second bye.
3. The others are paired top down: the highest unpaired player takes the first
   opponent, in this order of preference, with whom the rest can still be paired:
   the nearest score (its own score group first, floating down only when needed);
   then the smaller colour conflict; then the Dutch order inside the score group
   (the first of the upper half meets the first of the lower half: 1-5, 2-6, ... in
   a group of eight); then the order given.  A pair never meets twice.
4. First every pairing is tried in which nobody's colour difference passes 2 and
   nobody gets one colour three times running; if there is none, then one in which
   only the difference stays within 2; if there is none, colours give way.
5. Colours: each player of a pair gets the colour it is due (the one it has had
   less, or else the other of its last one); when both are due the same colour, the
   stronger claim wins (a difference of 2, over the same colour twice running, over
   a difference of 1, over mere alternation), then the higher-placed player.  In the first round the
   higher-placed player is first on the odd boards (1, 3, ...) and second on the even.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pbmserv.tournaments.results import Pairing

T = TypeVar("T", bound=Hashable)

FIRST, SECOND = 0, 1
#: strengths of a colour claim: none, alternation, a difference of 1, the same colour
#: twice running, a difference of 2 (which must not grow to 3)
NONE, MILD, STRONG, TWICE, ABSOLUTE = 0, 1, 2, 3, 4


class PairingError(ValueError):
    """No legal pairing exists (for example when everybody has met everybody)."""


@dataclass(frozen=True)
class SwissPlayer(Generic[T]):
    """What the pairer needs to know of one player before a round.

    ``colours`` lists the seats taken in the games so far, in order (0 first, 1
    second); byes are not in it.
    """

    key: T
    score: float = 0.0
    opponents: frozenset[T] = frozenset()
    colours: tuple[int, ...] = ()
    had_bye: bool = False

    @property
    def colour_difference(self) -> int:
        """Games as first player minus games as second player."""
        return self.colours.count(FIRST) - self.colours.count(SECOND)

    def claim(self) -> tuple[int | None, int]:
        """The colour this player is due and how strongly (None, NONE when neither)."""
        if not self.colours:
            return None, NONE
        d = self.colour_difference
        twice = len(self.colours) >= 2 and self.colours[-1] == self.colours[-2]
        if d >= 2 or d <= -2:
            return (SECOND if d > 0 else FIRST), ABSOLUTE
        if twice:
            return 1 - self.colours[-1], TWICE
        if d != 0:
            return (SECOND if d > 0 else FIRST), STRONG
        return 1 - self.colours[-1], MILD


@dataclass(frozen=True)
class SwissRound(Generic[T]):
    """A round's boards, best first, as (first player, second player), and the bye."""

    pairs: tuple[tuple[T, T], ...]
    bye: T | None

    def pairings(self, number: int) -> list[Pairing[T]]:
        """The round as ``Pairing`` values (unfinished games and the bye)."""
        out = [Pairing(number, a, b) for a, b in self.pairs]
        if self.bye is not None:
            out.append(Pairing(number, self.bye))
        return out


def swiss_players(keys: Sequence[T], games: Sequence[Pairing[T]]) -> list[SwissPlayer[T]]:
    """The pairer's view of the players after ``games`` (finished or not), keeping order."""
    score = {k: 0.0 for k in keys}
    met: dict[T, set[T]] = {k: set() for k in keys}
    colours: dict[T, list[int]] = {k: [] for k in keys}
    byes: set[T] = set()
    for game in sorted(games, key=lambda g: g.round):
        for seat, player in enumerate((game.first, game.second)):
            if player is None or player not in score:
                continue
            score[player] += game.points(player)
            other = game.opponent(player)
            if other is None:
                byes.add(player)
            else:
                met[player].add(other)
                colours[player].append(seat)
    return [SwissPlayer(k, score[k], frozenset(met[k]), tuple(colours[k]), k in byes)
            for k in keys]


def _clash(a: SwissPlayer[T], b: SwissPlayer[T]) -> int:
    """How bad it is for a and b to meet, colour-wise: the weaker claim when both
    are due the same colour, else 0."""
    ca, sa = a.claim()
    cb, sb = b.claim()
    if ca is None or cb is None or ca != cb:
        return NONE
    return min(sa, sb)


class _Search(Generic[T]):
    """Pairs a set of players (given by index in pairing order) by depth-first search."""

    def __init__(self, players: Sequence[SwissPlayer[T]], worst_clash: int) -> None:
        self.players = players
        n = len(players)
        self.allowed = [0] * n
        for i, a in enumerate(players):
            for j, b in enumerate(players):
                if i == j or b.key in a.opponents or a.key in b.opponents:
                    continue
                if _clash(a, b) > worst_clash:
                    continue
                self.allowed[i] |= 1 << j
        self.failed: set[int] = set()

    def pair(self, remaining: int) -> list[tuple[int, int]] | None:
        if remaining == 0:
            return []
        if remaining in self.failed:
            return None
        # forward check: everybody left must still have somebody to meet
        rest = remaining
        while rest:
            low = rest & -rest
            if not self.allowed[low.bit_length() - 1] & remaining & ~low:
                self.failed.add(remaining)
                return None
            rest ^= low
        top = (remaining & -remaining).bit_length() - 1
        left = remaining & ~(1 << top)
        for other in self._candidates(top, left):
            found = self.pair(left & ~(1 << other))
            if found is not None:
                return [(top, other), *found]
        self.failed.add(remaining)
        return None

    def _candidates(self, top: int, left: int) -> list[int]:
        players = self.players
        me = players[top]
        open_ = [j for j in range(len(players)) if left >> j & 1 and self.allowed[top] >> j & 1]
        group = [top] + [j for j in range(len(players))
                         if left >> j & 1 and players[j].score == me.score]
        half = len(group) // 2

        def preference(j: int) -> tuple[float, int, int, int, int]:
            if players[j].score == me.score:
                k = group.index(j)
                dutch = (0, k - half) if k >= half else (1, half - k)
            else:
                dutch = (2, 0)
            return (abs(me.score - players[j].score), _clash(me, players[j]), *dutch, j)

        return sorted(open_, key=preference)


def _colours(a: SwissPlayer[T], b: SwissPlayer[T], board: int) -> tuple[T, T]:
    """(first, second) for a pair; ``a`` is the higher-placed player."""
    ca, sa = a.claim()
    cb, sb = b.claim()
    if ca is None and cb is None:
        return (a.key, b.key) if board % 2 == 0 else (b.key, a.key)
    b_decides = ca is None or (cb is not None and ca == cb and sb > sa)
    a_first = cb == SECOND if b_decides else ca == FIRST
    return (a.key, b.key) if a_first else (b.key, a.key)


def pair_swiss(players: Sequence[SwissPlayer[T]]) -> SwissRound[T]:
    """The next round for ``players``, given in seed order (the tie-break among equal
    scores).  Raises PairingError when no pairing without a repeated pair exists."""
    keys = [p.key for p in players]
    if len(set(keys)) != len(keys):
        raise PairingError("a player is listed twice")
    if len(players) < 2:
        raise PairingError("a Swiss round needs at least two players")
    order = sorted(range(len(players)), key=lambda i: (-players[i].score, i))
    ranked = [players[i] for i in order]
    n = len(ranked)
    everyone = (1 << n) - 1
    # colours give way step by step: first no two players who must both have the same
    # colour meet, then only no two whose difference would pass 2, then anything
    levels = (STRONG, TWICE, ABSOLUTE)
    searches = {level: _Search(ranked, level) for level in levels}
    if n % 2 == 0:
        tries: list[tuple[int, int | None]] = [(level, None) for level in levels]
    else:
        lowest_first = list(reversed(range(n)))
        fresh = [i for i in lowest_first if not ranked[i].had_bye]
        again = [i for i in lowest_first if ranked[i].had_bye]
        tries = [(level, i) for group in (fresh, again) for level in levels for i in group]
    for level, bye in tries:
        mask = everyone if bye is None else everyone & ~(1 << bye)
        found = searches[level].pair(mask)
        if found is None:
            continue
        boards = sorted(
            ((min(i, j), max(i, j)) for i, j in found),
            key=lambda p: (-max(ranked[p[0]].score, ranked[p[1]].score),
                           -(ranked[p[0]].score + ranked[p[1]].score), p[0]),
        )
        pairs = tuple(_colours(ranked[i], ranked[j], board) for board, (i, j) in enumerate(boards))
        return SwissRound(pairs, None if bye is None else ranked[bye].key)
    raise PairingError(
        "no pairing is possible: every way of pairing these players repeats a game "
        "that was already played")
