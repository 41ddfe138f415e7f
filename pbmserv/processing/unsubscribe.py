"""A mail to an unsubscribe address (``pbmserv+unsub-...@domain``, the mailto of a
list mail's List-Unsubscribe): whatever it says, it unsubscribes the reader the
address was made for.  The confirmation goes to that player's own address, never to
the sender (a mailbox provider may send the mail in the player's name)."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.status import InboundStatus
from pbmserv.mail.parse import ParsedMail
from pbmserv.notifications.outbox import our_subject, queue_mail
from pbmserv.render import render
from pbmserv.service.reply_tokens import server_secret
from pbmserv.service.unsubscribe import Unsubscribed, unsubscribe

log = logging.getLogger(__name__)


def confirmation(done: Unsubscribed, settings: Settings) -> tuple[str, str]:
    """(subject, body) of the mail that says what an unsubscribe did."""
    context = {"done": done, "settings": settings}
    return (render("subjects/unsubscribed.txt.j2", **context).strip(),
            render("unsubscribed.txt.j2", **context))


def handle_unsubscribe(session: Session, settings: Settings, inbound_id: int,
                       mail: ParsedMail) -> tuple[InboundStatus, str]:
    tag = mail.unsubscribe_tag or ""
    done = unsubscribe(session, server_secret(session, settings.secret), tag, utcnow())
    if done is None:
        if mail.silent_reason:
            return InboundStatus.IGNORED, "unsubscribe address not ours: nothing changed"
        queue_mail(session, settings, to=mail.reply_to,
                   subject=our_subject(settings, "not unsubscribed"),
                   body=render("unsubscribe_invalid.txt.j2", settings=settings),
                   inbound_id=inbound_id, in_reply_to=mail.message_id)
        return InboundStatus.DONE, "unsubscribe address not ours: nothing changed"
    subject, body = confirmation(done, settings)
    queue_mail(session, settings, to=done.user.email, subject=subject, body=body,
               inbound_id=inbound_id)
    note = f"unsubscribe: {done.user.userid}, {done.what.kind} {done.game}".strip()
    log.info("message %s: %s", inbound_id, note)
    return InboundStatus.DONE, note + ("" if done.changed else " (was off already)")
