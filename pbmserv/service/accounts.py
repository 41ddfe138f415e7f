"""Accounts: opening and closing them, finding users, checking their passwords."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    Board,
    BoardPlayer,
    GameNotify,
    PasswordReset,
    Seek,
    Subscription,
    User,
)
from pbmserv.db.status import BoardStatus, SeekStatus
from pbmserv.mail.addresses import MAX_ADDRESS
from pbmserv.service.errors import PlayerError
from pbmserv.service.passwords import check_password, hash_password
from pbmserv.service.throttle import account_key, record_success, sender_key, throttled
from pbmserv.spelling import closest

USERID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$")
EMAIL_RE = re.compile(r"^[^@\s<>\"',;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
PASSWORD_RE = re.compile(r"^[^\s\"':]{1,128}$")
#: the fewest characters of a new password (older, shorter ones still open their account)
MIN_PASSWORD = 8
#: the password hash of an account made by an import: no password matches it
DISABLED_PASSWORD = "!imported"
#: the domain of the address of an account made by an import: it reaches nobody
IMPORTED_DOMAIN = "imported.invalid"


_BY_KEY = select(User).where(User.key == bindparam("key"), User.closed_at.is_(None))


def find_user(session: Session, userid: str, loaded: Iterable[User] = ()) -> User | None:
    """The open account ``userid``; one of the ``loaded`` accounts (a board's players,
    loaded with it) if it is one of them, without asking the database again."""
    key = userid.lower()
    for user in loaded:
        if user.key == key and user.closed_at is None:
            return user
    return session.scalar(_BY_KEY, {"key": key})


def has_account(session: Session, address: str) -> bool:
    """Whether ``address`` is the mail address of an open, confirmed account (a signup
    in someone's name does not make their address an account's)."""
    return session.scalar(select(User.id).where(User.email == address.lower(),
                                                User.closed_at.is_(None),
                                                User.confirmed_at.is_not(None))
                          .limit(1)) is not None


def existing_user(session: Session, userid: str) -> User:
    user = find_user(session, userid) if USERID_RE.match(userid) else None
    if user is None:
        guess = similar_userid(session, userid)
        meant = f" (did you mean {guess}?)" if guess else ""
        raise PlayerError(f"there is no user {userid[:40]!r}{meant}; players sign up with "
                          "'signup'")
    return user


def similar_userid(session: Session, userid: str) -> str | None:
    """The open account whose userid is nearest ``userid``, if one is a slip away.
    (Userids are public: the ratings and the web pages list them.)"""
    if not USERID_RE.match(userid):
        return None
    length = func.length(User.key)
    keys = session.scalars(select(User.userid).where(
        User.closed_at.is_(None), length >= len(userid) - 2, length <= len(userid) + 2)
        .order_by(User.id))
    return closest(userid, keys)


def authenticate(session: Session, userid: str, password: str, sender: str,
                 now: datetime | None = None, loaded: Iterable[User] = ()) -> User:
    """The account, if the password is right and no throttle holds its checks
    (``loaded``: accounts in the session already, see find_user).

    A wrong password raises a PlayerError naming the throttle keys to charge; the
    caller records the failure outside the command's savepoint, so it sticks.
    """
    now = now or utcnow()
    keys = (account_key(userid), sender_key(sender))
    counted = check_not_locked(session, keys, now)
    user = find_user(session, userid, loaded) if USERID_RE.match(userid) else None
    if user is not None and user.disabled_at is not None:
        raise PlayerError(disabled_message(user))
    if user is not None and user.confirmed_at is None and user.bot is None:
        raise PlayerError(not_confirmed_message(user))
    if user is None or not check_password(user.password_hash, password):
        # neither word is quoted: in a command written out of order either may be
        # the password
        raise PlayerError(
            "the userid and password do not match (passwords are case-sensitive; the "
            "userid comes first, then the password)",
            failed_keys=keys,
        )
    if keys[0] in counted:
        record_success(session, keys[0])
    return user


def check_not_locked(session: Session, keys: tuple[str, str], now: datetime, *,
                     what: str = "passwords") -> dict[str, datetime | None]:
    """The throttle's counts of the (account, sender) keys; a PlayerError saying until
    when, if either is locked (``what``: passwords, or reset codes)."""
    counted = throttled(session, *keys)
    until = max((u for k, u in counted.items() if u is not None and u > now), default=None)
    if until is not None:
        minutes = max(1, math.ceil((until - now).total_seconds() / 60))
        if what == "passwords":
            why = ("too many wrong passwords have been tried for this account or from "
                   "your address, so password checks are paused")
            after = ("If you forgot your password, send 'reset <userid>' for a code; a "
                     "code still works while password checks are paused.")
        else:
            why = ("too many wrong reset codes have been tried for this account from "
                   "your address, so its reset codes are paused")
            after = "Copy the code from the newest reset mail exactly."
        raise PlayerError(
            f"{why} until {until:%Y-%m-%d %H:%M} UTC (about {minutes} "
            f"minute{'s' if minutes != 1 else ''} from now); try again then. {after}")
    return counted


def disabled_message(user: User) -> str:
    return (f"the account {user.userid} is disabled by the server's administrator; "
            "write to them to have it enabled")


def check_enabled(user: User) -> User:
    """``user``, unless the administrator disabled the account, or its address has not
    answered its confirmation mail yet."""
    if user.disabled_at is not None:
        raise PlayerError(disabled_message(user))
    if user.confirmed_at is None and user.bot is None:
        raise PlayerError(not_confirmed_message(user))
    return user


def not_confirmed_message(user: User) -> str:
    return (f"the account {user.userid} is not confirmed yet: it works once its address "
            "answers the confirmation mail sent there when it was opened (a reply will do: "
            "its Subject is the command that confirms it)")


def check_userid(userid: str) -> None:
    if not USERID_RE.match(userid):
        raise PlayerError(
            f"{userid!r} cannot be a userid: use 1 to 32 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit"
        )


def check_new_password(password: str) -> None:
    """A PlayerError unless ``password`` may be a new password (it is never quoted)."""
    if not PASSWORD_RE.match(password):
        raise PlayerError("a password may not contain spaces, quotes or colons")
    if len(password) < MIN_PASSWORD:
        raise PlayerError(f"a new password needs at least {MIN_PASSWORD} characters (the "
                          f"one given has {len(password)}); a few words joined by dashes "
                          "are easy to remember, like 'blue-kettle-seven'")


def check_email(email: str) -> str:
    if len(email) > MAX_ADDRESS:
        raise PlayerError(f"the address {email[:40]}... is {len(email)} characters long; "
                          f"a mail address has at most {MAX_ADDRESS}")
    if not EMAIL_RE.match(email):
        raise PlayerError(f"{email!r} is not a mail address like name@example.org")
    return email.lower()


def closed_account(session: Session, userid: str) -> User | None:
    """The account of ``userid`` closed last, if one was (see ``close_account``)."""
    if not USERID_RE.match(userid):
        return None
    # the keys "userid#closedN", as a range: it follows the index of users.key
    prefix = f"{userid.lower()}#closed"
    return session.scalar(
        select(User).where(User.key >= prefix, User.key < prefix[:-1] + "e",
                           User.closed_at.is_not(None))
        .order_by(User.closed_at.desc(), User.id.desc()).limit(1))


def open_account(session: Session, userid: str, password: str, email: str, *,
                 reserve_days: int = 0, now: datetime | None = None) -> User:
    """A new account.  A userid whose account closed less than ``reserve_days`` ago is
    kept for that account's address: its old boards still name that player."""
    check_userid(userid)
    email = check_email(email)
    if session.scalar(select(User.id).where(User.key == userid.lower())) is not None:
        raise PlayerError(f"the userid {userid!r} is taken; choose another")
    closed = closed_account(session, userid) if reserve_days else None
    if closed is not None and closed.closed_at is not None and closed.email != email:
        free_from = closed.closed_at + timedelta(days=reserve_days)
        if (now or utcnow()) < free_from:
            raise PlayerError(
                f"the userid {userid!r} belonged to a player who signed off on "
                f"{closed.closed_at:%Y-%m-%d}; it stays theirs until {free_from:%Y-%m-%d} "
                "(their finished games still name them): choose another")
    check_new_password(password)
    user = User(key=userid.lower(), userid=userid, password_hash=hash_password(password),
                email=email)
    session.add(user)
    session.flush()
    return user


