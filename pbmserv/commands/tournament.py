"""The tournament command: create, join, leave, start, show, list."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pbmserv.commands.args import parse_challenge_words, small_number
from pbmserv.commands.base import Command, Context, Invocation, Result, login
from pbmserv.db.models import Board
from pbmserv.db.status import TournamentStatus
from pbmserv.i18n import N_
from pbmserv.notifications.subjects import our_subject
from pbmserv.notifications.tournaments import crosstable_text
from pbmserv.reads.pages import PAGE_SIZE, tournaments_page
from pbmserv.render import render
from pbmserv.service import limits
from pbmserv.service.errors import PlayerError
from pbmserv.service.events import GameFinished
from pbmserv.service.games import board_engine
from pbmserv.service.tournaments import (
    MAX_PLAYERS,
    Setup,
    TournamentService,
    describe,
    find,
)
from pbmserv.tournaments import TournamentKind

#: sub-verbs and where their password is (index into the command's words)
PASSWORD_AT = {"create": 4, "join": 3, "leave": 3, "start": 3}
#: how many words each sub-verb takes, the sub-verb included
WORDS = {"join": 4, "leave": 4, "start": 4, "show": 2, "list": 1}
_NUMBER_FLAG = re.compile(r"-(rounds|max)(?:=(.*))?", re.I)


def parse_setup(words: Sequence[str]) -> Setup:
    """The words after ``create NAME GAME userid password``."""
    kind: TournamentKind | None = None
    numbers: dict[str, int] = {}
    double = False
    rest: list[str] = []
    it = iter(words)
    for word in it:
        low = word.lower()
        flag = _NUMBER_FLAG.fullmatch(low)
        if low in ("-roundrobin", "-swiss"):
            new = TournamentKind.SWISS if low == "-swiss" else TournamentKind.ROUND_ROBIN
            if kind is not None and kind is not new:
                raise PlayerError(N_("a tournament is -roundrobin or -swiss, not both"), usage=True)
            kind = new
        elif low == "-double":
            double = True
        elif flag is not None:
            text = flag.group(2) if flag.group(2) is not None else next(it, "")
            number = small_number(text)
            if number is None:
                raise PlayerError(f"-{flag.group(1)} takes a number, like -{flag.group(1)} 4",
                                  usage=True)
            numbers[flag.group(1)] = number
        else:
            rest.append(word)
    if kind is None:
        raise PlayerError(N_("say which kind of tournament: -roundrobin or -swiss"), usage=True)
    clock = parse_challenge_words(rest)
    if clock.names:
        raise PlayerError(f"{clock.names[0][:20]!r} is not an option of a tournament",
                          usage=True)
    return Setup(kind, tuple(clock.options), numbers.get("rounds"), double,
                 numbers.get("max"), clock.nag_days, clock.forfeit_days)


class TournamentCommand(Command):
    name = "tournament"
    arguments = ("create NAME game userid password -roundrobin|-swiss [-rounds N] [-double] "
                 "[-max N] [-option...] [--nagtime=DAYS] [--forfeittime=DAYS] | "
                 "join|leave|start NAME userid password | show NAME | list")
    summary = N_("tournaments by mail, round robin or Swiss: the server pairs the players, "
               "starts the boards and mails the standings; 'help tournament' explains")
    min_args = 1

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        sub = inv.args[0].lower() if inv.args else ""
        if sub in PASSWORD_AT:
            return (PASSWORD_AT[sub],)
        # no password belongs here: any word past those expected might be one
        return tuple(range(WORDS.get(sub, 1), len(inv.args)))

    def run(self, ctx: Context, inv: Invocation) -> Result:
        sub, words = inv.args[0].lower(), inv.args[1:]
        if sub not in PASSWORD_AT and sub not in WORDS:
            raise PlayerError(N_("write tournament create, join, leave, start, show or list"),
                              usage=True)
        if sub == "create":
            if len(words) < 4:
                raise PlayerError(N_("too few words after 'tournament create'"), usage=True)
        elif len(inv.args) != WORDS[sub]:
            few = "few" if len(inv.args) < WORDS[sub] else "many"
            raise PlayerError(f"too {few} words after 'tournament {sub}'", usage=True)
        if sub == "list":
            found = tournaments_page(ctx.session)
            return Result(render("tournament/list.txt.j2",
                                 tournaments=[describe(ctx.session, t)
                                              for t in found.tournaments],
                                 more=found.older is not None, size=PAGE_SIZE),
                          subject=our_subject(ctx.settings, "tournaments", colon=False))
        if sub == "show":
            view = describe(ctx.session, find(ctx.session, words[0]))
            over = view.tournament.status is TournamentStatus.FINISHED
            table = crosstable_text(view, "Final standings" if over else "Standings")
            return Result(render("tournament/show.txt.j2", view=view, t=view.tournament,
                                 table=table),
                          subject=f"Tournament {view.tournament.name}")
        user = login(ctx, words[2] if sub == "create" else words[1],
                     words[3] if sub == "create" else words[2])
        service = TournamentService(ctx.service)
        if sub == "create":
            setup = parse_setup(words[4:])
            limits.check_tournaments(ctx.session, user, ctx.settings.tournaments_per_creator)
            tournament = service.create(user, words[0], board_engine(words[1]), setup)
        elif sub == "join":
            tournament = service.join(words[0], user)
        elif sub == "start":
            tournament = service.start(words[0], user)
        else:
            tournament = service.leave(words[0], user, comment=ctx.comment)
        lost = [ctx.session.get_one(Board, e.board_id).number for e in ctx.new_events()
                if isinstance(e, GameFinished)]
        view = describe(ctx.session, tournament)
        return Result(render("tournament/reply.txt.j2", action=sub, view=view, t=tournament,
                             user=user, lost=lost, max_players=MAX_PLAYERS,
                             commented=bool(ctx.comment)),
                      subject=f"Tournament {tournament.name}: {sub}")
