"""Commands that need no account: help and list."""

from __future__ import annotations

from sqlalchemy import func, select

from pbmserv.commands.base import (
    REGISTRY,
    Command,
    Context,
    Invocation,
    Result,
    all_commands,
    command,
)
from pbmserv.db.models import Board
from pbmserv.errors import PlayerError
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.render import render
from pbmserv.summary import status_line


def game_help(engine: AnyEngine) -> str:
    commands = [c for c in all_commands() if c.per_game]
    return render(
        f"help/{engine.name}.txt.j2",
        engine=engine,
        commands=commands,
        usage=lambda c: c.usage(engine.name),
    )


@command
class Help(Command):
    name = "help"
    arguments = "[topic]"
    summary = "this overview; 'help <command>' or 'help <game>' for more"
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if not inv.args:
            return Result(
                render("help/overview.txt.j2", commands=all_commands(),
                       engines=list(ENGINES.values()), address=ctx.settings.address),
                subject="pbmserv help",
            )
        topic = inv.args[0].lower()
        engine = get_engine(topic)
        if engine is not None:
            return Result(game_help(engine), subject=f"{engine.title} help")
        found = REGISTRY.get((False, topic)) or REGISTRY.get((True, topic))
        if found is None:
            raise PlayerError(
                f"there is no help topic {inv.args[0]!r}; topics are the command names "
                f"and the games ({', '.join(ENGINES)})"
            )
        return Result(render("help/command.txt.j2", command=found), subject=f"pbmserv help {topic}")


@command
class List(Command):
    name = "list"
    arguments = "[game...]"
    summary = "the games offered; with game names, their boards and how they stand"

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if not inv.args:
            counts = dict(ctx.session.execute(
                select(Board.game, func.count()).where(Board.finished.is_(False))
                .group_by(Board.game)
            ).tuples().all())
            games = [(e, counts.get(e.name, 0)) for e in ENGINES.values()]
            return Result(render("list.txt.j2", games=games), subject="pbmserv games")
        sections = []
        for name in inv.args:
            engine = get_engine(name)
            if engine is None:
                raise PlayerError(f"there is no game {name!r}; games: {', '.join(ENGINES)}")
            boards = ctx.session.scalars(
                select(Board).where(Board.game == engine.name).order_by(Board.number)
            ).all()
            sections.append((engine, [(b, status_line(engine, b)) for b in boards]))
        return Result(render("list_boards.txt.j2", sections=sections), subject="pbmserv boards")
