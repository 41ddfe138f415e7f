"""The migrations build exactly the schema the models describe."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select, text

from pbmserv.db.base import Base, utcnow
from pbmserv.db.migrate import downgrade, upgrade
from pbmserv.db.models import Board, BoardPlayer, Move
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus, RequestKind


def test_models_and_migrations_agree(db: Database) -> None:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def carry_over_old_boards(url: str) -> None:
    db = Database(url)
    upgrade(db, "0003")
    now = "2026-11-01 10:00:00+00:00" if db.engine.dialect.name == "postgresql" \
        else "2026-11-01 10:00:00.000000"
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO users (key, userid, password_hash, email, created_at)"
                          " VALUES ('a', 'a', 'x', 'a@x.org', :t), "
                          "('b', 'b', 'x', 'b@x.org', :t)"), {"t": now})
        for number, finished, offer in ((101, True, None), (102, False, 1)):
            conn.execute(text(
                "INSERT INTO boards (game, number, options, position, ply, to_move, finished,"
                " winner, result, offer_by, created_at, updated_at) VALUES ('honeydonuts', :n,"
                " '', 'p', 0, 0, :f, NULL, NULL, :o, :t, :t)"),
                {"n": number, "f": finished, "o": offer, "t": now})
        # players and a move: the rebuilt tables keep what points at them
        conn.execute(text("INSERT INTO board_players (board_id, seat, user_id) "
                          "SELECT b.id, u.id - 1, u.id FROM boards b, users u"))
        conn.execute(text("INSERT INTO moves (board_id, ply, seat, notation, comment, "
                          "created_at) SELECT id, 1, 0, 'a1-a2', '', :t FROM boards"),
                     {"t": now})
    before = utcnow()
    upgrade(db)
    with db.transaction() as s:
        boards = {b.number: b for b in s.scalars(select(Board))}
        assert {(p.board_id, p.seat) for p in s.scalars(select(BoardPlayer))} == {
            (b.id, seat) for b in boards.values() for seat in (0, 1)}
        assert s.scalar(select(func.count()).select_from(Move)) == 2
    assert boards[101].status is BoardStatus.FINISHED and boards[101].clock_due_at is None
    assert boards[102].status is BoardStatus.ACTIVE
    assert (boards[102].request_kind, boards[102].request_by) == (RequestKind.DRAW, 1)
    # no clock ran before: it starts at the upgrade, not at the last move (20 days ago)
    assert boards[102].turn_started_at >= before
    assert boards[102].clock_due_at == boards[102].turn_started_at  # looked at at once
    # and back to the oldest schema and up again, the rows kept
    downgrade(db, "0002")
    upgrade(db)
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(BoardPlayer)) == 4
        assert s.scalar(select(func.count()).select_from(Move)) == 2
        assert {b.number for b in s.scalars(select(Board))} == {101, 102}
    db.dispose()


def test_boards_of_an_older_schema_are_carried_over(tmp_path: Path) -> None:
    carry_over_old_boards(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.postgres
def test_boards_of_an_older_schema_are_carried_over_on_postgres(pg_blank_url: str) -> None:
    carry_over_old_boards(pg_blank_url)


@pytest.mark.postgres
def test_models_and_migrations_agree_on_postgres(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        test_models_and_migrations_agree(db)
    finally:
        db.dispose()


def test_a_reference_broken_before_blocks_no_migration(tmp_path: Path) -> None:
    """A dangling row from before (written with foreign keys off, by hand say) is left
    to the admin; only a reference the migration itself breaks rolls it back."""
    path = tmp_path / "old.sqlite3"
    db = Database(f"sqlite:///{path}")
    upgrade(db, "0009")
    db.dispose()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys=OFF")
    raw.execute("INSERT INTO board_players (board_id, seat, user_id, time_used) "
                "VALUES (999, 0, 999, 0)")
    raw.commit()
    raw.close()
    db = Database(f"sqlite:///{path}")
    try:
        upgrade(db)
        with db.transaction() as s:
            assert s.scalar(text("SELECT count(*) FROM board_players")) == 1
            bots = s.execute(text("SELECT key FROM users WHERE bot IS NOT NULL ORDER BY key"))
            assert [row[0] for row in bots] == ["bot1", "bot2", "bot3"]
    finally:
        db.dispose()


def test_the_bots_are_bots_again_after_an_older_downgrade(tmp_path: Path) -> None:
    """0009's first downgrade kept the bot accounts without the column; 0010 makes them
    bots again whatever that left."""
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        upgrade(db, "0009")
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE users SET bot = NULL"))
        upgrade(db)
        with db.transaction() as s:
            bots = s.execute(text("SELECT key FROM users WHERE bot IS NOT NULL ORDER BY key"))
            assert [row[0] for row in bots] == ["bot1", "bot2", "bot3"]
    finally:
        db.dispose()
