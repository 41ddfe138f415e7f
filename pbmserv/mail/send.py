"""Delivering the outbox: to the relay when one is set, else into a Maildir.

A row is leased before sending and marked sent after, so a crash re-sends at
worst (never loses); into a Maildir the file name comes from the row, so a
re-send replaces the same file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import smtplib
import socket
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path

from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.mail.parse import LOOP_HEADER

log = logging.getLogger(__name__)
#: how long a claimed row is left alone; a sender that dies mid-send delays it this long
LEASE = timedelta(seconds=60)
#: rows leased and recorded together, in one transaction each way
BATCH = 20
MAX_BACKOFF = 3600



class PermanentFailure(Exception):
    """The relay refused the mail for good (5xx)."""


def backoff_seconds(attempts: int) -> int:
    return int(min(30 * 2 ** max(attempts - 1, 0), MAX_BACKOFF))


def build_message(settings: Settings, row: OutboxMessage) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = formataddr((settings.server_name, settings.address))
    msg["To"] = row.to_addr
    msg["Subject"] = row.subject
    msg["Date"] = format_datetime(row.created_at)
    msg["Message-ID"] = row.message_id
    if row.in_reply_to:
        msg["In-Reply-To"] = row.in_reply_to
        msg["References"] = row.in_reply_to
        msg["Auto-Submitted"] = "auto-replied"
    else:
        msg["Auto-Submitted"] = "auto-generated"
    msg[LOOP_HEADER] = settings.domain
    cte = "7bit" if row.body.isascii() else "quoted-printable"
    msg.set_content(row.body, charset="utf-8", cte=cte)
    return msg


def deliver_maildir(maildir: Path, row: OutboxMessage, data: bytes) -> Path:
    for sub in ("tmp", "new", "cur"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(row.message_id.encode()).hexdigest()[:16]
    name = f"{int(row.created_at.timestamp())}.{row.id}_{digest}.{socket.gethostname()}"
    tmp = maildir / "tmp" / name
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    final = maildir / "new" / name
    os.replace(tmp, final)
    return final


def deliver_relay(relay: tuple[str, int], settings: Settings, msg: EmailMessage,
                  to: str) -> None:
    try:
        with smtplib.SMTP(relay[0], relay[1], timeout=30) as smtp:
            smtp.send_message(msg, from_addr=settings.address, to_addrs=[to])
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        if all(500 <= c < 600 for c in codes):
            raise PermanentFailure(str(exc.recipients)) from None
        raise
    except smtplib.SMTPResponseException as exc:
        if 500 <= exc.smtp_code < 600:
            raise PermanentFailure(f"{exc.smtp_code} {exc.smtp_error!r}") from None
        raise


class Sender:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def _claim(self, limit: int) -> list[OutboxMessage]:
        """Lease up to ``limit`` due rows, so that no other sender takes them."""
        now = utcnow()
        claimed = []
        with self.db.transaction() as session:
            for row in session.scalars(
                select(OutboxMessage)
                .where(OutboxMessage.status == "pending", OutboxMessage.next_attempt_at <= now)
                .order_by(OutboxMessage.id).limit(limit)
            ):
                got = session.execute(
                    update(OutboxMessage)
                    .where(OutboxMessage.id == row.id, OutboxMessage.status == "pending",
                           OutboxMessage.next_attempt_at <= now)
                    .values(next_attempt_at=now + LEASE)
                ).rowcount  # type: ignore[attr-defined]
                if got:
                    claimed.append(row)
        return claimed

    def _deliver(self, row: OutboxMessage) -> dict[str, object]:
        """Send one mail; returns the changes to record for its row."""
        try:
            data = build_message(self.settings, row)
            if self.settings.relay is None:
                deliver_maildir(self.settings.maildir, row, data.as_bytes())
            else:
                deliver_relay(self.settings.relay, self.settings, data, row.to_addr)
            return {"status": "sent", "sent_at": utcnow(), "last_error": None}
        except PermanentFailure as exc:
            log.warning("outbox %s refused for good: %s", row.id, exc)
            return {"status": "failed", "last_error": str(exc)[:2000]}
        except Exception as exc:
            delay = backoff_seconds(row.attempts + 1)
            log.warning("outbox %s not sent (%s); next try in %ss", row.id,
                        type(exc).__name__, delay)
            return {"last_error": f"{type(exc).__name__}: {exc}"[:2000],
                    "next_attempt_at": utcnow() + timedelta(seconds=delay)}

    def send_due(self, limit: int = 1000) -> int:
        """Send due messages, a batch at a time (each tried once, at most ``limit``);
        returns how many went out."""
        sent = tried = 0
        while tried < limit:
            rows = self._claim(min(BATCH, limit - tried))
            if not rows:
                break
            results = [(row.id, self._deliver(row)) for row in rows]
            with self.db.transaction() as session:
                for row_id, values in results:
                    session.execute(
                        update(OutboxMessage).where(OutboxMessage.id == row_id)
                        .values(attempts=OutboxMessage.attempts + 1, **values)
                    )
            tried += len(rows)
            sent += sum(values.get("status") == "sent" for _, values in results)
        return sent
