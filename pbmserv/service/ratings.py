"""Ratings in the database: every finished game with a result is rated at once.

One Glicko-2 rating per player per game (pbmserv.ratings does the arithmetic).
``rate_board`` is called by ``GameService.finish`` for every board that ends, however
it ends: a win, a loss or a draw (also by agreement, resignation or time) is rated as
a rating period of one game for both players, each against the other's values from
before the game; a declined board is not rated, nor one that a player never took
up (see ``taken_up``: a challenge needs no password, so a board is a player's only
once they moved on it or accepted it).  Before that, a player whose last
rated game of that kind ended 30 days or more ago has the deviation grown once per
30 idle days (``pbmserv.ratings.age``).  Each rated board keeps both players' values
before and after (``BoardRating``) for board mails, histories and records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardRating, PlayerRating, User
from pbmserv.games.base import is_no_result
from pbmserv.ratings import Rating, age, format_change, rate_game

DAY_SECONDS = 86400.0


@dataclass(frozen=True)
class Rated:
    """One player's part in a rated game: values before (aged) and after it."""

    user: User
    before: Rating
    after: Rating


@dataclass(frozen=True)
class Ranked:
    """A line of the rating list."""

    userid: str
    rating: Rating
    games: int
    rated_at: datetime


def no_result(board: Board) -> bool:
    """Whether a finished board ended with no result: declined, or abandoned with no
    winner."""
    return is_no_result(board.termination, board.winner)


def first_score(board: Board) -> float | None:
    """What the first seat scored (1, 0.5, 0), or None if the board is not rated:
    not over, without a result (declined or abandoned), or not a two-player game
    between two accounts."""
    if not board.finished or board.termination is None or no_result(board):
        return None
    if len(board.players) != 2 or board.players[0].user_id == board.players[1].user_id:
        return None
    if board.winner is None:
        return 0.5
    return 1.0 if board.winner == 0 else 0.0


def taken_up(board: Board) -> bool:
    """Whether every player took the board up (moved on it or accepted it): a board
    someone else started in a player's name is rated only then."""
    return all(p.accepted_at is not None for p in board.players)


def value(row: PlayerRating) -> Rating:
    return Rating(row.rating, row.rd, row.volatility)


def _row(session: Session, user: User, game: str, now: datetime) -> PlayerRating:
    """The player's rating row, locked (a new player's is made: 1500, RD 350, 0.06)."""
    row = session.scalar(select(PlayerRating)
                         .where(PlayerRating.user_id == user.id, PlayerRating.game == game)
                         .with_for_update(of=PlayerRating)
                         .execution_options(populate_existing=True))
    if row is None:
        start = Rating()
        row = PlayerRating(user_id=user.id, game=game, rating=start.rating, rd=start.rd,
                           volatility=start.volatility, rated_at=now)
        session.add(row)
    return row


def _rate(session: Session, game: str, users: Sequence[User], score: float,
          now: datetime) -> list[tuple[PlayerRating, Rated]]:
    """Rate one game ending at ``now``; the rows are returned unchanged."""
    rows = {u.id: _row(session, u, game, now) for u in sorted(users, key=lambda u: u.id)}
    befores = [age(value(rows[u.id]), (now - rows[u.id].rated_at).total_seconds() / DAY_SECONDS)
               for u in users]
    afters = rate_game(befores[0], befores[1], score)
    return [(rows[u.id], Rated(u, b, a)) for u, b, a in zip(users, befores, afters, strict=True)]


def _store(row: PlayerRating, rating: Rating, now: datetime) -> None:
    row.rating, row.rd, row.volatility = rating.rating, rating.rd, rating.volatility
    row.rated_at = now


def _history(session: Session, board: Board, seat: int, rated: Rated, score: float,
             before: float, after: float, now: datetime) -> None:
    session.add(BoardRating(
        board_id=board.id, seat=seat, user_id=rated.user.id, game=board.game, score=score,
        rating_before=before, rd_before=rated.before.rd,
        volatility_before=rated.before.volatility, rating_after=after,
        rd_after=rated.after.rd, volatility_after=rated.after.volatility, created_at=now))


