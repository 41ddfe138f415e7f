"""Game commands that look back: ratings, standings, history, record."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pbmserv.commands.args import board_number
from pbmserv.commands.base import Command, Context, Invocation, Result
from pbmserv.i18n import N_
from pbmserv.ratings import PROVISIONAL_RD, format_rating
from pbmserv.records import dump_json, to_text
from pbmserv.render import render
from pbmserv.service.accounts import existing_user
from pbmserv.service.archive import record_of
from pbmserv.service.boards import load_board
from pbmserv.service.budget import (
    HISTORY_COST,
    RATINGS_COST,
    RECORD_MOVES_PER_UNIT,
    STANDINGS_COST,
)
from pbmserv.service.errors import PlayerError
from pbmserv.service.history import HISTORY_LIMIT, history, standings
from pbmserv.service.ratings import count_rated, rating_list, rating_of


class Ratings(Command):
    name = "ratings"
    per_game = True
    arguments = "[userid]"
    summary = N_("the Glicko-2 ratings of this game, best first, with their deviation (RD) "
               "and games played; with a userid, that player's rating")
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        if inv.args:
            user = existing_user(ctx.session, inv.args[0])
            return Result(render("commands/rating.txt.j2", engine=engine, user=user,
                                 found=rating_of(ctx.session, user, engine.name),
                                 format_rating=format_rating, provisional=PROVISIONAL_RD),
                          subject=f"{engine.title} rating of {user.userid}")
        rows, rated = looked_up(ctx, "ratings", engine.name, RATINGS_COST, lambda: (
            rating_list(ctx.session, engine.name, RATINGS_SHOWN),
            count_rated(ctx.session, engine.name)))
        return Result(render("commands/ratings.txt.j2", engine=engine, rows=rows,
                             left=rated - len(rows), format_rating=format_rating,
                             provisional=PROVISIONAL_RD),
                      subject=f"{engine.title} ratings")


#: the most players 'standings' and 'ratings' list (the best first)
STANDINGS_SHOWN = RATINGS_SHOWN = 100

T = TypeVar("T")


def looked_up(ctx: Context, what: str, game: str, cost: int, read: Callable[[], T]) -> T:
    """A game's table (``what``: standings, ratings), read and charged once a mail: its
    cost grows with the server's finished boards, not with the mail."""
    key = (what, game)
    if key not in ctx.looked_up:
        ctx.budget.charge(cost, f"the {what} of {game}")
        ctx.looked_up[key] = read()
    found: T = ctx.looked_up[key]
    return found


class Standings(Command):
    name = "standings"
    per_game = True
    summary = N_("wins, losses and draws of every player of this game")
    max_args = 0

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        rows = looked_up(ctx, "standings", engine.name, STANDINGS_COST,
                         lambda: standings(ctx.session, engine.name))
        return Result(render("commands/standings.txt.j2", engine=engine,
                             rows=rows[:STANDINGS_SHOWN], left=len(rows) - STANDINGS_SHOWN),
                      subject=f"{engine.title} standings")


class History(Command):
    name = "history"
    per_game = True
    arguments = "userid"
    summary = N_("a player's finished boards of this game, the last first: opponent, "
               "result, how it ended, rating change")
    min_args = 1
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        user = existing_user(ctx.session, inv.args[0])
        ctx.budget.charge(HISTORY_COST, f"the history of {user.userid}")
        return Result(render("commands/history.txt.j2", engine=engine, user=user,
                             games=history(ctx.session, user, engine.name),
                             limit=HISTORY_LIMIT),
                      subject=f"{engine.title} history of {user.userid}")


class Record(Command):
    name = "record"
    per_game = True
    arguments = "board [text|json]"
    summary = N_("the full record of a board: tags in the PGN manner, then every move with "
               "its time and comment (proper PGN for amoeba); 'json': the same as JSON, "
               "as the administrator's export writes it")
    min_args = 1
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        form = inv.args[1].lower() if len(inv.args) > 1 else "text"
        if form not in ("text", "json"):
            raise PlayerError(f"a record comes as 'text' or 'json', not {inv.args[1][:20]!r}",
                              usage=True)
        board = load_board(ctx.session, engine, board_number(inv.args[0]))
        ctx.budget.charge(1 + board.ply // RECORD_MOVES_PER_UNIT,
                          f"the record of board {board.number} ({board.ply:,} moves)",
                          less=f"A mail carries the record of a board of "
                               f"{(ctx.budget.limit - 1) * RECORD_MOVES_PER_UNIT:,} moves at "
                               "most; the administrator can export any record "
                               "('pbmserv export').")
        record = record_of(ctx.session, board, ctx.settings.server_name)
        text = dump_json([record]) if form == "json" else to_text(record)
        return Result(render("commands/record.txt.j2", engine=engine, board=board,
                             record=text, form=form),
                      subject=f"{engine.title} Board {board.number} record"
                      + (" (JSON)" if form == "json" else ""))
