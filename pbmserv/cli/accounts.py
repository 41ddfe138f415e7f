"""``pbmserv users`` and ``pbmserv throttle``: accounts and wrong-password locks."""

from __future__ import annotations

import click

from pbmserv import operations
from pbmserv.cli.app import database, main, pass_settings
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.logs import audit
from pbmserv.service import admin, throttle
from pbmserv.service.accounts import existing_user, has_no_password
from pbmserv.service.errors import PlayerError


def _new_password(given: str | None) -> str:
    if given is not None:
        return given
    return str(click.prompt("New password", hide_input=True, confirmation_prompt=True))


@main.group()
def users() -> None:
    """Player accounts: list, show, disable, enable, reset-password, set-email, unlock."""


@users.command("list")
@pass_settings
def users_list(settings: Settings) -> None:
    """List accounts."""
    with database(settings).reading() as session:
        for u in admin.accounts(session):
            notes = [f"closed {u.closed_at:%Y-%m-%d}" if u.closed_at else "",
                     f"disabled {u.disabled_at:%Y-%m-%d}" if u.disabled_at else "",
                     f"a bot, played by the server as {u.bot}" if u.bot is not None else
                     "no password (imported)" if has_no_password(u) else ""]
            shown = ", ".join(n for n in notes if n)
            click.echo(f"{u.userid:24} {u.email}" + (f" ({shown})" if shown else ""))


@users.command("show")
@click.argument("userid")
@pass_settings
def users_show(settings: Settings, userid: str) -> None:
    """Everything about one account: address, state, boards, locks, reset codes."""
    now = utcnow()
    with database(settings).reading() as session:
        a = admin.account(session, userid, now)
    state = (f"disabled since {a.disabled_at:%Y-%m-%d %H:%M} UTC" if a.disabled_at
             else f"a bot: the server plays it as {a.bot}; no password opens it" if a.bot
             else "no password opens it (made by an import)" if a.no_password else "active")
    click.echo(f"userid    {a.userid}")
    click.echo(f"address   {a.email}" + (" (reaches nobody)" if a.no_address else ""))
    click.echo(f"since     {a.created_at:%Y-%m-%d %H:%M} UTC")
    click.echo(f"state     {state}")
    click.echo("boards    " + (", ".join(f"{g} {n}" for g, n in a.boards) or "none"))
    if a.failures or a.locked_until:
        lock = f", locked until {a.locked_until:%Y-%m-%d %H:%M} UTC" if a.locked_until else ""
        click.echo(f"passwords {a.failures} wrong lately{lock} ('pbmserv users unlock')")
    if a.reset_until:
        click.echo(f"reset     a code was mailed; valid until {a.reset_until:%Y-%m-%d %H:%M} UTC")


@users.command("disable")
@click.argument("userid")
@pass_settings
def users_disable(settings: Settings, userid: str) -> None:
    """No password opens the account until it is enabled; it cannot be challenged. Its
    boards go on (abandon them with 'pbmserv boards abandon')."""
    with database(settings).transaction() as session:
        changed = admin.disable(session, userid, utcnow())
    audit("users disable", userid, "disabled" if changed else "was disabled already")
    click.echo(f"{userid}: " + ("disabled" if changed else "was disabled already"))


@users.command("enable")
@click.argument("userid")
@click.argument("email", required=False)
@click.option("--password", default=None,
              help="With EMAIL: the new password (asked for, not echoed, if not given).")
@pass_settings
def users_enable(settings: Settings, userid: str, email: str | None,
                 password: str | None) -> None:
    """Enable a disabled account. With EMAIL, also give it that address and a new
    password: for an account an import made, to be handed to its player."""
    db = database(settings)
    if email is None:
        with db.transaction() as session:
            user = existing_user(session, userid)
            if user.disabled_at is None and user.bot is None and has_no_password(user):
                raise PlayerError(f"no password opens {userid} (an import made it): give its "
                                  f"player's address, 'pbmserv users enable {userid} ADDRESS'")
            changed = admin.enable(session, userid)
        audit("users enable", userid, "enabled" if changed else "was not disabled")
        click.echo(f"{userid}: " + ("enabled" if changed else "was not disabled"))
        return
    secret = _new_password(password)
    with db.transaction() as session:
        user = admin.hand_over(session, userid, email, secret)
    audit("users enable", userid, f"enabled, password and address set ({user.email})")
    click.echo(f"{userid}: enabled, password and address set; mail goes to {user.email}")


