"""Account commands: signup, change password/address, signoff."""

from __future__ import annotations

from sqlalchemy import select

from pbmserv.accounts import (
    check_email,
    check_new_password,
    check_userid,
)
from pbmserv.commands.base import (
    Command,
    Context,
    Invocation,
    Result,
    command,
    login,
)
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, BoardPlayer, User
from pbmserv.errors import PlayerError
from pbmserv.passwords import hash_password
from pbmserv.render import render


@command
class Signup(Command):
    name = "signup"
    arguments = "userid password [email]"
    summary = "open an account; mail goes to the sender's address unless another is given"
    secret_args = (1,)
    min_args = 2
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        userid, password = inv.args[0], inv.args[1]
        check_userid(userid)
        check_new_password(password)
        email = check_email(inv.args[2]) if len(inv.args) > 2 else ctx.sender
        if ctx.session.scalar(select(User.id).where(User.key == userid.lower())) is not None:
            raise PlayerError(f"the userid {userid!r} is taken; choose another")
        ctx.session.add(User(key=userid.lower(), userid=userid,
                             password_hash=hash_password(password), email=email))
        ctx.session.flush()
        return Result(render("commands/signup.txt.j2", userid=userid, email=email),
                      subject=f"pbmserv: welcome, {userid}")


@command
class Change(Command):
    name = "change"
    arguments = "password userid old new | address userid password email"
    summary = "change your password or the address your mail goes to"
    min_args = 4
    max_args = 4

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        return (2,) if inv.args and inv.args[0].lower() == "address" else (2, 3)

    def run(self, ctx: Context, inv: Invocation) -> Result:
        what, userid, secret, new = inv.args
        user = login(ctx, userid, secret)
        if what.lower() == "password":
            check_new_password(new)
            user.password_hash = hash_password(new)
            text = render("commands/change.txt.j2", user=user, what="password")
        elif what.lower() == "address":
            user.email = check_email(new)
            text = render("commands/change.txt.j2", user=user, what="address")
        else:
            raise PlayerError(f"you can change your password or address, not {what!r}",
                               usage=True)
        return Result(text, subject=f"pbmserv: {user.userid}'s {what.lower()} changed")


@command
class Signoff(Command):
    name = "signoff"
    arguments = "userid password"
    summary = "close your account (finished games keep their records)"
    secret_args = (1,)
    min_args = 2
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        active = ctx.session.execute(
            select(Board.game, Board.number).join(BoardPlayer)
            .where(BoardPlayer.user_id == user.id, Board.finished.is_(False))
            .order_by(Board.game, Board.number)
        ).all()
        if active:
            names = ", ".join(f"{g} {n}" for g, n in active)
            raise PlayerError(f"{user.userid} still plays {names}; finish or resign them first")
        user.closed_at = utcnow()
        # free the userid for someone new; the closed account keeps its games
        user.key = f"{user.key}#closed{user.id}"
        return Result(render("commands/signoff.txt.j2", user=user),
                      subject=f"pbmserv: {user.userid} signed off")
