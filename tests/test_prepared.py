"""Prepared statements (pbmserv.db.prepared) give what SQLAlchemy gives: the same rows
written, the same Python values read back, the same exceptions; on SQLite and on
PostgreSQL, in the real schema."""

from __future__ import annotations

import gc
import weakref
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage, OutboxMessage, User
from pbmserv.db.prepared import _CURSOR, Prepared
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.intake.store import store_message
from pbmserv.notifications.outbox import queue_mail

_ROWS = select(OutboxMessage.id, OutboxMessage.created_at, OutboxMessage.status,
               OutboxMessage.blank_after_send, OutboxMessage.html_body,
               OutboxMessage.in_reply_to).order_by(OutboxMessage.id)
_COUNTS = (select(func.count(), func.count(OutboxMessage.in_reply_to))
           .where(OutboxMessage.to_addr == bindparam("to"),
                  OutboxMessage.created_at > bindparam("since"),
                  OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.HELD))))


def same_as_sqlalchemy(url: str, tmp_path: object) -> None:
    db = Database(url)
    settings = Settings(database_url=url)
    try:
        with db.transaction() as session:
            a = queue_mail(session, settings, to="a@example.org", subject="s", body="b",
                           in_reply_to="<x@example.org>", html="<p>ü</p>")
            b = queue_mail(session, settings, to="a@example.org", subject="t", body="c")
        # written by the prepared insert, read by SQLAlchemy: every column as given
        with db.reading() as session:
            expected = [tuple(row) for row in session.execute(_ROWS)]
            assert [row[0] for row in expected] == [a.id, b.id]
            assert expected[0][2] is OutboxStatus.PENDING and expected[0][4] == "<p>ü</p>"
            assert expected[0][1].tzinfo is not None
            # and read back by a prepared select: the same Python values (aware
            # datetimes, enum members, booleans)
            assert Prepared(_ROWS).rows(session.connection(), {}) == expected
            since = utcnow() - timedelta(hours=1)
            # a literal IN list is compiled in; the datetime parameter converted
            counts = Prepared(_COUNTS).rows(session.connection(),
                                            {"to": "a@example.org", "since": since})
            assert counts == [tuple(session.execute(
                _COUNTS, {"to": "a@example.org", "since": since}).one())] == [(2, 1)]
            assert Prepared(_COUNTS).rows(session.connection(), {
                "to": "a@example.org", "since": utcnow() + timedelta(seconds=1)}) == [(0, 0)]
            # a constant of the statement (not an IN list) is compiled in and converted
            pending = (select(func.count()).where(OutboxMessage.status == OutboxStatus.PENDING,
                                                  OutboxMessage.to_addr == bindparam("to")))
            assert Prepared(pending).rows(session.connection(), {"to": "a@example.org"}) == [
                (2,)] == [tuple(session.execute(pending, {"to": "a@example.org"}).one())]
        # an UPDATE of typed columns (an enum, an aware datetime, None), as the game
        # service writes a board: read back by SQLAlchemy as given
        sent_at = utcnow()
        mark = Prepared(update(OutboxMessage).where(OutboxMessage.id == bindparam("key"))
                        .values({name: bindparam(name)
                                 for name in ("status", "sent_at", "in_reply_to")}))
        with db.transaction() as session:
            assert mark.run(session.connection(), {"key": a.id, "status": OutboxStatus.SENT,
                                                   "sent_at": sent_at, "in_reply_to": None}) == 1
        with db.reading() as session:
            row = session.execute(select(OutboxMessage.status, OutboxMessage.sent_at,
                                         OutboxMessage.in_reply_to)
                                  .where(OutboxMessage.id == a.id)).one()
            assert tuple(row) == (OutboxStatus.SENT, sent_at, None)
        # a text statement with typed parameters, RETURNING; a repeat returns no row
        raw = b"From: a@example.org\r\nMessage-ID: <m@example.org>\r\n\r\nhelp\r\n"
        first = store_message(db, raw, "a@example.org")
        assert first is not None and store_message(db, raw, "a@example.org") is None
        with db.reading() as session:
            stored = session.get(InboundMessage, first)
            assert stored is not None and stored.raw == raw
            assert stored.status is InboundStatus.NEW
        # the driver's errors come as SQLAlchemy's, without the parameters
        duplicate = Prepared(insert(User).values(
            {name: bindparam(name) for name in ("key", "userid", "password_hash", "email",
                                                "created_at", "credential_changes")}))
        values = {"key": "dup", "userid": "Dup", "password_hash": "x",
                  "email": "secret-address@example.org", "created_at": utcnow(),
                  "credential_changes": 0}
        with pytest.raises(IntegrityError) as caught, db.transaction() as session:
            duplicate.run(session.connection(), values)
            duplicate.run(session.connection(), values)
        assert "secret-address" not in str(caught.value)
        # savepoints run on the driver (db.prepared.driver_savepoints): a command's
        # savepoint rolled back after a failed statement undoes its writes and leaves
        # the transaction usable (on PostgreSQL too, where the failure aborted it)
        def user(key: str) -> dict[str, object]:
            return {**values, "key": key, "email": f"{key}@example.org"}

        with db.transaction() as session:
            duplicate.run(session.connection(), user("kept"))
            with pytest.raises(IntegrityError), session.begin_nested():
                duplicate.run(session.connection(), user("undone"))
                duplicate.run(session.connection(), user("undone"))
            with session.begin_nested():
                duplicate.run(session.connection(), user("released"))
        with db.reading() as session:
            keys = set(session.scalars(select(User.key)))
            assert keys & {"dup", "kept", "undone", "released"} == {"kept", "released"}
    finally:
        db.dispose()


