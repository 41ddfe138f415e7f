"""The restore drill of docs/admin.md ("Backups"): a backup restored into a new
database that ``pbmserv status`` reads as current, with the accounts of the dump
(PostgreSQL: pg_dump -Fc, createdb, pg_restore; SQLite: the sqlite3 tool's .backup)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.session import Database
from tests.conftest import Mailer


def cli(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"PBMSERV_DATABASE_URL": url})


def drill(url: str) -> None:
    """What the drill checks of a restored database."""
    status = cli(url, "status")
    assert status.exit_code == 0, status.output
    assert status.output.splitlines()[0] == f"schema   {migrate.head()} (current)"
    assert status.output.splitlines()[-1] == "health   ok"
    listed = cli(url, "users", "list").output
    assert "alice " in listed and "bob " in listed


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def test_a_sqlite_backup_restores(settings: Settings, tmp_path: Path) -> None:
    db = Database(settings.database_url)
    mailer = Mailer(db, settings)
    mailer.signup("alice")
    mailer.signup("bob")
    db.dispose()
    backup = tmp_path / "backups" / "pbmserv.sqlite3"
    backup.parent.mkdir()
    live = settings.database_url.split("///", 1)[1]
    subprocess.run(f"umask 077 && {tool('sqlite3')} {live} \".backup {backup}\"", shell=True,
                   check=True, timeout=60)
    assert backup.stat().st_mode & 0o077 == 0  # root's (the backup user's) alone
    drill(f"sqlite:///{backup}")


@pytest.fixture
def drill_database(pg_url: str) -> Iterator[str]:
    """The name of a database made for the drill beside the live one, dropped after."""
    name = f"pbmserv_drill_{uuid.uuid4().hex[:8]}"
    admin = create_engine(make_url(pg_url).set(database="postgres"),
                          isolation_level="AUTOCOMMIT")
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_a_postgresql_dump_restores_into_a_new_database(
        pg_url: str, drill_database: str, settings: Settings, tmp_path: Path) -> None:
    settings = replace(settings, database_url=pg_url)
    db = Database(pg_url)
    mailer = Mailer(db, settings)
    mailer.signup("alice")
    mailer.signup("bob")
    db.dispose()
    url = make_url(pg_url)
    where = ["-h", url.host or "127.0.0.1", "-p", str(url.port or 5432),
             "-U", url.username or "postgres"]
    env = {**os.environ, **({"PGPASSWORD": url.password} if url.password else {})}
    dump = tmp_path / "pbmserv.dump"
    with dump.open("wb") as out:
        subprocess.run([tool("pg_dump"), *where, "-Fc", url.database or ""], stdout=out,
                       check=True, env=env, timeout=120)
    subprocess.run([tool("createdb"), *where, drill_database], check=True, env=env, timeout=60)
    subprocess.run([tool("pg_restore"), *where, "-d", drill_database, str(dump)], check=True,
                   env=env, timeout=120)
    drill(url.set(database=drill_database).render_as_string(hide_password=False))
