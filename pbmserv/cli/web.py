"""``pbmserv web``: the read-only web pages."""

from __future__ import annotations

import logging

import click

from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.problems import describe

log = logging.getLogger("pbmserv.cli")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, help="HTTP port.")
@pass_settings
def web(settings: Settings, host: str, port: int) -> None:
    """Serve the read-only web pages (games, boards, players, tournaments) over HTTP,
    with /healthz and Prometheus's /metrics; the database is only read ('serve' or 'db
    upgrade' creates it). A database that is down does not stop it: the pages answer
    503 until it is back."""
    from pbmserv.web import serve as serve_web

    db = database(settings, any_schema=True)
    try:
        migrate.refuse_newer(db)
    except migrate.SchemaError:
        db.dispose()
        raise
    except Exception as exc:
        log.warning("the database does not answer (%s): the pages answer 503 until it does",
                    describe(exc, settings.database_url))
    log.info("web pages on http://%s:%s/", host, port)
    serve_web(db, settings, host, port)
    db.dispose()
