"""The ``pbmserv`` command line."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

import click
from sqlalchemy import select
from sqlalchemy.exc import OperationalError, ProgrammingError

from pbmserv.bot_loop import BotLoop
from pbmserv.bots import BOT_NAMES, DEFAULT_MAX_PLIES, GameRecord, get_bot, play_match
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import Board, InboundMessage, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus, InboundStatus, OutboxStatus
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.games.base import RuleError
from pbmserv.intake.store import store_message
from pbmserv.notifications.views import diagram, status_line
from pbmserv.processing import process_message, process_pending
from pbmserv.records import RecordError, dump_json, dump_text, parse_records
from pbmserv.sender.delivery import Sender
from pbmserv.service import throttle
from pbmserv.service.accounts import existing_user, set_address, set_password
from pbmserv.service.archive import finished_records, import_records
from pbmserv.service.errors import PlayerError
from pbmserv.worker import WorkLoop

EX_TEMPFAIL = 75
EX_UNAVAILABLE = 69


def _db(settings: Settings) -> Database:
    return Database(settings.database_url)


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Log more.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """pbmserv: a play-by-email board game server."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        ctx.obj = Settings.from_env()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=2525, show_default=True, help="SMTP port.")
@click.option("--workers", default=1, show_default=True,
              help="Worker processes (processing, clock, sending); 0: a thread instead.")
@click.option("--web", "web", default=None, metavar="HOST:PORT",
              help="Also serve the read-only web pages there.")
@click.pass_obj
def serve(settings: Settings, host: str, port: int, workers: int, web: str | None) -> None:
    """Listen for mail over SMTP, process it and send the replies."""
    from pbmserv.server import Server

    logging.getLogger("pbmserv").setLevel(logging.INFO)
    db = _db(settings)
    upgrade(db)
    web_at = None
    if web is not None:
        web_host, _, web_port = web.rpartition(":")
        if not web_host or not web_port.isdigit():
            raise click.BadParameter("write it as HOST:PORT, like 127.0.0.1:8080",
                                     param_hint="--web")
        web_at = (web_host, int(web_port))
    server = Server(db, settings, host, port, workers=workers, web=web_at)
    server.start()
    where = (f"relay {settings.relay[0]}:{settings.relay[1]}" if settings.relay
             else f"Maildir {settings.maildir}")
    click.echo(f"pbmserv: listening on {host}:{port} for {', '.join(settings.addresses)}; "
               f"replies go to {where}", err=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop()
    db.dispose()


@main.command()
@click.option("--sender", "sender", default=None,
              help="Envelope sender (Postfix: ${sender}); empty means a bounce.")
@click.pass_obj
def deliver(settings: Settings, sender: str | None) -> None:
    """Take one message on standard input (for an MTA pipe); exit 75 if it cannot be stored."""
    envelope_from = "" if sender is None else (sender.strip() or "<>")
    raw = sys.stdin.buffer.read()
    if len(raw) > settings.max_message_size:
        click.echo(f"pbmserv: message larger than {settings.max_message_size} bytes", err=True)
        sys.exit(EX_UNAVAILABLE)
    try:
        db = _db(settings)
        try:
            stored = store_message(db, raw, envelope_from)
        except (OperationalError, ProgrammingError):  # a new database: create it, try again
            upgrade(db)
            stored = store_message(db, raw, envelope_from)
    except Exception as exc:
        click.echo(f"pbmserv: could not store the message: {exc}", err=True)
        sys.exit(EX_TEMPFAIL)
    # stored: from here on nothing is lost; the rest may be retried by any worker.
    # Everything pending is processed oldest first (this mail included), so mail that
    # arrives in quick succession through parallel pipes is still applied in order.
    try:
        if stored is not None:
            process_pending(db, settings)
        Sender(db, settings).send_due()
    except Exception as exc:  # the message is safe; a later run finishes the job
        click.echo(f"pbmserv: stored, processing deferred: {exc}", err=True)


@main.command()
@click.option("--loop", is_flag=True, help="Keep running, every few seconds.")
@click.option("--interval", default=2.0, show_default=True,
              help="Seconds between rounds when nothing wakes the loop.")
@click.option("--wake-fd", type=int, default=None, hidden=True,
              help="A pipe that wakes the loop (set by 'serve').")
@click.pass_obj
def work(settings: Settings, loop: bool, interval: float, wake_fd: int | None) -> None:
    """Process stored mail, run the clocks and send the outbox (for pipe setups
    without 'serve')."""
    db = _db(settings)
    if wake_fd is None:
        upgrade(db)  # a worker started by 'serve' finds the schema up to date
    worker = WorkLoop(db, settings, wake_fd=wake_fd, interval=interval)
    if not loop:
        processed, sent = worker.drain()
        click.echo(f"processed {processed} message(s), sent {sent} mail(s)")
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: worker.stop())
    worker.run()


