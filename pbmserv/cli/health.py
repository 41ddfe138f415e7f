"""``pbmserv status`` and ``pbmserv config show|check``: how the server stands."""

from __future__ import annotations

from datetime import timedelta

import click

from pbmserv import operations
from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings, as_toml
from pbmserv.db.problems import describe
from pbmserv.render import duration
from pbmserv.service import health


def _age(age: timedelta | None) -> str:
    return "-" if age is None else duration(int(age.total_seconds()))


@main.command()
@click.option("--inbox-late", default=int(health.INBOX_LATE.total_seconds()),
              show_default=True, metavar="SECONDS",
              help="Unhealthy if stored mail waits longer than this.")
@click.option("--outbox-late", default=int(health.OUTBOX_LATE.total_seconds()),
              show_default=True, metavar="SECONDS",
              help="Unhealthy if outgoing mail is due for longer than this.")
@click.option("--down-only", is_flag=True,
              help="Exit 0 when the server runs, even if something needs a person (for "
                   "container healthchecks).")
@pass_settings
def status(settings: Settings, inbox_late: int, outbox_late: int, down_only: bool) -> None:
    """Queues, ages, failed mail, bounces, the schema, the IMAP reader's heartbeat and
    the relay's last answer. Exit 1 when the server is down or mail is not moving;
    exit 3 when it runs but something needs a person (failed mail, a bounce storm); 0
    when all is well."""
    try:
        db = database(settings, any_schema=True)
    except Exception as exc:
        s = health.Status(problems=[f"database: {describe(exc, settings.database_url)}"],
                              reachable=False)
    else:
        try:
            s = health.status_of(db, settings, inbox_late=timedelta(seconds=inbox_late),
                                 outbox_late=timedelta(seconds=outbox_late))
        finally:
            db.dispose()
    if s.reachable:
        state = "current" if s.revision == s.head else f"this pbmserv needs {s.head}"
        click.echo(f"schema   {s.revision or 'none'} ({state})")
    if s.counted:
        click.echo(f"inbox    {s.waiting} waiting (oldest {_age(s.oldest_waiting)}), "
                   f"{s.failed_in} failed")
        click.echo(f"outbox   {s.pending} pending (oldest {_age(s.oldest_pending)}), "
                   f"{s.overdue} overdue, {s.failed_out} failed")
        if s.suspended:
            click.echo(f"bounces  {s.suspended} address(es) no longer mailed "
                       "('pbmserv users bounces')")
    if s.sending:
        click.echo(f"sending  {s.sending}")
    if s.imap:
        click.echo(f"imap     {s.imap}")
    if s.relay:
        click.echo(f"relay    {s.relay}")
    for problem in s.problems:
        click.echo(f"problem  {problem}")
    for item in s.attention:
        click.echo(f"attend   {item}")
    click.echo("health   " + ("UNHEALTHY" if not s.healthy
                              else "ok, but needs you" if s.attention else "ok"))
    code = 0 if down_only and s.healthy else s.exit_code
    if code:
        raise SystemExit(code)


@main.group("config")
def config_group() -> None:
    """The settings: show them, check them."""


@config_group.command("show")
@pass_settings
def config_show(settings: Settings) -> None:
    """The settings in effect (file, then environment), secrets masked."""
    click.echo(as_toml(settings), nl=False)


@config_group.command("check")
@pass_settings
def config_check(settings: Settings) -> None:
    """Check what the settings need, one line each: the database and its schema, the
    relay or the Maildir, the log file. Exit 1 if anything fails."""
    checks = operations.check_settings(settings)
    for c in checks:
        click.echo(f"{c.level:4} {c.name:12} {c.text}")
    if any(c.level == operations.FAIL for c in checks):
        raise SystemExit(1)
