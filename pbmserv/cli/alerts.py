"""``pbmserv alerts list|show|ack``: the incidents the administrator is (or was) told
of (pbmserv.service.incidents)."""

from __future__ import annotations

import click

from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.logs import audit, operator
from pbmserv.service import incidents


@main.group("alerts")
def alerts_group() -> None:
    """Incidents the administrator is told of: list them, show one, acknowledge one."""


@alerts_group.command("list")
@click.option("--all", "every", is_flag=True, help="The latest 50, over ones too.")
@pass_settings
def alerts_list(settings: Settings, every: bool) -> None:
    """The incidents not over yet (with --all, the latest ones over too): number,
    kind, how often, since when, state, and the last occurrence."""
    with database(settings).reading() as session:
        found = incidents.listed(session, every=every)
        lines = [f"{a.id:>5}  {a.kind:<17} {a.count:>5}x since {a.opened_at:%Y-%m-%d %H:%M}  "
                 f"{incidents.state_of(a)}\n       {a.last_detail[:200]}" for a in found]
    if not lines:
        click.echo("no incident is open" if not every else "no incident yet")
        return
    click.echo("\n".join(lines))


@alerts_group.command("show")
@click.argument("number", type=int)
@pass_settings
def alerts_show(settings: Settings, number: int) -> None:
    """One incident: what happened first and last, what it concerns, its state, and
    each mail to the administrator about it with what became of it."""
    with database(settings).reading() as session:
        alert = incidents.find(session, number)
        if alert is None:
            raise click.ClickException(f"there is no incident {number} "
                                       "('pbmserv alerts list --all')")
        click.echo(f"incident  {alert.id}, {alert.kind}")
        click.echo(f"state     {incidents.state_of(alert)}")
        click.echo(f"times     {alert.count}, {alert.opened_at:%Y-%m-%d %H:%M} to "
                   f"{alert.last_at:%Y-%m-%d %H:%M} UTC")
        click.echo(f"first     {alert.first_detail}")
        click.echo(f"last      {alert.last_detail}")
        if alert.items:
            click.echo(f"concerns  {alert.items}")
        mails = incidents.mails_about(session, alert)
        for mail in mails:
            answer = f": {mail.last_error}" if mail.last_error else ""
            click.echo(f"mail      outbox {mail.id} to {mail.to_addr}, {mail.status}{answer}")
        if not mails:
            click.echo("mail      none yet")


@alerts_group.command("ack")
@click.argument("number", type=int)
@pass_settings
def alerts_ack(settings: Settings, number: int) -> None:
    """You have the incident in hand: it is over, with no reminder and no "resolved"
    mail; if it happens again, a new incident is mailed."""
    with database(settings).transaction() as session:
        try:
            alert = incidents.ack(session, number, operator(), utcnow())
        except incidents.NoSuchAlert:
            raise click.ClickException(f"there is no incident {number} "
                                       "('pbmserv alerts list')") from None
        acked = alert.resolution == "acked" and alert.acked_at is not None
        state = incidents.state_of(alert)
    audit("alerts ack", str(number), state)
    click.echo(f"incident {number}: {state}" if acked
               else f"incident {number} was over already: {state}")
