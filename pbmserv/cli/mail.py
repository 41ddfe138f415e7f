"""Commands that take mail in and work on it: serve, deliver, work, postfix-maps."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import NoReturn

import click

from pbmserv import operations, postfix
from pbmserv.cli.app import (
    EX_TEMPFAIL,
    EX_UNAVAILABLE,
    App,
    database,
    hard_exit,
    main,
    pass_app,
    pass_settings,
)
from pbmserv.config import Settings, masked_url, parse_listen, relay_url
from pbmserv.db import migrate
from pbmserv.db.problems import describe
from pbmserv.intake.store import OverQuota, Quota, store_message
from pbmserv.logs import plain_stderr
from pbmserv.processing import process_pending
from pbmserv.sender.delivery import Sender
from pbmserv.worker import WorkLoop

log = logging.getLogger("pbmserv.cli")
#: seconds between two looks of 'serve' at the processes it runs
WATCH_EVERY = 2.0


def database_where(url: str) -> str:
    """The database URL, its password masked, a SQLite file's full path added."""
    shown = masked_url(url)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        shown += f" ({Path(url.removeprefix('sqlite:///')).resolve()})"
    return shown


def _listen_option(value: str | None) -> str | None:
    try:
        return parse_listen(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@main.command()
@click.option("--smtp", default=None, metavar="HOST:PORT|off",
              help="Where to listen for SMTP (default: the settings' smtp, 127.0.0.1:2525).")
@click.option("--lmtp", default=None, metavar="HOST:PORT|PATH|off",
              help="Where to listen for LMTP: host:port or a Unix socket's path "
                   "(default: the settings' lmtp, off).")
@click.option("--host", default=None, help="SMTP address to listen on (older form of --smtp).")
@click.option("--port", default=None, type=int, help="SMTP port (older form of --smtp).")
@click.option("--workers", default=None, type=click.IntRange(0, 64),
              help="Worker processes (processing, clock, sending); 0: a thread instead "
                   "(default: the settings' workers, 1).")
@click.option("--web", "web", default=None, metavar="HOST:PORT",
              help="Also serve the read-only web pages there.")
@click.option("--bots/--no-bots", default=True, show_default=True,
              help="Run the bots' loop: bot1..bot3 answer the games they play.")
@pass_app
def serve(app: App, smtp: str | None, lmtp: str | None, host: str | None, port: int | None,
          workers: int | None, web: str | None, bots: bool) -> None:
    """Take mail (SMTP, LMTP and/or an IMAP mailbox), process it and send the replies."""
    from pbmserv.server import Server

    settings = app.settings
    secret = operations.secret_check(settings.secret)
    if secret.level == operations.FAIL:  # what 'config check' fails, serve refuses
        raise click.ClickException(f"not started: the setting secret is {secret.text}")
    if host is not None or port is not None:
        smtp = f"{host or '127.0.0.1'}:{port or 2525}"
    smtp_at = _listen_option(smtp) if smtp is not None else settings.smtp
    lmtp_at = _listen_option(lmtp) if lmtp is not None else settings.lmtp
    if smtp_at is None and lmtp_at is None and settings.imap is None:
        raise click.UsageError("no mail to take: set smtp, lmtp or imap (or --smtp, --lmtp)")
    if smtp_at is not None and smtp_at.startswith("/"):
        raise click.UsageError("SMTP listens on host:port only; a Unix socket is for --lmtp")
    web_at = None
    if web is not None:
        web_host, _, web_port = web.rpartition(":")
        if not web_host or not web_port.isdigit():
            raise click.BadParameter("write it as HOST:PORT, like 127.0.0.1:8080",
                                     param_hint="--web")
        web_at = (web_host, int(web_port))
    db = database(settings)
    migrate.ensure(db)
    smtp_host, _, smtp_port = (smtp_at or ":").rpartition(":")
    server = Server(db, settings, smtp_host.strip("[]"),
                    int(smtp_port) if smtp_at else None, lmtp=lmtp_at,
                    workers=settings.workers if workers is None else workers,
                    web=web_at, worker_options=app.worker_options(), bots=bots)
    listeners = [f"{kind} {where}" for kind, where in (("SMTP", smtp_at), ("LMTP", lmtp_at))
                 if where]
    try:
        server.start()
    except OSError as exc:
        db.dispose()
        raise click.ClickException(f"cannot listen on {' and '.join(listeners)}: "
                                   f"{describe(exc)}") from None
    where = (f"relay {relay_url(settings)}" if settings.relay
             else f"the Maildir {settings.maildir.resolve()}")
    if settings.imap is not None:
        listeners.append(f"the IMAP mailbox {settings.imap}")
    log.info("taking mail by %s for %s; replies go to %s", " and ".join(listeners),
             ", ".join(settings.addresses), where)
    log.info("database %s; settings: %s", database_where(settings.database_url),
             settings.source or "no file (defaults and PBMSERV_* variables)")
    # whether alerts can reach the administrator: the relay is asked (a while, if it
    # does not answer), beside the work that started
    threading.Thread(target=_check_admin, args=(settings,), name="admin-check",
                     daemon=True).start()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(WATCH_EVERY):
        server.watch()  # a worker that died is started again
    log.info("stopping")
    server.stop()
    db.dispose()


def _check_admin(settings: Settings) -> None:
    """Log whether the relay takes mail for the administrator: an ERROR line with the
    reason and the fix when it does not (alerts would not arrive)."""
    try:
        check = operations.admin_check(settings)
    except Exception as exc:  # never the end of serve
        log.warning("admin_address could not be tried: %s", describe(exc))
        return
    if check.level == operations.OK:
        log.info("admin_address: %s", check.text)
    else:
        (log.error if check.level == operations.FAIL else log.warning)(
            "admin_address: %s ('pbmserv config check' tries it again)", check.text)


def _tempfail(message: str) -> NoReturn:
    """Tell the MTA to keep the mail and try again later (it logs the message)."""
    click.echo(f"pbmserv: {message}; the mail stays queued and is tried again", err=True)
    hard_exit(EX_TEMPFAIL)


@main.command()
@click.option("--sender", "sender", default=None,
              help="Envelope sender (Postfix: ${sender}); empty means a bounce.")
@click.pass_context
def deliver(ctx: click.Context, sender: str | None) -> None:
    """Take one message on standard input (for an MTA pipe).

    Exit 0: stored. Exit 75 (the MTA keeps it and retries): anything that keeps it
    from being stored, settings, database or disk. Exit 69 (refused for good): only a
    message too large ever to be taken. Nothing else, whatever happens after the
    message is stored."""
    logging.raiseExceptions = False  # a log that fails must not change the answer
    plain_stderr()  # the MTA's log line shows it: "pbmserv: received #12: <id> ..."
    app: App = ctx.find_object(App)  # type: ignore[assignment]
    try:
        raw = sys.stdin.buffer.read()
        settings = app.settings
    except Exception as exc:
        _tempfail(describe(exc))
    if len(raw) > settings.max_message_size:
        click.echo(f"pbmserv: the message is {len(raw)} bytes, larger than "
                   f"max_message_size ({settings.max_message_size} bytes): refused", err=True)
        hard_exit(EX_UNAVAILABLE)
    envelope_from = "" if sender is None else (sender.strip() or "<>")
    try:
        db = database(settings, any_schema=True)
        quota = Quota.of(settings)
        try:
            stored = store_message(db, raw, envelope_from, quota)
        except Exception:  # a new or older schema: migrate it, and try once more
            migrate.ensure(db)
            stored = store_message(db, raw, envelope_from, quota)
    except Exception as exc:
        log.debug("could not store the message", exc_info=True)
        _tempfail(f"could not store the message: {describe(exc, settings.database_url)}")
    if isinstance(stored, OverQuota):  # not stored: the MTA keeps it and tries later
        _tempfail(f"not stored: {stored}")
    # stored: from here on nothing is lost; the rest may be retried by any worker.
    # Everything pending is processed oldest first (this mail included), so mail that
    # arrives in quick succession through parallel pipes is still applied in order.
    try:
        migrate.check(db)  # never processed by code older than the schema
        if stored is not None:
            process_pending(db, settings)
        Sender(db, settings).send_due()
        db.dispose()
    except Exception as exc:  # the message is safe; a later run finishes the job
        log.warning("stored, processing deferred: %s", describe(exc, settings.database_url))
    hard_exit(0)


@main.command()
@click.option("--loop", is_flag=True, help="Keep running, every few seconds.")
@click.option("--interval", default=2.0, show_default=True,
              help="Seconds between rounds when nothing wakes the loop.")
@click.option("--wake-fd", type=int, default=None, hidden=True,
              help="A pipe that wakes the loop (set by 'serve').")
@pass_settings
def work(settings: Settings, loop: bool, interval: float, wake_fd: int | None) -> None:
    """Process stored mail, run the clocks and send the outbox (for pipe setups
    without 'serve')."""
    db = database(settings)
    if wake_fd is None:
        migrate.ensure(db)  # a worker started by 'serve' finds the schema up to date
    worker = WorkLoop(db, settings, wake_fd=wake_fd, interval=interval)
    if not loop:
        processed, sent = worker.drain()
        click.echo(f"processed {processed} message(s), sent {sent} mail(s)")
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: worker.stop())
    log.info("working: processing, clock and sending")
    worker.run()


