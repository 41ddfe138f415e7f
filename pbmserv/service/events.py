"""What happened, as plain values: the game service records them, and the
notifications module alone turns them into mail (later also ratings, tournaments,
digests and bots react to them)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import ClassVar

from pbmserv.db.status import RequestKind
from pbmserv.games.base import Termination


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str]
    board_id: int

    def data(self) -> str:
        fields = asdict(self)
        fields.pop("board_id")
        return json.dumps(fields, sort_keys=True, default=str)


@dataclass(frozen=True)
class BoardCreated(Event):
    kind = "board-created"
    #: the seek the board was made from, if any
    seek: int | None = None


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
