"""How a player wants their mail: HTML parts or text only, the board in words or not,
in which language, and one digest a day (or two) instead of a board mail per move."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import BoardEvent, MailPrefs, User
from pbmserv.db.status import DigestMode
from pbmserv.i18n import N_
from pbmserv.service.errors import PlayerError

DEFAULT_HOUR = 18


class MailChoice(NamedTuple):
    html: bool
    digest: DigestMode
    #: the board in words with every board mail
    words: bool = False
    #: the language of their mail (None: English)
    language: str | None = None


_COLUMNS = (MailPrefs.user_id, MailPrefs.html, MailPrefs.digest, MailPrefs.words,
            MailPrefs.language)
_CHOICES = select(*_COLUMNS).where(MailPrefs.user_id.in_(bindparam("users", expanding=True)))
#: the same for one user (a move's board mail goes to one; an IN list of one costs
#: half as much again)
_CHOICE = select(*_COLUMNS).where(MailPrefs.user_id == bindparam("user"))
#: the language of the open account of an address (the sender of a mail)
_LANGUAGE = (select(MailPrefs.language).join(User, User.id == MailPrefs.user_id)
             .where(User.email == bindparam("address"), User.closed_at.is_(None))
             .order_by(User.confirmed_at.is_(None), User.id).limit(1))


def choices_of(session: Session, users: Sequence[User]) -> dict[int, MailChoice]:
    """How these users want their mail (those with the defaults are absent)."""
    if not users:
        return {}
    rows = (session.execute(_CHOICE, {"user": users[0].id}) if len(users) == 1 else
            session.execute(_CHOICES, {"users": [u.id for u in users]}))
    return {user_id: MailChoice(html, digest, words, language)
            for user_id, html, digest, words, language in rows}


def language_of(session: Session, address: str) -> str | None:
    """The language chosen by the account whose address ``address`` is (None: none
    chosen, or no account): the language of the reply to its mail."""
    return session.scalar(_LANGUAGE, {"address": address.lower()})


def prefs(session: Session, user: User) -> MailPrefs:
    """The user's preferences, made (with the defaults) if they have none yet."""
    found = session.get(MailPrefs, user.id)
    if found is None:
        found = MailPrefs(user_id=user.id, html=True, words=False, digest=DigestMode.OFF,
                          digest_hour=DEFAULT_HOUR, digest_event_id=0)
        session.add(found)
    return found


def next_digest(mode: DigestMode, hour: int, now: datetime) -> datetime | None:
    """The first digest time after ``now``: the hour every day, and 12 hours later
    too with TWICE."""
    if mode is DigestMode.OFF:
        return None
    hours = [hour] if mode is DigestMode.DAILY else sorted({hour, (hour + 12) % 24})
    day = now.replace(minute=0, second=0, microsecond=0)
    for offset in range(0, 2):
        for h in hours:
            candidate = day.replace(hour=h) + timedelta(days=offset)
            if candidate > now:
                return candidate
    raise AssertionError("a digest hour is always found within two days")


def set_html(session: Session, user: User, on: bool) -> MailPrefs:
    found = prefs(session, user)
    found.html = on
    return found


def set_words(session: Session, user: User, on: bool) -> MailPrefs:
    found = prefs(session, user)
    found.words = on
    return found


def set_language(session: Session, user: User, language: str | None) -> MailPrefs:
    """``language``: one of pbmserv.i18n.LANGUAGES (English chosen is kept: a mail's
    Content-Language no longer speaks for the player)."""
    found = prefs(session, user)
    found.language = language
    return found


def set_digest(session: Session, user: User, mode: DigestMode, hour: int | None,
               now: datetime) -> MailPrefs:
    """Switch digests on (from now: what happened before is not repeated) or off."""
    if hour is not None and not 0 <= hour <= 23:
        raise PlayerError(N_("the digest hour is a whole hour from 0 to 23 (UTC)"))
    found = prefs(session, user)
    if hour is not None:
        found.digest_hour = hour
    if found.digest is DigestMode.OFF and mode is not DigestMode.OFF:
        found.digest_event_id = int(session.scalar(select(func.max(BoardEvent.id))) or 0)
    found.digest = mode
    found.digest_next_at = next_digest(mode, found.digest_hour, now)
    return found
