"""One engine and session factory per database URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

#: execution option of the engine that only reads (see _sqlite_begin)
READ_ONLY = "pbmserv_read_only"


def make_engine(url: str) -> Engine:
    # SQL errors are logged without their parameters: they may hold a raw mail
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30}, hide_parameters=True)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True, hide_parameters=True)


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy decide when transactions begin (see _sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # A writer takes the write lock up front: two writers queue instead of deadlocking.
    # A reader takes none (WAL lets it read while another connection writes).
    if conn.get_execution_options().get(READ_ONLY):
        conn.exec_driver_sql("BEGIN DEFERRED")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.read_sessions = sessionmaker(self.engine.execution_options(**{READ_ONLY: True}),
                                          expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session whose work commits on success and rolls back on any error."""
        session = self.sessions()
        try:
            with session.begin():
                yield session
        finally:
            session.close()

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A session for reading only: on SQLite it never holds the write lock."""
        session = self.read_sessions()
        try:
            yield session
        finally:
            session.close()  # rolls back: nothing is written

    def dispose(self) -> None:
        self.engine.dispose()
