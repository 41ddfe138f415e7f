"""Confirmed addresses: an account works once its address has answered.

A signup needs no proof that its address is the signer's, so the account waits:
the signup mails one confirmation to the account's address (the reply to the
signup, when it came from that address), carrying a one-time code, with the
command that confirms it as its Subject (``confirm USERID CODE``), so a plain reply
confirms.  Until then no password opens the account, nobody can challenge it,
nothing else is mailed to it, no web page shows it, and after ``confirm_hours`` it
lapses (it is closed and its userid is free again).  One sender opens at most
``signups_per_sender_day`` accounts a day, and an address waits for one
confirmation at a time; but a signup from that address itself goes ahead, lapsing
what others signed up in its name (nobody can keep a newcomer from signing up).

A new address given by ``change address`` is confirmed the same way, before it takes
effect: a code goes to the new address (the same ``confirm USERID CODE``), the old
address is told, and the account's mail goes on to the old address until the new
one answers, within ``confirm_hours`` (a request that lapsed is void, and is
replaced by the next one or dropped by a change of password or address).

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
from pbmserv.service.accounts import close_account, set_address
from pbmserv.service.errors import PlayerError
from pbmserv.service.limits import same_sender
from pbmserv.service.resets import new_code, normal_code
from pbmserv.service.throttle import code_key

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


def lapses_at(user: User, hours: int) -> datetime:
    return user.created_at + timedelta(hours=hours)


def lapsed(user: User, now: datetime, hours: int) -> bool:
    return user.confirmed_at is None and lapses_at(user, hours) <= now


def check_signup(session: Session, sender: str, email: str, now: datetime, *,
                 per_day: int, hours: int) -> None:
    """Refuse a signup beyond the sender's daily allowance, or for an address that
    waits for a confirmation already; but a signup from the address itself lapses
    the accounts others signed up in its name (its own still waits)."""
    sender = sender.lower()
    opened = session.scalar(select(func.count()).select_from(User).where(
        same_sender(User.signup_sender, sender), User.created_at > now - DAY)) or 0
    if opened >= per_day:
        raise PlayerError(f"{per_day} accounts have been opened from your address in the last "
                          "24 hours, the most a day; try again tomorrow")
    for waiting in list(session.scalars(select(User).where(
            User.email == email.lower(), User.confirmed_at.is_(None),
            User.closed_at.is_(None), User.bot.is_(None), User.confirm_code_hash.is_not(None),
            User.created_at > now - timedelta(hours=hours)).order_by(User.id).limit(10))):
        if sender != email.lower() or waiting.signup_sender == sender:
            raise PlayerError(
                f"the account {waiting.userid} for {email.lower()} waits for its "
                "confirmation already: answer the mail sent there (its Subject is the "
                "command that confirms it), or sign up again after "
                f"{lapses_at(waiting, hours):%Y-%m-%d %H:%M} UTC, when it lapses")
        lapse(session, waiting, now)  # someone else's signup in this address's name


def claim(session: Session, userid: str, now: datetime, hours: int) -> None:
    """Make way for a signup of ``userid``: an account that lapsed unconfirmed holding
    it is closed now (the clock's round would close it soon anyway); one still
    waiting for its confirmation holds it, and the refusal says until when."""
    user = session.scalar(select(User).where(User.key == userid.lower(),
                                             User.closed_at.is_(None)))
    if user is None or user.bot is not None or user.confirm_code_hash is None \
            or user.confirmed_at is not None:
        return
    if not lapsed(user, now, hours):
        raise PlayerError(
            f"the userid {user.userid!r} is held by a signup that waits for its "
            "confirmation; unless it is confirmed, it is free again at "
            f"{lapses_at(user, hours):%Y-%m-%d %H:%M} UTC: choose another, or try then")
    lapse(session, user, now)


def start_address(user: User, email: str, now: datetime) -> str:
    """Make ``email`` the account's new address once it answers; returns the code to
    mail there (a request made before is replaced)."""
    if email == user.email:
        raise PlayerError(f"mail for {user.userid} goes to {email} already; nothing to "
                          "change")
    code = new_code()
    user.new_email, user.new_email_at = email, now
    user.confirm_code_hash = code_hash(code)
    return code


def address_lapses_at(user: User, hours: int) -> datetime | None:
    return None if user.new_email_at is None else user.new_email_at + timedelta(hours=hours)


def confirm_address(session: Session, user: User, code: str, sender: str, now: datetime,
                    hours: int) -> str:
    """Move ``user``'s mail to the new address its ``code`` was mailed to; returns the
    old address.  A wrong code is charged as in ``confirm``."""
    lapses = address_lapses_at(user, hours)
    if user.new_email is None or user.confirm_code_hash is None or lapses is None:
        raise PlayerError(f"the account {user.userid} is confirmed already; nothing to do")
    if lapses <= now:
        raise PlayerError(f"the new address of {user.userid} was not confirmed within {hours} "
                          "hours, so its mail still goes to the old one; to move it, send "
                          "'change address' again")
    if not hmac.compare_digest(code_hash(code), user.confirm_code_hash):
        raise PlayerError(f"that is not the code mailed to {user.userid}'s new address; reply "
                          "to the confirmation mail as it is, or copy its Subject exactly",
                          failed_keys=(code_key("confirm", user.userid, sender),))
    return set_address(session, user, user.new_email)


def confirm(user: User, code: str, sender: str, now: datetime, hours: int) -> None:
    """Confirm ``user`` with ``code``; a wrong code is charged to the confirmation
    codes' own key for the account and the sender (see throttle.code_key), so that a
    stranger's guesses never pause the owner's code nor lock the owner out."""
    if user.confirmed_at is not None:
        raise PlayerError(f"the account {user.userid} is confirmed already; nothing to do")
    if lapsed(user, now, hours) or user.confirm_code_hash is None:
        raise PlayerError(f"the account {user.userid} was not confirmed within {hours} hours "
                          "and has lapsed; sign up again")
    if not hmac.compare_digest(code_hash(code), user.confirm_code_hash):
        raise PlayerError(f"that is not the code mailed to {user.userid}'s address; reply to "
                          "the confirmation mail as it is, or copy its Subject exactly",
                          failed_keys=(code_key("confirm", user.userid, sender),))
    user.confirmed_at = now
    user.confirm_code_hash = None


def lapse_due(session: Session, now: datetime, hours: int) -> int:
    """Close every account that waited more than ``hours`` for its confirmation (its
    userid is free again); returns how many."""
    due = list(session.scalars(select(User).where(
        User.confirmed_at.is_(None), User.confirm_code_hash.is_not(None),
        User.closed_at.is_(None), User.bot.is_(None),
        User.created_at <= now - timedelta(hours=hours)).limit(500)))
    for user in due:
        lapse(session, user, now)
    return len(due)


def lapse(session: Session, user: User, now: datetime) -> None:
    """Close an account that was never confirmed; unlike a closed account's, its userid
    is not kept for its owner a while (it never had one)."""
    close_account(session, user, now)
    user.key = user.key.replace("#closed", "#lapsed", 1)
