"""The limits that keep one mail (or one sender) from making many boards and mails.

Each is a setting (pbmserv.config, ``pbmserv config show``); the commands check them
before they act, and a refusal says which limit was met and when it frees up.  The
limits on mail to one address are the outbox's (pbmserv.notifications.outbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardPlayer, Seek, Subscription, Tournament, User
from pbmserv.db.status import SeekStatus, TournamentStatus
from pbmserv.service.errors import PlayerError

DAY = timedelta(days=1)


def challenger_of(users: Sequence[User], sender: str) -> User | None:
    """The player named in a challenge whose own address sent it, if one is."""
    return next((user for user in users if user.email == sender.lower()), None)


def check_challenges(session: Session, sender: str, users: Sequence[User], now: datetime, *,
                     per_sender: int, per_player: int) -> None:
    """A sender starts at most ``per_sender`` boards by challenge a day.  And a player
    is named in at most ``per_player`` a day by each challenger: by each other player
    challenging from their own address, and by all the addresses that play none of
    the boards together (strangers, friends arranging a game).  So strangers use up
    only the strangers' allowance: a player's own challenges and those of their
    opponents are never refused because of them.  (A board against a bot counts for
    none of these: the bots have their own limit, BOT_BOARDS_PER_PLAYER at once per
    person.)"""
    since = now - DAY
    if any(user.bot is not None for user in users):
        return
    bot_boards = (select(BoardPlayer.board_id).join(User, User.id == BoardPlayer.user_id)
                  .where(User.bot.is_not(None)))
    sent = session.scalar(select(func.count()).select_from(Board).where(
        Board.challenged_by == sender.lower(), Board.created_at > since,
        Board.id.not_in(bot_boards))) or 0
    if sent >= per_sender:
        raise PlayerError(f"{per_sender} boards have been started by challenges from your "
                          "address in the last 24 hours, the most a day; try again "
                          "tomorrow, or post a seek ('help seek')")
    challenger = challenger_of(users, sender)
    by = (Board.challenger_id.is_(None) if challenger is None
          else Board.challenger_id == challenger.id)
    for user in users:
        if user.email == sender.lower():
            continue  # their own challenge: only the sender's allowance counts it
        named = session.scalar(
            select(func.count()).select_from(Board).join(BoardPlayer)
            .where(BoardPlayer.user_id == user.id, Board.challenged_by.is_not(None), by,
                   Board.created_at > since, Board.id.not_in(bot_boards))) or 0
        if named < per_player:
            continue
        if challenger is not None:
            raise PlayerError(f"{challenger.userid} has challenged {user.userid} to "
                              f"{per_player} boards in the last 24 hours, the most a day; "
                              "try again tomorrow")
        raise PlayerError(
            f"{user.userid} has been challenged to {per_player} boards in the last 24 hours "
            "from addresses that are none of their players', the most a day; try again "
            f"tomorrow (a player may still challenge {user.userid} from their own "
            "account's address)")


def check_seeks(session: Session, user: User, limit: int) -> None:
    open_ = session.scalar(select(func.count()).select_from(Seek).where(
        Seek.user_id == user.id, Seek.status == SeekStatus.OPEN)) or 0
    if open_ >= limit:
        raise PlayerError(f"{user.userid} has {limit} open seeks already, the most at once; "
                          "withdraw one ('unseek') or wait until one is joined")


def check_tournaments(session: Session, user: User, limit: int) -> None:
    running = session.scalar(select(func.count()).select_from(Tournament).where(
        Tournament.creator_id == user.id,
        Tournament.status != TournamentStatus.FINISHED)) or 0
    if running >= limit:
        raise PlayerError(f"{user.userid} has created {limit} tournaments that are not over "
                          "yet, the most at once; create another when one has ended")


def check_subscribers(session: Session, board: Board, user: User, limit: int) -> None:
    """A board takes at most ``limit`` subscribers (one already watching may say so
    again)."""
    watching = session.get(Subscription, (board.id, user.id)) is not None
    if board.watchers >= limit and not watching:
        raise PlayerError(f"board {board.number} has {limit} subscribers already, the most "
                          "a board takes", board=board)
