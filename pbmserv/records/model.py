"""A finished or running game as a plain record: who, what, every move, the result."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from pbmserv.games import AnyEngine, get_engine
from pbmserv.games.base import Termination, is_no_result

#: ends that the rules decide from the position, checked when a record is replayed
RULE_TERMINATIONS = frozenset({
    Termination.CHECKMATE, Termination.STALEMATE, Termination.KERNEL, Termination.KING_OFF,
    Termination.NO_MOVES, Termination.REPETITION,
})

_NO_SPACE = re.compile(r"^[^\s\"{}\[\]();]+$")
_NOTATION = re.compile(r"^[A-Za-z][^\s\"{}\[\]();]*$")
_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{6}))?Z$")


class RecordError(ValueError):
    """A record that cannot be read or does not hold together; the message says why."""


def utc(moment: datetime) -> datetime:
    """The same instant in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """ISO 8601 in UTC to the second: 2024-05-01T10:00:00Z (a fraction of a second is
    dropped: players read these; a record read back writes the same again)."""
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str, what: str) -> datetime:
    m = _TIME.match(text)
    if not m:
        raise RecordError(f"{what}: {text!r} is not a time like 2024-05-01T10:00:00Z")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        return datetime(y, mo, d, h, mi, s, int(m.group(7) or 0), tzinfo=UTC)
    except ValueError as exc:
        raise RecordError(f"{what}: {text!r} is not a real time ({exc})") from None


@dataclass(frozen=True)
class RecordMove:
    """One move: its notation (all its parts, comma-joined), when it was played, and the
    player's comment sent with it (None when there was none)."""

    notation: str
    played_at: datetime
    comment: str | None = None

    def __post_init__(self) -> None:
        if not _NOTATION.match(self.notation):
            raise RecordError(f"{self.notation!r} cannot be a move's notation in a record")
        object.__setattr__(self, "played_at", utc(self.played_at))


@dataclass(frozen=True)
class RatingChange:
    """A player's rating before and after the game."""

    userid: str
    before: float
    after: float

    def __post_init__(self) -> None:
        for value in (self.before, self.after):
            if not math.isfinite(value):
                raise RecordError(f"a rating of {self.userid} is not a number: {value}")
        object.__setattr__(self, "before", float(self.before))
        object.__setattr__(self, "after", float(self.after))


@dataclass(frozen=True, kw_only=True)
class GameRecord:
    """Everything worth keeping of one game, in seat order.

    ``termination`` None means the game is still running (result "*"); then
    ``winner`` is None too.  ``winner`` None with a termination is a draw.  Times are
    kept in UTC (a naive time is taken as UTC).
    """

    game: str
    options: tuple[str, ...] = ()
    board: int | None = None
    #: userids, in seat order (``engine.seats``)
    players: tuple[str, ...]
    started: datetime
    ended: datetime | None = None
    moves: tuple[RecordMove, ...] = ()
    winner: int | None = None
    termination: Termination | None = None
    #: how the game ended, in words (empty while it runs)
    reason: str = ""
    ratings: tuple[RatingChange, ...] = ()
    #: the tournament, if the game was part of one
    event: str | None = None
    round: int | None = None
    site: str = "?"

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "players", tuple(self.players))
        object.__setattr__(self, "moves", tuple(self.moves))
        object.__setattr__(self, "ratings", tuple(self.ratings))
        object.__setattr__(self, "started", utc(self.started))
        if self.ended is not None:
            object.__setattr__(self, "ended", utc(self.ended))
        if self.termination is not None:
            object.__setattr__(self, "termination", Termination(self.termination))
        if not re.match(r"^[a-z0-9]+$", self.game):
            raise RecordError(f"{self.game!r} cannot be a game's name")
        for flag in self.options:
            if not _NO_SPACE.match(flag):
                raise RecordError(f"{flag!r} cannot be a game option")
        if not self.players:
            raise RecordError("a record needs its players")
        for userid in self.players:
            if not _NO_SPACE.match(userid):
                raise RecordError(f"{userid!r} cannot be a userid in a record")
        if self.winner is not None:
            if self.termination is None:
                raise RecordError("a game still running has no winner")
            if not 0 <= self.winner < len(self.players):
                raise RecordError(f"there is no seat {self.winner} to win")
        for change in self.ratings:
            if change.userid not in self.players:
                raise RecordError(f"a rating change for {change.userid}, who did not play")
        if self.board is not None and self.board < 0:
            raise RecordError("a board number is not negative")
        if self.round is not None and self.round < 1:
            raise RecordError("rounds are numbered from 1")
        if self.event is not None and self.event in ("", "?"):
            raise RecordError("an event has a name (None when there is none)")
        if not self.site:
            raise RecordError("the site has a name (\"?\" when unknown)")

    @property
    def result(self) -> str:
        """The PGN result: "1-0", "0-1", "1/2-1/2", or "*" while the game runs and
        for a game that ended with no result (declined, abandoned with no winner)."""
        if self.termination is None or is_no_result(self.termination, self.winner):
            return "*"
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner == 0 else "0-1"


def engine_of(record_game: str) -> AnyEngine:
    engine = get_engine(record_game)
    if engine is None:
        raise RecordError(f"there is no game {record_game!r} on this server")
    return engine


def winner_of(result: str, players: int) -> tuple[bool, int | None]:
    """(finished, winner) for a PGN result token."""
    if result == "*":
        return False, None
    if result == "1/2-1/2":
        return True, None
    if result in ("1-0", "0-1") and players == 2:
        return True, 0 if result == "1-0" else 1
    raise RecordError(f"{result!r} is not a result (1-0, 0-1, 1/2-1/2 or *)")
