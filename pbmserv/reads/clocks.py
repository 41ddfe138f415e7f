"""Clocks as every reader sees them: how long the player to move has let a board wait,
the vacations that stop their clock, and when it runs out (``clock_of``): the board
mails, the reminders, ``show``, ``turns``, the digest, the web pages and the clock
itself (pbmserv.service.clock) all ask here.

A board's clock counts from the start of the current turn; time the player to move
spends on vacation does not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, User, Vacation

DAY = timedelta(days=1)


#: how often vacations were begun or ended in a session (its ``info``): a view of a
#: board made before is out of date
VACATIONS_CHANGED = "pbmserv.vacations_changed"


def vacations_changed(session: Session) -> int:
    """How often a vacation was begun or ended in this session so far."""
    return int(session.info.get(VACATIONS_CHANGED, 0))


def mover_of(board: Board) -> User:
    """The player to move."""
    return next(p.user for p in board.players if p.seat == board.to_move)


_BETWEEN = (select(Vacation.starts_at, Vacation.ends_at)
            .where(Vacation.user_id == bindparam("user"), Vacation.starts_at < bindparam("end"),
                   Vacation.ends_at > bindparam("start"))
            .order_by(Vacation.starts_at))


def vacations_between(session: Session, user_id: int, start: datetime,
                      end: datetime) -> list[tuple[datetime, datetime]]:
    """(start, end) of the user's vacations that touch [start, end)."""
    return [(row[0], row[1]) for row in session.execute(
        _BETWEEN, {"user": user_id, "start": start, "end": end})]


def overlap(vacations: list[tuple[datetime, datetime]], start: datetime,
            end: datetime) -> timedelta:
    """How much of [start, end) the vacations cover (they never overlap each other)."""
    total = timedelta()
    for v_start, v_end in vacations:
        lo, hi = max(start, v_start), min(end, v_end)
        if hi > lo:
            total += hi - lo
    return total


def current_vacation(session: Session, user_id: int, now: datetime) -> Vacation | None:
    return session.scalar(
        select(Vacation).where(Vacation.user_id == user_id, Vacation.starts_at <= now,
                               Vacation.ends_at > now)
    )


def days_taken(session: Session, user_id: int, now: datetime) -> float:
    """Vacation days of this calendar year, the planned rest of a current one included."""
    year = datetime(now.year, 1, 1, tzinfo=UTC)
    following = datetime(now.year + 1, 1, 1, tzinfo=UTC)
    spent = overlap(vacations_between(session, user_id, year, following), year, following)
    return spent / DAY


def idle(session: Session, board: Board, now: datetime) -> timedelta:
    """How long the player to move has let the board wait (vacations left out)."""
    mover = mover_of(board)
    start = board.turn_started_at
    away = overlap(vacations_between(session, mover.id, start, now), start, now)
    return max(now - start - away, timedelta())


@dataclass(frozen=True)
class BoardClock:
    """A board's clock as its readers see it (``clock_of``)."""

    #: when the clock of the player to move runs out, if they do not move before
    #: (None: no clock runs: the game is over, or a bot is to move)
    deadline: datetime | None
    #: the players on vacation now: user id -> when their vacation ends
    away: dict[int, datetime]


#: the vacations of a board's players that touch [since, now] (built once: a statement
#: built at every call costs its construction and an IN list of values expanded anew)
_PLAYERS_AWAY = (select(Vacation.user_id, Vacation.starts_at, Vacation.ends_at)
                 .where(Vacation.user_id.in_(bindparam("users", expanding=True)),
                        Vacation.ends_at > bindparam("since"),
                        Vacation.starts_at <= bindparam("now"))
                 .order_by(Vacation.starts_at))


def clock_of(session: Session, board: Board, now: datetime) -> BoardClock:
    """When the clock of the player to move runs out, and who of the board's players
    is away now, read in one query.

    The deadline is the idle time left after now (the forfeit time less the time the
    player has let the board wait, their vacations left out), counted from the end of
    a vacation they are on: the board is lost on time then, or ends with no result if
    they never took it up.  A vacation begins when it is asked for, never later, so
    no vacation to come can move the instant; one ended early brings it nearer, one
    made longer puts it off.
    """
    if board.finished:
        return BoardClock(None, {})
    start = board.turn_started_at
    rows = session.execute(_PLAYERS_AWAY, {"users": [p.user_id for p in board.players],
                                           "since": min(start, now), "now": now}).all()
    away = {user_id: end for user_id, begin, end in rows if begin <= now < end}
    mover = mover_of(board)
    if mover.bot is not None:
        return BoardClock(None, away)
    mine = [(begin, end) for user_id, begin, end in rows if user_id == mover.id]
    waited = max(now - start - overlap(mine, start, now), timedelta())
    resumes = away.get(mover.id, now)
    return BoardClock(resumes + max(board.forfeit_days * DAY - waited, timedelta()), away)

