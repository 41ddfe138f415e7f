"""Throttling guesses: passwords, reset codes and confirmation codes, each under
keys of their own, so that a stranger's guesses hold up the stranger and not the
account's owner.

- Passwords: per account (``user:ID``) and per sender address (``sender:ADDRESS``).
  The account's lock holds up every address but the account's own: a stranger's
  wrong passwords pause the strangers, never the owner writing from their address.
- Reset codes (``code:ID|ADDRESS``) and confirmation codes (``confirm:ID|ADDRESS``):
  per account and sender address together.  A code is random (about 59 bits), so
  guesses from any number of addresses cannot find it, and one address's wrong codes
  never pause the code the owner sends from theirs.

Five failures for one key within a quarter of an hour lock it: its checks are
refused, right or wrong, for a minute; every further failure after a lock doubles
the next one (up to a day).  A quiet quarter of an hour after the last failure or
lock clears any count.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, or_, select
from sqlalchemy.orm import Session

from pbmserv.db.models import AuthThrottle
from pbmserv.mail.addresses import address_key

FAILURES_BEFORE_LOCK = 5
QUIET = timedelta(minutes=15)
FIRST_LOCK = timedelta(minutes=1)
MAX_LOCK = timedelta(days=1)


# the two keys of a password check
_COUNTED = select(AuthThrottle.key, AuthThrottle.locked_until).where(
    or_(AuthThrottle.key == bindparam("account"), AuthThrottle.key == bindparam("sender")))


def account_key(userid: str) -> str:
    return f"user:{userid.lower()[:300]}"


def sender_key(address: str) -> str:
    """The key of a sender address: its one form, lower case and no +tag (so that
    ``rv+1@`` and ``rv+2@`` share one count)."""
    return f"sender:{address_key(address)[:300]}"


def code_key(kind: str, userid: str, sender: str) -> str:
    """The key of the codes of one ``kind`` (``code``: reset codes; ``confirm``:
    confirmation codes) tried for an account from one address (in its one form:
    ``rv+1@`` and ``rv+2@`` share one count)."""
    return f"{kind}:{userid.lower()[:150]}|{address_key(sender)[:240]}"


def throttled(session: Session, account: str, sender: str) -> dict[str, datetime | None]:
    """Of the two keys, those with failures counted, and until when each is locked."""
    return {row[0]: row[1] for row in session.execute(
        _COUNTED, {"account": account, "sender": sender})}


def lock_length(failures: int) -> timedelta:
    doubled: timedelta = FIRST_LOCK * 2 ** max(failures - FAILURES_BEFORE_LOCK, 0)
    return min(doubled, MAX_LOCK)


def record_failure(session: Session, keys: Iterable[str], now: datetime) -> None:
    for key in keys:
        row = session.get(AuthThrottle, key, with_for_update=True)
        if row is None:
            row = AuthThrottle(key=key, failures=0, last_failure_at=now)
            session.add(row)
        else:
            settled = max(row.last_failure_at, row.locked_until or row.last_failure_at)
            if now - settled > QUIET:
                row.failures, row.locked_until = 0, None
        row.failures += 1
        row.last_failure_at = now
        if row.failures >= FAILURES_BEFORE_LOCK:
            row.locked_until = now + lock_length(row.failures)


def record_success(session: Session, key: str) -> None:
    session.execute(delete(AuthThrottle).where(AuthThrottle.key == key))


def clear(session: Session, key: str | None = None) -> int:
    """Forget the failures of one key (all keys if None); returns how many were held."""
    query = delete(AuthThrottle)
    if key is not None:
        query = query.where(AuthThrottle.key == key)
    return int(session.execute(query).rowcount)  # type: ignore[attr-defined]


def held(session: Session) -> list[AuthThrottle]:
    return list(session.scalars(select(AuthThrottle).order_by(AuthThrottle.key)))
