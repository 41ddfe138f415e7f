"""What the web pages read that no mail command reads the same way: the open
challenges, the counts on the front page (lists of boards a page at a time are in
pbmserv.service.pages, shared with the mail command 'list').  Every query follows an index
(see docs/web-notes.md); boards, moves, ratings and tournaments are read through
the service helpers like everywhere else.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, Seek
from pbmserv.db.status import BoardStatus, SeekStatus
from pbmserv.service.pages import PAGE_SIZE, Page, boards_of_game, boards_of_player, window
from pbmserv.service.tournaments import rounds_of

__all__ = ["PAGE_SIZE", "Page", "boards_of_game", "boards_of_player", "window"]

#: the most open challenges the front page lists
SEEKS_SHOWN = 100


def count_boards(session: Session, game: str, status: BoardStatus) -> int:
    return session.scalar(select(func.count()).select_from(Board)
                          .where(Board.game == game, Board.status == status)) or 0


def open_seeks(session: Session, limit: int = SEEKS_SHOWN) -> list[Seek]:
    """Open challenges, by game and number (as the mail command 'list' has them)."""
    return list(session.scalars(
        select(Seek).where(Seek.status == SeekStatus.OPEN)
        .order_by(Seek.game, Seek.number).limit(limit)))


def count_open_seeks(session: Session, game: str) -> int:
    return session.scalar(select(func.count()).select_from(Seek)
                          .where(Seek.status == SeekStatus.OPEN, Seek.game == game)) or 0


def tournament_of(session: Session, board: Board) -> tuple[str, int] | None:
    """(tournament name, round) of a tournament's board."""
    return rounds_of(session, [board.id]).get(board.id)