@main.command("bots")
@click.option("--loop", is_flag=True, help="Keep running (as 'serve' runs it).")
@click.option("--interval", default=1.0, show_default=True,
              help="Seconds between looks when no bot is waited for.")
@click.pass_obj
def bots_command(settings: Settings, loop: bool, interval: float) -> None:
    """Let the server's bots (bot1, bot2, bot3) make the moves and answers they owe."""
    worker = BotLoop(_db(settings), settings, interval=interval)
    if not loop:
        click.echo(f"bots played {worker.once()} turn(s)")
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: worker.stop())
    worker.run()


# -- database -----------------------------------------------------------------------
@main.group()
def db() -> None:
    """Database administration."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(settings: Settings) -> None:
    """Create or migrate the database schema to the latest version."""
    upgrade(_db(settings))
    click.echo("database is up to date")


# -- inbox and outbox -----------------------------------------------------------------
@main.group()
def inbox() -> None:
    """Stored incoming mail."""


@inbox.command("list")
@click.option("--status", default=None, type=click.Choice([s.value for s in InboundStatus]),
              help="Only messages of this status.")
@click.option("--limit", default=50, show_default=True)
@click.pass_obj
def inbox_list(settings: Settings, status: str | None, limit: int) -> None:
    """List stored messages, newest first."""
    with _db(settings).transaction() as session:
        query = select(InboundMessage).order_by(InboundMessage.id.desc()).limit(limit)
        if status:
            query = query.where(InboundMessage.status == InboundStatus(status))
        for m in session.scalars(query):
            click.echo(f"{m.id:6} {m.status:8} {m.received_at:%Y-%m-%d %H:%M} "
                       f"{m.envelope_from or '-'}  {(m.error or '').splitlines()[-1:]}")


@inbox.command("show")
@click.argument("message_id", type=int)
@click.pass_obj
def inbox_show(settings: Settings, message_id: int) -> None:
    """Print a stored message as received, and its error if any."""
    with _db(settings).transaction() as session:
        m = session.get(InboundMessage, message_id)
        if m is None:
            raise click.ClickException(f"no stored message {message_id}")
        click.echo(m.raw.decode("utf-8", "replace"))
        if m.error:
            click.echo(f"--- {m.status}:\n{m.error}")


@inbox.command("replay")
@click.argument("message_id", type=int)
@click.pass_obj
def inbox_replay(settings: Settings, message_id: int) -> None:
    """Process a failed (or ignored) message again, e.g. after a fix."""
    db = _db(settings)
    with db.transaction() as session:
        m = session.get(InboundMessage, message_id)
        if m is None:
            raise click.ClickException(f"no stored message {message_id}")
        if m.status is InboundStatus.DONE:
            raise click.ClickException(f"message {message_id} was processed already")
        m.status, m.error = InboundStatus.NEW, None
    click.echo(f"message {message_id}: {process_message(db, settings, message_id)}")


@main.group()
def outbox() -> None:
    """Outgoing mail."""


@outbox.command("list")
@click.option("--status", default=OutboxStatus.PENDING.value, show_default=True,
              type=click.Choice([s.value for s in OutboxStatus]))
@click.option("--limit", default=50, show_default=True)
@click.pass_obj
def outbox_list(settings: Settings, status: str, limit: int) -> None:
    """List outgoing mail by status."""
    with _db(settings).transaction() as session:
        for m in session.scalars(select(OutboxMessage)
                                 .where(OutboxMessage.status == OutboxStatus(status))
                                 .order_by(OutboxMessage.id.desc()).limit(limit)):
            click.echo(f"{m.id:6} {m.status:8} tries={m.attempts} {m.to_addr}  {m.subject}"
                       + (f"  [{m.last_error}]" if m.last_error else ""))


@outbox.command("retry")
@click.pass_obj
def outbox_retry(settings: Settings) -> None:
    """Send every pending mail now, whatever its back-off; failed mail is queued again."""
    db = _db(settings)
    with db.transaction() as session:
        for m in session.scalars(select(OutboxMessage).where(
                OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.FAILED)))):
            m.status, m.leased_by = OutboxStatus.PENDING, None
            m.next_attempt_at = m.created_at
    click.echo(f"sent {Sender(db, settings).send_due(limit=100000)} mail(s)")


@main.group()
def boards() -> None:
    """Boards of every game."""


@boards.command("list")
@click.option("--game", default=None, help="Only this game.")
@click.option("--all", "show_all", is_flag=True, help="Finished boards too.")
@click.pass_obj
def boards_list(settings: Settings, game: str | None, show_all: bool) -> None:
    """List boards: number, players, moves played and status."""
    with _db(settings).transaction() as session:
        query = select(Board).order_by(Board.game, Board.number)
        if game:
            query = query.where(Board.game == game.lower())
        if not show_all:
            query = query.where(Board.status == BoardStatus.ACTIVE)
        for board in session.scalars(query):
            engine = get_engine(board.game)
            status = status_line(engine, board) if engine else "(game not installed)"
            players = " vs ".join(p.user.userid for p in board.players)
            click.echo(f"{board.game} {board.number}  {players}  [{board.ply} moves] {status}")


@main.group()
def users() -> None:
    """Player accounts."""


@users.command("unlock")
@click.argument("userid")
@click.pass_obj
def users_unlock(settings: Settings, userid: str) -> None:
    """Let USERID's password be checked again at once (after wrong guesses)."""
    with _db(settings).transaction() as session:
        cleared = throttle.clear(session, throttle.account_key(userid))
    click.echo(f"{userid}: " + ("unlocked" if cleared else "nothing was held"))


