"""Confirmed addresses: an account works once its address has answered.

A signup needs no proof that its address is the signer's, so the account waits:
the signup mails one confirmation to the account's address (the reply to the
signup, when it came from that address), carrying a one-time code, with the
command that confirms it as its Subject (``confirm USERID CODE``), so a plain reply
confirms.  Until then no password opens the account, nobody can challenge it,
nothing else is mailed to it, and after ``confirm_days`` it lapses (it is closed and
its userid is free again).  One sender opens at most ``signups_per_sender_day``
accounts a day, and an address waits for one confirmation at a time.

The code is kept as its SHA-256 only: it is random (about 59 bits), so no slow hash
is needed to keep it from being guessed from the table.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import User
from pbmserv.mail.addresses import address_key
from pbmserv.service.accounts import close_account
from pbmserv.service.errors import PlayerError
from pbmserv.service.limits import same_sender
from pbmserv.service.resets import new_code, normal_code
from pbmserv.service.throttle import account_key, sender_key

DAY = timedelta(days=1)


def code_hash(code: str) -> str:
    return hashlib.sha256(normal_code(code).encode()).hexdigest()


def start(user: User, sender: str) -> str:
    """Make ``user`` wait for its confirmation; returns the code to mail."""
    code = new_code()
    user.confirmed_at = None
    user.confirm_code_hash = code_hash(code)
    user.signup_sender = address_key(sender)
    return code


def lapses_at(user: User, days: int) -> datetime:
    return user.created_at + timedelta(days=days)


def lapsed(user: User, now: datetime, days: int) -> bool:
    return user.confirmed_at is None and lapses_at(user, days) <= now


def check_signup(session: Session, sender: str, email: str, now: datetime, *,
                 per_day: int, days: int) -> None:
    """Refuse a signup beyond the sender's daily allowance, or for an address that
    waits for a confirmation already."""
    opened = session.scalar(select(func.count()).select_from(User).where(
        same_sender(User.signup_sender, sender), User.created_at > now - DAY)) or 0
    if opened >= per_day:
        raise PlayerError(f"{per_day} accounts have been opened from your address in the last "
                          "24 hours, the most a day; try again tomorrow")
    waiting = session.scalar(select(User).where(
        User.email == email.lower(), User.confirmed_at.is_(None), User.closed_at.is_(None),
        User.created_at > now - timedelta(days=days)).limit(1))
    if waiting is not None:
        raise PlayerError(
            f"the account {waiting.userid} for {email.lower()} waits for its confirmation "
            "already: answer the mail sent there (its Subject is the command that confirms "
            f"it), or sign up again after {lapses_at(waiting, days):%Y-%m-%d %H:%M} UTC, "
            "when it lapses")


def confirm(user: User, code: str, sender: str, now: datetime, days: int) -> None:
    """Confirm ``user`` with ``code`` (a wrong code is charged like a wrong password)."""
    if user.confirmed_at is not None:
        raise PlayerError(f"the account {user.userid} is confirmed already; nothing to do")
    if lapsed(user, now, days) or user.confirm_code_hash is None:
        raise PlayerError(f"the account {user.userid} was not confirmed within {days} days "
                          "and has lapsed; sign up again")
    if not hmac.compare_digest(code_hash(code), user.confirm_code_hash):
        raise PlayerError(f"that is not the code mailed to {user.userid}'s address; reply to "
                          "the confirmation mail as it is, or copy its Subject exactly",
                          failed_keys=(account_key(user.userid), sender_key(sender)))
    user.confirmed_at = now
    user.confirm_code_hash = None


def lapse_due(session: Session, now: datetime, days: int) -> int:
    """Close every account that waited more than ``days`` for its confirmation (its
    userid is free again); returns how many."""
    due = list(session.scalars(select(User).where(
        User.confirmed_at.is_(None), User.confirm_code_hash.is_not(None),
        User.closed_at.is_(None), User.bot.is_(None),
        User.created_at <= now - timedelta(days=days)).limit(500)))
    for user in due:
        lapse(session, user, now)
    return len(due)


def lapse(session: Session, user: User, now: datetime) -> None:
    """Close an account that was never confirmed; unlike a closed account's, its userid
    is not kept for its owner a while (it never had one)."""
    close_account(session, user, now)
    user.key = user.key.replace("#closed", "#lapsed", 1)


def free_lapsed(session: Session, userid: str, now: datetime, days: int) -> None:
    """If ``userid`` belongs to an account that lapsed unconfirmed, close it now, so
    the userid is free (the clock's round would close it soon anyway)."""
    user = session.scalar(select(User).where(User.key == userid.lower(),
                                             User.closed_at.is_(None)))
    if user is not None and user.bot is None and user.confirm_code_hash is not None \
            and lapsed(user, now, days):
        lapse(session, user, now)
        session.flush()
