"""The tables: accounts, boards and what happens on them, the inbox, the outbox."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from pbmserv.db.base import Base, utcnow
from pbmserv.db.status import (
    AlertKind,
    AnswerKind,
    BoardStatus,
    BounceKind,
    DigestMode,
    InboundStatus,
    OutboxStatus,
    RequestKind,
    SeekStatus,
    StrEnumType,
    TournamentStatus,
)
from pbmserv.games.base import Termination
from pbmserv.tournaments import TournamentKind


class User(Base):
    __tablename__ = "users"
    __table_args__ = (Index("ix_users_signup_sender_created_at", "signup_sender", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    #: lower-cased userid, for case-insensitive matching
    key: Mapped[str] = mapped_column(String(64), unique=True)
    userid: Mapped[str] = mapped_column(String(32))
    password_hash: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(320), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the bot (pbmserv.bots) that plays for this account; None for a person
    bot: Mapped[str | None] = mapped_column(String(16), default=None, index=True)
    #: set by the administrator: no password opens the account until it is enabled
    disabled_at: Mapped[datetime | None] = mapped_column(default=None)
    #: when its address answered the confirmation mail (None: not yet; until then no
    #: password opens the account, nobody can challenge it and nothing is mailed to it)
    confirmed_at: Mapped[datetime | None] = mapped_column(default=None)
    #: SHA-256 of the code of the confirmation waited for, the signup's or a new
    #: address's (the code itself is only in the mail)
    confirm_code_hash: Mapped[str | None] = mapped_column(String(128), default=None)
    #: the address 'change address' asked for, until it answers its confirmation mail
    #: (mail goes to ``email`` meanwhile), and when it was asked for
    new_email: Mapped[str | None] = mapped_column(String(320), default=None)
    new_email_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the address the signup came from (the limit of signups per sender)
    signup_sender: Mapped[str | None] = mapped_column(String(320), default=None)
    #: how often the password or the address changed: a move-by-reply address signs
    #: it, so the addresses made before a change are void
    credential_changes: Mapped[int] = mapped_column(default=0)


class PasswordReset(Base):
    """A one-time code mailed to an account's address, to set a new password with."""

    __tablename__ = "password_resets"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    #: hashed like a password: the code itself is only in the mail
    code_hash: Mapped[str] = mapped_column(String(255))
    requested_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class Board(Base):
    __tablename__ = "boards"
    __table_args__ = (
        UniqueConstraint("game", "number"),
        Index("ix_boards_status_clock_due_at", "status", "clock_due_at"),
        Index("ix_boards_game_status", "game", "status"),
        Index("ix_boards_challenged_by_created_at", "challenged_by", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    number: Mapped[int]
    options: Mapped[str] = mapped_column(String(200), default="")
    #: the engine's serialised position after the last move, in format position_version
    position: Mapped[str] = mapped_column(Text)
    position_version: Mapped[int] = mapped_column(default=1)
    #: the position before the last move (what an undo returns to), if known
    previous_position: Mapped[str | None] = mapped_column(Text, default=None)
    previous_version: Mapped[int | None] = mapped_column(default=None)
    ply: Mapped[int] = mapped_column(default=0)
    to_move: Mapped[int] = mapped_column(default=0)
    status: Mapped[BoardStatus] = mapped_column(StrEnumType(BoardStatus),
                                                default=BoardStatus.ACTIVE)
    #: the winning seat (None: a draw, or no result)
    winner: Mapped[int | None] = mapped_column(default=None)
    termination: Mapped[Termination | None] = mapped_column(StrEnumType(Termination),
                                                            default=None)
    #: how the game ended, in words
    result: Mapped[str | None] = mapped_column(String(200), default=None)
    #: the one open request of the board (a draw offer, an undo request) and its seat
    request_kind: Mapped[RequestKind | None] = mapped_column(StrEnumType(RequestKind),
                                                             default=None)
    request_by: Mapped[int | None] = mapped_column(default=None)
    #: the clock: a nag every nag_days without a move, a loss on time at forfeit_days
    nag_days: Mapped[int] = mapped_column(default=7)
    forfeit_days: Mapped[int] = mapped_column(default=21)
    turn_started_at: Mapped[datetime] = mapped_column(default=utcnow)
    nags_sent: Mapped[int] = mapped_column(default=0)
    #: when the clock must look at the board next (None: never, the game is over)
    clock_due_at: Mapped[datetime | None] = mapped_column(default=None)
    #: how many subscribers watch the board (so a board without any reads none)
    watchers: Mapped[int] = mapped_column(default=0)
    #: how many conditional moves wait on the board (likewise)
    queued: Mapped[int] = mapped_column(default=0)
    #: how many moves were ever taken back (a reply address made before one is void)
    takebacks: Mapped[int] = mapped_column(default=0)
    #: the address the challenge that started the board came from (None: a seek, a
    #: tournament, an import)
    challenged_by: Mapped[str | None] = mapped_column(String(320), default=None)
    #: the player on the board whose own address sent that challenge (None: an address
    #: that is none of its players'); the daily allowances count by it
    challenger_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
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

    @property
    def finished(self) -> bool:
        return self.status is BoardStatus.FINISHED


class BoardPlayer(Base):
    __tablename__ = "board_players"
    __table_args__ = (Index("ix_board_players_user_id_board_id", "user_id", "board_id"),)

    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"), primary_key=True)
    seat: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    #: seconds this player has taken over their moves (vacations not counted)
    time_used: Mapped[int] = mapped_column(default=0)
    #: when the player took the board up (moved on it, or accepted it); None: not yet,
    #: so the board is not rated for them and they cannot lose it on time
    accepted_at: Mapped[datetime | None] = mapped_column(default=None)

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
    #: the clock as it stood before the move, so that an undo restores it exactly
    turn_started_at: Mapped[datetime | None] = mapped_column(default=None)
    nags_before: Mapped[int] = mapped_column(default=0)
    seconds_used: Mapped[int] = mapped_column(default=0)
    #: played from the player's queue of conditional moves
    automatic: Mapped[bool] = mapped_column(default=False)
    #: the engine's serialised position after this move, in format position_version,
    #: kept with every CHECKPOINT_EVERY-th move (pbmserv.service.boards): a look back
    #: replays from the nearest one at most that many moves
    position: Mapped[str | None] = mapped_column(Text, default=None)
    position_version: Mapped[int | None] = mapped_column(default=None)

    board: Mapped[Board] = relationship(back_populates="moves")


class BoardEvent(Base):
    """What happened, as the game service recorded it (see pbmserv.service.events)."""

    __tablename__ = "board_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int | None] = mapped_column(ForeignKey("boards.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    #: the event's fields, as JSON
    data: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Subscription(Base):
    """A spectator of a board: gets every board mail."""

    __tablename__ = "subscriptions"

    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)

    user: Mapped[User] = relationship(lazy="joined")


class GameNotify(Base):
    """A player told of every finished board of a game."""

    __tablename__ = "game_notify"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)


