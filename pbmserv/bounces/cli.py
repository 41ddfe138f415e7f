"""``pbmserv users bounces`` and ``pbmserv users clear-bounces``: addresses whose mail
bounces (see pbmserv.bounces.scoring)."""

from __future__ import annotations

import click

from pbmserv.bounces import scoring
from pbmserv.cli.accounts import users
from pbmserv.cli.app import database, pass_settings
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.logs import audit


@users.command("bounces")
@pass_settings
def users_bounces(settings: Settings) -> None:
    """Addresses whose mail bounced lately: whether they are still mailed, their hard
    bounces (the address is dead), soft ones (a policy refusal, a full mailbox) and
    delays (never counted) within bounce_days, and the last one with its reason."""
    with database(settings).reading() as session:
        found = scoring.bounce_list(session, settings, utcnow())
    if not found:
        click.echo("no address bounces")
        return
    for b in found:
        who = ", ".join(b.userids) or "no account"
        state = (f"NOT MAILED since {b.suspended_since:%Y-%m-%d %H:%M}" if b.suspended_since
                 else "mailed")
        delays = f"{b.delays} delay{'s' if b.delays != 1 else ''} (never counted)"
        last = (f"{b.last_at:%Y-%m-%d %H:%M}" if b.last_at else "-") + (
            f" ({b.last_kind})" if b.last_kind else "")
        click.echo(f"{b.address} ({who}): {state}; within {settings.bounce_days} days "
                   f"{b.hard} of {settings.bounce_threshold} hard, {b.soft} of "
                   f"{settings.soft_bounce_threshold} soft, {delays}; last {last}: "
                   f"{b.last_reason[:200]}")


@users.command("clear-bounces")
@click.argument("address", required=False)
@click.option("--all", "every", is_flag=True, help="Every address.")
@pass_settings
def users_clear_bounces(settings: Settings, address: str | None, every: bool) -> None:
    """Forget an address's bounces and mail it again (the owner writing to the server
    from it does the same)."""
    if (address is None) == (not every):
        raise click.UsageError("give an ADDRESS (see 'pbmserv users bounces') or --all")
    with database(settings).transaction() as session:
        cleared = scoring.clear(session, address, utcnow())
    if address is not None and not cleared:
        raise click.ClickException(f"{address} has no bounces")
    audit("users clear-bounces", address or "--all",
          f"cleared {cleared} address(es): mailed again")
    click.echo(f"cleared {cleared} address(es): mailed again")
