"""Statements of the hot path, compiled once and run on the driver's own cursor.

SQLAlchemy spends 30 - 50 µs of CPU around each statement it runs (its compiled cache
looked up, parameters processed, a result object built, events fired), the driver
3 - 5 µs; a move runs about twenty statements.  ``Prepared`` holds a Core statement
compiled once per dialect (the SQL text, the order of its parameters and their type
conversions, those of its result columns) and runs it on the DBAPI cursor of the
session's own connection, inside its transaction: the same SQL, the same values
bound, the same Python values read back, for a tenth of the CPU.

Only for plain statements: every parameter is named, none is an expanding ``IN``
list (a literal list of constants is fine: it is compiled in), and an insert is given
every column that has a default (a default computed at execution time is SQLAlchemy's
own work); ``prepare`` refuses anything else when it compiles it.  Everything else
goes through SQLAlchemy as usual.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter

Processor = Callable[[Any], Any] | None


def _processor(bind: BindParameter[Any], dialect: Dialect) -> Processor:
    """How SQLAlchemy converts the parameter's value for the driver (None: as it is)."""
    return bind.type.dialect_impl(dialect).bind_processor(dialect)


class _Compiled:
    """One statement as one dialect runs it."""

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        if compiled.insert_prefetch or compiled.update_prefetch:
            raise ValueError(f"{statement}: a default computed at execution time")
        binds = compiled.binds
        if any(bind.expanding and bind.value is None for bind in binds.values()):
            raise ValueError(f"{statement}: an expanding IN list of values given at run time")
        # the parameters given at each run; the others are constants of the statement
        # (status == PENDING, a literal IN list), expanded and converted once, here
        given = {name for name, bind in binds.items() if not bind.expanding and bind.required}
        state = compiled.construct_expanded_state({name: None for name in given})
        self.sql = state.statement
        self.fixed: dict[str, Any] = {}
        for name, value in state.parameters.items():
            if name in given:
                continue
            processor = state.processors.get(name) or (
                _processor(binds[name], dialect) if name in binds else None)
            self.fixed[name] = value if processor is None else processor(value)
        self.names: Sequence[str] | None = (list(state.positiontup)
                                            if state.positiontup is not None else None)
        self.processors: dict[str, Callable[[Any], Any]] = {}
        for name in given:
            processor = _processor(binds[name], dialect)
            if processor is not None:
                self.processors[name] = processor
        self.columns = [column.type.dialect_impl(dialect)
                        for column in getattr(statement, "selected_columns", ())]
        if not self.columns and getattr(statement, "_returning", None):
            self.columns = [column.type.dialect_impl(dialect)
                            for column in statement._returning]  # type: ignore[attr-defined]
        #: rows come back (a SELECT, an explicit RETURNING, or the RETURNING of the new
        #: key that SQLAlchemy adds to an INSERT on PostgreSQL)
        self.returns = bool(self.columns or compiled.effective_returning)
        self.dialect = dialect
        self._results: list[Processor] | None = None

    def parameters(self, given: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        values = {**self.fixed, **given} if self.fixed else dict(given)
        for name, processor in self.processors.items():
            values[name] = processor(values[name])
        if self.names is None:
            return values
        return [values[name] for name in self.names]

    def results(self, cursor: Any) -> list[Processor]:
        """How each column of the result is converted, read off the first run's
        ``cursor.description`` (psycopg makes that list afresh each time it is read)."""
        if self._results is None:
            self._results = [
                kind.result_processor(self.dialect, column[1]) if i < len(self.columns) else None
                for i, (kind, column) in enumerate(zip(self.columns, cursor.description,
                                                       strict=False))]
        return self._results


class Prepared:
    """A Core statement run on the driver's cursor (see the module's text)."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compiled(self, connection: Connection) -> _Compiled:
        dialect = connection.dialect
        found = self._by_dialect.get(dialect.name)
        if found is None:
            found = self._by_dialect[dialect.name] = _Compiled(self.statement, dialect)
        return found

    def _cursor(self, connection: Connection, params: Mapping[str, Any]) -> tuple[Any, _Compiled]:
        compiled = self._compiled(connection)
        return execute(connection, compiled.sql, compiled.parameters(params)), compiled

    def rows(self, connection: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Every row, its values converted as SQLAlchemy converts them."""
        cursor, compiled = self._cursor(connection, params)
        found = cursor.fetchall()
        if not found:
            return []
        processors = compiled.results(cursor)
        if not any(processors):
            return [tuple(row) for row in found]
        return [tuple(value if processor is None else processor(value)
                      for processor, value in zip(processors, row, strict=False))
                for row in found]

    def first(self, connection: Connection, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        found = self.rows(connection, params)
        return found[0] if found else None

    def run(self, connection: Connection, params: Mapping[str, Any]) -> int:
        """A statement run for what it changes: how many rows.  Rows it returns are
        read and dropped, so that none is left on the cursor (on SQLite an INSERT whose
        RETURNING rows are not read is still running, and holds up the commit)."""
        cursor, compiled = self._cursor(connection, params)
        if compiled.returns:
            cursor.fetchall()
        return int(cursor.rowcount)


#: the key of a pooled connection's ``info`` that holds the driver's cursor statements
#: run on here, with the driver connection it belongs to (while it is checked out)
_CURSOR = "pbmserv_cursor"


def release_cursor(dbapi_connection: Any, record: Any) -> None:
    """The pool's ``checkin`` listener: a connection back in the pool keeps no cursor,
    so nothing of its last statement (a stored mail as it came, passwords and all) is
    held while it waits."""
    kept = record.info.pop(_CURSOR, None)
    if kept is not None and kept[0] is dbapi_connection:
        with contextlib.suppress(Exception):  # the connection may be gone already
            kept[1].close()


def execute(connection: Connection, sql: str, parameters: Any = ()) -> Any:
    """Run ``sql`` on the driver's cursor of ``connection``; returns the cursor, whose
    rows are read before the next statement runs on the connection.  One cursor is
    kept for each driver connection while it is checked out (psycopg takes 10 us to
    make one: it copies the connection's adapters); ``release_cursor`` lets it go.
    The driver's errors are raised as SQLAlchemy raises them (OperationalError,
    IntegrityError...), so that whoever handles those handles these too; never with
    the parameters."""
    pooled = connection.connection
    driver = pooled.driver_connection
    kept = pooled.info.get(_CURSOR)
    if kept is None or kept[0] is not driver:
        kept = pooled.info[_CURSOR] = (driver, driver.cursor())  # type: ignore[union-attr]
    cursor = kept[1]
    error = connection.dialect.loaded_dbapi.Error
    try:
        cursor.execute(sql, parameters)
    except error as exc:
        # the next statement gets a cursor of its own: nothing of this one is left
        del pooled.info[_CURSOR]
        cursor.close()
        raise DBAPIError.instance(sql, None, exc, error, hide_parameters=True,
                                  dialect=connection.dialect) from exc
    return cursor


#: the savepoints SQLAlchemy names itself (Session.begin_nested)
_SAVEPOINT_NAME = re.compile(r"sa_savepoint_[0-9]+")


def driver_savepoints(dialect: Dialect) -> None:
    """Have ``dialect`` set, release and roll back to its savepoints on the driver's
    cursor: every command of a mail runs in a savepoint (a refused one changes
    nothing), and SQLAlchemy compiles each SAVEPOINT and RELEASE afresh and runs it as
    any statement, 60 - 90 µs of CPU a command for two statements the driver runs in
    a few.  A name SQLAlchemy did not make goes its usual way."""
    for verb, method in (("SAVEPOINT", "do_savepoint"),
                         ("RELEASE SAVEPOINT", "do_release_savepoint"),
                         ("ROLLBACK TO SAVEPOINT", "do_rollback_to_savepoint")):
        setattr(dialect, method, _savepoint_statement(verb, getattr(dialect, method)))


def _savepoint_statement(verb: str, usual: Callable[[Connection, str], None],
                         ) -> Callable[[Connection, str], None]:
    def run(connection: Connection, name: str) -> None:
        if not _SAVEPOINT_NAME.fullmatch(name):
            usual(connection, name)
            return
        execute(connection, f"{verb} {name}")
    return run