class ChallengePolicy(Base):
    """Whose challenges a player takes in a game, and how many boards at once."""

    __tablename__ = "challenge_policies"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)
    accept_all: Mapped[bool] = mapped_column(default=True)
    board_limit: Mapped[int | None] = mapped_column(default=None)


class ChallengeRule(Base):
    """An exception to a ChallengePolicy for one other player."""

    __tablename__ = "challenge_rules"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)
    other_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    accept: Mapped[bool]


class Seek(Base):
    """An open challenge that anyone may join."""

    __tablename__ = "seeks"
    __table_args__ = (UniqueConstraint("game", "number"),
                      Index("ix_seeks_status_game_number", "status", "game", "number"))

    id: Mapped[int] = mapped_column(primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    number: Mapped[int]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    options: Mapped[str] = mapped_column(String(200), default="")
    nag_days: Mapped[int] = mapped_column(default=7)
    forfeit_days: Mapped[int] = mapped_column(default=21)
    status: Mapped[SeekStatus] = mapped_column(StrEnumType(SeekStatus), default=SeekStatus.OPEN)
    board_id: Mapped[int | None] = mapped_column(ForeignKey("boards.id"), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship(lazy="joined")


class QueuedMove(Base):
    """A conditional move: when the opponent plays ``opponent_move``, ``reply`` is played."""

    __tablename__ = "queued_moves"

    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"), primary_key=True)
    seat: Mapped[int] = mapped_column(primary_key=True)
    position: Mapped[int] = mapped_column(primary_key=True)
    opponent_move: Mapped[str] = mapped_column(String(200))
    reply: Mapped[str] = mapped_column(String(200))


class Vacation(Base):
    """A time in which a player's clocks stand still."""

    __tablename__ = "vacations"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]


class InboundMessage(Base):
    """A mail exactly as it arrived, stored before it is acknowledged."""

    __tablename__ = "inbound_messages"
    __table_args__ = (Index("ix_inbound_messages_status", "status"),
                      Index("ix_inbound_messages_status_sender", "status", "sender"),
                      # a sender's mail of the last day, counted from the index alone
                      # (the intake's quota, pbmserv.intake.store)
                      Index("ix_inbound_messages_sender_received", "sender", "received_at",
                            "size"))

    id: Mapped[int] = mapped_column(primary_key=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    envelope_from: Mapped[str] = mapped_column(String(320), default="")
    #: who wrote it (From, else the envelope): a sender's mails are processed in order
    sender: Mapped[str] = mapped_column(String(320), default="")
    #: sender + Message-ID; unique, so a redelivered mail is stored (and applied) once
    dedupe_key: Mapped[str | None] = mapped_column(String(1000), unique=True, default=None)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    #: the mail's size as it came, in bytes (kept when an ignored mail's text is dropped)
    size: Mapped[int] = mapped_column(default=0)
    status: Mapped[InboundStatus] = mapped_column(StrEnumType(InboundStatus),
                                                  default=InboundStatus.NEW)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    processed_at: Mapped[datetime | None] = mapped_column(default=None)


class OutboxMessage(Base):
    """A mail to send; written in the same transaction as the change it reports."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_status_next_attempt_at", "status", "next_attempt_at"),
                      # the hourly count of mails to an address reads this alone
                      # (pbmserv.notifications.outbox)
                      Index("ix_outbox_recent", "to_key", "created_at", "status",
                            "in_reply_to"),
                      # the hourly count of mails a sender's mails made to others
                      Index("ix_outbox_cause", "cause_key", "created_at"))

    id: Mapped[int] = mapped_column(primary_key=True)
    inbound_id: Mapped[int | None] = mapped_column(ForeignKey("inbound_messages.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    message_id: Mapped[str] = mapped_column(String(255), unique=True)
    to_addr: Mapped[str] = mapped_column(String(320))
    #: ``to_addr`` as the limits per address count it: lower case, no +tag
    #: (pbmserv.mail.addresses.address_key)
    to_key: Mapped[str] = mapped_column(String(320), default="")
    subject: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(String(1000), default=None)
    #: where the recipient's reply should go (a move-by-reply address), if not to us
    reply_to: Mapped[str | None] = mapped_column(String(320), default=None)
    #: the same mail as HTML (sent as multipart/alternative), if there is one
    html_body: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[OutboxStatus] = mapped_column(StrEnumType(OutboxStatus),
                                                 default=OutboxStatus.PENDING)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the sender run that holds the row until ``next_attempt_at`` (None: nobody)
    leased_by: Mapped[str | None] = mapped_column(String(64), default=None)
    #: the body holds a live secret (a reset code): blanked once the mail is sent
    blank_after_send: Mapped[bool] = mapped_column(default=False)
    #: a mail people subscribe to (a spectator's, a result notice, a digest): its
    #: List-Id, and the tag of the address that unsubscribes its reader
    list_id: Mapped[str | None] = mapped_column(String(255), default=None)
    unsubscribe: Mapped[str | None] = mapped_column(String(200), default=None)
    #: a mail to someone who did not ask for it (a challenge's board, a reset code, a
    #: confirmation): the key of the sender whose mail made it, counted by
    #: ``mails_to_others_per_hour`` (None for every other mail)
    cause_key: Mapped[str | None] = mapped_column(String(320), default=None)
    #: a reply counted by ``refusals_per_address_day`` (None: not counted)
    answer_kind: Mapped[AnswerKind | None] = mapped_column(StrEnumType(AnswerKind),
                                                           default=None)
    #: a mail to the administrator: the incident (or daily report) it is about; its
    #: refusal or bounce is never counted against an address
    #: (pbmserv.service.incidents.admin_unreachable)
    alert_id: Mapped[int | None] = mapped_column(default=None, index=True)


class AuthThrottle(Base):
    """Wrong passwords counted per account (``user:<key>``) or sender (``sender:<addr>``)."""

    __tablename__ = "auth_throttle"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    failures: Mapped[int] = mapped_column(default=0)
    last_failure_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: password checks for the key are refused until then
    locked_until: Mapped[datetime | None] = mapped_column(default=None)


class PlayerRating(Base):
    """A player's Glicko-2 rating in one game, as after their last rated game."""

    __tablename__ = "ratings"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)
    rating: Mapped[float]
    rd: Mapped[float]
    volatility: Mapped[float]
    #: when the last rated game ended: idle time counts from here
    rated_at: Mapped[datetime]

    user: Mapped[User] = relationship(lazy="joined")


class BoardRating(Base):
    """One player's rating before and after a rated board (see pbmserv.service.ratings)."""

    __tablename__ = "board_ratings"
    __table_args__ = (UniqueConstraint("board_id", "seat"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"))
    seat: Mapped[int]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    game: Mapped[str] = mapped_column(String(32))
    #: 1 a win, 0.5 a draw, 0 a loss
    score: Mapped[float]
    rating_before: Mapped[float]
    rd_before: Mapped[float]
    volatility_before: Mapped[float]
    rating_after: Mapped[float]
    rd_after: Mapped[float]
    volatility_after: Mapped[float]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    user: Mapped[User] = relationship(lazy="joined")


class Tournament(Base):
    """A round robin or Swiss tournament of one game, run by mail."""

    __tablename__ = "tournaments"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: lower-cased name, for case-insensitive matching
    key: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(32))
    game: Mapped[str] = mapped_column(String(32))
    kind: Mapped[TournamentKind] = mapped_column(StrEnumType(TournamentKind))
    #: a round robin played twice, once with each player first
    double: Mapped[bool] = mapped_column(default=False)
    #: Swiss rounds (fixed when the tournament starts, if not given)
    rounds: Mapped[int | None] = mapped_column(default=None)
    #: the tournament starts by itself when this many have joined
    max_players: Mapped[int | None] = mapped_column(default=None)
    options: Mapped[str] = mapped_column(String(200), default="")
    nag_days: Mapped[int] = mapped_column(default=7)
    forfeit_days: Mapped[int] = mapped_column(default=21)
    creator_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    status: Mapped[TournamentStatus] = mapped_column(StrEnumType(TournamentStatus),
                                                     default=TournamentStatus.OPEN)
    #: the round in play (Swiss), or the last round (round robin); 0 before the start
    current_round: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)

    creator: Mapped[User] = relationship(lazy="joined")

    @property
    def option_flags(self) -> tuple[str, ...]:
        return tuple(self.options.split())


class TournamentPlayer(Base):
    __tablename__ = "tournament_players"

    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)
    joined_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: place in the seed order (1 the first), fixed at the start
    seed: Mapped[int | None] = mapped_column(default=None)
    #: left (or signed off) after the start: loses the games left, is paired no more
    withdrawn_at: Mapped[datetime | None] = mapped_column(default=None)

    user: Mapped[User] = relationship(lazy="joined")


