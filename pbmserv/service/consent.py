"""Whose challenges a player takes: everyone by default; ``reject all`` then
``accept alice`` works as players expect; and how many boards at once."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, aliased

from pbmserv.db.models import Board, BoardPlayer, ChallengePolicy, ChallengeRule, User
from pbmserv.db.status import BoardStatus
from pbmserv.i18n import N_
from pbmserv.service.errors import PlayerError

#: the most boards one person plays against the bots at once
BOT_BOARDS_PER_PLAYER = 10


def policy(session: Session, user: User, game: str) -> ChallengePolicy:
    found = session.get(ChallengePolicy, (user.id, game))
    if found is None:
        found = ChallengePolicy(user_id=user.id, game=game, accept_all=True, board_limit=None)
        session.add(found)
    return found


def set_everyone(session: Session, user: User, game: str, accept: bool) -> None:
    """``accept all`` / ``reject all``: the default, with every exception dropped."""
    policy(session, user, game).accept_all = accept
    session.execute(delete(ChallengeRule).where(ChallengeRule.user_id == user.id,
                                                ChallengeRule.game == game))


def set_players(session: Session, user: User, game: str, others: Sequence[User],
                accept: bool) -> None:
    policy(session, user, game)
    for other in others:
        rule = session.get(ChallengeRule, (user.id, game, other.id))
        if rule is None:
            session.add(ChallengeRule(user_id=user.id, game=game, other_id=other.id,
                                      accept=accept))
        else:
            rule.accept = accept


def set_limit(session: Session, user: User, game: str, limit: int | None) -> None:
    policy(session, user, game).board_limit = limit


def exceptions(session: Session, user: User, game: str) -> list[tuple[User, bool]]:
    rows = session.execute(
        select(User, ChallengeRule.accept).join(ChallengeRule, ChallengeRule.other_id == User.id)
        .where(ChallengeRule.user_id == user.id, ChallengeRule.game == game)
        .order_by(User.key)
    ).tuples().all()
    return list(rows)


def takes_default(session: Session, user: User, game: str) -> bool:
    found = session.get(ChallengePolicy, (user.id, game))
    return True if found is None else found.accept_all


def limit_of(session: Session, user: User, game: str) -> int | None:
    found = session.get(ChallengePolicy, (user.id, game))
    return None if found is None else found.board_limit


def takes_from(session: Session, user: User, game: str, other: User) -> bool:
    rule = session.get(ChallengeRule, (user.id, game, other.id))
    if rule is not None:
        return rule.accept
    return takes_default(session, user, game)


def active_boards(session: Session, user: User, game: str) -> int:
    return int(session.scalar(
        select(func.count(func.distinct(Board.id))).join(BoardPlayer)
        .where(BoardPlayer.user_id == user.id, Board.game == game,
               Board.status == BoardStatus.ACTIVE)
    ) or 0)


def bot_boards(session: Session, user: User) -> int:
    """The boards in play, of any game, on which ``user`` meets a bot."""
    bot_player = aliased(BoardPlayer)
    return int(session.scalar(
        select(func.count(func.distinct(Board.id))).join(BoardPlayer)
        .join(bot_player, bot_player.board_id == Board.id).join(User, User.id == bot_player.user_id)
        .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE,
               User.bot.is_not(None))
    ) or 0)


def check_bots(session: Session, users: Sequence[User]) -> None:
    """The bots take challenges from people only (a board of bots alone would burn the
    server's CPU for nobody), and at most BOT_BOARDS_PER_PLAYER boards at once with
    any one person, so nobody can keep them busy for everyone else."""
    people = [u for u in users if u.bot is None]
    if len(people) == len(users):
        return
    if not people:
        raise PlayerError(N_("the bots play people, not each other: name yourself as one of "
                          "the players"))
    for person in people:
        if bot_boards(session, person) >= BOT_BOARDS_PER_PLAYER:
            raise PlayerError(f"{person.userid} plays {BOT_BOARDS_PER_PLAYER} boards against "
                              "the bots already, the most at once; finish one first")


def check_consent(session: Session, game: str, users: Sequence[User]) -> None:
    """Refuse a new board that one of its players does not take."""
    if len({u.id for u in users}) < len(users):
        raise PlayerError(N_("a player cannot play against themselves"))
    check_bots(session, users)
    ids = [u.id for u in users]
    # players who never said anything take everyone's challenges: one read finds that
    policies = {p.user_id: p for p in session.scalars(
        select(ChallengePolicy).where(ChallengePolicy.user_id.in_(ids),
                                      ChallengePolicy.game == game))}
    if not policies:
        return
    for user in users:
        for other in users:
            if other.id != user.id and not takes_from(session, user, game, other):
                raise PlayerError(f"{user.userid} does not take {game} challenges from "
                                  f"{other.userid}")
        limit = limit_of(session, user, game)
        if limit is not None and active_boards(session, user, game) >= limit:
            raise PlayerError(f"{user.userid} plays {limit} {game} board(s) already, the "
                              "most they take at once")
