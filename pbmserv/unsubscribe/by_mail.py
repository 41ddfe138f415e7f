"""A mail to an unsubscribe address (``pbmserv+unsub-...@domain``, the mailto of a
list mail's List-Unsubscribe): whatever it says, it unsubscribes the reader the
address was made for.  The confirmation goes to that player's own address, never to
the sender (pbmserv.unsubscribe.notices)."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.status import InboundStatus
from pbmserv.mail.parse import ParsedMail
from pbmserv.service.reply_tokens import server_secret
from pbmserv.unsubscribe.changes import unsubscribe
from pbmserv.unsubscribe.notices import tell_not_ours, tell_unsubscribed

log = logging.getLogger(__name__)


def handle_unsubscribe(session: Session, settings: Settings, inbound_id: int,
                       mail: ParsedMail) -> tuple[InboundStatus, str]:
    tag = mail.unsubscribe_tag or ""
    done = unsubscribe(session, server_secret(session, settings.secret), tag, utcnow())
    if done is None:
        if mail.silent_reason:
            return InboundStatus.IGNORED, "unsubscribe address not ours: nothing changed"
        tell_not_ours(session, settings, mail.reply_to, inbound_id, mail.message_id)
        return InboundStatus.DONE, "unsubscribe address not ours: nothing changed"
    tell_unsubscribed(session, settings, done, inbound_id)
    note = f"unsubscribe: {done.user.userid}, {done.what.kind} {done.game}".strip()
    log.info("message %s: %s", inbound_id, note)
    return InboundStatus.DONE, note + ("" if done.changed else " (was off already)")