class TournamentGame(Base):
    """A board of a tournament's round, or a bye (no second player, no board)."""

    __tablename__ = "tournament_games"

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id"), index=True)
    round: Mapped[int]
    first_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    second_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    board_id: Mapped[int | None] = mapped_column(ForeignKey("boards.id"), unique=True,
                                                 default=None)
    #: the first player's score once the board is over (1, 0.5, 0); a bye's is 1
    score: Mapped[float | None] = mapped_column(default=None)


class ImportedBoard(Base):
    """Where an imported board's record came from, so that it exports as it was read."""

    __tablename__ = "imported_boards"

    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id"), primary_key=True)
    site: Mapped[str] = mapped_column(String(200))
    event: Mapped[str | None] = mapped_column(String(200), default=None)
    round: Mapped[int | None] = mapped_column(default=None)
    imported_at: Mapped[datetime] = mapped_column(default=utcnow)


class MailPrefs(Base):
    """How a player wants their mail (no row: HTML parts on, no digest)."""

    __tablename__ = "mail_prefs"
    __table_args__ = (Index("ix_mail_prefs_digest_next_at", "digest_next_at"),)

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    html: Mapped[bool] = mapped_column(default=True)
    #: the board in words with every board mail (notifications.words)
    words: Mapped[bool] = mapped_column(default=False)
    #: the language of their mail (pbmserv.i18n.LANGUAGES; None: English)
    language: Mapped[str | None] = mapped_column(String(8), default=None)
    digest: Mapped[DigestMode] = mapped_column(StrEnumType(DigestMode), default=DigestMode.OFF)
    #: the hour (UTC) of the digest; the second one, with TWICE, comes 12 hours later
    digest_hour: Mapped[int] = mapped_column(default=18)
    digest_next_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the last event a digest has covered (board_events.id)
    digest_event_id: Mapped[int] = mapped_column(default=0)


