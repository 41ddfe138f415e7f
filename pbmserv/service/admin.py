"""What the administrator does to accounts and boards, and what they look at (the
accounts, the boards, the inbox and the outbox).

The command line calls these (a web admin could too); each works in the caller's
transaction and raises PlayerError, whose message says what is wrong.  Ending a
board goes through ``GameService.finish``, like any end of a game: its events are in
``service.events`` for the caller to hand to the Notifier, and ratings and
tournaments follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    AuthThrottle,
    Board,
    InboundMessage,
    OutboxMessage,
    PasswordReset,
    User,
)
from pbmserv.db.status import BoardStatus, InboundStatus, OutboxStatus
from pbmserv.games.base import Outcome, Termination
from pbmserv.service import throttle
from pbmserv.service.accounts import (
    active_boards,
    existing_user,
    has_no_address,
    has_no_password,
    set_address,
    set_password,
)
from pbmserv.service.boards import load_board
from pbmserv.service.errors import PlayerError
from pbmserv.service.games import GameService, board_engine
from pbmserv.service.resets import forget

Row = TypeVar("Row")

ABANDONED = "abandoned by the administrator"
ADJUDICATED = "adjudicated by the administrator"
#: the word for "no winner" in ``adjudicate``
DRAW = "draw"


# -- accounts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Account:
    """An account as the administrator sees it."""

    userid: str
    email: str
    created_at: datetime
    disabled_at: datetime | None
    #: made by an import: no password opens it, its address reaches nobody
    no_password: bool
    no_address: bool
    #: (game, number) of the boards it plays
    boards: list[tuple[str, int]]
    #: the wrong-password lock on the account, if one holds
    locked_until: datetime | None
    failures: int
    #: until when a reset code mailed to it is valid
    reset_until: datetime | None
    #: the bot that plays for it (pbmserv.bots), None for a person
    bot: str | None = None


def account(session: Session, userid: str, now: datetime) -> Account:
    user = existing_user(session, userid)
    row = session.get(AuthThrottle, throttle.account_key(user.userid))
    reset = session.get(PasswordReset, user.id)
    locked = row.locked_until if row is not None and row.locked_until and \
        row.locked_until > now else None
    return Account(user.userid, user.email, user.created_at, user.disabled_at,
                   has_no_password(user), has_no_address(user), active_boards(session, user),
                   locked, row.failures if row is not None else 0,
                   reset.expires_at if reset is not None and reset.expires_at > now else None,
                   user.bot)


def disable(session: Session, userid: str, now: datetime) -> bool:
    """Let no password open the account; False if it was disabled already."""
    user = existing_user(session, userid)
    if user.disabled_at is not None:
        return False
    user.disabled_at = now
    forget(session, user)
    return True


def enable(session: Session, userid: str) -> bool:
    """Undo ``disable``; False if the account was not disabled."""
    user = existing_user(session, userid)
    if user.disabled_at is None:
        return False
    user.disabled_at = None
    return True


def set_email(session: Session, userid: str, email: str) -> User:
    user = existing_user(session, userid)
    set_address(session, user, email)
    vouch(user)
    return user


def vouch(user: User) -> None:
    """The administrator gave the account its address: it needs no confirmation."""
    if user.confirmed_at is None:
        user.confirmed_at = utcnow()
        user.confirm_code_hash = None


def reset_password(session: Session, userid: str, password: str) -> User:
    """Give the account a new password (the administrator tells it to the player); its
    reset code, and the wrong-password count against it, are dropped."""
    user = existing_user(session, userid)
    set_password(session, user, password)
    throttle.clear(session, throttle.account_key(user.userid))
    return user


def hand_over(session: Session, userid: str, email: str, password: str) -> User:
    """Give an account (one an import made, say) an address and a password, and
    enable it."""
    user = existing_user(session, userid)
    set_password(session, user, password)
    set_address(session, user, email)
    vouch(user)
    user.disabled_at = None
    return user


def accounts(session: Session) -> list[User]:
    """Every account, by userid."""
    return list(session.scalars(select(User).order_by(User.key)))


# -- boards -------------------------------------------------------------------------------
def boards(session: Session, game: str | None = None, *, finished: bool = False) -> list[Board]:
    """The boards (of ``game`` alone if given) in play, and with ``finished`` the
    finished ones too, by game and number."""
    query = select(Board).order_by(Board.game, Board.number)
    if game:
        query = query.where(Board.game == game.lower())
    if not finished:
        query = query.where(Board.status == BoardStatus.ACTIVE)
    return list(session.scalars(query))


def find_board(session: Session, game: str, number: int, *, lock: bool = False) -> Board:
    return load_board(session, board_engine(game.lower()), number, lock=lock)


def _open(service: GameService, game: str, number: int) -> Board:
    board = find_board(service.session, game, number, lock=True)
    if board.finished:
        raise PlayerError(f"{board.game} board {number} is over already: {board.result}")
    return board


def _reason(words: str, reason: str | None) -> str:
    return f"{words} ({reason.strip()})" if reason and reason.strip() else words


def abandon(service: GameService, game: str, number: int, reason: str | None = None) -> Board:
    """End a board with no result: not rated, counted for no one."""
    board = _open(service, game, number)
    service.finish(board, Outcome(None, Termination.ABANDONED, _reason(ABANDONED, reason)))
    return board


def adjudicate(service: GameService, game: str, number: int, winner: str,
               reason: str | None = None) -> Board:
    """End a board with a result the administrator decides: ``winner`` is a player's
    userid, or ``draw``; rated like any result."""
    board = _open(service, game, number)
    seat: int | None = None
    if winner.lower() != DRAW:
        seats = [p.seat for p in board.players if p.user.key == winner.lower()]
        if not seats:
            players = ", ".join(p.user.userid for p in board.players)
            raise PlayerError(f"{winner!r} does not play {board.game} board {number}; "
                              f"give one of {players}, or {DRAW}")
        seat = seats[0]
    service.finish(board, Outcome(seat, Termination.ADJUDICATION,
                                  _reason(ADJUDICATED, reason)))
    return board


# -- the queues ---------------------------------------------------------------------------
def inbox(session: Session, status: InboundStatus | None = None, address: str | None = None,
          limit: int = 50) -> list[InboundMessage]:
    """Stored incoming mail, the newest first: of ``status`` alone, from ``address``
    alone (its From or envelope sender, any case), at most ``limit``."""
    query = select(InboundMessage).order_by(InboundMessage.id.desc()).limit(limit)
    if status is not None:
        query = query.where(InboundMessage.status == status)
    if address:
        wanted = address.strip().lower()
        query = query.where(or_(func.lower(InboundMessage.sender) == wanted,
                                func.lower(InboundMessage.envelope_from) == wanted))
    return list(session.scalars(query))


def inbound(session: Session, message_id: int) -> InboundMessage:
    """One stored incoming mail; PlayerError if there is none of that number."""
    return _found(session.get(InboundMessage, message_id), f"no stored message {message_id}")


def outbox(session: Session, status: OutboxStatus, address: str | None = None,
           limit: int = 50) -> list[OutboxMessage]:
    """Outgoing mail of ``status``, the newest first: to ``address`` alone (any case),
    at most ``limit``."""
    query = (select(OutboxMessage).where(OutboxMessage.status == status)
             .order_by(OutboxMessage.id.desc()).limit(limit))
    if address:
        query = query.where(func.lower(OutboxMessage.to_addr) == address.strip().lower())
    return list(session.scalars(query))


def outgoing(session: Session, outbox_id: int) -> OutboxMessage:
    """One outgoing mail; PlayerError if there is none of that number."""
    return _found(session.get(OutboxMessage, outbox_id),
                  f"there is no outgoing mail {outbox_id}")


def _found(row: Row | None, missing: str) -> Row:
    if row is None:
        raise PlayerError(missing)
    return row
