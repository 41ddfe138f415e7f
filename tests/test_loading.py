"""A board's load (service.boards.find_board, load_board_by_id): the board with its
players in seat order and their accounts, in one query; the session's own objects
where it holds them already; what the session holds unflushed is seen (autoflush);
and on PostgreSQL a locked load that waited for another transaction sees the board's
players and accounts as that transaction committed them.  On SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, BoardPlayer, User
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus
from pbmserv.games import AnyEngine, get_engine
from pbmserv.service.accounts import open_account
from pbmserv.service.boards import find_board, load_board_by_id
from pbmserv.service.games import GameService

_FOUND = get_engine("honeydonuts")
assert _FOUND is not None
ENGINE: AnyEngine = _FOUND


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


def counted(session: Session) -> list[str]:
    """The SELECTs the session's connection runs from now on."""
    seen: list[str] = []

    def look(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    event.listen(session.connection(), "before_cursor_execute", look)
    return seen


def loaded_in_one_query(db: Database) -> None:
    number = make_board(db)
    for lock in (False, True):
        with db.transaction() as session:
            selects = counted(session)
            board = find_board(session, ENGINE, number, lock=lock)
            assert board is not None
            assert board.status is BoardStatus.ACTIVE and board.created_at.tzinfo is not None
            assert [p.seat for p in board.players] == [0, 1]
            assert [p.user.userid for p in board.players] == ["alice", "bob"]
            assert board.players[0].time_used == 42 and board.ply == 1
            assert all(p.board is board for p in board.players)
            # one query for all of it (and, locked on PostgreSQL, one for the lock)
            locking = lock and db.is_postgres
            assert len(selects) == 1 + locking
            # the same board again is the same object
            assert find_board(session, ENGINE, number) is board
            assert load_board_by_id(session, board.id, lock=lock) is board
    with db.transaction() as session:
        assert find_board(session, ENGINE, number + 1) is None
        assert load_board_by_id(session, 10_000) is None


def held_objects_kept(db: Database) -> None:
    number = make_board(db)
    with db.transaction() as session:
        # an account the session holds, changed: kept as it is (and flushed first)
        bob = session.scalars(select(User).where(User.userid == "bob")).one()
        bob.email = "changed@example.org"
        board = find_board(session, ENGINE, number)
        assert board is not None and board.players[1].user is bob
        assert bob.email == "changed@example.org"
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


def pending_changes_seen(db: Database) -> None:
    """A board added in the same transaction and not flushed yet is found."""
    with db.transaction() as session:
        board = Board(game=ENGINE.name, number=501, position=ENGINE.serialize(ENGINE.new()))
        session.add(board)
        assert find_board(session, ENGINE, 501) is board


CHECKS = [loaded_in_one_query, held_objects_kept, no_players, pending_changes_seen]


def waiting_for_a_lock(db: Database) -> bool:
    """Whether a connection of this PostgreSQL database waits for a row lock."""
    with db.engine.connect() as conn:
        return bool(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")).scalar())


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
            # the other transaction's load waits for the lock before this one commits
            deadline = time.monotonic() + 10
            while not waiting_for_a_lock(db):
                assert time.monotonic() < deadline, "the other load never waited"
                time.sleep(0.01)
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