def has_no_password(user: User) -> bool:
    """Whether no password opens the account (one made by an import)."""
    return user.password_hash.startswith("!")


def has_no_address(user: User) -> bool:
    """Whether the account's address reaches nobody (one made by an import)."""
    return user.email.endswith("@" + IMPORTED_DOMAIN)


def set_password(session: Session, user: User, password: str) -> None:
    """A new password; every older way into the account is void (see ``revoke``)."""
    check_new_password(password)
    user.password_hash = hash_password(password)
    revoke(session, user)


def set_address(session: Session, user: User, email: str) -> str:
    """A new address; returns the old one.  Every older way into the account is void
    (see ``revoke``)."""
    old, user.email = user.email, check_email(email)
    if old != user.email:
        revoke(session, user)
    return old


def revoke(session: Session, user: User) -> None:
    """The password or address changed: the account's pending reset code and every
    move-by-reply address made for it before are void."""
    user.credential_changes += 1
    session.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))


def active_boards(session: Session, user: User) -> list[tuple[str, int]]:
    """(game, number) of every board the user still plays, each once."""
    return list(session.execute(
        select(Board.game, Board.number).join(BoardPlayer)
        .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE)
        .distinct().order_by(Board.game, Board.number)
    ).tuples())


def close_account(session: Session, user: User, now: datetime | None = None) -> None:
    """Close an account that plays no board; its finished games keep their records."""
    active = active_boards(session, user)
    if active:
        names = ", ".join(f"{g} {n}" for g, n in active)
        raise PlayerError(f"{user.userid} still plays {names}; finish or resign them first")
    for seek in session.scalars(select(Seek).where(Seek.user_id == user.id,
                                                   Seek.status == SeekStatus.OPEN)):
        seek.status = SeekStatus.WITHDRAWN
    for watching in session.scalars(select(Subscription).where(Subscription.user_id == user.id)):
        board = session.get(Board, watching.board_id)
        if board is not None:
            board.watchers -= 1
        session.delete(watching)
    session.execute(delete(GameNotify).where(GameNotify.user_id == user.id))
    user.closed_at = now or utcnow()
    # free the userid for someone new; the closed account keeps its games
    user.key = f"{user.key}#closed{user.id}"
