"""The limits that keep one mail (or one sender) from making many boards and mails.

Each is a setting (pbmserv.config, ``pbmserv config show``); the commands check them
before they act, and a refusal says which limit was met and when it frees up.  The
limits on mail to one address are the outbox's (pbmserv.notifications.outbox).  A
sender is counted by its address in one form, lower case and without a ``+tag``
(pbmserv.mail.addresses.address_key): ``rv+1@`` and ``RV+2@`` are one sender.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import QueryableAttribute, Session

from pbmserv.db.models import (
    Board,
    BoardPlayer,
    OutboxMessage,
    Seek,
    Subscription,
    Tournament,
    User,
)
from pbmserv.db.status import SeekStatus, TournamentStatus
from pbmserv.mail.addresses import address_key
from pbmserv.service.errors import PlayerError

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def same_sender(column: QueryableAttribute[str | None], sender: str) -> ColumnElement[bool]:
    """``column`` (an address stored in lower case) is ``sender``'s mailbox: its key,
    or the key with any ``+tag``."""
    key = address_key(sender)
    local, _, domain = key.rpartition("@")
    escaped = local.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return or_(column == key, column.like(f"{escaped}+%@{domain}", escape="\\"))


@dataclass
class MailsToOthers:
    """The mails one incoming mail makes to others than its sender, unasked (a
    challenge's board, a reset code, a confirmation): at most ``per_mail`` of them,
    and at most ``per_hour`` made by the sender's mails in the last hour (counted in
    the outbox by its ``cause_key``).  A command that would make more is refused before
    it acts, and its reply says which limit held it."""

    #: the sender's address_key
    sender: str
    per_mail: int
    per_hour: int
    #: made for this mail so far
    made: int = 0
    #: made by the sender's mails in the hour before this mail (None: not counted yet)
    earlier: int | None = None

    def others(self, addresses: Iterable[str]) -> list[str]:
        """Those of ``addresses`` that are not the sender's (a mailbox once)."""
        return sorted({address_key(a) for a in addresses} - {self.sender})

    def take(self, session: Session, addresses: Iterable[str], now: datetime) -> None:
        """Count a mail to each of ``addresses`` that is not the sender's, or refuse
        (a PlayerError) if that is more than this mail or this hour may make."""
        others = self.others(addresses)
        if not others:
            return
        if self.made + len(others) > self.per_mail:
            raise PlayerError(
                f"not done: it would mail {_people(len(others))} other than you, and one "
                f"mail may make at most {self.per_mail} mails to others ({self.made} made "
                "by this one already); nothing was sent for this line. Send it again in "
                "a mail of its own")
        if self.earlier is None:
            self.earlier = session.scalar(select(func.count()).select_from(OutboxMessage)
                                          .where(OutboxMessage.cause_key == self.sender,
                                                 OutboxMessage.created_at > now - HOUR)) or 0
        if self.earlier + self.made + len(others) > self.per_hour:
            first = session.scalar(select(func.min(OutboxMessage.created_at)).where(
                OutboxMessage.cause_key == self.sender, OutboxMessage.created_at > now - HOUR))
            again = f" after {(first + HOUR):%H:%M} UTC" if first is not None else " later"
            raise PlayerError(
                f"not done: it would mail {_people(len(others))} other than you, and the "
                f"mails from your address may make at most {self.per_hour} mails to others "
                f"an hour ({self.earlier + self.made} in the last hour); nothing was sent "
                f"for this line. Try again{again}")
        self.made += len(others)


def _people(count: int) -> str:
    return "someone" if count == 1 else f"{count} people"


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
        same_sender(Board.challenged_by, sender), Board.created_at > since,
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
