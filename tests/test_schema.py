"""The schema's version: db current/history/stamp, a newer schema refused, migrations
that may run from several processes at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text

from pbmserv.cli import main
from pbmserv.db import migrate
from pbmserv.db.session import Database
from tests.conftest import make_mail


def cli(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"PBMSERV_DATABASE_URL": url})


def test_current_history_and_stamp(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    empty = cli(url, "db", "current")
    assert empty.exit_code == 1 and "none: the database has no pbmserv tables yet" in empty.output
    newest = migrate.head()
    assert cli(url, "db", "upgrade").output == f"database created at revision {newest}\n"
    assert cli(url, "db", "upgrade").output == \
        f"database is up to date (revision {newest}): nothing to do\n"
    assert cli(url, "db", "current").output == f"{newest} (current)\n"
    history = cli(url, "db", "history").output.splitlines()
    assert history[0] == "0001  initial schema" and history[-1].startswith(f"{newest}  ")
    assert cli(url, "db", "stamp", "0005").output == "database stamped 0005\n"
    behind = cli(url, "db", "current")
    assert behind.exit_code == 1 and f"older than this pbmserv's {newest}" in behind.output
    assert cli(url, "db", "stamp", "head").output == f"database stamped {newest}\n"
    bad = cli(url, "db", "stamp", "0042")
    assert bad.exit_code == 1 and "there is no revision '0042'" in bad.output


def test_db_upgrade_says_from_which_revision_to_which(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    db = Database(url)
    migrate.upgrade(db, "0008")
    db.dispose()
    done = cli(url, "db", "upgrade")
    assert done.exit_code == 0
    assert done.output == f"database upgraded from revision 0008 to {migrate.head()}\n"


#: commands that work on the database, each refused on a newer schema
ADMIN_COMMANDS = [("serve", "--workers", "0"), ("work",), ("db", "upgrade"), ("users", "list"),
                  ("users", "disable", "bot1"), ("users", "enable", "bot1"),
                  ("boards", "list"), ("boards", "abandon", "amoeba", "101"),
                  ("inbox", "list"), ("inbox", "replay", "--all-failed"),
                  ("outbox", "list"), ("outbox", "show", "1"), ("outbox", "retry", "--all"),
                  ("throttle", "list"), ("export",), ("bots",), ("db", "downgrade", "0005")]


def newer_schema_is_refused(url: str) -> None:
    db = Database(url)
    try:
        migrate.upgrade(db)
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
        with pytest.raises(migrate.SchemaError, match="newer than this pbmserv knows"):
            migrate.upgrade(db)
        with pytest.raises(migrate.SchemaError, match="at revision 0099"):
            migrate.check(db)
        assert migrate.current(db) == "0099"  # untouched
    finally:
        db.dispose()
    for command in ADMIN_COMMANDS:
        result = cli(url, *command)
        assert result.exit_code == 1, command
        assert result.output == ("pbmserv: the database schema is at revision 0099, newer "
                                 f"than this pbmserv knows (up to {migrate.head()}): upgrade "
                                 "pbmserv (install the version that migrated it)\n"), command
    # what only looks at the schema says so; a mail is still stored for newer code
    current = cli(url, "db", "current")
    assert current.exit_code == 1 and "0099: the database schema is at revision 0099" in \
        current.output
    status = cli(url, "status")
    assert status.exit_code == 1 and "upgrade pbmserv" in status.output
    delivered = CliRunner().invoke(main, ["deliver"], env={"PBMSERV_DATABASE_URL": url},
                                   input=make_mail("help"))
    assert delivered.exit_code == 0, delivered.output


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    newer_schema_is_refused(f"sqlite:///{tmp_path / 'db.sqlite3'}")


@pytest.mark.postgres
def test_a_newer_schema_is_refused_on_postgres(pg_blank_url: str) -> None:
    newer_schema_is_refused(pg_blank_url)


def parallel_first_upgrades(url: str) -> None:
    env = {**os.environ, "PBMSERV_DATABASE_URL": url, "PBMSERV_CONFIG": ""}
    procs = [subprocess.Popen([sys.executable, "-m", "pbmserv", "db", "upgrade"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for _ in range(4)]
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outputs
    db = Database(url)
    try:
        assert migrate.check(db) == migrate.head()
    finally:
        db.dispose()


@pytest.mark.postgres
def test_parallel_first_upgrades_on_postgres(pg_blank_url: str) -> None:
    parallel_first_upgrades(pg_blank_url)


def test_parallel_first_upgrades_on_sqlite(tmp_path: Path) -> None:
    parallel_first_upgrades(f"sqlite:///{tmp_path / 'db.sqlite3'}")
