"""Boards in the database: creating them, loading them, recording moves.

The engine's serialised position is stored with every board, so a move loads one
position, applies one move and stores the result: no replay of the game.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, BoardPlayer, Move, User
from pbmserv.errors import PlayerError
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome

FIRST_BOARD_NUMBER = 101


#: the largest number a player may write (board and move numbers fit any SQL integer)
MAX_NUMBER = 2**31 - 1
_DIGITS = re.compile(r"[0-9]{1,10}")


def small_number(text: str) -> int | None:
    """``text`` as a number if it is 1 to 10 ASCII digits worth at most MAX_NUMBER."""
    if _DIGITS.fullmatch(text) is None:
        return None
    value = int(text)
    return value if value <= MAX_NUMBER else None


def parse_board_ref(text: str) -> tuple[int, int | None]:
    """``101`` or ``101#7`` -> (101, None) or (101, 7)."""
    number, _, at = text.partition("#")
    board, ply = small_number(number), small_number(at) if at else None
    if board is None or (at and ply is None):
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise PlayerError(f"{shown!r} is not a board number (like 101, or 101#7 for move 7)")
    return board, ply


def load_board(session: Session, engine: AnyEngine, number: int, *, lock: bool = False) -> Board:
    query = select(Board).where(Board.game == engine.name, Board.number == number)
    if lock:
        query = query.with_for_update()
    board = session.scalar(query)
    if board is None:
        raise PlayerError(f"there is no {engine.name} board {number}")
    return board


def create_board(session: Session, engine: AnyEngine, users: Sequence[User],
                 options: Sequence[str]) -> Board:
    highest = session.scalar(select(func.max(Board.number)).where(Board.game == engine.name))
    position = engine.new(options)
    board = Board(
        game=engine.name,
        number=(highest or FIRST_BOARD_NUMBER - 1) + 1,
        options=" ".join(options),
        position=engine.serialize(position),
        to_move=engine.to_move(position),
    )
    session.add(board)
    session.flush()
    for seat, user in enumerate(users):
        session.add(BoardPlayer(board_id=board.id, seat=seat, user_id=user.id))
    session.flush()
    session.refresh(board)
    return board


def moves_of(session: Session, board: Board) -> list[Move]:
    return list(session.scalars(select(Move).where(Move.board_id == board.id).order_by(Move.ply)))


def position_of(engine: AnyEngine, board: Board) -> Any:
    return engine.deserialize(board.position)


def position_at(session: Session, engine: AnyEngine, board: Board, ply: int) -> Any:
    """The position after the first ``ply`` moves (replayed: only for looking back)."""
    if not 0 <= ply <= board.ply:
        raise PlayerError(f"board {board.number} has moves 1 to {board.ply}; there is no #{ply}")
    pos = engine.new(board.option_flags)
    return engine.play_all(pos, [m.notation for m in moves_of(session, board)[:ply]])


def seats_of(board: Board, user: User) -> list[int]:
    return [p.seat for p in board.players if p.user_id == user.id]


def acting_seat(board: Board, user: User) -> int:
    """The seat a player speaks for: the one to move if theirs (a player may hold both)."""
    mine = seats_of(board, user)
    return board.to_move if board.to_move in mine else mine[0]


def player_of(board: Board, seat: int) -> User:
    return next(p.user for p in board.players if p.seat == seat)


def record_move(session: Session, engine: AnyEngine, board: Board, position: Any,
                notation: str, comment: str) -> None:
    """Store a move already checked by the engine, and the position it leads to."""
    seat = board.to_move
    board.ply += 1
    session.add(Move(board_id=board.id, ply=board.ply, seat=seat, notation=notation,
                     comment=comment or None))
    board.position = engine.serialize(position)
    board.to_move = engine.to_move(position)
    board.updated_at = utcnow()
    board.offer_by = None  # playing on answers an open offer with no
    outcome = engine.outcome(position)
    if outcome is not None:
        finish(board, outcome)


def finish(board: Board, outcome: Outcome) -> None:
    board.finished = True
    board.offer_by = None
    board.winner = outcome.winner
    board.result = outcome.reason
    board.updated_at = utcnow()
