"""Boards and open challenges (seeks): how many there are of each game, the open
ones, a player's boards of a game."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardPlayer, Seek, Tournament, TournamentGame
from pbmserv.db.status import BoardStatus, SeekStatus

#: which of a player's boards: in play, all, finished, or those waiting for their move
PLAYER_FILTERS = ("active", "all", "inactive", "next")


def board_counts(session: Session, status: BoardStatus) -> dict[str, int]:
    """game name -> how many of its boards have ``status`` (games with none absent)."""
    return dict(session.execute(
        select(Board.game, func.count()).where(Board.status == status).group_by(Board.game)
    ).tuples().all())


def open_seek_counts(session: Session, game: str | None = None) -> dict[str, int]:
    """game name -> how many open challenges it has (of ``game`` alone if given)."""
    query = select(Seek.game, func.count()).where(Seek.status == SeekStatus.OPEN)
    if game is not None:
        query = query.where(Seek.game == game)
    return dict(session.execute(query.group_by(Seek.game)).tuples().all())


def open_seeks(session: Session, limit: int, game: str | None = None) -> list[Seek]:
    """Open challenges by game and number (of ``game`` alone if given), at most
    ``limit``."""
    query = select(Seek).where(Seek.status == SeekStatus.OPEN)
    if game is not None:
        query = query.where(Seek.game == game)
    return list(session.scalars(query.order_by(Seek.game, Seek.number).limit(limit)))


def boards_of_user(session: Session, game: str, user_id: int, which: str,
                   limit: int) -> list[Board]:
    """A player's boards of ``game``, the newest first, at most ``limit``: ``which``
    one of PLAYER_FILTERS."""
    query = (select(Board).join(BoardPlayer)
             .where(Board.game == game, BoardPlayer.user_id == user_id)
             .distinct().order_by(Board.number.desc()).limit(limit))
    if which in ("active", "next"):
        query = query.where(Board.status == BoardStatus.ACTIVE)
    elif which == "inactive":
        query = query.where(Board.status == BoardStatus.FINISHED)
    if which == "next":  # the player's seat is the one to move
        query = query.where(BoardPlayer.seat == Board.to_move)
    return list(session.scalars(query).unique())


def tournament_of(session: Session, board: Board) -> tuple[str, int] | None:
    """(tournament name, round) of a tournament's board."""
    return rounds_of(session, [board.id]).get(board.id)


def rounds_of(session: Session, board_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
    """The tournament and round of each of the boards that is a tournament's."""
    if not board_ids:
        return {}
    rows = session.execute(
        select(TournamentGame.board_id, Tournament.name, TournamentGame.round)
        .join(Tournament, Tournament.id == TournamentGame.tournament_id)
        .where(TournamentGame.board_id.in_(list(board_ids)))).tuples()
    return {board_id: (name, round_) for board_id, name, round_ in rows
            if board_id is not None}
