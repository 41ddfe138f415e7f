"""The digest: one mail listing every board where it is the player's move, with the
moves and comments since the last digest, and the games of theirs that ended.

It is built from the recorded events (board_events), from just after the last event
the previous digest covered up to the newest one now: so a restart loses nothing,
and the digest's mail and its new starting point commit together, so nothing is sent
twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, BoardEvent, BoardPlayer, User
from pbmserv.db.status import BoardStatus
from pbmserv.games import AnyEngine
from pbmserv.notifications.views import board_summary, status_line
from pbmserv.render import render
from pbmserv.service.boards import engine_of, player_of


@dataclass
class BoardNews:
    engine: AnyEngine
    board: Board
    #: (userid, notation, comment or None) of the moves since the last digest
    moves: list[tuple[str, str, str | None]] = field(default_factory=list)
    status: str = ""
    summary: str = ""


def digest(session: Session, user: User, since: int, upto: int) -> tuple[str, str] | None:
    """(subject, body) of the user's digest of events ``since`` < id <= ``upto``, or
    None when there is nothing to tell."""
    mine = select(BoardPlayer.board_id).where(BoardPlayer.user_id == user.id)
    events = session.execute(
        select(BoardEvent.board_id, BoardEvent.kind, BoardEvent.data)
        .where(BoardEvent.board_id.in_(mine), BoardEvent.id > since, BoardEvent.id <= upto)
        .order_by(BoardEvent.id)).all()
    boards: dict[int, Board] = {b.id: b for b in session.scalars(
        select(Board).where(Board.id.in_({e.board_id for e in events} | set(session.scalars(
            select(Board.id).join(BoardPlayer)
            .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE))))))}
    news: dict[int, BoardNews] = {}
    for board_id, kind, data in events:
        board = boards[board_id]
        item = news.setdefault(board_id, BoardNews(engine_of(board), board))
        if kind == "move-played":
            fields: dict[str, Any] = json.loads(data)
            mover = player_of(board, int(fields["seat"])).userid
            item.moves.append((mover, str(fields["notation"]), fields.get("comment")))
    waiting = [b for b in boards.values() if b.status is BoardStatus.ACTIVE
               and player_of(b, b.to_move).id == user.id]
    for board in waiting:
        news.setdefault(board.id, BoardNews(engine_of(board), board))
    ended = [n for n in news.values() if n.board.finished]
    to_move = [news[b.id] for b in sorted(waiting, key=lambda b: (b.game, b.number))]
    if not to_move and not ended:
        return None
    for item in [*to_move, *ended]:
        item.status = status_line(item.engine, item.board)
        item.summary = board_summary(session, item.engine, item.board)
    subject = render("subjects/digest.txt.j2", count=len(to_move)).strip()
    body = render("digest.txt.j2", user=user, to_move=to_move, ended=ended)
    return subject, body
