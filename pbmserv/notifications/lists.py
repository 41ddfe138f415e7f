"""The mails people subscribe to (a spectator's board mail and chat, the result
notices of a game, the digest) carry a List-Id (RFC 2919) and a List-Unsubscribe
(RFC 2369) naming an address that unsubscribes their reader, and (with ``web_url``)
the one-click link of RFC 8058.  A player's own board mails and replies carry none:
nobody can leave the games they play.  The headers themselves are written by the
sender (pbmserv.sender.message) from what is kept here in the outbox row."""

from __future__ import annotations

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.models import Board, User
from pbmserv.games import AnyEngine
from pbmserv.render import render
from pbmserv.service.reply_tokens import Unsubscribe, server_secret, unsubscribe_tag

#: what a reader may leave
SPECTATOR, NOTIFY, DIGEST = "spectator", "notify", "digest"


def list_fields(session: Session, settings: Settings, kind: str, user: User,
                engine: AnyEngine | None = None, board: Board | None = None) -> tuple[str, str]:
    """(List-Id, unsubscribe tag) of a ``kind`` mail to ``user``."""
    if kind == SPECTATOR:
        assert engine is not None and board is not None
        label, target = f"{engine.name}-{board.number}.boards", str(board.id)
    elif kind == NOTIFY:
        assert engine is not None
        label, target = f"{engine.name}.results", engine.name
    else:
        label, target = "digest", ""
    name = render("subjects/list_id.txt.j2", kind=kind, engine=engine, board=board,
                  settings=settings).strip().replace('"', "'")
    list_id = f'"{name}" <{label}.{settings.domain}>'
    tag = unsubscribe_tag(server_secret(session, settings.secret),
                          Unsubscribe(kind, target, user.id))
    return list_id, tag
