"""``pbmserv rules``: the games' rules, without a database."""

from __future__ import annotations

from typing import Any

import click

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
