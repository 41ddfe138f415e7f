"""The durable raw store: a mail is committed here before anyone acknowledges it.

Only the raw bytes (a blob) and a few short, cleaned strings are stored, so no mail,
however hostile (NUL bytes in the envelope or headers, odd encodings), can make the
store fail for good and have the sending MTA retry for days.  ``store_batch`` stores
many mails in one transaction: one commit (one fsync) for all of them.

A mail over 64 KB is stored in its stored form (pbmserv.mail.attachments): its text
and its shape, without the bodies of its attachments, each part left out named in a
header of that part.  The key that knows the mail if it comes again, and the quota,
go by what is stored.

Given a ``Quota``, it stores no more of one sender's mail in 24 hours than the quota
(``sender_quota_mails``, ``sender_quota_bytes``, counted in stored bytes): a mail
beyond it is not stored, and the intake tells its sender to try again later.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any, overload

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.db.statements import store_mail
from pbmserv.db.status import InboundStatus
from pbmserv.mail.addresses import MAX_ADDRESS
from pbmserv.mail.attachments import stored_form
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
    """The key of a mail as received (of its stored form, as ``store_batch`` keys it)."""
    return identify(stored_form(raw, envelope_from=envelope_from).raw,
                    clean_envelope(envelope_from))[2]


def message_key(raw: bytes, envelope_from: str) -> str:
    """A short key of the mail that knows it whatever carries it (32 hex digits of the
    SHA-256 of its dedupe key): the IMAP intake keeps it for good, the stored mail
    only until it is purged."""
    return hashlib.sha256(dedupe_key(raw, envelope_from).encode()).hexdigest()[:32]


# a sender's mails and bytes stored since a time, read from the index
# (sender, received_at, size) alone
_USED = select(func.count(), func.coalesce(func.sum(InboundMessage.size), 0)).where(
    InboundMessage.sender == bindparam("sender"),
    InboundMessage.received_at >= bindparam("since"))
_KNOWN = select(InboundMessage.id).where(InboundMessage.dedupe_key == bindparam("dedupe_key"))
#: the window of the sender quota
QUOTA_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Quota:
    """The most mail one sender may have stored in ``QUOTA_WINDOW`` (0: no limit)."""

    mails: int
    size: int

    @classmethod
    def of(cls, settings: Settings) -> Quota | None:
        """The settings' quota; None if they set none."""
        if not settings.sender_quota_mails and not settings.sender_quota_bytes:
            return None
        return cls(settings.sender_quota_mails, settings.sender_quota_bytes)


@dataclass(frozen=True)
class OverQuota:
    """A mail not stored: its sender had the quota's worth stored in the window.  The
    answer is "try again later": the oldest of the sender's mails leaves the window
    within a day, and a temporary refusal is never turned into a bounce to a sender
    who may be forged (see docs/admin.md, "Limits")."""

    sender: str
    #: what is over: "300 mails" or "20971520 bytes"
    over: str

    def __str__(self) -> str:
        return (f"<{self.sender}> has had {self.over} stored in the last 24 hours, "
                "this server's most from one sender")


#: what store_batch says of each mail: its id; None, a redelivery; or OverQuota
Stored = int | None | OverQuota


class _Usage:
    """Each sender's mail in the window, as a batch is stored (read from the database
    once for each sender, then counted on)."""

    def __init__(self, session: Session, quota: Quota, now: datetime) -> None:
        self.session = session
        self.quota = quota
        self.since = now - QUOTA_WINDOW
        self.used: dict[str, list[int]] = {}

    def over(self, sender: str, size: int) -> OverQuota | None:
        """Whether one more mail of ``size`` bytes from ``sender`` is over the quota;
        if it is not, it is counted."""
        used = self.used.get(sender)
        if used is None:
            count, stored = self.session.execute(
                _USED, {"sender": sender, "since": self.since}).one()
            used = self.used[sender] = [int(count), int(stored)]
        quota = self.quota
        if quota.mails and used[0] + 1 > quota.mails:
            return OverQuota(sender, f"{quota.mails} mails")
        if quota.size and used[1] + size > quota.size:
            return OverQuota(sender, f"{quota.size} bytes")
        used[0] += 1
        used[1] += size
        return None