def test_prepared_statements_on_sqlite(db_url: str, tmp_path: object) -> None:
    same_as_sqlalchemy(db_url, tmp_path)


@pytest.mark.postgres
def test_prepared_statements_on_postgres(pg_url: str, tmp_path: object) -> None:
    same_as_sqlalchemy(pg_url, tmp_path)


def cursor_kept(url: str) -> None:
    db = Database(url)
    count = Prepared(select(func.count(User.id)).where(User.key == bindparam("key")))
    try:
        with db.transaction() as session:
            pooled = session.connection().connection
            assert count.rows(session.connection(), {"key": "x"}) == [(0,)]
            cursor = weakref.ref(pooled.info[_CURSOR][1])
            # the next statement on the connection runs on the same driver cursor
            assert count.rows(session.connection(), {"key": "y"}) == [(0,)]
            assert pooled.info[_CURSOR][1] is cursor()
        # back in the pool, the connection keeps no cursor (nor its last statement)
        gc.collect()
        assert cursor() is None
        # a statement the database refuses: the next one gets a cursor of its own
        broken = Prepared(text("SELECT no_such_column FROM users"))
        with db.transaction() as session:
            info = session.connection().connection.info
            assert count.rows(session.connection(), {"key": "x"}) == [(0,)]
            refused = info[_CURSOR][1]
            with pytest.raises(DBAPIError), session.begin_nested():
                broken.rows(session.connection(), {})
            assert count.rows(session.connection(), {"key": "x"}) == [(0,)]
            assert info[_CURSOR][1] is not refused
        # a driver connection replaced (the database went away): its cursor too
        with db.engine.connect() as connection:
            assert count.rows(connection, {"key": "x"}) == [(0,)]
            connection.invalidate()
        with db.engine.connect() as connection:
            assert count.rows(connection, {"key": "x"}) == [(0,)]
            kept = connection.connection.info[_CURSOR]
            assert kept[0] is connection.connection.driver_connection
    finally:
        db.dispose()


def test_one_cursor_a_connection_on_sqlite(db_url: str) -> None:
    cursor_kept(db_url)


@pytest.mark.postgres
def test_one_cursor_a_connection_on_postgres(pg_url: str) -> None:
    cursor_kept(pg_url)


def test_what_cannot_be_prepared_is_refused_when_compiled(db_url: str) -> None:
    db = Database(db_url)
    try:
        with db.reading() as session:
            connection = session.connection()
            runtime_list = Prepared(select(User.id).where(
                User.id.in_(bindparam("ids", expanding=True))))
            with pytest.raises(ValueError, match="expanding IN list"):
                runtime_list.rows(connection, {"ids": [1]})
            # created_at has a default made at execution time: it must be given
            defaulted = Prepared(insert(OutboxMessage).values(to_addr=bindparam("to")))
            with pytest.raises(ValueError, match="default computed at execution time"):
                defaulted.run(connection, {"to": "a@example.org"})
            assert Prepared(text("SELECT 1")).rows(connection, {}) == [(1,)]
    finally:
        db.dispose()


def rows_returned_by_run(url: str) -> None:
    db = Database(url)
    add = Prepared(insert(User).values(
        {name: bindparam(name) for name in ("key", "userid", "password_hash", "email",
                                            "created_at", "credential_changes")}
    ).returning(User.id))
    values = {"key": "returned", "userid": "Returned", "password_hash": "x",
              "email": "returned@example.org", "created_at": utcnow(), "credential_changes": 0}
    try:
        # run() reads and drops what the statement returns: the insert is done and
        # counted, and the transaction commits
        with db.transaction() as session:
            assert add.run(session.connection(), values) == 1
        with db.transaction() as session:
            assert session.scalar(select(func.count()).where(User.key == "returned")) == 1
    finally:
        db.dispose()


def test_run_reads_the_rows_a_statement_returns_on_sqlite(db_url: str) -> None:
    rows_returned_by_run(db_url)


@pytest.mark.postgres
def test_run_reads_the_rows_a_statement_returns_on_postgres(pg_url: str) -> None:
    rows_returned_by_run(pg_url)
