"""One engine and session factory per database URL.

On SQLite only one connection may write at a time.  Within a process, writers take
turns at a gate (``WriteGate``) before they take SQLite's lock, so they never sleep
in SQLite's busy handler, and a writer that holds a sender's acknowledgement up
(the intake) goes before the others.  Across processes SQLite's busy timeout still
makes writers queue.  PostgreSQL needs no gate: rows are locked, not the database.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from pbmserv import wakeups

#: execution option of the engine that only reads (see _sqlite_begin)
READ_ONLY = "pbmserv_read_only"
#: execution option of the engine whose commits need not reach the disk at once
LAZY = "pbmserv_lazy_commit"
#: execution option of the engine whose writer someone waits for (see _sqlite_begin)
URGENT = "pbmserv_urgent"
#: how often an urgent writer asks again for SQLite's lock held by another process
URGENT_RETRY = 0.0005
BUSY_TIMEOUT = 30.0
#: the longest a writer waits for an urgent writer of another process to go first
GIVE_WAY = 0.05
#: the key of a pooled SQLite connection's info that holds its ``synchronous`` setting
_SYNCHRONOUS = "pbmserv_synchronous"


class UrgentFlag:
    """Whether an urgent writer of another process waits for SQLite's lock: a shared
    lock (``flock``) on a small file beside the database, held by each process whose
    urgent writer waits.  Any number hold it at once, each its own, and the kernel lets
    a process's go when it ends: one writer never lowers another's flag, and a writer
    that died leaves none raised.  Looking is a try for the exclusive lock on a new
    open of the file, let go at once (four system calls); a lock held through another
    open of the file, in this process or another, makes it fail.  No descriptor is
    kept but while this process's writer waits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._hold: int | None = None
        self._waiting = 0
        self._count = threading.Lock()

    def set(self, waiting: bool) -> None:
        """Raise (or lower) this process's flag; raised by several threads of the
        process at once, it falls when the last of them lowers it."""
        with self._count:
            before = self._waiting
            self._waiting = max(before + (1 if waiting else -1), 0)
            if before == 0 and self._waiting == 1:
                try:
                    self._hold = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:  # a read-only place: no flag, writers only queue
                    return
                fcntl.flock(self._hold, fcntl.LOCK_SH)
            elif before == 1 and self._waiting == 0 and self._hold is not None:
                os.close(self._hold)  # the lock goes with it
                self._hold = None

    @property
    def raised(self) -> bool:
        try:
            look = os.open(self.path, os.O_RDONLY)
        except OSError:  # no file: no writer ever waited here
            return False
        try:
            fcntl.flock(look, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(look)  # and the lock, if it was had, with it
        return False


#: the flag of each SQLite database file this process opened, by its path
_URGENT_FLAGS: dict[str, UrgentFlag] = {}


def make_engine(url: str) -> Engine:
    # SQL errors are logged without their parameters: they may hold a raw mail
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        flag = None
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            flag = UrgentFlag(Path(path + "-urgent"))
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT},
                               hide_parameters=True)
        if flag is not None:
            _URGENT_FLAGS[path] = flag
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    engine = create_engine(url, pool_pre_ping=True, hide_parameters=True)
    if engine.dialect.name == "postgresql":
        event.listen(engine, "begin", _postgres_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, record: Any) -> None:
    # Let SQLAlchemy decide when transactions begin (see _sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    record.info[_SYNCHRONOUS] = "FULL"
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # A writer takes the write lock up front: two writers queue instead of deadlocking.
    # A reader takes none (WAL lets it read while another connection writes).
    options = conn.get_execution_options()
    if options.get(READ_ONLY):
        conn.exec_driver_sql("BEGIN DEFERRED")
        return
    # the setting is the connection's: said again only when it changes (a statement
    # for every transaction costs as much as one of the transaction's own)
    synchronous = "NORMAL" if options.get(LAZY) else "FULL"
    info = conn.connection.info
    if info.get(_SYNCHRONOUS) != synchronous:
        conn.exec_driver_sql("PRAGMA synchronous=" + synchronous)
        info[_SYNCHRONOUS] = synchronous
    flag = _URGENT_FLAGS.get(conn.engine.url.database or "")
    if not options.get(URGENT):
        if flag is not None and flag.raised:
            _give_way(flag)
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        return
    # SQLite's own busy handler sleeps ever longer (up to 100 ms a time) while another
    # process writes; an urgent writer asks again every half millisecond instead
    # (and raises the flag that tells the other processes' long writers to finish up)
    # The tries go to the driver itself: a refusal wrapped by SQLAlchemy costs ten times
    # the CPU, and there may be dozens while a worker process finishes its batch.
    driver = conn.connection.driver_connection
    driver.execute("PRAGMA busy_timeout=0")
    raised = False
    try:
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                driver.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                if flag is not None and not raised:
                    flag.set(True)
                    raised = True
                time.sleep(URGENT_RETRY)
    finally:
        if flag is not None and raised:
            flag.set(False)
        driver.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")


