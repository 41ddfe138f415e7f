"""Clocks: when the clock looks at a board next, and the limits of clock times.

A board's clock counts from the start of the current turn.  Time the player to move
spends on vacation does not count.  The board keeps, as a hint for the clock worker,
the next instant it must be looked at (``clock_due_at``); what is due then is worked
out afresh from the turn's start and the vacations, so a restart, a crash or a
vacation begun or ended early never loses or repeats a reminder.

How long a player has let a board wait, their vacations, and when the clock runs
out are questions of the read model (pbmserv.reads.clocks), asked there by the
service as by every mail and page.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from pbmserv.db.models import Board
from pbmserv.i18n import N_
from pbmserv.reads.clocks import DAY, current_vacation, idle
from pbmserv.service.boards import player_of
from pbmserv.service.errors import PlayerError

#: vacation days a player may take in a calendar year
VACATION_DAYS_PER_YEAR = 30
#: the longest nag or forfeit time a board may have
MAX_CLOCK_DAYS = 365


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
