"""Commands that need no account: help and list."""

from __future__ import annotations

from pbmserv.bots import DRAW_PLIES, LEVELS
from pbmserv.commands.args import small_number
from pbmserv.commands.base import Command, Context, Invocation, Registry, Result
from pbmserv.db.status import BoardStatus
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.i18n import N_
from pbmserv.notifications.subjects import our_subject
from pbmserv.notifications.views import status_line
from pbmserv.reads.boards import board_counts, open_seek_counts, open_seeks
from pbmserv.reads.pages import PAGE_SIZE, boards_of_game
from pbmserv.render import render
from pbmserv.service.clock import VACATION_DAYS_PER_YEAR
from pbmserv.service.consent import BOT_BOARDS_PER_PLAYER
from pbmserv.service.errors import PlayerError

#: help topics that are not commands or games: templates/help/<topic>.txt.j2
TOPICS = ("multiple", "clocks", "reply", "ratings", "tournament", "bots")
#: the most open challenges of one game 'list game' shows (the oldest first)
SEEKS_LISTED = 50


def game_help(engine: AnyEngine, commands: Registry) -> str:
    return render(
        f"help/{engine.name}.txt.j2",
        engine=engine,
        commands=commands.per_game(),
        usage=lambda c: c.usage(engine.name),
    )


class Help(Command):
    name = "help"
    arguments = "[topic]"
    summary = ("this overview; 'help <command>', 'help <game>', or one of the topics "
               + ", ".join(TOPICS))
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if not inv.args:
            return Result(
                render("help/overview.txt.j2", commands=ctx.commands.commands, topics=TOPICS,
                       engines=list(ENGINES.values()), address=ctx.settings.address),
                subject=our_subject(ctx.settings, "help", colon=False),
            )
        topic = inv.args[0].lower()
        engine = get_engine(topic)
        if engine is not None:
            return Result(game_help(engine, ctx.commands), subject=f"{engine.title} help")
        if topic in TOPICS:
            return Result(render(f"help/{topic}.txt.j2", address=ctx.settings.address,
                                 vacation_days=VACATION_DAYS_PER_YEAR, levels=LEVELS,
                                 bot_boards=BOT_BOARDS_PER_PLAYER, draw_plies=DRAW_PLIES),
                          subject=our_subject(ctx.settings, f"help {topic}", colon=False))
        found = ctx.commands.get(topic)
        if found is None:
            raise PlayerError(
                f"there is no help topic {inv.args[0][:40]!r}; topics are the command names, "
                f"the games ({', '.join(ENGINES)}) and {', '.join(TOPICS)}"
            )
        return Result(render("help/command.txt.j2", command=found),
                      subject=our_subject(ctx.settings, f"help {topic}", colon=False))


def list_words(words: list[str]) -> tuple[list[AnyEngine], int | None]:
    """The games of ``list game... [before N]``, each once, and N (None if not given);
    a word that is neither is refused by its place, never quoted (it may be a password
    written after the wrong command)."""
    engines: list[AnyEngine] = []
    before = None
    rest = list(words)
    if len(rest) >= 2 and rest[-2].lower() == "before":
        before = small_number(rest[-1])
        if before is None:
            raise PlayerError(N_("'before' takes a board number, like 'before 1234'"),
                              usage=True)
        rest = rest[:-2]
    for place, word in enumerate(rest, start=1):
        engine = get_engine(word)
        if engine is None:
            raise PlayerError(f"word {place} after 'list' is not a game; the games are "
                              f"{', '.join(ENGINES)}", usage=True, verb_only=True)
        if engine not in engines:  # 'list amoeba amoeba ...' lists amoeba once
            engines.append(engine)
    return engines, before


class List(Command):
    name = "list"
    arguments = "[game...] [before N]"
    summary = (f"the games offered; with game names, the newest {PAGE_SIZE} boards of each "
               "(with 'before N', those numbered below N) and the open challenges (seeks)")

    def run(self, ctx: Context, inv: Invocation) -> Result:
        session = ctx.session
        if not inv.args:
            counts = board_counts(session, BoardStatus.ACTIVE)
            seeks = open_seek_counts(session)
            games = [(e, counts.get(e.name, 0), seeks.get(e.name, 0)) for e in ENGINES.values()]
            return Result(render("list.txt.j2", games=games),
                          subject=our_subject(ctx.settings, "games", colon=False))
        engines, before = list_words(inv.args)
        sections = []
        for engine in engines:
            page = boards_of_game(session, engine.name, before=before)
            listed = open_seeks(session, SEEKS_LISTED + 1, engine.name)
            seeks_left = 0
            if len(listed) > SEEKS_LISTED:
                listed = listed[:SEEKS_LISTED]
                seeks_left = open_seek_counts(session, engine.name)[engine.name] - SEEKS_LISTED
            sections.append((engine, [(b, status_line(engine, b)) for b in page.boards],
                             listed, page.older, seeks_left))
        return Result(render("list_boards.txt.j2", sections=sections, before=before,
                             page_size=PAGE_SIZE),
                      subject=our_subject(ctx.settings, "boards", colon=False))
