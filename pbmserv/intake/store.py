"""The durable raw store: a mail is committed here before anyone acknowledges it."""

from __future__ import annotations

from email.parser import BytesHeaderParser
from email.policy import compat32

from sqlalchemy.exc import IntegrityError

from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.mail.parse import address_of


def dedupe_key(raw: bytes, envelope_from: str) -> str | None:
    """Sender and Message-ID: the same pair twice is one mail delivered twice."""
    try:
        headers = BytesHeaderParser(policy=compat32).parsebytes(raw)
        message_id = " ".join(str(headers.get("Message-ID", "")).split())
        sender = address_of(str(headers.get("From", ""))) or envelope_from.lower()
    except Exception:
        return None
    if not message_id:
        return None
    return f"{sender} {message_id}"[:1000]


def store_message(db: Database, raw: bytes, envelope_from: str = "") -> int | None:
    """Commit the raw mail; returns its id, or None if it was stored before (a redelivery)."""
    row = InboundMessage(raw=raw, envelope_from=envelope_from[:320],
                         dedupe_key=dedupe_key(raw, envelope_from))
    try:
        with db.transaction() as session:
            session.add(row)
            session.flush()
            return row.id
    except IntegrityError:
        if row.dedupe_key is None:
            raise
        return None
