"""``pbmserv boards``: list, show, and end boards (abandon, adjudicate)."""

from __future__ import annotations

import click

from pbmserv import operations
from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.games import get_engine
from pbmserv.logs import audit
from pbmserv.notifications.views import status_line
from pbmserv.service import admin

_reason = click.option("--reason", default=None,
                       help="A few words for the players: shown with the result.")


@main.group()
def boards() -> None:
    """Boards of every game: list, show, abandon, adjudicate."""


@boards.command("list")
@click.option("--game", default=None, help="Only this game.")
@click.option("--all", "show_all", is_flag=True, help="Finished boards too.")
@pass_settings
def boards_list(settings: Settings, game: str | None, show_all: bool) -> None:
    """List boards: number, players, moves played and status."""
    with database(settings).reading() as session:
        for board in admin.boards(session, game, finished=show_all):
            engine = get_engine(board.game)
            status = status_line(engine, board) if engine else "(game not installed)"
            players = " vs ".join(p.user.userid for p in board.players)
            click.echo(f"{board.game} {board.number}  {players}  [{board.ply} moves] {status}")


@boards.command("show")
@click.argument("game")
@click.argument("number", type=int)
@pass_settings
def boards_show(settings: Settings, game: str, number: int) -> None:
    """A board as its players see it, with every move."""
    click.echo(operations.board_text(database(settings), game, number), nl=False)


@boards.command("abandon")
@click.argument("game")
@click.argument("number", type=int)
@_reason
@pass_settings
def boards_abandon(settings: Settings, game: str, number: int, reason: str | None) -> None:
    """End a board with no result (not rated; in a tournament it counts as a draw). Its
    players and watchers are mailed the board."""
    ended = operations.end_board(database(settings), settings, game, number, None, reason)
    audit("boards abandon", f"{game.lower()} {number}",
          f"ended with no result{f' ({reason})' if reason else ''}; {ended.mails} mail(s)")
    click.echo(ended.summary, nl=False)
    click.echo(f"{ended.mails} mail(s) queued")


@boards.command("adjudicate")
@click.argument("game")
@click.argument("number", type=int)
@click.argument("winner")
@_reason
@pass_settings
def boards_adjudicate(settings: Settings, game: str, number: int, winner: str,
                      reason: str | None) -> None:
    """End a board with WINNER (a player's userid, or draw) as its result, rated like
    any other. Its players and watchers are mailed the board."""
    ended = operations.end_board(database(settings), settings, game, number, winner, reason)
    audit("boards adjudicate", f"{game.lower()} {number}",
          f"result {winner}{f' ({reason})' if reason else ''}; {ended.mails} mail(s)")
    click.echo(ended.summary, nl=False)
    click.echo(f"{ended.mails} mail(s) queued")
