"""Finished games looked back on: a game's standings and a player's history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, case, func, or_, select
from sqlalchemy.orm import Session

from pbmserv.db.models import (
    Board,
    BoardPlayer,
    BoardRating,
    Tournament,
    TournamentGame,
    User,
)
from pbmserv.db.status import BoardStatus
from pbmserv.games.base import NO_RESULT, Termination
from pbmserv.ratings import format_change
from pbmserv.service.boards import engine_of, player_of
from pbmserv.service.ratings import after_of, before_of, no_result

#: the most boards a history lists
HISTORY_LIMIT = 100


@dataclass(frozen=True)
class Standing:
    userid: str
    played: int
    won: int
    lost: int
    drawn: int

    @property
    def points(self) -> float:
        return self.won + self.drawn / 2


@dataclass(frozen=True)
class PastGame:
    """One finished board, seen from one of its players."""

    number: int
    ended: datetime
    seat: str
    opponent: str
    #: won, lost, drawn, or "no result" (declined)
    result: str
    termination: Termination | None
    reason: str
    #: "alice 1500? -> 1662? (+162)", if the board was rated
    rating: str | None
    #: (tournament, round), if the board was a tournament's
    tournament: tuple[str, int] | None


def _counted() -> list[ColumnElement[bool]]:
    """Finished boards with a result: not declined or abandoned without a winner (older
    boards may have no kind)."""
    return [Board.status == BoardStatus.FINISHED,
            or_(Board.termination.is_(None), Board.termination.not_in(NO_RESULT),
                Board.winner.is_not(None))]


def standings(session: Session, game: str) -> list[Standing]:
    """Wins, losses and draws of every player (open accounts) of ``game``; most points
    (a draw counts a half) first, then most wins."""
    won = func.sum(case((Board.winner == BoardPlayer.seat, 1), else_=0))
    drawn = func.sum(case((Board.winner.is_(None), 1), else_=0))
    rows = session.execute(
        select(User.userid, func.count(), won, drawn)
        .select_from(BoardPlayer).join(Board, Board.id == BoardPlayer.board_id)
        .join(User, User.id == BoardPlayer.user_id)
        .where(Board.game == game, User.closed_at.is_(None), *_counted())
        .group_by(User.id, User.userid)
    ).tuples().all()
    table = [Standing(userid, int(n), int(w or 0), int(n) - int(w or 0) - int(d or 0),
                      int(d or 0)) for userid, n, w, d in rows]
    return sorted(table, key=lambda s: (-s.points, -s.won, s.userid.lower()))


def _word(board: Board, seat: int) -> str:
    if no_result(board):
        return "no result"
    if board.winner is None:
        return "drawn"
    return "won" if board.winner == seat else "lost"


def history(session: Session, user: User, game: str,
            limit: int = HISTORY_LIMIT) -> list[PastGame]:
    """The player's finished boards of ``game``, the last finished first."""
    boards = list(session.scalars(
        select(Board).join(BoardPlayer)
        .where(Board.game == game, Board.status == BoardStatus.FINISHED,
               BoardPlayer.user_id == user.id)
        .distinct().order_by(Board.updated_at.desc(), Board.id.desc()).limit(limit)
    ).unique())
    ids = [b.id for b in boards]
    ratings = {(r.board_id, r.seat): r for r in session.scalars(
        select(BoardRating).where(BoardRating.board_id.in_(ids)))}
    events = {board_id: (name, number) for board_id, name, number in session.execute(
        select(TournamentGame.board_id, Tournament.name, TournamentGame.round)
        .join(Tournament, Tournament.id == TournamentGame.tournament_id)
        .where(TournamentGame.board_id.in_(ids))).tuples()}
    out = []
    for board in boards:
        seat = next(p.seat for p in board.players if p.user_id == user.id)
        seats = engine_of(board).seats
        rated = ratings.get((board.id, seat))
        out.append(PastGame(
            board.number, board.updated_at, seats[seat], player_of(board, 1 - seat).userid,
            _word(board, seat), board.termination, board.result or "",
            format_change(user.userid, before_of(rated), after_of(rated)) if rated else None,
            events.get(board.id)))
    return out