def rate_board(session: Session, board: Board, now: datetime) -> list[Rated]:
    """Rate a board that has just finished (nothing happens if it is not rated)."""
    score = first_score(board)
    if score is None or not taken_up(board) or _is_rated(session, board):
        return []
    users = [p.user for p in board.players]
    done = _rate(session, board.game, users, score, now)
    for seat, (row, rated) in enumerate(done):
        _store(row, rated.after, now)
        _history(session, board, seat, rated, score if seat == 0 else 1.0 - score,
                 rated.before.rating, rated.after.rating, now)
    return [rated for _, rated in done]


def restore_board(session: Session, board: Board, recorded: Sequence[tuple[float, float]],
                  ended: datetime) -> None:
    """Rate an imported board whose record says each seat's (before, after) rating.

    The record's values are kept as the board's history; the players' ratings are
    worked out by rating the game as the server would (RD and volatility come from
    there too), so importing a complete export into an empty database gives back
    exactly the ratings the exporting server had.  A game older than a player's
    last rated one leaves that player's rating alone.
    """
    score = first_score(board)
    if score is None or _is_rated(session, board):
        return
    users = [p.user for p in board.players]
    done = _rate(session, board.game, users, score, ended)
    for seat, ((row, rated), (before, after)) in enumerate(zip(done, recorded, strict=True)):
        if row.rated_at <= ended:
            _store(row, rated.after, ended)
        _history(session, board, seat, rated, score if seat == 0 else 1.0 - score,
                  before, after, ended)


def _is_rated(session: Session, board: Board) -> bool:
    return session.scalar(select(BoardRating.id).where(BoardRating.board_id == board.id)
                          .limit(1)) is not None


# -- reading ----------------------------------------------------------------------------
def board_ratings(session: Session, board: Board) -> list[BoardRating]:
    """The rating changes of a board, in seat order (none if it was not rated)."""
    return list(session.scalars(select(BoardRating).where(BoardRating.board_id == board.id)
                                .order_by(BoardRating.seat)))


def before_of(row: BoardRating) -> Rating:
    return Rating(row.rating_before, row.rd_before, row.volatility_before)


def after_of(row: BoardRating) -> Rating:
    return Rating(row.rating_after, row.rd_after, row.volatility_after)


def change_lines(session: Session, board: Board) -> list[str]:
    """``alice 1500? -> 1662? (+162)`` for each player of a rated board."""
    return [format_change(r.user.userid, before_of(r), after_of(r))
            for r in board_ratings(session, board)]


def rating_list(session: Session, game: str, limit: int | None = None) -> list[Ranked]:
    """Everyone with a rated game of ``game`` (open accounts), best first (the first
    ``limit``, if given)."""
    games = (select(BoardRating.user_id, func.count().label("games"))
             .where(BoardRating.game == game).group_by(BoardRating.user_id).subquery())
    rows = session.execute(
        select(PlayerRating, User.userid, games.c.games)
        .join(User, User.id == PlayerRating.user_id)
        .join(games, games.c.user_id == PlayerRating.user_id)
        .where(PlayerRating.game == game, User.closed_at.is_(None))
        .order_by(PlayerRating.rating.desc(), User.key).limit(limit)
    ).tuples().all()
    return [Ranked(userid, value(row), count, row.rated_at) for row, userid, count in rows]


def count_rated(session: Session, game: str) -> int:
    """How many open accounts ``rating_list`` lists for ``game``."""
    rated = select(BoardRating.user_id).where(BoardRating.game == game)
    return session.scalar(
        select(func.count()).select_from(PlayerRating)
        .join(User, User.id == PlayerRating.user_id)
        .where(PlayerRating.game == game, User.closed_at.is_(None),
               PlayerRating.user_id.in_(rated))) or 0


def rating_of(session: Session, user: User, game: str) -> Ranked | None:
    row = session.get(PlayerRating, (user.id, game))
    if row is None:
        return None
    games = session.scalar(select(func.count()).select_from(BoardRating).where(
        BoardRating.user_id == user.id, BoardRating.game == game)) or 0
    return Ranked(user.userid, value(row), int(games), row.rated_at)
