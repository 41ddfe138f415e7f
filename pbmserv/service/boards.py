"""Boards in the database: finding them, their players, their positions.

The engine's serialised position is stored with every board, so a move loads one
position, applies one move and stores the result: no replay.  Every
CHECKPOINT_EVERY-th move keeps the position after it too, so a look back replays a
few moves, whatever the game's length.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, func, outerjoin, select
from sqlalchemy.orm import Session, joinedload
from sqlalchemy.orm.attributes import set_committed_value

from pbmserv.db.loading import Entity
from pbmserv.db.models import Board, BoardEvent, BoardPlayer, Move, Subscription, User
from pbmserv.db.prepared import Prepared
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


# the board with its players and their accounts, in one query (the ORM's load, for a
# board the session holds already)
_BOARD = (select(Board).options(joinedload(Board.players))
          .where(Board.game == bindparam("game"), Board.number == bindparam("number")))
_BOARD_BY_ID = select(Board).options(joinedload(Board.players)).where(Board.id == bindparam("id"))

# the same rows read on the driver, made into the session's objects (pbmserv.db.loading):
# a move's board costs a fifth of the ORM's load
_B, _P, _U = Entity(Board), Entity(BoardPlayer), Entity(User)
_ROWS = (select(*_B.columns, *_P.columns, *_U.columns)
         .select_from(outerjoin(_B.table, _P.table, BoardPlayer.board_id == Board.id)
                      .outerjoin(_U.table, BoardPlayer.user_id == User.id))
         .order_by(BoardPlayer.seat))
_BY_NUMBER = (Board.game == bindparam("game"), Board.number == bindparam("number"))
_BY_ID = (Board.id == bindparam("id"),)
#: by id or not: the board, its players and their accounts
_READ = {by_id: Prepared(_ROWS.where(*where)) for by_id, where in ((False, _BY_NUMBER),
                                                                    (True, _BY_ID))}
#: by id or not: the board locked for the transaction (PostgreSQL), by a statement of its
#: own before the read: a statement that waits for a row lock sees the locked row as
#: it is once it has the lock, but the rows it joins as they were when it began (a
#: move's opponent's clock, an account changed by the transaction it waited for)
_LOCK = {by_id: Prepared(select(Board.id).where(*where).with_for_update())
         for by_id, where in ((False, _BY_NUMBER), (True, _BY_ID))}


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
    params = {"game": engine.name, "number": number}
    rows = _rows(session, False, lock, params)
    if not _held(session, rows):
        return _made(session, rows)
    board: Board | None = session.execute(_BOARD, params).unique().scalar()
    return board


def load_board_by_id(session: Session, board_id: int, *, lock: bool = False) -> Board | None:
    params = {"id": board_id}
    rows = _rows(session, True, lock, params)
    if not _held(session, rows):
        return _made(session, rows)
    board: Board | None = session.execute(_BOARD_BY_ID, params).unique().scalar()
    return board


_BOARD_END, _PLAYER_END = _B.width, _B.width + _P.width


def _rows(session: Session, by_id: bool, lock: bool,
          params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of the board (``_READ``), locked first if asked, after what the session
    holds unflushed is flushed where the ORM's query would flush it (autoflush: not
    while mail is processed)."""
    if session.autoflush:
        session.flush()
    connection = session.connection()
    if lock and connection.dialect.name == "postgresql":
        _LOCK[by_id].rows(connection, params)
    return _READ[by_id].rows(connection, params)


def _seated(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows of players (a board with none has one row, its player columns NULL)."""
    return [row for row in rows if row[_BOARD_END] is not None]


def _held(session: Session, rows: list[tuple[Any, ...]]) -> bool:
    """Whether the session holds the board of ``rows`` or one of its players already:
    then the ORM loads it, as it does any object it holds."""
    return bool(rows) and (_B.held(session, rows[0][:_BOARD_END]) is not None or any(
        _P.held(session, row[_BOARD_END:_PLAYER_END]) is not None for row in _seated(rows)))


def _made(session: Session, rows: list[tuple[Any, ...]]) -> Board | None:
    """The board of ``rows`` (one a player, in seat order) with its players and their
    accounts, as new objects of ``session`` (but for accounts it holds); None if there
    are no rows."""
    if not rows:
        return None
    board = _B.make(session, rows[0][:_BOARD_END])
    players = []
    for row in _seated(rows):
        account = row[_PLAYER_END:]
        user = _U.held(session, account) or _U.make(session, account)
        players.append(_P.make(session, row[_BOARD_END:_PLAYER_END], board=board, user=user))
    set_committed_value(board, "players", players)
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
_KEPT = Prepared(select(Move.ply, Move.position, Move.position_version)
                 .where(Move.board_id == bindparam("board"), Move.ply <= bindparam("ply"),
                        Move.position.is_not(None))
                 .order_by(Move.ply.desc()).limit(1))
_NOTATIONS = Prepared(select(Move.notation)
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
    connection = session.connection()
    kept = _KEPT.rows(connection, {"board": board.id, "ply": ply}) if ply else []
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
    for (notation,) in _NOTATIONS.rows(connection, {"board": board.id, "after": after,
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
