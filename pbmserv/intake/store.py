"""The durable raw store: a mail is committed here before anyone acknowledges it.

Only the raw bytes (a blob) and two short, cleaned strings are stored, so no mail,
however hostile (NUL bytes in the envelope or headers, odd encodings), can make the
store fail for good and have the sending MTA retry for days.
"""

from __future__ import annotations

from email.parser import BytesHeaderParser
from email.policy import compat32

from sqlalchemy.exc import IntegrityError

from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.mail.headers import address_of, header
from pbmserv.mail.parse import MAX_HEADER_BYTES
from pbmserv.mail.text import clean_line

MAX_ENVELOPE = 320


def clean_envelope(envelope_from: str) -> str:
    """The envelope sender as stored: printable, at most 320 characters."""
    return clean_line(envelope_from, MAX_ENVELOPE * 4).replace(" ", "")[:MAX_ENVELOPE]


def dedupe_key(raw: bytes, envelope_from: str) -> str | None:
    """Sender and Message-ID: the same pair twice is one mail delivered twice."""
    try:
        head = raw[:MAX_HEADER_BYTES].split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
        headers = BytesHeaderParser(policy=compat32).parsebytes(head)
        message_id = header(headers, "Message-ID")
        sender = address_of(header(headers, "From")) or envelope_from.lower()
    except Exception:
        return None
    if not message_id:
        return None
    return f"{sender} {message_id}"[:1000]


def store_message(db: Database, raw: bytes, envelope_from: str = "") -> int | None:
    """Commit the raw mail; returns its id, or None if it was stored before (a redelivery)."""
    envelope = clean_envelope(envelope_from)
    row = InboundMessage(raw=raw, envelope_from=envelope, dedupe_key=dedupe_key(raw, envelope))
    try:
        with db.transaction() as session:
            session.add(row)
            session.flush()
            return row.id
    except IntegrityError:
        if row.dedupe_key is None:
            raise
        return None
