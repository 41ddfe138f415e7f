"""Accounts: finding users and checking their passwords."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.commands.base import CommandError
from pbmserv.db.models import User
from pbmserv.passwords import check_password

USERID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$")
EMAIL_RE = re.compile(r"^[^@\s<>\"',;:]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$")
PASSWORD_RE = re.compile(r"^[^\s\"':]{1,128}$")


def find_user(session: Session, userid: str) -> User | None:
    return session.scalar(
        select(User).where(User.key == userid.lower(), User.closed_at.is_(None))
    )


def existing_user(session: Session, userid: str) -> User:
    user = find_user(session, userid)
    if user is None:
        raise CommandError(f"there is no user {userid!r}; players sign up with 'signup'")
    return user


def authenticate(session: Session, userid: str, password: str) -> User:
    user = find_user(session, userid)
    if user is None or not check_password(user.password_hash, password):
        raise CommandError(
            f"userid {userid!r} and that password do not match "
            "(passwords are case-sensitive)"
        )
    return user


def check_userid(userid: str) -> None:
    if not USERID_RE.match(userid):
        raise CommandError(
            f"{userid!r} cannot be a userid: use 1 to 32 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit"
        )


def check_new_password(password: str) -> None:
    if not PASSWORD_RE.match(password):
        raise CommandError("a password may not contain spaces, quotes or colons")


def check_email(email: str) -> str:
    if not EMAIL_RE.match(email):
        raise CommandError(f"{email!r} is not a mail address like name@example.org")
    return email.lower()