@main.group("throttle")
def throttle_group() -> None:
    """Wrong-password counts, per account (user:ID) and per sender (sender:ADDRESS)."""


@throttle_group.command("list")
@click.pass_obj
def throttle_list(settings: Settings) -> None:
    """List the keys with wrong passwords counted, and their locks."""
    with _db(settings).transaction() as session:
        for row in throttle.held(session):
            lock = f"locked until {row.locked_until:%Y-%m-%d %H:%M:%S} UTC" \
                if row.locked_until else "not locked"
            click.echo(f"{row.key}  {row.failures} failure(s), last "
                       f"{row.last_failure_at:%Y-%m-%d %H:%M:%S} UTC, {lock}")


@throttle_group.command("clear")
@click.argument("key", required=False)
@click.option("--all", "clear_all", is_flag=True, help="Clear every key.")
@click.pass_obj
def throttle_clear(settings: Settings, key: str | None, clear_all: bool) -> None:
    """Forget the failures of KEY (user:ID or sender:ADDRESS), or of all keys."""
    if not key and not clear_all:
        raise click.UsageError("give a KEY (see 'pbmserv throttle list') or --all")
    with _db(settings).transaction() as session:
        cleared = throttle.clear(session, None if clear_all else key)
    click.echo(f"cleared {cleared} key(s)")