def _over_or_known(session: Session, values: dict[str, Any],
                   over: OverQuota) -> OverQuota | None:
    """A mail over its sender's quota: None if it was stored before (a redelivery is
    acknowledged, never refused), else the refusal."""
    known = session.scalar(_KNOWN, {"dedupe_key": values["dedupe_key"]})
    return over if known is None else None


def store_batch(db: Database, mails: Sequence[tuple[bytes, str]],
                also: Callable[[Session, list[Stored]], None] | None = None,
                quota: Quota | None = None,
                sizes: Sequence[int | None] | None = None) -> list[Stored]:
    """Commit many raw mails at once; for each, its id, or None if it was stored
    before (a redelivery: the same sender and Message-ID), or OverQuota if its sender
    had ``quota``'s worth stored in the last 24 hours (not stored).  ``also`` is called
    with the session and those answers before the commit: what it writes is committed
    with the mails, or not at all (the IMAP intake's record of the UIDs it took).
    ``sizes``: a mail's size as it came where only its header is stored (a mail over
    ``max_message_size`` that the IMAP intake answers with the limit), None for the
    others: their size is what is stored of them (see ``stored_form``)."""
    rows: list[dict[str, Any]] = []
    message_ids = []
    notes = []
    now = utcnow()
    for n, (received, envelope_from) in enumerate(mails):
        form = stored_form(received, envelope_from=envelope_from)
        raw = form.raw
        notes.append(f"{form.received} bytes" if not form.dropped else
                     f"{form.received} bytes, {len(raw)} stored ({form.dropped})")
        envelope = clean_envelope(envelope_from)
        sender, message_id, key = identify(raw, envelope)
        message_ids.append(message_id)
        rows.append({"raw": raw, "size": len(raw) if sizes is None else sizes[n] or len(raw),
                     "envelope_from": envelope,
                     "sender": sender[:320], "dedupe_key": key, "received_at": now,
                     "status": InboundStatus.NEW})
    with db.transaction(urgent=True) as session:
        usage = None if quota is None else _Usage(session, quota, now)
        ids: list[Stored] = []
        for values in rows:
            over = None if usage is None else usage.over(values["sender"],
                                                         len(values["raw"]))
            ids.append(store_mail(session, values) if over is None
                       else _over_or_known(session, values, over))
        if also is not None:
            also(session, ids)
    # one line per mail, to follow it from the MTA's log into ours: never its Subject
    # (a command line may hold a password)
    for stored, values, message_id, note in zip(ids, rows, message_ids, notes, strict=True):
        mid = clean_line(message_id, MAX_LOGGED) or "(no Message-ID)"
        if stored is None:
            log.info("received again, not stored twice: %s from <%s>", mid,
                     values["envelope_from"])
        elif isinstance(stored, OverQuota):
            log.info("refused for now, not stored: %s from <%s>: %s", mid,
                     values["envelope_from"], stored)
        else:
            log.info("received #%s: %s from <%s>, %s", stored, mid,
                     values["envelope_from"], note)
    return ids


@overload
def store_message(db: Database, raw: bytes, envelope_from: str = "",
                  quota: None = None) -> int | None: ...


@overload
def store_message(db: Database, raw: bytes, envelope_from: str,
                  quota: Quota | None) -> Stored: ...


def store_message(db: Database, raw: bytes, envelope_from: str = "",
                  quota: Quota | None = None) -> Stored:
    """Commit one raw mail; returns its id, None if it was stored before, or
    OverQuota (see ``store_batch``)."""
    return store_batch(db, [(raw, envelope_from)], quota=quota)[0]
