"""The ``pbmserv`` command line."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

import click
from sqlalchemy import select
from sqlalchemy.exc import OperationalError, ProgrammingError

from pbmserv.bots import BOT_NAMES, DEFAULT_MAX_PLIES, GameRecord, get_bot, play_match
from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import Board, InboundMessage, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.games.base import RuleError
from pbmserv.intake.store import store_message
from pbmserv.mail.send import Sender
from pbmserv.processing import process_message, process_pending
from pbmserv.summary import diagram, status_line

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
@click.pass_obj
def serve(settings: Settings, host: str, port: int) -> None:
    """Listen for mail over SMTP, process it and send the replies."""
    from pbmserv.server import Server

    logging.getLogger("pbmserv").setLevel(logging.INFO)
    db = _db(settings)
    upgrade(db)
    server = Server(db, settings, host, port)
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
@click.option("--interval", default=5.0, show_default=True)
@click.pass_obj
def work(settings: Settings, loop: bool, interval: float) -> None:
    """Process stored mail and send the outbox (for pipe setups without 'serve')."""
    db = _db(settings)
    upgrade(db)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while True:
        processed = process_pending(db, settings)
        sent = Sender(db, settings).send_due()
        if not loop:
            click.echo(f"processed {processed} message(s), sent {sent} mail(s)")
            return
        if stop.wait(interval):
            return


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
@click.option("--status", default=None, help="new, done, ignored or failed")
@click.option("--limit", default=50, show_default=True)
@click.pass_obj
def inbox_list(settings: Settings, status: str | None, limit: int) -> None:
    """List stored messages, newest first."""
    with _db(settings).transaction() as session:
        query = select(InboundMessage).order_by(InboundMessage.id.desc()).limit(limit)
        if status:
            query = query.where(InboundMessage.status == status)
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
        if m.status == "done":
            raise click.ClickException(f"message {message_id} was processed already")
        m.status, m.error = "new", None
    click.echo(f"message {message_id}: {process_message(db, settings, message_id)}")


@main.group()
def outbox() -> None:
    """Outgoing mail."""


@outbox.command("list")
@click.option("--status", default="pending", show_default=True, help="pending, sent or failed")
@click.option("--limit", default=50, show_default=True)
@click.pass_obj
def outbox_list(settings: Settings, status: str, limit: int) -> None:
    """List outgoing mail by status."""
    with _db(settings).transaction() as session:
        for m in session.scalars(select(OutboxMessage).where(OutboxMessage.status == status)
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
                OutboxMessage.status.in_(("pending", "failed")))):
            m.status = "pending"
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
            query = query.where(Board.finished.is_(False))
        for board in session.scalars(query):
            engine = get_engine(board.game)
            status = status_line(engine, board) if engine else "(game not installed)"
            players = " vs ".join(p.user.userid for p in board.players)
            click.echo(f"{board.game} {board.number}  {players}  [{board.ply} moves] {status}")


@main.group()
def users() -> None:
    """Player accounts."""


@users.command("list")
@click.pass_obj
def users_list(settings: Settings) -> None:
    """List accounts."""
    with _db(settings).transaction() as session:
        for u in session.scalars(select(User).order_by(User.key)):
            closed = f" (closed {u.closed_at:%Y-%m-%d})" if u.closed_at else ""
            click.echo(f"{u.userid:24} {u.email}{closed}")


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


if __name__ == "__main__":  # pragma: no cover
    main()