@main.command("postfix-maps")
@click.option("--pipe", "pipe", default=None, metavar="SERVICE",
              help="Route to this master.cf pipe service (pbmserv) instead of LMTP.")
@click.option("--output-dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help=f"Write {postfix.TRANSPORT_FILE}, {postfix.RECIPIENTS_FILE} and "
                   f"{postfix.ALIASES_FILE} there and run postmap on them, instead of "
                   "printing them.")
@click.option("--force", is_flag=True,
              help="Overwrite a map that holds lines pbmserv did not write (the old file is "
                   "kept as NAME.bak).")
@pass_settings
def postfix_maps(settings: Settings, pipe: str | None, output_dir: Path | None,
                 force: bool) -> None:
    """Postfix's maps for the game addresses: transport (to pbmserv's LMTP listener, or a
    pipe), recipients (so Postfix knows them, and postmaster@ and abuse@ of each game
    domain) and aliases (postmaster@ and abuse@ to admin_address, RFC 2142). A map
    holding lines pbmserv did not write (a fix by hand) is left alone unless --force."""
    maps = {postfix.TRANSPORT_FILE: postfix.transport_map(settings, pipe),
            postfix.RECIPIENTS_FILE: postfix.recipient_map(settings),
            postfix.ALIASES_FILE: postfix.alias_map(settings)}
    if output_dir is None:
        for name, text in maps.items():
            click.echo(f"# {name}\n{text}")
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    lost = {}
    for name, text in maps.items():
        path = output_dir / name
        old = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if postfix.hand_changes(old, text):
            lost[name] = postfix.hand_changes(old, text)
    if lost and not force:
        for name, lines in lost.items():
            click.echo(f"{output_dir / name} was changed since pbmserv wrote it (a fix by "
                       "hand?): these lines would be lost:", err=True)
            for line in lines:
                click.echo(f"    {line}", err=True)
        raise click.ClickException(
            "nothing written: put such lines in a map of your own (Postfix takes several: "
            "relay_recipient_maps = hash:/etc/postfix/pbmserv_recipients "
            "hash:/etc/postfix/my_recipients), or run again with --force (the old file is "
            "kept as NAME.bak)")
    postmap = shutil.which("postmap") or next(
        (p for p in ("/usr/sbin/postmap", "/usr/local/sbin/postmap") if Path(p).exists()), None)
    for name, text in maps.items():
        path = output_dir / name
        if name in lost:
            shutil.copy2(path, path.with_name(name + ".bak"))
            click.echo(f"kept the old {name} as {path.with_name(name + '.bak')}")
        path.write_text(postfix.with_header(text), encoding="utf-8")
        if postmap is not None:
            subprocess.run([postmap, f"hash:{path}"], check=True)
        click.echo(f"wrote {path}" + ("" if postmap else " (postmap not found: run it)"))
    click.echo("then: postfix reload")
