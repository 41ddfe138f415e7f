"""Lists a page at a time, by key ("the boards before this one", never OFFSET): the
web pages and the mail command 'list' read long lists this way, so no answer grows
with the size of the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from pbmserv.db.models import Board, BoardPlayer, Tournament

#: boards on one page of a list
PAGE_SIZE = 50


@dataclass(frozen=True)
class Page:
    """A page of boards, newest first, and the keys of the pages around it."""

    boards: Sequence[Board]
    #: the key to give as ``before`` for the next (older) page, if there is one
    older: int | None
    #: the key to give as ``after`` for the previous (newer) page, if there is one
    newer: int | None


def window(session: Session, keys: Select[tuple[int]], column: InstrumentedAttribute[int],
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
    numbers, older, newer = window(session, select(Board.number).where(Board.game == game),
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
    ids, older, newer = window(
        session, select(BoardPlayer.board_id).where(BoardPlayer.user_id == user_id).distinct(),
        BoardPlayer.board_id, before, after, size)
    boards = session.scalars(select(Board).where(Board.id.in_(ids)).order_by(Board.id.desc()))
    return Page(list(boards), older, newer)


@dataclass(frozen=True)
class TournamentPage:
    """A page of tournaments, the newest first, and the keys of the pages around it
    (as for ``Page``, on the tournament's id)."""

    tournaments: Sequence[Tournament]
    older: int | None
    newer: int | None


def tournaments_page(session: Session, *, before: int | None = None,
                     after: int | None = None, size: int = PAGE_SIZE) -> TournamentPage:
    """A page of tournaments, the newest (the highest id) first."""
    ids, older, newer = window(session, select(Tournament.id), Tournament.id, before, after,
                               size)
    found = session.scalars(select(Tournament).where(Tournament.id.in_(ids))
                            .order_by(Tournament.id.desc()))
    return TournamentPage(list(found), older, newer)
