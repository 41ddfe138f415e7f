"""What happened, as plain values: the game service records them, and the
notifications module alone turns them into mail (later also ratings, tournaments,
digests and bots react to them).  Tournament events belong to no board: their
``board_id`` is None and they name their tournament."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from typing import ClassVar

from pbmserv.db.status import RequestKind
from pbmserv.games.base import Termination


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str]
    board_id: int | None

    def data(self) -> str:
        fields = asdict(self)
        fields.pop("board_id")
        return json.dumps(fields, sort_keys=True, default=str)


@dataclass(frozen=True)
class BoardCreated(Event):
    kind = "board-created"
    #: the seek the board was made from, if any
    seek: int | None = None
    #: the tournament and round the board was paired in, if any
    tournament: str | None = None
    round: int | None = None


@dataclass(frozen=True)
class BoardAccepted(Event):
    """A player took up a board someone else started (``<game> accept board``)."""

    kind = "board-accepted"
    seat: int


@dataclass(frozen=True)
class MovePlayed(Event):
    kind = "move-played"
    ply: int
    seat: int
    notation: str
    comment: str | None = None
    #: played from the player's queue of conditional moves
    automatic: bool = False


@dataclass(frozen=True)
class RequestMade(Event):
    kind = "request-made"
    request: RequestKind
    seat: int
    comment: str | None = None
    #: an undo asked for when the opponent has answered the asker's last move: both
    #: moves go back if it is accepted
    answer_too: bool = False


@dataclass(frozen=True)
class RequestAnswered(Event):
    kind = "request-answered"
    request: RequestKind
    #: the seat that made the request, and the one that answered it
    seat: int
    by: int
    accepted: bool
    comment: str | None = None


@dataclass(frozen=True)
class RequestLapsed(Event):
    """The opponent moved instead of answering."""

    kind = "request-lapsed"
    request: RequestKind
    seat: int
    by: int


@dataclass(frozen=True)
class MoveTakenBack(Event):
    kind = "move-taken-back"
    ply: int
    seat: int
    notation: str


@dataclass(frozen=True)
class GameFinished(Event):
    kind = "game-finished"
    winner: int | None
    termination: Termination
    reason: str
    #: the seat whose act ended it (a resignation, a decline), and their comment
    by: int | None = None
    comment: str | None = None


@dataclass(frozen=True)
class QueueCleared(Event):
    kind = "queue-cleared"
    seat: int
    #: the move the queue waited for (None: taken back), and the one played instead
    expected: str | None
    played: str | None


@dataclass(frozen=True)
class NagDue(Event):
    kind = "nag-due"
    seat: int
    idle_days: int
    forfeit_days: int


@dataclass(frozen=True)
class ChatSent(Event):
    kind = "chat-sent"
    user_id: int
    text: str


@dataclass(frozen=True)
class TournamentEvent(Event):
    """Something that happened to a tournament (``board_id`` is None)."""

    tournament_id: int


@dataclass(frozen=True)
class TournamentStarted(TournamentEvent):
    kind = "tournament-started"


@dataclass(frozen=True)
class RoundStarted(TournamentEvent):
    """A Swiss round was paired and its boards started (not round 1: see
    TournamentStarted)."""

    kind = "round-started"
    round: int


@dataclass(frozen=True)
class TournamentFinished(TournamentEvent):
    kind = "tournament-finished"
    #: why it ended before its last round, if it did
    note: str | None = None


def _kinds(cls: type[Event]) -> dict[str, type[Event]]:
    found: dict[str, type[Event]] = {}
    for sub in cls.__subclasses__():
        if "kind" in sub.__dict__:
            found[sub.kind] = sub
        found.update(_kinds(sub))
    return found


def event_from_row(board_id: int | None, kind: str, data: str) -> Event | None:
    """The event a board_events row records (None for a kind this version does not
    know). Enum fields come back as their string values, which compare equal."""
    cls = _kinds(Event).get(kind)
    if cls is None:
        return None
    fields = json.loads(data)
    names = {f.name for f in dataclass_fields(cls)}
    try:
        return cls(board_id=board_id, **{k: v for k, v in fields.items() if k in names})
    except TypeError:  # a row written by another version, missing a field
        return None
