"""The tables: accounts, boards and their moves, the raw inbox, the outbox, throttles."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from pbmserv.db.base import Base, utcnow


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: lower-cased userid, for case-insensitive matching
    key: Mapped[str] = mapped_column(String(64), unique=True)
    userid: Mapped[str] = mapped_column(String(32))
    password_hash: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(default=None)


class Board(Base):
    __tablename__ = "boards"
    __table_args__ = (UniqueConstraint("game", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    number: Mapped[int]
    options: Mapped[str] = mapped_column(String(200), default="")
    #: the engine's serialised position after the last move
    position: Mapped[str] = mapped_column(Text)
    ply: Mapped[int] = mapped_column(default=0)
    to_move: Mapped[int] = mapped_column(default=0)
    finished: Mapped[bool] = mapped_column(default=False)
    winner: Mapped[int | None] = mapped_column(default=None)
    result: Mapped[str | None] = mapped_column(String(200), default=None)
    #: the seat that has offered to end the game by agreement, until answered
    offer_by: Mapped[int | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    players: Mapped[list[BoardPlayer]] = relationship(
        back_populates="board", order_by="BoardPlayer.seat", lazy="selectin"
    )
    moves: Mapped[list[Move]] = relationship(
        back_populates="board", order_by="Move.ply", lazy="raise"
    )

    @property
    def option_flags(self) -> tuple[str, ...]:
        return tuple(self.options.split())


class BoardPlayer(Base):
    __tablename__ = "board_players"

    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"), primary_key=True)
    seat: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)

    board: Mapped[Board] = relationship(back_populates="players")
    user: Mapped[User] = relationship(lazy="joined")


class Move(Base):
    __tablename__ = "moves"
    __table_args__ = (UniqueConstraint("board_id", "ply"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"))
    ply: Mapped[int]
    seat: Mapped[int]
    notation: Mapped[str] = mapped_column(String(200))
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    board: Mapped[Board] = relationship(back_populates="moves")


class InboundMessage(Base):
    """A mail exactly as it arrived, stored before it is acknowledged."""

    __tablename__ = "inbound_messages"
    __table_args__ = (Index("ix_inbound_messages_status", "status"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    envelope_from: Mapped[str] = mapped_column(String(320), default="")
    #: sender + Message-ID; unique, so a redelivered mail is stored (and applied) once
    dedupe_key: Mapped[str | None] = mapped_column(String(1000), unique=True, default=None)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    #: new -> done | ignored | failed
    status: Mapped[str] = mapped_column(String(16), default="new")
    error: Mapped[str | None] = mapped_column(Text, default=None)
    processed_at: Mapped[datetime | None] = mapped_column(default=None)


class OutboxMessage(Base):
    """A mail to send; written in the same transaction as the change it reports."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_status_next_attempt_at", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    inbound_id: Mapped[int | None] = mapped_column(ForeignKey("inbound_messages.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    message_id: Mapped[str] = mapped_column(String(255), unique=True)
    to_addr: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(String(1000), default=None)
    #: pending -> sent | failed (refused for good by the relay)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the sender run that holds the row until ``next_attempt_at`` (None: nobody)
    leased_by: Mapped[str | None] = mapped_column(String(64), default=None)


class AuthThrottle(Base):
    """Wrong passwords counted per account (``user:<key>``) or sender (``sender:<addr>``)."""

    __tablename__ = "auth_throttle"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    failures: Mapped[int] = mapped_column(default=0)
    last_failure_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: password checks for the key are refused until then
    locked_until: Mapped[datetime | None] = mapped_column(default=None)
