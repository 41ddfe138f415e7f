"""``pbmserv inbox`` and ``pbmserv outbox``: stored incoming mail, outgoing mail."""

from __future__ import annotations

from datetime import timedelta

import click

from pbmserv import operations
from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db.problems import reason_line
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.logs import audit
from pbmserv.service import admin


@main.group()
def inbox() -> None:
    """Stored incoming mail: list, show, replay, purge."""


@inbox.command("list")
@click.option("--status", default=None, type=click.Choice([s.value for s in InboundStatus]),
              help="Only messages of this status.")
@click.option("--address", default=None, metavar="ADDRESS",
              help="Only mail from this address (its From or envelope sender).")
@click.option("--limit", default=50, show_default=True)
@pass_settings
def inbox_list(settings: Settings, status: str | None, address: str | None,
               limit: int) -> None:
    """List stored messages, newest first."""
    with database(settings).reading() as session:
        for m in admin.inbox(session, InboundStatus(status) if status else None, address,
                             limit):
            reason = reason_line(m.error)  # the cause, not the end of a traceback
            click.echo(f"{m.id:6} {m.status:8} {m.received_at:%Y-%m-%d %H:%M} "
                       f"{m.envelope_from or '-'}" + (f"  [{reason[:200]}]" if reason else ""))


@inbox.command("show")
@click.argument("message_id", type=int)
@pass_settings
def inbox_show(settings: Settings, message_id: int) -> None:
    """Print what became of a stored message (its error first, if any: a header bomb
    of 10,000 lines does not push it out of sight), then the message as received."""
    with database(settings).reading() as session:
        m = admin.inbound(session, message_id)
        if m.error:
            click.echo(f"--- {m.status}:\n{m.error}\n--- the message as received:")
        if m.raw or not m.size:
            click.echo(m.raw.decode("utf-8", "replace"))
        else:  # an ignored mail keeps no text (pbmserv.processing.batches)
            click.echo(f"(ignored: its text, {m.size} bytes, was not kept; only its sender "
                       f"<{m.sender or m.envelope_from}> and the key that knows it if it "
                       "comes again)")


@inbox.command("replay")
@click.argument("message_id", type=int, required=False)
@click.option("--all-failed", is_flag=True, help="Every failed message, oldest first.")
@pass_settings
def inbox_replay(settings: Settings, message_id: int | None, all_failed: bool) -> None:
    """Process a failed (or ignored) message again, e.g. after a fix."""
    if (message_id is None) == (not all_failed):
        raise click.UsageError("give a MESSAGE_ID or --all-failed")
    db = database(settings)
    if message_id is not None:
        result = operations.replay(db, settings, message_id)
        audit("inbox replay", str(message_id), result)
        click.echo(f"message {message_id}: {result}")
        return
    done = operations.replay_failed(db, settings)
    for number, result in done:
        audit("inbox replay --all-failed", str(number), result)
        click.echo(f"message {number}: {result}")
    click.echo(f"replayed {len(done)} message(s)")


@inbox.command("purge")
@click.option("--older-than", "days", required=True, type=click.IntRange(1), metavar="DAYS",
              help="Purge mail older than this many days.")
@pass_settings
def inbox_purge(settings: Settings, days: int) -> None:
    """Delete processed incoming mail and sent (or discarded) outgoing mail older than
    DAYS; failed and waiting mail is kept. A purged mail delivered again would be
    processed again, so keep more days than any MTA retries (a week at least)."""
    purged = operations.purge(database(settings), timedelta(days=days))
    audit("inbox purge", f"--older-than {days}",
          f"purged {purged.inbox} incoming and {purged.outbox} outgoing mail(s)")
    click.echo(f"purged {purged.inbox} incoming and {purged.outbox} outgoing mail(s)")


@main.group()
def outbox() -> None:
    """Outgoing mail: list, show, retry, discard."""


@outbox.command("list")
@click.option("--status", default=OutboxStatus.PENDING.value, show_default=True,
              type=click.Choice([s.value for s in OutboxStatus]))
@click.option("--address", default=None, metavar="ADDRESS",
              help="Only mail to this address.")