def _give_way(flag: UrgentFlag) -> None:
    """Wait while an urgent writer of another process waits for the lock (at most
    ``GIVE_WAY`` seconds: a flag left raised by a writer that died is not waited on
    for ever).  SQLite's lock is no queue: a writer that has just committed and
    begins again at once would win it over a writer that asks every half
    millisecond, again and again."""
    deadline = time.monotonic() + GIVE_WAY
    while flag.raised and time.monotonic() < deadline:
        time.sleep(URGENT_RETRY)


def _postgres_begin(conn: Any) -> None:
    if conn.get_execution_options().get(LAZY):
        conn.exec_driver_sql("SET LOCAL synchronous_commit = off")


class WriteGate:
    """One writer at a time in this process; urgent writers go first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: int | None = None
        self._urgent = 0

    @contextmanager
    def hold(self, urgent: bool = False) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._holder == me:
                raise RuntimeError("a write transaction inside another one in the same thread")
            if urgent:
                self._urgent += 1
            try:
                while self._holder is not None or (not urgent and self._urgent):
                    self._cond.wait()
            finally:
                if urgent:
                    self._urgent -= 1
            self._holder = me
        try:
            yield
        finally:
            with self._cond:
                self._holder = None
                self._cond.notify_all()

    @property
    def urgent_waiting(self) -> bool:
        """Whether an urgent writer waits: a long writer should finish up soon."""
        return self._urgent > 0


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.read_sessions = sessionmaker(self.engine.execution_options(**{READ_ONLY: True}),
                                          expire_on_commit=False)
        self.lazy_sessions = sessionmaker(self.engine.execution_options(**{LAZY: True}),
                                          expire_on_commit=False)
        self.urgent_sessions = sessionmaker(self.engine.execution_options(**{URGENT: True}),
                                            expire_on_commit=False)
        self.gate = WriteGate() if self.is_sqlite else None

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @property
    def urgent_waiting(self) -> bool:
        """Whether a writer someone waits for (the intake) waits for this process's
        writer, or, on SQLite, for another process's."""
        if self.gate is None:
            return False
        flag = _URGENT_FLAGS.get(self.engine.url.database or "")
        return self.gate.urgent_waiting or (flag is not None and flag.raised)

    @contextmanager
    def transaction(self, *, urgent: bool = False, lazy: bool = False) -> Iterator[Session]:
        """A session whose work commits on success and rolls back on any error.

        ``urgent``: someone waits for this write (an SMTP acknowledgement); on SQLite
        it goes before the other writers of this process.

        ``lazy``: the commit need not be on disk before it returns (SQLite's
        synchronous=NORMAL, PostgreSQL's synchronous_commit=off).  A power cut may
        lose it, never half of it.  For work that can be done again from what is on
        disk: processing a stored mail (its effects are lost together with its "done"
        mark, so it is processed again).  Whatever is acknowledged or sent goes through
        a durable commit first, and the log is written in order, so that commit puts
        every lazy commit before it on disk too.
        """
        gate = self.gate.hold(urgent) if self.gate is not None else nullcontext()
        with gate:
            maker = (self.urgent_sessions if urgent else
                     self.lazy_sessions if lazy else self.sessions)
            session = maker()
            try:
                with session.begin():
                    yield session
            except BaseException:
                wakeups.forget_requested()
                raise
            finally:
                session.close()
        wakeups.ring_requested(self.url)  # committed: whoever has work now finds it

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
