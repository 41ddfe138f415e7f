"""Queueing outgoing mail: rows written in the caller's transaction.

One Core insert each (no ORM object): the outbox is written for every mail the
server answers, so it is on the hot path.
"""

from __future__ import annotations

import uuid
from email.utils import formataddr

from sqlalchemy import insert
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.status import OutboxStatus
from pbmserv.mail.addresses import base_address, tag_mark, tag_of

_INSERT = insert(OutboxMessage)
#: the longest Subject stored
MAX_SUBJECT = 255


def new_message_id(settings: Settings) -> str:
    return f"<{uuid.uuid4().hex}@{settings.domain}>"


def queue_mail(session: Session, settings: Settings, *, to: str, subject: str, body: str,
               inbound_id: int | None = None, in_reply_to: str | None = None,
               reply_to: str | None = None, html: str | None = None,
               secret: bool = False, listed: tuple[str, str] | None = None) -> int:
    """Queue one mail; returns its outbox id.  ``html``: the same mail as HTML, sent
    beside the text as multipart/alternative.  Where the mailbox has no sub-addresses
    (``subaddressing`` off), a ``pbmserv+TAG@host`` Reply-To becomes the plain address
    with ``[TAG]`` in its name, and the Subject carries ``[TAG]`` too: a reply keeps
    one or the other.  ``secret``: the body holds a live secret (a reset code): it is
    blanked once the mail is sent.  ``listed``: (List-Id, unsubscribe tag) of a mail
    people subscribe to (pbmserv.notifications.lists)."""
    if reply_to and not settings.subaddressing:
        reply_to, subject = _tag_outside_address(settings, reply_to, subject)
    now = utcnow()
    result = session.connection().execute(_INSERT, {
        "inbound_id": inbound_id, "created_at": now, "message_id": new_message_id(settings),
        "to_addr": to, "subject": subject[:MAX_SUBJECT], "body": body, "in_reply_to": in_reply_to,
        "reply_to": reply_to, "html_body": html, "blank_after_send": secret,
        "list_id": listed[0] if listed else None, "unsubscribe": listed[1] if listed else None,
        "status": OutboxStatus.PENDING, "attempts": 0, "next_attempt_at": now,
    })
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _tag_outside_address(settings: Settings, reply_to: str, subject: str) -> tuple[str, str]:
    tag = tag_of(reply_to, settings.addresses)
    if not tag:
        return reply_to, subject
    mark = tag_mark(tag)
    named = formataddr((f"{settings.server_name} {mark}", base_address(reply_to)), "utf-8")
    return named, f"{subject[:MAX_SUBJECT - len(mark) - 1]} {mark}"
