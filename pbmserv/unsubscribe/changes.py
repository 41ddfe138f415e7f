"""Unsubscribing by the address (or the web link) a list mail carries: a spectator
stops watching the board, a player stops getting the result notices of a game, or
a player's digest is switched off (their board mails then come one by one).

The tag names what to stop and for whom, signed with the server's secret
(pbmserv.service.reply_tokens), so no login is needed and nobody can forge one for
another player.  Unsubscribing twice is harmless: the second time changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pbmserv.db.models import Board, GameNotify, User
from pbmserv.db.status import DigestMode
from pbmserv.games import get_engine
from pbmserv.service import mail_prefs
from pbmserv.service.games import GameService
from pbmserv.service.reply_tokens import Unsubscribe, read_unsubscribe_tag


@dataclass(frozen=True)
class Unsubscribed:
    """What an unsubscribe did: for whom, what it stopped (in words), whether it had
    been on."""

    user: User
    what: Unsubscribe
    #: the game's title ("" for the digest; templates/unsubscribed.txt.j2 tells it)
    title: str
    #: the game's name (for the commands that undo it), the board's number
    game: str
    number: int | None
    changed: bool


def unsubscribe(session: Session, secret: bytes, tag: str, now: datetime) -> Unsubscribed | None:
    """Apply an unsubscribe tag; None if it is not one of ours (or names what is gone)."""
    what = read_unsubscribe_tag(secret, tag)
    if what is None:
        return None
    user = session.get(User, what.user_id)
    if user is None:
        return None
    if what.kind == "spectator":
        board = session.get(Board, int(what.target))
        engine = get_engine(board.game) if board is not None else None
        if board is None or engine is None:
            return None
        changed = GameService(session, now).subscribe(board, user, False)
        return Unsubscribed(user, what, engine.title, engine.name, board.number, changed)
    if what.kind == "notify":
        engine = get_engine(what.target)
        if engine is None:
            return None
        was_on = session.get(GameNotify, (user.id, engine.name)) is not None
        GameService(session, now).set_notify(user, engine.name, False)
        return Unsubscribed(user, what, engine.title, engine.name, None, was_on)
    chosen = mail_prefs.prefs(session, user)
    changed = chosen.digest is not DigestMode.OFF
    mail_prefs.set_digest(session, user, DigestMode.OFF, None, now)
    return Unsubscribed(user, what, "", "", None, changed)
