"""Clocks: how long a player has let a board wait, and vacations that stop the clock.

A board's clock counts from the start of the current turn.  Time the player to move
spends on vacation does not count.  The board keeps, as a hint for the clock worker,
the next instant it must be looked at (``clock_due_at``); what is due then is worked
out afresh from the turn's start and the vacations, so a restart, a crash or a
vacation begun or ended early never loses or repeats a reminder.

When the clock runs out (``deadline``) is asked in one place: the board mails, the
reminders, ``show``, ``turns``, the digest and the web pages all say the date it
gives.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, Vacation
from pbmserv.i18n import N_
from pbmserv.service.boards import player_of
from pbmserv.service.errors import PlayerError

DAY = timedelta(days=1)
#: vacation days a player may take in a calendar year
VACATION_DAYS_PER_YEAR = 30
#: the longest nag or forfeit time a board may have
MAX_CLOCK_DAYS = 365


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
    mover = player_of(board, board.to_move)
    start = board.turn_started_at
    away = overlap(vacations_between(session, mover.id, start, now), start, now)
    return max(now - start - away, timedelta())


def deadline(session: Session, board: Board, now: datetime) -> datetime | None:
    """When the clock of the player to move runs out (the board is lost on time, or
    ends with no result if they never took it up), if they do not move before: the
    idle time left after now, counted from the end of a vacation they are on.  None
    when no clock runs: the game is over, or a bot is to move (bots never time out).

    A vacation begins when it is asked for, never later, so no vacation to come can
    move the instant; one ended early brings it nearer, one made longer puts it off.
    """
    if board.finished:
        return None
    mover = player_of(board, board.to_move)
    if mover.bot is not None:
        return None
    start = board.turn_started_at
    vacations = vacations_between(session, mover.id, start, now + DAY * MAX_CLOCK_DAYS * 2)
    waited = max(now - start - overlap(vacations, start, now), timedelta())
    resumes = max([now, *(end for begin, end in vacations if begin <= now < end)])
    return resumes + max(board.forfeit_days * DAY - waited, timedelta())


def away(session: Session, board: Board, now: datetime) -> dict[int, datetime]:
    """The players of ``board`` on vacation now: user id -> when their vacation ends."""
    ids = [p.user_id for p in board.players]
    return {row[0]: row[1] for row in session.execute(
        select(Vacation.user_id, Vacation.ends_at)
        .where(Vacation.user_id.in_(ids), Vacation.starts_at <= now, Vacation.ends_at > now))}


def next_deadline(board: Board) -> timedelta:
    """The idle time at which the clock must act next: a nag, or the forfeit."""
    nag = board.nag_days * DAY * (board.nags_sent + 1)
    return min(nag, board.forfeit_days * DAY)


def first_deadline(board: Board, now: datetime) -> datetime:
    """When the clock first looks at a turn that starts now.

    Nothing need be read: the first nag is due one nag time from now; if the player
    is on vacation then, the clock looks again and finds it not yet due (an early
    look costs nothing, a late one a late nag).
    """
    return now + min(board.nag_days, board.forfeit_days) * DAY


def schedule(session: Session, board: Board, now: datetime, *, new_turn: bool = False) -> None:
    """Set when the clock looks at the board next (idle time only grows off vacation)."""
    if board.finished:
        board.clock_due_at = None
        return
    if new_turn:
        board.clock_due_at = first_deadline(board, now)
        return
    waited = idle(session, board, now)
    due = now + max(next_deadline(board) - waited, timedelta())
    mover = player_of(board, board.to_move)
    away = current_vacation(session, mover.id, now)
    if away is not None:
        due = max(due, away.ends_at + (next_deadline(board) - waited))
    board.clock_due_at = due


def check_clock_days(nag_days: int, forfeit_days: int) -> None:
    if not 1 <= nag_days <= MAX_CLOCK_DAYS or not 1 <= forfeit_days <= MAX_CLOCK_DAYS:
        raise PlayerError(f"nag and forfeit times are 1 to {MAX_CLOCK_DAYS} days")
    if forfeit_days < nag_days:
        raise PlayerError(N_("the forfeit time must not be shorter than the nag time"))


#: the shortest clock of a board started by a challenge: nobody has to answer a board
#: someone else started within less than a week, nor be reminded more than every 3 days
CHALLENGE_MIN_NAG_DAYS = 3
CHALLENGE_MIN_FORFEIT_DAYS = 7


def check_challenge_clock(nag_days: int, forfeit_days: int) -> None:
    if nag_days < CHALLENGE_MIN_NAG_DAYS or forfeit_days < CHALLENGE_MIN_FORFEIT_DAYS:
        raise PlayerError(
            f"a challenge's clock nags after {CHALLENGE_MIN_NAG_DAYS} days at the least and "
            f"forfeits after {CHALLENGE_MIN_FORFEIT_DAYS} at the least (--nagtime="
            f"{max(nag_days, CHALLENGE_MIN_NAG_DAYS)} --forfeittime="
            f"{max(forfeit_days, CHALLENGE_MIN_FORFEIT_DAYS)}); a shorter clock may be "
            "agreed with a seek, which both players join themselves", usage=True)
