"""Boards in the database: finding them, their players, their positions.

The engine's serialised position is stored with every board, so a move loads one
position, applies one move and stores the result: no replay.  Every
CHECKPOINT_EVERY-th move keeps the position after it too, so a look back replays a
few moves, whatever the game's length.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session, joinedload

from pbmserv.db.models import (
    Board,
    BoardEvent,
    Move,
    Subscription,
    Tournament,
    TournamentGame,
    User,
)
from pbmserv.games import AnyEngine, get_engine
from pbmserv.service.budget import WorkBudget
from pbmserv.service.errors import PlayerError
from pbmserv.service.events import RequestMade

FIRST_BOARD_NUMBER = 101
#: every move whose number is a multiple of this keeps the position after it (a
#: migration gave the boards played before theirs: migrations/versions/0016)
CHECKPOINT_EVERY = 8


def engine_of(board: Board) -> AnyEngine:
    engine = get_engine(board.game)
    if engine is None:
        raise LookupError(f"game {board.game!r} is not installed")
    return engine


_WHERE = {"number": (Board.game == bindparam("game"), Board.number == bindparam("number")),
          "id": (Board.id == bindparam("id"),)}
#: the board with its players and their accounts (BoardPlayer.user loads joined), in
#: one query, by number or by id
_READ = {by: select(Board).options(joinedload(Board.players)).where(*where)
         for by, where in _WHERE.items()}
#: the same board locked for the transaction (PostgreSQL), by a statement of its own
#: before the read: a statement that waits for a row lock sees the locked row as it is
#: once it has the lock, but the rows it joins as they were when it began (a move's
#: opponent's clock, an account changed by the transaction it waited for)
_LOCK = {by: select(Board.id).where(*where).with_for_update() for by, where in _WHERE.items()}


def load_board(session: Session, engine: AnyEngine, number: int, *, lock: bool = False) -> Board:
    board = find_board(session, engine, number, lock=lock)
    if board is None:
        raise PlayerError(f"there is no {engine.name} board {number}")
    return board


def find_board(session: Session, engine: AnyEngine, number: int, *,
               lock: bool = False) -> Board | None:
    """The board ``number`` of ``engine``'s game, its players and their accounts loaded;
    ``lock``: held for this transaction (on PostgreSQL; SQLite's writer holds the
    whole database)."""
    return _load(session, "number", {"game": engine.name, "number": number}, lock)


def load_board_by_id(session: Session, board_id: int, *, lock: bool = False) -> Board | None:
    return _load(session, "id", {"id": board_id}, lock)


def _load(session: Session, by: str, params: dict[str, Any], lock: bool) -> Board | None:
    if lock and session.get_bind().dialect.name == "postgresql":
        session.execute(_LOCK[by], params)
    board: Board | None = session.execute(_READ[by], params).unique().scalar()
    return board


def next_board_number(session: Session, game: str) -> int:
    highest = session.scalar(select(func.max(Board.number)).where(Board.game == game))
    return (highest or FIRST_BOARD_NUMBER - 1) + 1


def moves_of(session: Session, board: Board, first: int = 1,
             last: int | None = None) -> list[Move]:
    """Every move of the board, in order (for records; board mails read the latest),
    or those from move ``first`` to ``last``."""
    query = select(Move).where(Move.board_id == board.id, Move.ply >= first)
    if last is not None:
        query = query.where(Move.ply <= last)
    return list(session.scalars(query.order_by(Move.ply)))


def last_move(session: Session, board: Board) -> Move | None:
    return session.scalar(select(Move).where(Move.board_id == board.id, Move.ply == board.ply))


def position_of(engine: AnyEngine, board: Board) -> Any:
    return engine.load(board.position, board.position_version)


def start_position(engine: AnyEngine, board: Board) -> Any:
    return engine.new(board.option_flags)


def checkpoint(ply: int) -> bool:
    """Whether the move of number ``ply`` keeps the position after it."""
    return ply % CHECKPOINT_EVERY == 0


# the nearest position kept at or before a move, and the moves after it up to that one
_KEPT = (select(Move.ply, Move.position, Move.position_version)
         .where(Move.board_id == bindparam("board"), Move.ply <= bindparam("ply"),
                Move.position.is_not(None))
         .order_by(Move.ply.desc()).limit(1))
_NOTATIONS = (select(Move.notation)
              .where(Move.board_id == bindparam("board"), Move.ply > bindparam("after"),
                     Move.ply <= bindparam("ply"))
              .order_by(Move.ply))


def position_at(session: Session, engine: AnyEngine, board: Board, ply: int,
                budget: WorkBudget | None = None) -> Any:
    """The position after the first ``ply`` moves (for looking back, and for undo):
    replayed from the nearest position kept at or before it: at most
    CHECKPOINT_EVERY - 1 moves (a short board played before positions were kept, too
    short for their migration to replay, starts from the start).  The replay is
    charged to ``budget`` first, if one is given."""
    if not 0 <= ply <= board.ply:
        raise PlayerError(f"board {board.number} has moves 1 to {board.ply}; there is no #{ply}")
    if ply == board.ply:
        return position_of(engine, board)
    if ply == board.ply - 1 and board.previous_position is not None:
        return engine.load(board.previous_position, board.previous_version or 1)
    kept = session.execute(_KEPT, {"board": board.id, "ply": ply}).all() if ply else []
    if kept:
        after, text, version = kept[0]
        position = engine.load(text, version or 1)
    else:
        after, position = 0, start_position(engine, board)
    if ply == after:
        return position
    if budget is not None:
        budget.moves(engine.name, ply - after,
                     f"looking back at move {ply} of board {board.number}")
    # each stored move was played on a game not over, so the engine's game-over test
    # before each (as costly as the move) is skipped
    for notation in session.scalars(_NOTATIONS, {"board": board.id, "after": after,
                                                 "ply": ply}):
        position, _ = engine.play(position, notation, live=True)
    return position


_SUBSCRIBERS = "pbmserv.subscribers"


def subscribers(session: Session, board: Board) -> list[User]:
    """Who watches the board (read once per session; see forget_subscribers)."""
    if not board.watchers:
        return []
    cache: dict[int, list[User]] = session.info.setdefault(_SUBSCRIBERS, {})
    found = cache.get(board.id)
    if found is None:
        found = cache[board.id] = [s.user for s in session.scalars(
            select(Subscription).where(Subscription.board_id == board.id))]
    return found


def forget_subscribers(session: Session, board: Board) -> None:
    """The board's subscribers change: read them again next time."""
    session.info.get(_SUBSCRIBERS, {}).pop(board.id, None)


