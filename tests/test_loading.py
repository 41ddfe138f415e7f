"""A board read on the driver (pbmserv.db.loading, service.boards.find_board) is what
the ORM's own load gives: the same values in every column of the board, its players
and their accounts; objects the session tracks, flushes and expires as its own; the
session's object where it holds one already.  On SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import inspect, select, text, update
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, BoardPlayer, User
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus
from pbmserv.games import AnyEngine, get_engine
from pbmserv.service.accounts import open_account
from pbmserv.service.boards import _BOARD, find_board, load_board_by_id
from pbmserv.service.games import GameService

_FOUND = get_engine("honeydonuts")
assert _FOUND is not None
ENGINE: AnyEngine = _FOUND


def columns(obj: Any) -> dict[str, Any]:
    mapper = inspect(type(obj))
    return {attr.key: getattr(obj, attr.key) for attr in mapper.column_attrs}


def make_board(db: Database) -> int:
    """Board 101 between alice and bob, a move played, a player's time used."""
    with db.transaction() as session:
        alice = open_account(session, "alice", "pw-alice-1", "alice@example.org")
        bob = open_account(session, "bob", "pw-bob-1", "bob@example.org")
        alice.confirmed_at = utcnow()
        service = GameService(session)
        board = service.challenge(ENGINE, [alice, bob], [])
        service.play(board, alice, ENGINE.format_move(
            ENGINE.new(), ENGINE.legal_moves(ENGINE.new())[0]))
        board.players[0].time_used = 42
        return board.number


def orm_load(session: Session, number: int) -> Board:
    board = session.execute(_BOARD, {"game": ENGINE.name, "number": number}).unique().scalar()
    assert board is not None
    return board


def same_as_the_orm(db: Database) -> None:
    number = make_board(db)
    with db.reading() as session:
        expected = orm_load(session, number)
        want = (columns(expected), [columns(p) for p in expected.players],
                [columns(p.user) for p in expected.players])
    for lock in (False, True):
        with db.transaction() as session:
            board = find_board(session, ENGINE, number, lock=lock)
            assert board is not None
            got = (columns(board), [columns(p) for p in board.players],
                   [columns(p.user) for p in board.players])
            assert got == want
            # the Python values the ORM gives: aware datetimes, enum members
            assert board.status is BoardStatus.ACTIVE and board.created_at.tzinfo is not None
            assert [p.seat for p in board.players] == [0, 1]
            assert all(p.board is board for p in board.players)
            # persistent objects of this session, nothing pending
            for obj in (board, *board.players, *(p.user for p in board.players)):
                assert inspect(obj).persistent and inspect(obj).session is session
            assert not session.dirty and not session.new
            # the same board again is the same object
            assert find_board(session, ENGINE, number) is board
            assert load_board_by_id(session, board.id, lock=lock) is board
    with db.transaction() as session:
        assert find_board(session, ENGINE, number + 1) is None
        assert load_board_by_id(session, 10_000) is None


def tracked_and_flushed(db: Database) -> None:
    number = make_board(db)
    with db.transaction() as session:
        board = find_board(session, ENGINE, number, lock=True)
        assert board is not None
        board.nags_sent = 5
        board.players[1].time_used = 77
        board.players[1].user.email = "robert@example.org"
        assert set(session.dirty) == {board, board.players[1], board.players[1].user}
    with db.reading() as session:
        board = orm_load(session, number)
        assert (board.nags_sent, board.players[1].time_used,
                board.players[1].user.email) == (5, 77, "robert@example.org")
    # a change rolled back: the objects are expired and read again, as the ORM's are
    with db.transaction() as session:
        board = find_board(session, ENGINE, number)
        assert board is not None
        nested = session.begin_nested()
        board.nags_sent = 9
        session.flush()
        nested.rollback()
        assert board.nags_sent == 5
        # a change made behind the session's back is read once the object expires
        session.execute(update(Board).where(Board.id == board.id).values(nags_sent=6)
                        .execution_options(synchronize_session=False))
        assert board.nags_sent == 5
        session.expire(board)
        assert board.nags_sent == 6