@click.option("--limit", default=50, show_default=True)
@pass_settings
def outbox_list(settings: Settings, status: str, address: str | None, limit: int) -> None:
    """List outgoing mail by status, newest first."""
    with database(settings).reading() as session:
        found = admin.outbox(session, OutboxStatus(status), address, limit)
        for m in found:
            error = " ".join((m.last_error or "").split())[:300]
            click.echo(f"{m.id:6} {m.status:8} tries={m.attempts} {m.to_addr}  {m.subject}"
                       + (f"  [{error}]" if error else ""))
    if not found:
        click.echo(f"nothing {status}" + (f" to {address}" if address else ""))


@outbox.command("show")
@click.argument("outbox_id", type=int)
@pass_settings
def outbox_show(settings: Settings, outbox_id: int) -> None:
    """An outgoing mail: its state, tries and the relay's last answer, its headers and
    its text."""
    with database(settings).reading() as session:
        m = admin.outgoing(session, outbox_id)
        lines = [
            ("status", f"{m.status}" + (f", sent {m.sent_at:%Y-%m-%d %H:%M:%S} UTC"
                                        if m.sent_at else "")),
            ("made", f"{m.created_at:%Y-%m-%d %H:%M:%S} UTC"
                     + (f", answering inbox #{m.inbound_id}" if m.inbound_id else "")),
            ("tries", str(m.attempts) + (
                f", next {m.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC"
                if m.status is OutboxStatus.PENDING else "")),
            ("error", m.last_error or "-"),
            ("To", m.to_addr), ("Subject", m.subject), ("Message-ID", m.message_id),
            ("In-Reply-To", m.in_reply_to or "-"), ("Reply-To", m.reply_to or "-"),
            ("HTML", f"{len(m.html_body)} characters" if m.html_body else "none"),
        ]
        for name, value in lines:
            click.echo(f"{name + ':':12} {value}")
        click.echo("")
        click.echo(m.body, nl=not m.body.endswith("\n"))


@outbox.command("retry")
@click.argument("outbox_id", type=int, required=False)
@click.option("--all", "every", is_flag=True, help="Every pending and failed mail.")
@pass_settings
def outbox_retry(settings: Settings, outbox_id: int | None, every: bool) -> None:
    """Send a pending or failed mail (or --all of them) now, whatever its back-off."""
    if (outbox_id is None) == (not every):
        raise click.UsageError("give an OUTBOX_ID (see 'pbmserv outbox list') or --all")
    db = database(settings)
    queued = operations.retry(db, outbox_id, settings)
    audit("outbox retry", "--all" if outbox_id is None else str(outbox_id),
          f"queued {queued} mail(s) again")
    click.echo(f"queued {queued} mail(s) again; sent {operations.send_now(db, settings)}")


class Age(click.ParamType[timedelta]):
    """An age: a number and a unit, 90m, 12h, 3d or 2w (a number alone: days)."""

    name = "AGE"
    UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        text = str(value).strip().lower()
        number, unit = (text[:-1], text[-1]) if text[-1:] in self.UNITS else (text, "d")
        if not number.isdigit() or int(number) < 1:
            self.fail(f"{value!r} is not an age: write a number and a unit, like 90m, 12h, "
                      "3d or 2w", param, ctx)
        return timedelta(seconds=int(number) * self.UNITS[unit])


@outbox.command("discard")
@click.argument("outbox_id", type=int, required=False)
@click.option("--older-than", type=Age(), default=None,
              help="Every mail not sent yet made longer ago than this (90m, 12h, 3d).")
@click.option("--to", "to", default=None, metavar="ADDRESS",
              help="Every mail not sent yet to this address (any +tag or case of it).")
@pass_settings
def outbox_discard(settings: Settings, outbox_id: int | None, older_than: timedelta | None,
                   to: str | None) -> None:
    """Never send this pending or failed mail, or every mail not sent yet (pending, held
    or failed) older than --older-than and/or to --to; each is kept, marked
    discarded."""
    if (outbox_id is None) == (older_than is None and to is None):
        raise click.UsageError("give an OUTBOX_ID, or --older-than and/or --to")
    db = database(settings)
    if outbox_id is not None:
        operations.discard(db, outbox_id)
        audit("outbox discard", str(outbox_id), "discarded")
        click.echo(f"outgoing mail {outbox_id} discarded")
        return
    done = operations.discard_matching(db, older_than=older_than, to=to)
    asked = " ".join(([f"--older-than {older_than}"] if older_than else [])
                     + ([f"--to {to}"] if to else []))
    audit("outbox discard", asked, f"discarded {done} mail(s)")
    click.echo(f"discarded {done} outgoing mail(s)")
