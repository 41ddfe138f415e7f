"""The schema's version: migrating (``pbmserv db upgrade``, ``serve``, tests),
checking it, and what the running code refuses.

Migrations are serialised: on PostgreSQL a transaction-wide advisory lock, on SQLite
the write lock every transaction takes first.  So any number of processes may start
on a new database at once: the first migrates, the others find the work done.  A
database whose schema is newer than this code knows is never touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from pbmserv.db.session import READ_ONLY, Database

#: the key of the advisory lock that serialises migrations (any constant will do)
MIGRATION_LOCK = 0x70626D73  # "pbms"


class SchemaError(Exception):
    """The database's schema is missing, behind, or newer than this code."""


def migrations_dir() -> Path:
    """The migrations folder: inside the installed package, or the source tree's."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("pbmserv's migrations folder is missing")


def alembic_config(db: Database) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", db.url.replace("%", "%%"))
    return cfg


@cache
def scripts() -> ScriptDirectory:
    return ScriptDirectory(str(migrations_dir()))


def head() -> str:
    """The newest revision this code knows."""
    found = scripts().get_current_head()
    assert found is not None
    return found


@dataclass(frozen=True)
class Revision:
    revision: str
    title: str


def history() -> list[Revision]:
    """Every revision this code knows, the oldest first."""
    return [Revision(r.revision, r.doc or "") for r in reversed(list(scripts().walk_revisions()))]


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def current(db: Database) -> str | None:
    """The database's revision (None: no schema yet)."""
    with db.engine.execution_options(**{READ_ONLY: True}).connect() as connection:
        return _current(connection)


def _known(revision: str) -> bool:
    return revision in {r.revision for r in history()}


def newer_error(revision: str) -> SchemaError:
    return SchemaError(f"the database schema is at revision {revision}, newer than this "
                       f"pbmserv knows (up to {head()}): upgrade pbmserv (install the "
                       "version that migrated it)")


def refuse_newer(db: Database) -> str | None:
    """The database's revision (None: no schema yet); SchemaError if it is newer than
    this code: older code never works on a newer schema."""
    revision = current(db)
    if revision is not None and not _known(revision):
        raise newer_error(revision)
    return revision


def check(db: Database) -> str:
    """The database's revision, if it is the one this code needs; else SchemaError
    saying what to do."""
    revision = current(db)
    if revision is None:
        raise SchemaError("the database has no pbmserv tables yet: run 'pbmserv db upgrade'")
    if revision == head():
        return revision
    if not _known(revision):
        raise newer_error(revision)
    raise SchemaError(f"the database schema is at revision {revision}, older than this "
                      f"pbmserv's {head()}: run 'pbmserv db upgrade'")


def _lock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})


@contextmanager
def _migrating(db: Database) -> Iterator[Connection]:
    """A connection in a transaction for migrations, one process at a time.

    SQLite's foreign keys are off while it lasts: a batch migration rebuilds a table
    (copy, drop, rename) that other tables' rows point at, and dropping it would fail.
    They are turned off before the transaction (inside one SQLite ignores the
    pragma), checked at its end (a reference the migration broke rolls it all back;
    one broken before, by a hand edit say, is left to the admin), and turned on again
    before the connection goes back to the pool.
    """
    with db.engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            _pragma(connection, "PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                _lock(connection)
                before = _broken_references(connection) if sqlite else set()
                yield connection
                if sqlite:
                    broken = _broken_references(connection) - before
                    if broken:
                        raise SchemaError("the migration would break references: "
                                          f"{sorted(broken)[:5]}")
        finally:
            if sqlite:
                _pragma(connection, "PRAGMA foreign_keys=ON")


def _broken_references(connection: Connection) -> set[tuple[object, ...]]:
    """SQLite's rows whose foreign keys point at nothing: (table, rowid, parent)."""
    return {tuple(row[:3]) for row in connection.exec_driver_sql("PRAGMA foreign_key_check")}


def _pragma(connection: Connection, statement: str) -> None:
    """Run a pragma on the driver's connection itself, outside any transaction."""
    cursor = connection.connection.cursor()
    try:
        cursor.execute(statement)
    finally:
        cursor.close()


def upgrade(db: Database, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate the schema to ``revision`` (nothing to do if it is there), one process
    at a time; refuses a schema newer than this code.  Returns the revision before
    (None: no schema) and after, as found under the lock."""
    cfg = alembic_config(db)
    with _migrating(db) as connection:
        found = _current(connection)
        if found is not None and not _known(found):
            raise newer_error(found)
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)
        return found, _current(connection)


def downgrade(db: Database, revision: str) -> None:
    """Take the schema back to ``revision`` (before installing older code)."""
    if not _known(revision):
        raise SchemaError(f"there is no revision {revision!r}; see 'pbmserv db history'")
    cfg = alembic_config(db)
    with _migrating(db) as connection:
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, revision)


def ensure(db: Database) -> str:
    """Make sure the schema is this code's: migrate it if it is missing or behind
    (one cheap query when it is current already)."""
    revision = current(db)
    if revision != head():
        upgrade(db)
    return head()


def stamp(db: Database, revision: str) -> None:
    """Record ``revision`` as the schema's, without running any migration (for a
    database whose tables were made another way)."""
    if revision != "head" and not _known(revision):
        raise SchemaError(f"there is no revision {revision!r}; see 'pbmserv db history'")
    cfg = alembic_config(db)
    with db.engine.begin() as connection:
        _lock(connection)
        cfg.attributes["connection"] = connection
        command.stamp(cfg, revision, purge=True)
