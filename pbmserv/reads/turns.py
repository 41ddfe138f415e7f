"""Where it is a player's turn: every board, in every game and tournament, that waits
for their move, the longest waiting first, with when its clock runs out.

The one list behind the mail command ``turns`` (and ``games`` without a game), the
digest's boards and the web player page.  Each reader adds what is theirs: the reply
address that moves on a board goes only into mail to the player's own address (a
page is public), given by the caller (``address``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardPlayer, Move, User
from pbmserv.db.status import BoardStatus
from pbmserv.games import AnyEngine, get_engine
from pbmserv.reads import clocks
from pbmserv.reads.boards import rounds_of

#: the most boards a list holds (the longest waiting); how many more is said
TURNS_LISTED = 100


@dataclass(frozen=True)
class Turn:
    """A board that waits for the player's move."""

    board: Board
    engine: AnyEngine
    #: the number of the move asked for
    move: int
    #: since when the board waits, and when its clock runs out (None: it never does)
    since: datetime
    deadline: datetime | None
    #: how long until then, in seconds (negative once passed)
    left: float
    #: whether the player took the board up (if not, it ends with no result then)
    taken_up: bool
    #: the opponents' userids, in seat order
    opponents: tuple[str, ...]
    #: the last move on the board, by whom, and when (None: no move yet)
    last_move: str | None
    last_mover: str | None
    last_move_at: datetime | None
    #: the tournament and round of a tournament's board
    tournament: tuple[str, int] | None
    #: the opponents on vacation now, and until when
    away: tuple[tuple[str, datetime], ...]
    #: the address that takes the move by reply (only in mail to the player)
    reply_to: str | None


@dataclass(frozen=True)
class Turns:
    """A player's turns, the longest waiting first, and how many more are not listed."""

    user: User
    turns: list[Turn]
    more: int


def turns_of(session: Session, user: User, now: datetime, *,
             address: Callable[[Board], str | None] | None = None,
             limit: int = TURNS_LISTED) -> Turns:
    """Every board where it is ``user``'s move now, the longest waiting first (at most
    ``limit``); ``address``: the reply address of each board, for mail to the player
    alone."""
    mine = (select(Board).join(BoardPlayer, BoardPlayer.board_id == Board.id)
            .where(BoardPlayer.user_id == user.id, BoardPlayer.seat == Board.to_move,
                   Board.status == BoardStatus.ACTIVE)
            .order_by(Board.turn_started_at, Board.id))
    boards = list(session.scalars(mine.limit(limit + 1)).unique())
    more = 0
    if len(boards) > limit:
        boards = boards[:limit]
        more = (session.scalar(select(func.count()).select_from(mine.subquery())) or 0) - limit
    rounds = rounds_of(session, [b.id for b in boards])
    turns = []
    for board in boards:
        previous = session.scalar(select(Move).where(Move.board_id == board.id,
                                                     Move.ply == board.ply)) if board.ply else None
        engine = get_engine(board.game)
        assert engine is not None, f"game {board.game!r} is not installed"
        opponents = [p for p in board.players if p.user_id != user.id]
        clock = clocks.clock_of(session, board, now)
        on_vacation, deadline = clock.away, clock.deadline
        turns.append(Turn(
            board=board, engine=engine, move=board.ply + 1,
            since=board.turn_started_at, deadline=deadline,
            left=0.0 if deadline is None else (deadline - now).total_seconds(),
            taken_up=all(p.accepted_at is not None for p in board.players
                         if p.user_id == user.id),
            opponents=tuple(p.user.userid for p in opponents),
            last_move=previous.notation if previous is not None else None,
            last_mover=(next(p.user.userid for p in board.players if p.seat == previous.seat)
                        if previous is not None else None),
            last_move_at=previous.created_at if previous is not None else None,
            tournament=rounds.get(board.id),
            away=tuple((p.user.userid, on_vacation[p.user_id]) for p in opponents
                       if p.user_id in on_vacation),
            reply_to=address(board) if address is not None else None))
    return Turns(user, turns, more)
