"""``pbmserv db``: the schema's version."""

from __future__ import annotations

import click

from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings, masked_url
from pbmserv.db import migrate
from pbmserv.logs import audit


@main.group()
def db() -> None:
    """The database schema: upgrade, downgrade, current, history, stamp."""


@db.command("upgrade")
@pass_settings
def db_upgrade(settings: Settings) -> None:
    """Create or migrate the database schema to this pbmserv's version (safe to run
    from several processes at once)."""
    database_ = database(settings)
    try:
        before, after = migrate.upgrade(database_)
    finally:
        database_.dispose()
    if before == after:
        click.echo(f"database is up to date (revision {after}): nothing to do")
        return
    done = (f"upgraded from revision {before} to {after}" if before is not None
            else f"created at revision {after}")
    audit("db upgrade", masked_url(settings.database_url), done)
    click.echo(f"database {done}")


@db.command("downgrade")
@click.argument("revision")
@pass_settings
def db_downgrade(settings: Settings, revision: str) -> None:
    """Take the schema back to REVISION (see 'db history'), to run older code on it.
    What the newer revisions added is lost: back the database up first."""
    database_ = database(settings)
    try:
        before = migrate.current(database_)
        migrate.downgrade(database_, revision)
    finally:
        database_.dispose()
    audit("db downgrade", masked_url(settings.database_url),
          f"from revision {before} to {revision}")
    click.echo(f"database downgraded to revision {revision}")


@db.command("current")
@pass_settings
def db_current(settings: Settings) -> None:
    """The schema's revision, and whether it is this pbmserv's (exit 1 if not)."""
    database_ = database(settings, any_schema=True)
    try:
        revision = migrate.current(database_)
        try:
            migrate.check(database_)
            click.echo(f"{revision} (current)")
        except migrate.SchemaError as exc:
            click.echo(f"{revision or 'none'}: {exc}")
            raise SystemExit(1) from None
    finally:
        database_.dispose()


@db.command("history")
@pass_settings
def db_history(settings: Settings) -> None:
    """Every revision this pbmserv knows, the newest last (no database needed)."""
    for r in migrate.history():
        click.echo(f"{r.revision}  {r.title}")


@db.command("stamp")
@click.argument("revision")
@pass_settings
def db_stamp(settings: Settings, revision: str) -> None:
    """Record REVISION (or head) as the schema's without migrating: for a database
    whose tables were made another way. Use with care."""
    database_ = database(settings, any_schema=True)
    try:
        migrate.stamp(database_, revision)
    finally:
        database_.dispose()
    audit("db stamp", masked_url(settings.database_url), f"stamped {revision}")
    click.echo(f"database stamped {migrate.head() if revision == 'head' else revision}")