def seats_of(board: Board, user: User) -> list[int]:
    return [p.seat for p in board.players if p.user_id == user.id]


def acting_seat(board: Board, user: User) -> int:
    """The seat a player speaks for: the one to move if theirs (a player may hold both)."""
    mine = seats_of(board, user)
    return board.to_move if board.to_move in mine else mine[0]


def player_of(board: Board, seat: int) -> User:
    return next(p.user for p in board.players if p.seat == seat)


def open_request_id(session: Session, board: Board) -> int | None:
    """The id of the event that made the board's open request (a draw offer, an undo
    request); None when none is open.  Every request made has an id of its own, so an
    id names one request: once it is answered or lapses, a new one has another."""
    if board.request_kind is None:
        return None
    return session.scalar(select(func.max(BoardEvent.id)).where(
        BoardEvent.board_id == board.id, BoardEvent.kind == RequestMade.kind))


def request_event(session: Session, board: Board, event_id: int) -> dict[str, Any] | None:
    """What the request-made event ``event_id`` of ``board`` holds (its request and
    seat), None if there is no such event."""
    event = session.get(BoardEvent, event_id)
    if event is None or event.board_id != board.id or event.kind != RequestMade.kind:
        return None
    try:
        data = json.loads(event.data)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def tournament_of_board(session: Session, board: Board) -> str | None:
    """The name of the tournament whose game ``board`` is, if it is one's."""
    return session.scalar(select(Tournament.name).join(
        TournamentGame, TournamentGame.tournament_id == Tournament.id)
        .where(TournamentGame.board_id == board.id))
