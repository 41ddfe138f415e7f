"""The statuses and kinds stored in the tables: enums, never bare strings."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from sqlalchemy import Dialect, String
from sqlalchemy.types import TypeDecorator


class BoardStatus(StrEnum):
    ACTIVE = "active"
    FINISHED = "finished"


class RequestKind(StrEnum):
    """What a player asked the opponent to agree to; one at a time per board."""

    DRAW = "draw"
    UNDO = "undo"


class SeekStatus(StrEnum):
    OPEN = "open"
    JOINED = "joined"
    WITHDRAWN = "withdrawn"


class DigestMode(StrEnum):
    """How a player's board mails come: one by one, or gathered in a digest."""

    OFF = "off"
    DAILY = "daily"
    TWICE = "twice"


class InboundStatus(StrEnum):
    NEW = "new"
    DONE = "done"
    IGNORED = "ignored"
    FAILED = "failed"


class OutboxStatus(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    #: refused for good by the relay
    FAILED = "failed"
    #: dropped by the administrator, never to be sent
    DISCARDED = "discarded"
    #: beyond the hour's limit of mail to its address: waits to be folded into one mail
    HELD = "held"
    #: a held mail that went out as part of a folded mail
    FOLDED = "folded"
    #: refused by the relay (5xx) because of the address, or bounced after it went out
    BOUNCED = "bounced"
    #: not sent: mail to the address bounces (see pbmserv.bounces.scoring)
    SUPPRESSED = "suppressed"


class BounceKind(StrEnum):
    """What a bounce says of the address (pbmserv.bounces.scoring.bounce_kind)."""

    #: the address is dead: no such mailbox or domain (5.1.x, 5.2.1, 5.4.4)
    HARD = "hard"
    #: refused for now or for a reason that is not the address: a policy (5.7.x), a
    #: full mailbox (5.2.2), any other permanent failure
    SOFT = "soft"
    #: not delivered yet, still tried (Action: delayed): never counted
    DELAY = "delay"


class AnswerKind(StrEnum):
    """A reply counted by the daily limit of answers to one address
    (``refusals_per_address_day``, pbmserv.processing.mail)."""

    #: every command of the mail was refused (or it held none)
    REFUSAL = "refusal"
    #: to an address with no account
    STRANGER = "stranger"
    #: to an address with no account whose mail held no command the server knows:
    #: what the server is and how to begin, once a day
    WELCOME = "welcome"


class AlertKind(StrEnum):
    """What the administrator is told of (pbmserv.service.incidents)."""

    #: an incoming mail whose processing failed
    INBOX_FAILED = "inbox-failed"
    #: an outgoing mail refused for good, not because of its address
    OUTBOX_FAILED = "outbox-failed"
    #: stored mail not processed, or outgoing mail not sent, for too long
    QUEUE_LATE = "queue-late"
    #: many bounces in a short time: our mail may be refused as a whole
    BOUNCE_STORM = "bounce-storm"
    #: a mail to the administrator refused or bounced: alerts do not arrive
    ADMIN_UNREACHABLE = "admin-unreachable"
    #: the daily report (recorded when sent)
    REPORT = "report"


class Resolution(StrEnum):
    """How an incident ended (``alerts.resolution``)."""

    #: what it was about is over (the failed mail replayed, the queue moving again):
    #: the administrator is mailed that it is
    RESOLVED = "resolved"
    #: nothing new for an hour, though not resolved (``status`` still says what waits)
    QUIET = "quiet"
    #: acknowledged by the administrator (``pbmserv alerts ack``)
    ACKED = "acked"
    #: ended by ``users clear-bounces --all`` (a bounce storm)
    CLEARED = "cleared"


class TournamentStatus(StrEnum):
    #: taking players
    OPEN = "open"
    RUNNING = "running"
    FINISHED = "finished"


class StrEnumType(TypeDecorator[Any]):
    """A StrEnum stored as its value in a short string column."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[StrEnum], length: int = 16) -> None:
        super().__init__(length)
        self.enum = enum

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: Any, dialect: Dialect) -> StrEnum | None:
        return None if value is None else self.enum(value)
