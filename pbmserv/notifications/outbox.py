"""Queueing outgoing mail: rows written in the caller's transaction."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.models import OutboxMessage


def new_message_id(settings: Settings) -> str:
    return f"<{uuid.uuid4().hex}@{settings.domain}>"


def queue_mail(session: Session, settings: Settings, *, to: str, subject: str, body: str,
               inbound_id: int | None = None, in_reply_to: str | None = None) -> OutboxMessage:
    row = OutboxMessage(
        inbound_id=inbound_id,
        message_id=new_message_id(settings),
        to_addr=to,
        subject=subject[:255],
        body=body,
        in_reply_to=in_reply_to,
    )
    session.add(row)
    return row
