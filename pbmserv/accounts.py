"""Accounts: finding users and checking their passwords."""

from __future__ import annotations

import math
import re
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import User
from pbmserv.errors import PlayerError
from pbmserv.passwords import check_password
from pbmserv.throttle import account_key, locked_until, record_success, sender_key

USERID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$")
EMAIL_RE = re.compile(r"^[^@\s<>\"',;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
PASSWORD_RE = re.compile(r"^[^\s\"':]{1,128}$")


def find_user(session: Session, userid: str) -> User | None:
    return session.scalar(
        select(User).where(User.key == userid.lower(), User.closed_at.is_(None))
    )


def existing_user(session: Session, userid: str) -> User:
    user = find_user(session, userid) if USERID_RE.match(userid) else None
    if user is None:
        raise PlayerError(f"there is no user {userid!r}; players sign up with 'signup'")
    return user


def authenticate(session: Session, userid: str, password: str, sender: str,
                 now: datetime | None = None) -> User:
    """The account, if the password is right and no throttle holds its checks.

    A wrong password raises a PlayerError naming the throttle keys to charge; the
    caller records the failure outside the command's savepoint, so it sticks.
    """
    now = now or utcnow()
    keys = (account_key(userid), sender_key(sender))
    until = locked_until(session, keys, now)
    if until is not None:
        minutes = max(1, math.ceil((until - now).total_seconds() / 60))
        raise PlayerError(
            f"too many wrong passwords have been tried for {userid!r} or from your "
            f"address, so password checks are paused until {until:%Y-%m-%d %H:%M} UTC "
            f"(about {minutes} minute{'s' if minutes != 1 else ''} from now); try again "
            "then. If you forgot your password, ask the server's administrator."
        )
    user = find_user(session, userid) if USERID_RE.match(userid) else None
    if user is None or not check_password(user.password_hash, password):
        # neither word is quoted: in a command written out of order either may be
        # the password
        raise PlayerError(
            "the userid and password do not match (passwords are case-sensitive; the "
            "userid comes first, then the password)",
            failed_keys=keys,
        )
    record_success(session, keys[0])
    return user


def check_userid(userid: str) -> None:
    if not USERID_RE.match(userid):
        raise PlayerError(
            f"{userid!r} cannot be a userid: use 1 to 32 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit"
        )


def check_new_password(password: str) -> None:
    if not PASSWORD_RE.match(password):
        raise PlayerError("a password may not contain spaces, quotes or colons")


def check_email(email: str) -> str:
    if not EMAIL_RE.match(email):
        raise PlayerError(f"{email!r} is not a mail address like name@example.org")
    return email.lower()
