"""The bots' loop: ``pbmserv bots [--loop]`` (``serve`` runs it by itself)."""

from __future__ import annotations

import logging
import signal

import click

from pbmserv.bot_loop import BotLoop
from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.session import Database

log = logging.getLogger("pbmserv.cli")


@main.command("bots")
@click.option("--loop", is_flag=True, help="Keep running (as 'serve' runs it).")
@click.option("--interval", default=1.0, show_default=True,
              help="Seconds between looks when no bot is waited for.")
@pass_settings
def bots_command(settings: Settings, loop: bool, interval: float) -> None:
    """Let the server's bots (bot1, bot2, bot3) make the moves and answers they owe."""
    if not loop:
        db = database(settings)
        migrate.ensure(db)  # one cheap query when the schema is current
        click.echo(f"bots played {BotLoop(db, settings, interval=interval).once()} turn(s)")
        return
    # the loop (serve's bots process) waits out a database that is down, quietly,
    # rather than end and be started again every few seconds
    db = Database(settings.database_url)
    worker = BotLoop(db, settings, interval=interval)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: worker.stop())
    log.info("bots: answering the games they play")
    worker.run(before=lambda: (migrate.refuse_newer(db), migrate.ensure(db)))
