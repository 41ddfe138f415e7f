"""What the web pages read that no mail command reads the same way: lists of boards
a page at a time (keyset pagination: "boards before this one", never OFFSET), the
open challenges, the counts on the front page.  Every query follows an index
(see docs/web-notes.md); boards, moves, ratings and tournaments are read through
the service helpers like everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from pbmserv.db.models import Board, BoardPlayer, Seek, Tournament, TournamentGame
from pbmserv.db.status import BoardStatus, SeekStatus

#: boards on one page of a list
PAGE_SIZE = 50
#: the most open challenges the front page lists
SEEKS_SHOWN = 100


@dataclass(frozen=True)
class Page:
    """A page of boards, newest first, and the keys of the pages around it."""

    boards: Sequence[Board]
    #: the key to give as ``before`` for the next (older) page, if there is one
    older: int | None
    #: the key to give as ``after`` for the previous (newer) page, if there is one
    newer: int | None


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


def _window(session: Session, keys: Select[tuple[int]], column: InstrumentedAttribute[int],
            before: int | None, after: int | None,
            size: int) -> tuple[list[int], int | None, int | None]:
    """``size`` keys below ``before`` (or above ``after``, or the highest), highest
    first, and the keys that lead to the older and the newer page, if there are any."""
    if after is not None:
        found = list(session.scalars(keys.where(column > after).order_by(column)
                                     .limit(size + 1)))
        newer = len(found) > size
        found = found[:size][::-1]
        older = bool(found) and _exists(session, keys.where(column < found[-1]))
    else:
        below = keys if before is None else keys.where(column < before)
        found = list(session.scalars(below.order_by(column.desc()).limit(size + 1)))
        older = len(found) > size
        found = found[:size]
        newer = (before is not None and bool(found)
                 and _exists(session, keys.where(column > found[0])))
    return found, found[-1] if older else None, found[0] if newer else None


def _exists(session: Session, keys: Select[tuple[int]]) -> bool:
    return session.scalar(keys.limit(1)) is not None


def boards_of_game(session: Session, game: str, *, before: int | None = None,
                   after: int | None = None, size: int = PAGE_SIZE) -> Page:
    """A page of the game's boards, the highest number (the newest) first: the
    ``size`` boards numbered below ``before``, or above ``after``, or the newest."""
    numbers, older, newer = _window(session, select(Board.number).where(Board.game == game),
                                    Board.number, before, after, size)
    boards = session.scalars(select(Board).where(Board.game == game,
                                                 Board.number.in_(numbers))
                             .order_by(Board.number.desc()))
    return Page(list(boards), older, newer)


def boards_of_player(session: Session, user_id: int, *, before: int | None = None,
                     after: int | None = None, size: int = PAGE_SIZE) -> Page:
    """A page of the boards a player sits at, of every game, the newest first (by
    the board's id: the order they were made in); ``before`` and ``after`` as for
    ``boards_of_game``, on that id."""
    ids, older, newer = _window(
        session, select(BoardPlayer.board_id).where(BoardPlayer.user_id == user_id).distinct(),
        BoardPlayer.board_id, before, after, size)
    boards = session.scalars(select(Board).where(Board.id.in_(ids)).order_by(Board.id.desc()))
    return Page(list(boards), older, newer)


def tournament_of(session: Session, board: Board) -> tuple[str, int] | None:
    """(tournament name, round) of a tournament's board."""
    row = session.execute(
        select(Tournament.name, TournamentGame.round)
        .join(Tournament, Tournament.id == TournamentGame.tournament_id)
        .where(TournamentGame.board_id == board.id)).tuples().first()
    return None if row is None else (row[0], row[1])