@users.command("list")
@click.pass_obj
def users_list(settings: Settings) -> None:
    """List accounts."""
    with _db(settings).transaction() as session:
        for u in session.scalars(select(User).order_by(User.key)):
            closed = f" (closed {u.closed_at:%Y-%m-%d})" if u.closed_at else ""
            click.echo(f"{u.userid:24} {u.email}{closed}")


@users.command("enable")
@click.argument("userid")
@click.argument("email")
@click.password_option(help="The new password (asked for, not echoed, if not given).")
@click.pass_obj
def users_enable(settings: Settings, userid: str, email: str, password: str) -> None:
    """Give USERID's account a password and the address EMAIL: for an account an
    import made, which no password opens, to be handed to its player."""
    try:
        with _db(settings).transaction() as session:
            user = existing_user(session, userid)
            set_password(user, password)
            set_address(user, email)
    except PlayerError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"{userid}: password and address set; mail goes to {email.lower()}")


# -- game records -----------------------------------------------------------------------
@main.command("export")
@click.option("--game", default=None, help="Only this game.")
@click.option("--format", "form", default="text", show_default=True,
              type=click.Choice(["text", "json"]), help="PGN-like text, or JSON.")
@click.option("--since", default=None, type=click.DateTime(["%Y-%m-%d"]),
              help="Only games that ended on or after this day (YYYY-MM-DD, UTC).")
@click.option("-o", "--output", default="-", type=click.File("w", encoding="utf-8"),
              help="Write to this file instead of standard output.")
@click.pass_obj
def export(settings: Settings, game: str | None, form: str, since: datetime | None,
           output: TextIO) -> None:
    """Write the record of every finished game."""
    if game is not None and get_engine(game) is None:
        raise click.BadParameter(f"unknown game {game!r}; games: {', '.join(ENGINES)}",
                                 param_hint="--game")
    with _db(settings).reading() as session:
        records = finished_records(session, settings.server_name,
                                   game=game.lower() if game else None,
                                   since=since.replace(tzinfo=UTC) if since else None)
    if records:
        output.write(dump_json(records) if form == "json" else dump_text(records))
    click.echo(f"exported {len(records)} game(s)", err=True)


@main.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8-sig"))
@click.pass_obj
def import_(settings: Settings, file: TextIO) -> None:
    """Load game records (text or JSON, as written by export), every move replayed;
    a file with any bad record is refused whole."""
    try:
        records = parse_records(file.read())
        db = _db(settings)
        upgrade(db)
        with db.transaction() as session:
            report = import_records(session, records, utcnow())
    except RecordError as exc:
        raise click.ClickException(f"nothing imported: {exc}") from None
    click.echo(f"imported {len(report.boards)} game(s)"
               + (f", skipped {len(report.skipped)} already here" if report.skipped else "")
               + (f"; new disabled accounts: {', '.join(report.users)}" if report.users
                  else ""))


# -- rules ------------------------------------------------------------------------------
def _position(game: str, options: tuple[str, ...], after: str) -> tuple[AnyEngine, Any]:
    engine = get_engine(game)
    if engine is None:
        raise click.BadParameter(f"unknown game {game!r}; games: {', '.join(ENGINES)}",
                                 param_hint="GAME")
    try:
        pos = engine.new(engine.check_options(options))
        for text in after.split():
            pos, _ = engine.play(pos, text)
    except RuleError as exc:
        raise click.ClickException(str(exc)) from None
    return engine, pos


_game_arg = click.argument("game")
_option_opt = click.option("-o", "--option", "options", multiple=True,
                           help="A challenge option, like -o -simple (repeatable).")
_after_opt = click.option("--after", default="", help='Moves played first: "a1-a2 e1-e2".')


@main.group()
def rules() -> None:
    """The games' rules, without a database: legal moves, perft counts, boards."""


