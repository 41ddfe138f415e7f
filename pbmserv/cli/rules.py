"""``pbmserv rules``: the games' rules, without a database."""

from __future__ import annotations

from typing import Any

import click

from pbmserv.bots import BOT_NAMES, DEFAULT_MAX_PLIES, GameRecord, get_bot, play_match
from pbmserv.cli.app import main
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.games.base import RuleError
from pbmserv.notifications.views import diagram


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
def _split_options(_ctx: click.Context, _param: click.Parameter,
                   value: tuple[str, ...]) -> tuple[str, ...]:
    """-o -small -o -single and -o "-small -single" alike."""
    return tuple(word for given in value for word in given.split())


_option_opt = click.option("-o", "--option", "options", multiple=True, callback=_split_options,
                           help='A challenge option, like -o -simple (repeatable, or several '
                                'in one: -o "-small -single").')
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
