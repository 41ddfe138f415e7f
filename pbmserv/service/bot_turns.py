"""Turns that the server's bots owe: a move on a board where a bot is to move, or an
answer to an offer or undo request made to a bot.

Choosing the move takes the bot seconds, so it happens outside any transaction
(pbmserv.bot_loop); the move is then played here on the board only if it still
stands as it did (the same move number, the bot still to move or to answer), so a
restart never loses a bot's move and never plays it twice.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from pbmserv.db.models import Board, BoardPlayer, User
from pbmserv.db.status import BoardStatus, RequestKind
from pbmserv.service.boards import load_board_by_id, player_of
from pbmserv.service.games import GameService


@dataclass(frozen=True)
class BotTurn:
    board_id: int
    game: str
    ply: int
    seat: int
    bot: str
    position: str
    position_version: int
    #: the request the bot must answer, or None: the bot is to move
    request: RequestKind | None


def due_turns(session: Session, limit: int = 20,
              skip: Collection[int] = ()) -> list[BotTurn]:
    """Boards waiting for a bot, the longest waiting first; none of the boards ``skip``
    (those whose turn failed lately).  A bot plays only a board that its person
    started (the challenge came from their address) or took up: a stranger's
    challenge of a bot in someone's name costs no thought until they want it."""
    person, account = aliased(BoardPlayer), aliased(User)
    wanted = (select(person.board_id).join(account, account.id == person.user_id)
              .where(person.board_id == Board.id, account.bot.is_(None),
                     or_(person.accepted_at.is_not(None),
                         func.lower(account.email) == Board.challenged_by))
              .exists())
    query = (
        select(Board.id, Board.game, Board.ply, BoardPlayer.seat, User.bot, Board.position,
               Board.position_version, Board.request_kind, Board.request_by, Board.to_move)
        .join(BoardPlayer, BoardPlayer.board_id == Board.id)
        .join(User, User.id == BoardPlayer.user_id)
        .where(User.bot.is_not(None), User.closed_at.is_(None),
               Board.status == BoardStatus.ACTIVE, wanted,
               or_(BoardPlayer.seat == Board.to_move,
                   and_(Board.request_kind.is_not(None), Board.request_by != BoardPlayer.seat)))
        .order_by(Board.updated_at).limit(limit)
    )
    if skip:
        query = query.where(Board.id.not_in(list(skip)))
    rows = session.execute(query).all()
    turns = []
    for row in rows:
        asked = row.request_kind is not None and row.request_by != row.seat
        turns.append(BotTurn(row.id, row.game, row.ply, row.seat, str(row.bot), row.position,
                             row.position_version, row.request_kind if asked else None))
    return turns


def _still_due(board: Board | None, turn: BotTurn) -> bool:
    if board is None or board.finished or board.ply != turn.ply:
        return False
    if turn.request is not None:
        return board.request_kind is turn.request and board.request_by != turn.seat
    # a request to the bot is answered before it moves (see due_turns)
    return board.to_move == turn.seat and (board.request_kind is None
                                           or board.request_by == turn.seat)


def play_turn(service: GameService, turn: BotTurn, *, move: str | None = None,
              accept: bool | None = None) -> bool:
    """Play the bot's ``move``, or give its answer (``accept``); False if the board has
    moved on meanwhile (someone resigned, the bot's turn was played already)."""
    board = load_board_by_id(service.session, turn.board_id, lock=True)
    if board is None or not _still_due(board, turn):
        return False
    bot = player_of(board, turn.seat)
    if turn.request is not None:
        assert accept is not None
        service.answer(board, bot, accept)
    else:
        assert move is not None
        service.play(board, bot, move, expected_ply=turn.ply + 1)
    return True