class ServerSecret(Base):
    """A secret the server made for itself (the key of move-by-reply addresses)."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))


class ImapMessage(Base):
    """A mail taken from an IMAP folder, by its UID: stored once, however often the
    server shows it (a crash before it was marked done there).  Kept for good (a
    hundred bytes a mail), so that a mail is known as long as it can come back: by its
    UID, and by its ``key`` after the folder was rebuilt under another UIDVALIDITY,
    long after the stored mail itself was purged."""

    __tablename__ = "imap_messages"
    __table_args__ = (Index("ix_imap_messages_mailbox_key", "mailbox", "key"),)

    #: the mailbox, as ``user@host/folder``
    mailbox: Mapped[str] = mapped_column(String(400), primary_key=True)
    #: the folder's UIDVALIDITY: its UIDs mean nothing under another one
    uidvalidity: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    uid: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    #: the stored mail (no foreign key: purging the inbox keeps this row), None if it
    #: was stored before (a redelivery) or not at all
    inbound_id: Mapped[int | None] = mapped_column(default=None)
    #: "stored", or why it was not: "too big" (left on the server, unmarked)
    outcome: Mapped[str] = mapped_column(String(20), default="stored")
    taken_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: what knows the mail under any UID: the start of the SHA-256 of its dedupe key
    #: (sender and Message-ID, or sender and the hash of its bytes); None for a row
    #: from before there were keys whose stored mail was purged
    key: Mapped[str | None] = mapped_column(String(32), default=None)


class ImapState(Base):
    """How the IMAP intake of ``serve`` stands, for ``pbmserv status``."""

    __tablename__ = "imap_state"

    mailbox: Mapped[str] = mapped_column(String(400), primary_key=True)
    #: what keeps it from reading the mailbox (wrong password, no such folder), or None
    problem: Mapped[str | None] = mapped_column(Text, default=None)
    #: since when the problem (or the good state) lasts
    since: Mapped[datetime] = mapped_column(default=utcnow)
    #: the last time the intake looked at the mailbox or tried to
    checked_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: whether it waits with IDLE (else it polls)
    idle: Mapped[bool] = mapped_column(default=False)
    #: the ``serve`` that reads the mailbox (host and pid), None when none does: one
    #: reader per mailbox, holding it until ``held_until`` unless it beats again
    reader: Mapped[str | None] = mapped_column(String(200), default=None)
    held_until: Mapped[datetime | None] = mapped_column(default=None)
    #: the reader's last heartbeat (at least every ``imap_keepalive`` seconds)
    beat_at: Mapped[datetime | None] = mapped_column(default=None)
    #: when the mailbox was first read, and the first UID (under that UIDVALIDITY) that
    #: came after: with ``imap_since = "now"`` mail from before is left alone
    first_read_at: Mapped[datetime | None] = mapped_column(default=None)
    first_uidvalidity: Mapped[int | None] = mapped_column(BigInteger, default=None)
    first_uid: Mapped[int | None] = mapped_column(BigInteger, default=None)


class RelayState(Base):
    """How the relay stands, for ``pbmserv status`` and the senders' shared back-off:
    one row per relay (its URL, no password)."""

    __tablename__ = "relay_state"

    relay: Mapped[str] = mapped_column(String(400), primary_key=True)
    #: since when every mail tried was refused or deferred (None: the last was taken)
    failing_since: Mapped[datetime | None] = mapped_column(default=None)
    #: the relay's last answer that was not a 250 (or why it could not be reached)
    last_answer: Mapped[str | None] = mapped_column(Text, default=None)
    #: the last time it took a mail
    last_ok_at: Mapped[datetime | None] = mapped_column(default=None)
    #: no sender tries it before this (after a 421 or a refused login), and how many
    #: such refusals in a row set it
    retry_at: Mapped[datetime | None] = mapped_column(default=None)
    refusals: Mapped[int] = mapped_column(default=0)


class Alert(Base):
    """Something the administrator is told of: one row (and one mail) per incident,
    however often it happens while it lasts (see pbmserv.service.incidents)."""

    __tablename__ = "alerts"
    __table_args__ = (Index("ix_alerts_kind_closed_at", "kind", "closed_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[AlertKind] = mapped_column(StrEnumType(AlertKind, 32))
    opened_at: Mapped[datetime]
    #: the last time it happened (or was seen to last)
    last_at: Mapped[datetime]
    #: how many times it happened
    count: Mapped[int] = mapped_column(default=1)
    #: what happened, the first time and the last, in one line each
    first_detail: Mapped[str] = mapped_column(Text)
    last_detail: Mapped[str] = mapped_column(Text)
    #: the first few things it concerns (message or outbox numbers), space-separated
    items: Mapped[str] = mapped_column(String(200), default="")
    #: when the administrator was mailed about it (None: not yet)
    mailed_at: Mapped[datetime | None] = mapped_column(default=None)
    #: the count the last mail told of
    mailed_count: Mapped[int] = mapped_column(default=0)
    #: over: resolved, quiet for a while, or acknowledged (a new occurrence opens a
    #: new incident)
    closed_at: Mapped[datetime | None] = mapped_column(default=None)
    #: how it ended (pbmserv.db.status.Resolution), None while open
    resolution: Mapped[str | None] = mapped_column(String(16), default=None)
    #: acknowledged by the administrator (``pbmserv alerts ack``): when, and who
    acked_at: Mapped[datetime | None] = mapped_column(default=None)
    acked_by: Mapped[str | None] = mapped_column(String(200), default=None)


class Bounce(Base):
    """A mail of ours that did not reach its address: a bounce (a DSN) that came back,
    or the relay's 5xx for the address."""

    __tablename__ = "bounces"
    __table_args__ = (Index("ix_bounces_address_at", "address", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    address: Mapped[str] = mapped_column(String(320))
    at: Mapped[datetime] = mapped_column(index=True)
    #: the outgoing mail that bounced, if known (a mail is counted once)
    outbox_id: Mapped[int | None] = mapped_column(default=None, index=True)
    #: the stored bounce, if it came by mail
    inbound_id: Mapped[int | None] = mapped_column(default=None)
    #: "dsn" (a bounce that came back) or "relay" (the relay's 5xx)
    source: Mapped[str] = mapped_column(String(16))
    #: the enhanced status code (5.1.1), if known
    status: Mapped[str] = mapped_column(String(16), default="")
    detail: Mapped[str] = mapped_column(Text, default="")
    #: what it says of the address: hard and soft bounces count (each toward its own
    #: threshold), a delay is kept to be seen and never counts
    kind: Mapped[BounceKind] = mapped_column(StrEnumType(BounceKind), default=BounceKind.HARD)
    #: forgiven (the address mailed the server again, or the administrator cleared
    #: it): kept, so counts of bounces only grow, but no longer counted toward a
    #: suspension
    cleared_at: Mapped[datetime | None] = mapped_column(default=None)


class MailSuspension(Base):
    """An address that bounced too often: the server sends it nothing until its owner
    mails the server from it again (or the administrator clears it)."""

    __tablename__ = "mail_suspensions"

    address: Mapped[str] = mapped_column(String(320), primary_key=True)
    since: Mapped[datetime]
    #: the bounces counted when it was suspended, and the last one's reason
    score: Mapped[int]
    reason: Mapped[str] = mapped_column(Text, default="")
    #: probes sent to it (pbmserv.bounces.probes), the last one's time and mail
    probes: Mapped[int] = mapped_column(default=0)
    probed_at: Mapped[datetime | None] = mapped_column(default=None)
    probe_outbox_id: Mapped[int | None] = mapped_column(default=None)
