"""Finding opponents: open challenges (seek, join, unseek) and whose challenges a
player takes (accept, reject, limit)."""

from __future__ import annotations

from pbmserv.commands.args import (
    board_number,
    is_board_ref,
    parse_challenge_words,
    small_number,
)
from pbmserv.commands.base import Command, Context, Invocation, Result, login
from pbmserv.commands.play import board_result, started_result
from pbmserv.db.models import User
from pbmserv.i18n import N_
from pbmserv.render import render
from pbmserv.service import consent, limits
from pbmserv.service.accounts import existing_user
from pbmserv.service.boards import load_board, seats_of
from pbmserv.service.errors import PlayerError


def seek_number(text: str) -> int:
    number = small_number(text)
    if number is None:
        raise PlayerError(N_("a seek is named by its number, as 'list <game>' shows it"),
                          usage=True)
    return number


class SeekCommand(Command):
    name = "seek"
    per_game = True
    arguments = "userid password [-option...] [--nagtime=DAYS] [--forfeittime=DAYS]"
    summary = N_("post an open challenge that anyone may join; you will move first. "
               "'list <game>' shows the open ones")
    secret_args = (1,)
    min_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        limits.check_seeks(ctx.session, user, ctx.settings.seeks_per_player)
        words = parse_challenge_words(inv.args[2:])
        if words.names:
            raise PlayerError("a seek takes options only; to challenge a player use "
                              f"'{inv.engine.name} challenge'", usage=True)
        seek = ctx.service.seek(inv.engine, user, words.options, nag_days=words.nag_days,
                                forfeit_days=words.forfeit_days)
        return Result(render("commands/seek.txt.j2", engine=inv.engine, seek=seek, user=user),
                      subject=f"{inv.engine.title} seek {seek.number}")


class Join(Command):
    name = "join"
    per_game = True
    arguments = "seek userid password"
    summary = N_("take up an open challenge: the board starts at once")
    secret_args = (2,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[1], inv.args[2])
        board = ctx.service.join(inv.engine, seek_number(inv.args[0]), user)
        return started_result(ctx, board, user)


class Unseek(Command):
    name = "unseek"
    per_game = True
    arguments = "seek userid password"
    summary = N_("withdraw your open challenge")
    secret_args = (2,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[1], inv.args[2])
        seek = ctx.service.withdraw(inv.engine, seek_number(inv.args[0]), user)
        return Result(render("commands/unseek.txt.j2", engine=inv.engine, seek=seek),
                      subject=f"{inv.engine.title} seek {seek.number} withdrawn")


class Policy(Command):
    per_game = True
    arguments = "userid password [all|userid...]"
    secret_args = (1,)
    min_args = 2
    accept: bool

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if is_board_ref(inv.args[0]):
            raise PlayerError(
                f"to {self.name} an offer or request on a board, write it as a move: "
                f"{inv.engine.name} move {inv.args[0]} userid password {self.name}; to end "
                "a board you have not moved on, with no result: "
                f"{inv.engine.name} decline {inv.args[0]} userid password")
        return self.set_policy(ctx, inv)

    def set_policy(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        game = inv.engine.name
        names = inv.args[2:]
        if [n.lower() for n in names] == ["all"]:
            consent.set_everyone(ctx.session, user, game, self.accept)
        elif names:
            others = [existing_user(ctx.session, n) for n in names]
            if any(o.id == user.id for o in others):
                raise PlayerError(N_("you cannot challenge yourself anyway"))
            consent.set_players(ctx.session, user, game, others, self.accept)
        return policy_result(ctx, inv, user)


def policy_result(ctx: Context, inv: Invocation, user: User) -> Result:
    game = inv.engine.name
    return Result(
        render("commands/policy.txt.j2", engine=inv.engine, user=user,
               everyone=consent.takes_default(ctx.session, user, game),
               exceptions=consent.exceptions(ctx.session, user, game),
               limit=consent.limit_of(ctx.session, user, game),
               active=consent.active_boards(ctx.session, user, game)),
        subject=f"{inv.engine.title} challenges of {user.userid}",
    )


class Accept(Policy):
    name = "accept"
    arguments = "userid password [all|userid...] | board userid password"
    summary = N_("take challenges from everyone ('all') or from these players; without "
               "names, shows whose challenges you take. With a board number: take up a "
               "board someone challenged you to, so that it counts for you (rated, and "
               "lost if your clock runs out); answering an offer is the move 'accept'")
    accept = True

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        return (2,) if inv.args and is_board_ref(inv.args[0]) else (1,)

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if not is_board_ref(inv.args[0]):
            return self.set_policy(ctx, inv)
        if len(inv.args) != 3:
            raise PlayerError(f"write: {inv.engine.name} accept {inv.args[0]} userid password",
                              usage=True)
        user = login(ctx, inv.args[1], inv.args[2])
        board = load_board(ctx.session, inv.engine, board_number(inv.args[0]), lock=True)
        ctx.service.accept(board, user)
        return board_result(ctx, board, user, "commands/accept_board.txt.j2",
                            request=board.request_kind is not None
                            and board.request_by not in seats_of(board, user))


class Reject(Policy):
    name = "reject"
    summary = N_("refuse challenges from everyone ('all') or from these players; 'reject "
               "all' then 'accept alice' takes only alice's")
    accept = False


class Limit(Command):
    name = "limit"
    per_game = True
    arguments = "userid password N|none"
    summary = N_("the most boards of this game you play at once; new challenges beyond it "
                 "are refused")
    secret_args = (1,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        word = inv.args[2].lower()
        limit = None if word == "none" else small_number(word)
        if word != "none" and (limit is None or not 1 <= limit <= 1000):
            raise PlayerError(N_("the limit is a number from 1 to 1000, or 'none'"), usage=True)
        consent.set_limit(ctx.session, user, inv.engine.name, limit)
        return policy_result(ctx, inv, user)
