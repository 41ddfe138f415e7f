"""``pbmserv export`` and ``pbmserv import``: the records of finished games."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TextIO

import click

from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.games import ENGINES, get_engine
from pbmserv.logs import audit
from pbmserv.records import RecordError, dump_json, dump_text, parse_records
from pbmserv.service.archive import finished_records, import_records


@main.command("export")
@click.option("--game", default=None, help="Only this game.")
@click.option("--format", "form", default="text", show_default=True,
              type=click.Choice(["text", "json"]), help="PGN-like text, or JSON.")
@click.option("--since", default=None, type=click.DateTime(["%Y-%m-%d"]),
              help="Only games that ended on or after this day (YYYY-MM-DD, UTC).")
@click.option("-o", "--output", default="-", type=click.File("w", encoding="utf-8"),
              help="Write to this file instead of standard output.")
@pass_settings
def export(settings: Settings, game: str | None, form: str, since: datetime | None,
           output: TextIO) -> None:
    """Write the record of every finished game."""
    if game is not None and get_engine(game) is None:
        raise click.BadParameter(f"unknown game {game!r}; games: {', '.join(ENGINES)}",
                                 param_hint="--game")
    with database(settings).reading() as session:
        records = finished_records(session, settings.server_name,
                                   game=game.lower() if game else None,
                                   since=since.replace(tzinfo=UTC) if since else None)
    if records:
        output.write(dump_json(records) if form == "json" else dump_text(records))
    click.echo(f"exported {len(records)} game(s)", err=True)


@main.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8-sig"))
@pass_settings
def import_(settings: Settings, file: TextIO) -> None:
    """Load game records (text or JSON, as written by export), every move replayed;
    a file with any bad record is refused whole."""
    try:
        records = parse_records(file.read())
        db = database(settings)
        migrate.ensure(db)
        with db.transaction() as session:
            report = import_records(session, records, utcnow())
    except RecordError as exc:
        raise click.ClickException(f"nothing imported: {exc}") from None
    audit("import", file.name, f"imported {len(report.boards)} game(s), skipped "
          f"{len(report.skipped)}, new accounts {len(report.users)}")
    click.echo(f"imported {len(report.boards)} game(s)"
               + (f", skipped {len(report.skipped)} already here" if report.skipped else "")
               + (f"; new disabled accounts: {', '.join(report.users)}" if report.users
                  else ""))
