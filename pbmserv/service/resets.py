"""Password resets: a one-time code, mailed to the account's own address, sets a new
password.

The code is stored hashed (like a password), expires after a day, works once, and
only the newest code of an account works.  A new code is made at most every
``REQUEST_EVERY``, so nobody can flood an account's mailbox.  Wrong codes have a limit
of their own, per account and sender address together (five, then a pause, as for
passwords): wrong passwords (anyone's) never hold up a code, and wrong codes from one
address never hold up the codes the player sends from theirs.  A code, once used, also
clears the account's wrong-password count (the guesses were at the old password).
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session

from pbmserv.db.models import PasswordReset, User
from pbmserv.service.accounts import (
    check_enabled,
    check_new_password,
    check_not_locked,
    has_no_address,
    set_password,
)
from pbmserv.service.errors import PlayerError
from pbmserv.service.passwords import check_password, hash_password
from pbmserv.service.throttle import account_key, code_key, record_success, sender_key

VALID_FOR = timedelta(hours=24)
REQUEST_EVERY = timedelta(minutes=10)
#: letters and digits that cannot be mistaken for one another
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
CODE_LENGTH = 12


def new_code() -> str:
    """Twelve characters in groups of four (about 59 bits): ``k7qm-4htp-x2nc``."""
    raw = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    return "-".join(raw[i:i + 4] for i in range(0, CODE_LENGTH, 4))


def normal_code(code: str) -> str:
    """A code as typed, in the form it was hashed in (case and dashes do not matter)."""
    raw = code.lower().replace("-", "")
    return "-".join(raw[i:i + 4] for i in range(0, len(raw), 4))


def issue(session: Session, user: User, now: datetime) -> tuple[str | None, PasswordReset]:
    """A new code for ``user`` (replacing any earlier one), and its row; no code (None)
    if one was made less than REQUEST_EVERY ago: that one is still on its way."""
    check_enabled(user)
    if user.bot is not None:
        raise PlayerError(f"{user.userid} is one of the server's bots: it has no password "
                          "and no mail address")
    if has_no_address(user):
        raise PlayerError(f"the account {user.userid} has no mail address yet, so no code "
                          "can be sent; write to the server's administrator")
    row = session.get(PasswordReset, user.id, with_for_update=True)
    if row is not None and now - row.requested_at < REQUEST_EVERY:
        return None, row
    code = new_code()
    if row is None:
        row = PasswordReset(user_id=user.id, code_hash="", requested_at=now, expires_at=now)
        session.add(row)
    row.code_hash = hash_password(code)
    row.requested_at, row.expires_at = now, now + VALID_FOR
    return code, row


def redeem(session: Session, user: User, code: str, password: str, sender: str,
           now: datetime) -> None:
    """Set ``password`` if ``code`` is the account's current code; a wrong or expired
    code is charged to the reset codes' own throttle key (see throttle.code_key)."""
    check_new_password(password)
    key = code_key("code", user.userid, sender)
    keys = (key, key)
    counted = check_not_locked(session, keys, now, what="reset codes")
    check_enabled(user)
    row = session.get(PasswordReset, user.id, with_for_update=True)
    if row is None or row.expires_at <= now or not check_password(row.code_hash,
                                                                  normal_code(code)):
        raise PlayerError(
            f"that is not a valid reset code for {user.userid} (a code works once, for "
            f"{VALID_FOR.days * 24} hours, and only the newest one); send 'reset "
            f"{user.userid}' for a new one", failed_keys=(key,))
    session.delete(row)
    set_password(session, user, password)
    if key in counted:
        record_success(session, key)
    # the password is new: the guesses at the old one no longer count; and from the
    # account's own address, neither do its own slips
    record_success(session, account_key(user.userid))
    if sender.lower() == user.email:
        record_success(session, sender_key(sender))


def forget(session: Session, user: User) -> None:
    """Drop the account's code, if any (its password was set another way)."""
    session.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))