@rules.command("moves")
@_game_arg
@_option_opt
@_after_opt
def rules_moves(game: str, options: tuple[str, ...], after: str) -> None:
    """Print the legal moves of the player to move, one per line."""
    engine, pos = _position(game, options, after)
    if engine.outcome(pos) is None:
        for move in engine.legal_moves(pos):
            click.echo(engine.format_move(pos, move))


@rules.command("perft")
@_game_arg
@click.argument("depth", type=click.IntRange(0, 12))
@_option_opt
@_after_opt
def rules_perft(game: str, depth: int, options: tuple[str, ...], after: str) -> None:
    """Print the number of move sequences DEPTH moves long."""
    engine, pos = _position(game, options, after)
    click.echo(engine.perft(pos, depth))


@rules.command("show")
@_game_arg
@_option_opt
@_after_opt
def rules_show(game: str, options: tuple[str, ...], after: str) -> None:
    """Print the board."""
    engine, pos = _position(game, options, after)
    click.echo(diagram(engine, pos), nl=False)
    outcome = engine.outcome(pos)
    if outcome is None:
        click.echo(f"{engine.seats[engine.to_move(pos)]} to move.")
    else:
        who = "draw" if outcome.winner is None else f"{engine.seats[outcome.winner]} wins"
        click.echo(f"Game over, {who}: {outcome.reason}.")


@rules.command("play")
@_game_arg
@click.argument("first")
@click.argument("second")
@click.option("-n", "--games", default=2, show_default=True, type=click.IntRange(1),
              help="Games to play; FIRST moves first in the odd-numbered ones.")
@_option_opt
@click.option("--seed", default=0, show_default=True, help="Seed of the bots' choices.")
@click.option("--max-plies", default=DEFAULT_MAX_PLIES, show_default=True,
              type=click.IntRange(1), help="A game this long is a draw (move limit).")
def rules_play(game: str, first: str, second: str, games: int, options: tuple[str, ...],
               seed: int, max_plies: int) -> None:
    """Let two bots (random, bot1, bot2, bot3) play GAME and print the score."""
    engine, _ = _position(game, options, "")
    bots = []
    for name, hint in ((first, "FIRST"), (second, "SECOND")):
        bot = get_bot(name)
        if bot is None:
            raise click.BadParameter(f"unknown bot {name!r}; bots: {', '.join(BOT_NAMES)}",
                                     param_hint=hint)
        bots.append(bot)
    names = {"a": f"{bots[0].name}", "b": f"{bots[1].name}"}
    if names["a"] == names["b"]:
        names = {"a": f"{names['a']}(A)", "b": f"{names['b']}(B)"}

    def report(number: int, record: GameRecord) -> None:
        seats = (names[record.first], names["b" if record.first == "a" else "a"])
        won = "draw" if record.winner is None else f"{names[record.winner]} wins"
        click.echo(f"game {number + 1}: {seats[0]} ({engine.seats[0]}) vs {seats[1]} "
                   f"({engine.seats[1]}): {won} after {record.plies} plies, {record.reason}")

    result = play_match(engine, bots[0], bots[1], games, engine.check_options(options), seed,
                        max_plies, on_game=report)
    click.echo(f"{names['a']} {result.wins_a} - {names['b']} {result.wins_b} "
               f"({result.draws} draws)")
    for key in ("a", "b"):
        times = result.times[key]
        click.echo(f"{names[key]}: {times.count} moves, CPU time a move: mean "
                   f"{times.mean:.3f} s, max {times.longest:.3f} s")


# -- web pages --------------------------------------------------------------------------
@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, help="HTTP port.")
@click.pass_obj
def web(settings: Settings, host: str, port: int) -> None:
    """Serve the read-only web pages (games, boards, players, tournaments) over HTTP;
    the database is only read ('serve' or 'db upgrade' creates it)."""
    from pbmserv.web import serve as serve_web

    db = _db(settings)
    click.echo(f"pbmserv: web pages on http://{host}:{port}/", err=True)
    serve_web(db, settings, host, port)
    db.dispose()


if __name__ == "__main__":  # pragma: no cover
    main()
