"""The digest: one mail listing every board where it is the player's move, with the
moves and comments since the last digest, and the games of theirs that ended.

It is built from the recorded events (board_events), from just after the last event
the previous digest covered up to the newest one now: so a restart loses nothing,
and the digest's mail and its new starting point commit together, so nothing is sent
twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, BoardEvent, BoardPlayer, User
from pbmserv.db.status import BoardStatus
from pbmserv.games import AnyEngine
from pbmserv.i18n import speaking
from pbmserv.notifications.lists import DIGEST, list_fields
from pbmserv.notifications.notes import comments_of, notes_of
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.views import board_summary, status_line
from pbmserv.reads.turns import Turn, turns_of
from pbmserv.render import render
from pbmserv.service.boards import engine_of, player_of
from pbmserv.service.events import (
    BoardCreated,
    ChatSent,
    Event,
    GameFinished,
    MovePlayed,
    MoveTakenBack,
    NagDue,
    event_from_row,
)
from pbmserv.service.mail_prefs import choices_of


@dataclass
class BoardNews:
    engine: AnyEngine
    board: Board
    #: what happened since the last digest, in order: (sentence, (userid, comment) or
    #: None): moves, offers and requests and their answers, moves taken back, queues
    #: cleared, the end of the game
    lines: list[tuple[str, tuple[str, str] | None]] = field(default_factory=list)
    status: str = ""
    summary: str = ""
    #: something happened that the reader did not do themselves
    news: bool = False
    #: the id of the user who played the last move seen
    last_mover: int | None = None
    #: the board waits for the reader's move: since when, until when (reads.turns)
    turn: Turn | None = None


def _tell(item: BoardNews, user: User, events: list[Event]) -> None:
    """Add the lines of ``events`` (one act: a move, or the moves of one undo)."""
    board = item.board
    comments = comments_of(board, events)
    first = events[0]
    if isinstance(first, MovePlayed):
        mover = player_of(board, first.seat)
        text = f"{mover.userid} played {first.notation}" + (
            " (a queued move)" if first.automatic else "")
        item.last_mover = mover.id
        item.news |= mover.id != user.id
    else:
        notes = [n for n in notes_of(board, events) if n.only in (None, user.id)]
        text = " ".join(n.text(user) for n in notes)
        item.news |= any(n.actor_id != user.id for n in notes)
        if isinstance(first, GameFinished):
            # an end by the rules follows a move; a loss on time follows none
            actor = (player_of(board, first.by).id if first.by is not None
                     else item.last_mover)
            item.news |= actor != user.id
            text = ""  # the status line says how it ended
    if text or comments:
        item.lines.append((text, comments[0] if comments else None))


def digest(session: Session, user: User, since: int, upto: int,
           name: str = "pbmserv", now: datetime | None = None) -> tuple[str, str] | None:
    """(subject, body) of the user's digest of events ``since`` < id <= ``upto``, or
    None when there is nothing to tell: no board waits for their move and nothing
    they did not do themselves happened on the boards they play."""
    mine = select(BoardPlayer.board_id).where(BoardPlayer.user_id == user.id)
    rows = session.execute(
        select(BoardEvent.board_id, BoardEvent.kind, BoardEvent.data)
        .where(BoardEvent.board_id.in_(mine), BoardEvent.id > since, BoardEvent.id <= upto)
        .order_by(BoardEvent.id)).all()
    boards: dict[int, Board] = {b.id: b for b in session.scalars(
        select(Board).where(Board.id.in_({r.board_id for r in rows} | set(session.scalars(
            select(Board.id).join(BoardPlayer)
            .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE))))))}
    news: dict[int, BoardNews] = {}
    group: list[Event] = []
    for board_id, kind, data in rows:
        event = event_from_row(board_id, kind, data)
        if event is None or isinstance(event, BoardCreated | NagDue | ChatSent):
            continue
        news.setdefault(board_id, BoardNews(engine_of(boards[board_id]), boards[board_id]))
        if group and (group[0].board_id != board_id or not (
                isinstance(event, MoveTakenBack) and isinstance(group[-1], MoveTakenBack))):
            _tell(news[group[0].board_id or 0], user, group)
            group = []
        group.append(event)
    if group:
        _tell(news[group[0].board_id or 0], user, group)
    # the boards waiting for the player's move, the longest waiting first: the list
    # 'turns' mails and the web player page shows
    waiting = turns_of(session, user, now or utcnow()).turns
    for turn in waiting:
        item = news.setdefault(turn.board.id, BoardNews(turn.engine, turn.board))
        item.turn = turn
    ended = [n for n in news.values() if n.board.finished and n.news]
    to_move = [news[t.board.id] for t in waiting]
    if not to_move and not ended:
        return None
    for item in [*to_move, *ended]:
        item.status = status_line(item.engine, item.board)
        item.summary = board_summary(session, item.engine, item.board)
    subject = render("subjects/digest.txt.j2", server=name, count=len(to_move),
                     ended=len(ended)).strip()
    body = render("digest.txt.j2", user=user, to_move=to_move, ended=ended)
    return subject, body


def mail_digest(session: Session, settings: Settings, user: User, since: int,
                upto: int, now: datetime | None = None) -> bool:
    """Queue the user's digest of events ``since`` < id <= ``upto`` (a list mail, with
    its unsubscribe link); False when there was nothing to tell (see ``digest``)."""
    chosen = choices_of(session, [user]).get(user.id)
    with speaking(chosen.language if chosen is not None else None):  # in their language
        mail = digest(session, user, since, upto, settings.server_name, now)
    if mail is None:
        return False
    queue_mail(session, settings, to=user.email, subject=mail[0], body=mail[1],
               listed=list_fields(session, settings, DIGEST, user))
    return True