@users.command("reset-password")
@click.argument("userid")
@click.option("--mail", "by_mail", is_flag=True,
              help="Mail the player a one-time code instead (as 'reset USERID' by mail).")
@click.option("--password", default=None,
              help="The new password (asked for, not echoed, if not given).")
@pass_settings
def users_reset_password(settings: Settings, userid: str, by_mail: bool,
                         password: str | None) -> None:
    """Set a new password for USERID (tell it to the player yourself), or --mail the
    account's own address a code to choose one with."""
    db = database(settings)
    if by_mail:
        sent, until = operations.mail_reset(db, settings, userid)
        audit("users reset-password --mail", userid,
              "a code is queued" if sent else "a code went out lately; none queued")
        click.echo(f"{userid}: " + ("a code is queued for the account's address" if sent
                                    else "a code went out less than 10 minutes ago")
                   + f"; valid until {until:%Y-%m-%d %H:%M} UTC")
        return
    secret = _new_password(password)
    with db.transaction() as session:
        admin.reset_password(session, userid, secret)
    audit("users reset-password", userid, "password set")
    click.echo(f"{userid}: password set")


@users.command("set-email")
@click.argument("userid")
@click.argument("email")
@pass_settings
def users_set_email(settings: Settings, userid: str, email: str) -> None:
    """Send USERID's mail to EMAIL from now on."""
    with database(settings).transaction() as session:
        user = admin.set_email(session, userid, email)
    audit("users set-email", userid, f"mail goes to {user.email}")
    click.echo(f"{userid}: mail goes to {user.email}")


@users.command("unlock")
@click.argument("userid")
@pass_settings
def users_unlock(settings: Settings, userid: str) -> None:
    """Let USERID's password be checked again at once (after wrong guesses)."""
    with database(settings).transaction() as session:
        cleared = throttle.clear(session, throttle.account_key(userid))
    audit("users unlock", userid, "unlocked" if cleared else "nothing was held")
    click.echo(f"{userid}: " + ("unlocked" if cleared else "nothing was held"))


@main.group("throttle")
def throttle_group() -> None:
    """Wrong passwords and codes counted: per account (user:ID) and per sender
    (sender:ADDRESS); reset and confirmation codes per account and sender
    (code:ID|ADDRESS, confirm:ID|ADDRESS)."""


@throttle_group.command("list")
@pass_settings
def throttle_list(settings: Settings) -> None:
    """List the keys with wrong passwords or codes counted, and their locks."""
    with database(settings).reading() as session:
        for row in throttle.held(session):
            lock = f"locked until {row.locked_until:%Y-%m-%d %H:%M:%S} UTC" \
                if row.locked_until else "not locked"
            click.echo(f"{row.key}  {row.failures} failure(s), last "
                       f"{row.last_failure_at:%Y-%m-%d %H:%M:%S} UTC, {lock}")


@throttle_group.command("clear")
@click.argument("key", required=False)
@click.option("--all", "clear_all", is_flag=True, help="Clear every key.")
@pass_settings
def throttle_clear(settings: Settings, key: str | None, clear_all: bool) -> None:
    """Forget the failures of KEY (as 'throttle list' shows it), or of all keys."""
    if not key and not clear_all:
        raise click.UsageError("give a KEY (see 'pbmserv throttle list') or --all")
    with database(settings).transaction() as session:
        cleared = throttle.clear(session, None if clear_all else key)
    audit("throttle clear", "--all" if clear_all else str(key), f"cleared {cleared} key(s)")
    click.echo(f"cleared {cleared} key(s)")
