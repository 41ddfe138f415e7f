"""Whose challenges a player takes: everyone by default; ``reject all`` then
``accept alice`` works as players expect; and how many boards at once."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardPlayer, ChallengePolicy, ChallengeRule, User
from pbmserv.db.status import BoardStatus
from pbmserv.service.errors import PlayerError


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


def check_consent(session: Session, game: str, users: Sequence[User]) -> None:
    """Refuse a new board that one of its players does not take."""
    if len({u.id for u in users}) < len(users):
        raise PlayerError("a player cannot play against themselves")
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
