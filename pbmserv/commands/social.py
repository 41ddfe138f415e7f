"""Game commands around a board: subscribe, unsubscribe, notify, chat."""

from __future__ import annotations

from pbmserv.commands.args import board_number
from pbmserv.commands.base import Command, Context, Invocation, Result, login
from pbmserv.commands.play import acting
from pbmserv.i18n import N_
from pbmserv.render import render
from pbmserv.service import limits
from pbmserv.service.boards import load_board
from pbmserv.service.errors import PlayerError


class Watch(Command):
    per_game = True
    arguments = "board userid password"
    secret_args = (2,)
    min_args = 3
    max_args = 3
    on: bool

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[1], inv.args[2])
        engine = inv.engine
        board = load_board(ctx.session, engine, board_number(inv.args[0]))
        if self.on:
            limits.check_subscribers(ctx.session, board, user,
                                     ctx.settings.subscribers_per_board)
        changed = ctx.service.subscribe(board, user, self.on)
        return Result(render("commands/watch.txt.j2", engine=engine, board=board, user=user,
                             on=self.on, changed=changed),
                      subject=f"{engine.title} Board {board.number} "
                              + ("subscribed" if self.on else "unsubscribed"))


class Subscribe(Watch):
    name = "subscribe"
    summary = N_("watch a board: you get every board mail of it")
    on = True


class Unsubscribe(Watch):
    name = "unsubscribe"
    summary = N_("stop watching a board")
    on = False


class Notify(Command):
    name = "notify"
    per_game = True
    arguments = "userid password [on|off]"
    summary = N_("a mail whenever a board of this game finishes, with its result; without "
               "on or off it switches")
    secret_args = (1,)
    min_args = 2
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        engine = inv.engine
        word = inv.args[2].lower() if len(inv.args) > 2 else None
        if word not in (None, "on", "off"):
            raise PlayerError(N_("write on or off, or nothing to switch"), usage=True)
        on = ctx.service.set_notify(user, engine.name, None if word is None else word == "on")
        return Result(render("commands/notify.txt.j2", engine=engine, user=user, on=on),
                      subject=f"{engine.title} notices " + ("on" if on else "off"))


class Chat(Command):
    name = "chat"
    per_game = True
    arguments = "board userid password"
    summary = N_("send the body of your mail to the players and subscribers of a board")
    secret_args = (2,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine, board, user = acting(ctx, inv)
        ctx.service.chat(board, user, ctx.comment)
        return Result(render("commands/chat.txt.j2", engine=engine, board=board),
                      subject=f"{engine.title} Board {board.number} chat sent")
