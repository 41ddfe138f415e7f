"""Commands that need no account: help and list."""

from __future__ import annotations

from sqlalchemy import func, select

from pbmserv.bots import DRAW_PLIES, LEVELS
from pbmserv.commands.base import (
    REGISTRY,
    Command,
    Context,
    Invocation,
    Result,
    all_commands,
    command,
)
from pbmserv.db.models import Board, Seek
from pbmserv.db.status import BoardStatus, SeekStatus
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.notifications.views import status_line
from pbmserv.render import render
from pbmserv.service.clock import VACATION_DAYS_PER_YEAR
from pbmserv.service.consent import BOT_BOARDS_PER_PLAYER
from pbmserv.service.errors import PlayerError

#: help topics that are not commands or games: templates/help/<topic>.txt.j2
TOPICS = ("multiple", "clocks", "reply", "ratings", "tournament", "bots")


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
    summary = ("this overview; 'help <command>', 'help <game>', or one of the topics "
               + ", ".join(TOPICS))
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if not inv.args:
            return Result(
                render("help/overview.txt.j2", commands=all_commands(), topics=TOPICS,
                       engines=list(ENGINES.values()), address=ctx.settings.address),
                subject="pbmserv help",
            )
        topic = inv.args[0].lower()
        engine = get_engine(topic)
        if engine is not None:
            return Result(game_help(engine), subject=f"{engine.title} help")
        if topic in TOPICS:
            return Result(render(f"help/{topic}.txt.j2", address=ctx.settings.address,
                                 vacation_days=VACATION_DAYS_PER_YEAR, levels=LEVELS,
                                 bot_boards=BOT_BOARDS_PER_PLAYER, draw_plies=DRAW_PLIES),
                          subject=f"pbmserv help {topic}")
        found = REGISTRY.get((False, topic)) or REGISTRY.get((True, topic))
        if found is None:
            raise PlayerError(
                f"there is no help topic {inv.args[0][:40]!r}; topics are the command names, "
                f"the games ({', '.join(ENGINES)}) and {', '.join(TOPICS)}"
            )
        return Result(render("help/command.txt.j2", command=found), subject=f"pbmserv help {topic}")


@command
class List(Command):
    name = "list"
    arguments = "[game...]"
    summary = "the games offered; with game names, their boards and open challenges (seeks)"

    def run(self, ctx: Context, inv: Invocation) -> Result:
        session = ctx.session
        if not inv.args:
            counts = dict(session.execute(
                select(Board.game, func.count()).where(Board.status == BoardStatus.ACTIVE)
                .group_by(Board.game)
            ).tuples().all())
            seeks = dict(session.execute(
                select(Seek.game, func.count()).where(Seek.status == SeekStatus.OPEN)
                .group_by(Seek.game)
            ).tuples().all())
            games = [(e, counts.get(e.name, 0), seeks.get(e.name, 0)) for e in ENGINES.values()]
            return Result(render("list.txt.j2", games=games), subject="pbmserv games")
        sections = []
        for name in inv.args:
            engine = get_engine(name)
            if engine is None:
                raise PlayerError(f"there is no game {name[:40]!r}; games: {', '.join(ENGINES)}")
            boards = session.scalars(
                select(Board).where(Board.game == engine.name).order_by(Board.number)
            ).all()
            open_seeks = session.scalars(
                select(Seek).where(Seek.game == engine.name, Seek.status == SeekStatus.OPEN)
                .order_by(Seek.number)
            ).all()
            sections.append((engine, [(b, status_line(engine, b)) for b in boards], open_seeks))
        return Result(render("list_boards.txt.j2", sections=sections), subject="pbmserv boards")