def held_objects_kept(db: Database) -> None:
    number = make_board(db)
    with db.transaction() as session:
        # an account the session holds, changed and not flushed: kept as it is
        bob = session.scalars(select(User).where(User.userid == "bob")).one()
        bob.email = "changed@example.org"
        board = find_board(session, ENGINE, number)
        assert board is not None and board.players[1].user is bob
        assert bob.email == "changed@example.org"
    with db.transaction() as session:
        # a board the session holds, changed: the session's object, not the row
        held = orm_load(session, number)
        held.nags_sent = 3
        assert find_board(session, ENGINE, number) is held
        assert held.nags_sent == 3
    with db.transaction() as session:
        # a player the session holds (not the board): the same objects
        seat = session.scalars(select(BoardPlayer).where(BoardPlayer.seat == 1)).one()
        board = find_board(session, ENGINE, number)
        assert board is not None and board.players[1] is seat and seat.board is board


def no_players(db: Database) -> None:
    with db.transaction() as session:
        board = Board(game=ENGINE.name, number=500, position=ENGINE.serialize(ENGINE.new()))
        session.add(board)
    with db.transaction() as session:
        found = find_board(session, ENGINE, 500)
        assert found is not None and found.players == [] and found.number == 500


def pending_changes_flushed_first(db: Database) -> None:
    """Where the ORM's query would flush what the session holds unflushed first
    (autoflush), so does the load: a board added in the same transaction is found."""
    with db.transaction() as session:
        board = Board(game=ENGINE.name, number=501, position=ENGINE.serialize(ENGINE.new()))
        session.add(board)
        assert find_board(session, ENGINE, 501) is board
    with db.transaction() as session, session.no_autoflush:
        session.add(Board(game=ENGINE.name, number=502,
                          position=ENGINE.serialize(ENGINE.new())))
        assert find_board(session, ENGINE, 502) is None  # as the ORM's query gives
        assert session.execute(_BOARD, {"game": ENGINE.name, "number": 502}
                               ).unique().scalar() is None


CHECKS = [same_as_the_orm, tracked_and_flushed, held_objects_kept, no_players,
          pending_changes_flushed_first]


def waiting_for_a_lock(db: Database) -> bool:
    """Whether a transaction of this PostgreSQL database waits for a lock another holds
    (the other databases of the server are other tests')."""
    with db.reading() as session:
        return bool(session.scalar(text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'")))


@pytest.mark.postgres
@pytest.mark.parametrize("by_id", [False, True])
def test_a_load_that_waited_for_the_lock_sees_the_players_as_committed(
        pg_url: str, by_id: bool) -> None:
    """On PostgreSQL a locked load waits for a transaction that holds the board, then
    sees its players and their accounts as that transaction left them: a statement
    that waits for a row lock sees the locked row anew but rows it joined as they
    were when it began, so the board is locked by a statement of its own first."""
    db = Database(pg_url)
    try:
        number = make_board(db)
        locked = threading.Event()
        seen: list[tuple[int, str]] = []

        def other() -> None:
            locked.wait(10)
            with db.transaction() as session:
                board = (load_board_by_id(session, board_id, lock=True) if by_id
                         else find_board(session, ENGINE, number, lock=True))
                assert board is not None
                seen.append((board.players[1].time_used, board.players[1].user.email))

        with db.transaction() as session:
            board = find_board(session, ENGINE, number, lock=True)
            assert board is not None
            board_id = board.id
            board.players[1].time_used = 99
            board.players[1].user.email = "new@example.org"
            session.flush()
            waiter = threading.Thread(target=other)
            waiter.start()
            locked.set()
            deadline = time.monotonic() + 30
            while not waiting_for_a_lock(db):  # PostgreSQL says when the other load waits
                assert not seen, "the other load did not wait for the lock"
                assert time.monotonic() < deadline, "the other load never waited for the lock"
                time.sleep(0.02)
            assert not seen
        waiter.join(10)
        assert seen == [(99, "new@example.org")]
    finally:
        db.dispose()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_on_sqlite(check: Any, db: Database) -> None:
    check(db)


@pytest.mark.postgres
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_on_postgres(check: Any, pg_url: str) -> None:
    db = Database(pg_url)
    try:
        check(db)
    finally:
        db.dispose()
