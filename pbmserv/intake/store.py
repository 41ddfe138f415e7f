"""The durable raw store: a mail is committed here before anyone acknowledges it.

Only the raw bytes (a blob) and a few short, cleaned strings are stored, so no mail,
however hostile (NUL bytes in the envelope or headers, odd encodings), can make the
store fail for good and have the sending MTA retry for days.  ``store_batch`` stores
many mails in one transaction: one commit (one fsync) for all of them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage
from pbmserv.db.prepared import Prepared
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.mail.addresses import MAX_ADDRESS
from pbmserv.mail.headers import address_of, header
from pbmserv.mail.mailboxes import first_mailbox, raw_header
from pbmserv.mail.parse import MAX_HEADER_BYTES
from pbmserv.mail.text import clean_line

log = logging.getLogger(__name__)
#: the most of a Message-ID that is logged
MAX_LOGGED = 200


def clean_envelope(envelope_from: str) -> str:
    """The envelope sender as stored: printable; "" (none known: the From is used) for
    one longer than any address, never a piece of it (another address)."""
    envelope = clean_line(envelope_from, (MAX_ADDRESS + 3) * 4).replace(" ", "")
    return "" if len(envelope.strip("<>")) > MAX_ADDRESS else envelope


def identify(raw: bytes, envelope: str) -> tuple[str, str, str]:
    """The sender's address, the Message-ID ("" if none) and the dedupe key, read from
    the headers alone: sender + Message-ID (the same pair twice is one mail delivered
    twice), or for a mail without a Message-ID sender + a hash of its bytes (a
    redelivery after a lost acknowledgement is the same bytes again)."""
    try:
        head = raw[:MAX_HEADER_BYTES].split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
        headers = BytesHeaderParser(policy=compat32).parsebytes(head)
        message_id = header(headers, "Message-ID")
        sender = first_mailbox(raw_header(headers, "From")) or address_of(envelope)
    except Exception:
        message_id, sender = "", address_of(envelope)
    who = sender or envelope.lower()
    if not message_id:
        return sender, "", f"{who} sha256:{hashlib.sha256(raw).hexdigest()}"[:1000]
    return sender, message_id, f"{who} {message_id}"[:1000]


def dedupe_key(raw: bytes, envelope_from: str) -> str:
    return identify(raw, clean_envelope(envelope_from))[2]


# INSERT ... ON CONFLICT (dedupe_key) DO NOTHING RETURNING id: no id, a redelivery.
# As text with typed parameters (the same SQL on SQLite and PostgreSQL), prepared once
# (SQLAlchemy's own insert().on_conflict_do_nothing() has no cache key: it was
# compiled again for every mail, a tenth of the intake's CPU)
_STORED = ("raw", "envelope_from", "sender", "dedupe_key", "received_at", "status")
_INSERT = Prepared(text(
    f"INSERT INTO inbound_messages ({', '.join(_STORED)}) "
    f"VALUES ({', '.join(':' + name for name in _STORED)}) "
    "ON CONFLICT (dedupe_key) DO NOTHING RETURNING id"
).bindparams(*(bindparam(name, type_=InboundMessage.__table__.c[name].type)
               for name in _STORED)))


def _insert(session: Session, values: dict[str, Any]) -> int | None:
    row = _INSERT.first(session.connection(), values)
    return None if row is None else int(row[0])


def store_batch(db: Database, mails: Sequence[tuple[bytes, str]],
                also: Callable[[Session, list[int | None]], None] | None = None,
                ) -> list[int | None]:
    """Commit many raw mails at once; for each, its id, or None if it was stored
    before (a redelivery: the same sender and Message-ID).  ``also`` is called with
    the session and those ids before the commit: what it writes is committed with the
    mails, or not at all (the IMAP intake's record of the UIDs it took)."""
    rows: list[dict[str, Any]] = []
    message_ids = []
    for raw, envelope_from in mails:
        envelope = clean_envelope(envelope_from)
        sender, message_id, key = identify(raw, envelope)
        message_ids.append(message_id)
        rows.append({"raw": raw, "envelope_from": envelope, "sender": sender[:320],
                     "dedupe_key": key, "received_at": utcnow(),
                     "status": InboundStatus.NEW})
    with db.transaction(urgent=True) as session:
        ids = [_insert(session, values) for values in rows]
        if also is not None:
            also(session, ids)
    # one line per mail, to follow it from the MTA's log into ours: never its Subject
    # (a command line may hold a password)
    for stored, values, message_id in zip(ids, rows, message_ids, strict=True):
        mid = clean_line(message_id, MAX_LOGGED) or "(no Message-ID)"
        if stored is None:
            log.info("received again, not stored twice: %s from <%s>", mid,
                     values["envelope_from"])
        else:
            log.info("received #%s: %s from <%s>, %d bytes", stored, mid,
                     values["envelope_from"], len(values["raw"]))
    return ids


def store_message(db: Database, raw: bytes, envelope_from: str = "") -> int | None:
    """Commit one raw mail; returns its id, or None if it was stored before."""
    return store_batch(db, [(raw, envelope_from)])[0]
