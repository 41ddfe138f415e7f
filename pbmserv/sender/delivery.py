"""Delivering the outbox: to the relay when one is set, else into a Maildir.

Rows are leased before sending, in the name of one sender run, so that no other
sender (another thread, ``pbmserv work``, another host) takes them meanwhile:

- Into a Maildir, a batch is leased, written and recorded together; a file's name
  comes from its row, so even a lease that ran out could only rewrite the same file.
- To a relay, each mail's lease is renewed just before it is sent and its result
  recorded as soon as it is known, in one transaction with the next mail's renewal.
  A lease (5 minutes) outlasts any single send, so a mail that went out is never
  sent again by anyone while nothing crashed; a crash mid-send may repeat that one.

A relay that cannot be reached charges no mail with a back-off: the mails stay due,
the sender probes the relay every few seconds, and the backlog goes out as soon as
it answers.  Only the relay's answer to one mail (4xx) delays that mail.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.mail.parse import LOOP_HEADER
from pbmserv.sender.relay import (
    PermanentFailure,
    RelayConnection,
    RelayDown,
    TemporaryFailure,
    probe,
)

log = logging.getLogger(__name__)
#: how long a leased row is left alone; longer than any one send can take
LEASE = timedelta(minutes=5)
#: rows leased together
BATCH = 20
MAX_BACKOFF = 3600
#: how often an unreachable relay is tried again
PROBE_EVERY = 2.0


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


def _sent() -> dict[str, Any]:
    return {"status": OutboxStatus.SENT, "sent_at": utcnow(), "last_error": None, "leased_by": None}


def _deferred(row: OutboxMessage, error: str) -> dict[str, Any]:
    delay = backoff_seconds(row.attempts + 1)
    log.warning("outbox %s not sent (%s); next try in %ss", row.id, error[:200], delay)
    return {"last_error": error[:2000], "leased_by": None,
            "next_attempt_at": utcnow() + timedelta(seconds=delay)}


def _failed(row: OutboxMessage, error: str) -> dict[str, Any]:
    log.warning("outbox %s refused for good: %s", row.id, error[:200])
    return {"status": OutboxStatus.FAILED, "last_error": error[:2000], "leased_by": None}


class Sender:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        #: this sender's name on the rows it leases
        self.token = uuid.uuid4().hex
        self.relay_down = False
        self._next_probe = 0.0

    # -- leases -----------------------------------------------------------------------
    def _claim(self, limit: int) -> list[OutboxMessage]:
        """Lease up to ``limit`` due rows, so that no other sender takes them."""
        now = utcnow()
        claimed = []
        with self.db.transaction() as session:
            for row in session.scalars(
                select(OutboxMessage)
                .where(OutboxMessage.status == OutboxStatus.PENDING,
                       OutboxMessage.next_attempt_at <= now)
                .order_by(OutboxMessage.id).limit(limit)
            ):
                got = session.execute(
                    update(OutboxMessage)
                    .where(OutboxMessage.id == row.id, OutboxMessage.status == OutboxStatus.PENDING,
                           OutboxMessage.next_attempt_at <= now)
                    .values(next_attempt_at=now + LEASE, leased_by=self.token)
                ).rowcount  # type: ignore[attr-defined]
                if got:
                    claimed.append(row)
        return claimed

    def _record(self, session: Session, row_id: int, values: dict[str, Any],
                *, charged: bool = True) -> None:
        attempts = {"attempts": OutboxMessage.attempts + 1} if charged else {}
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id, OutboxMessage.leased_by == self.token)
            .values(**values, **attempts)
        )

    def _renew(self, session: Session, row_id: int) -> bool:
        return bool(session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id, OutboxMessage.leased_by == self.token,
                   OutboxMessage.status == OutboxStatus.PENDING)
            .values(next_attempt_at=utcnow() + LEASE)
        ).rowcount)  # type: ignore[attr-defined]

    def _release(self, rows: list[OutboxMessage]) -> None:
        """Give rows back untried: due again at once, for any sender."""
        if not rows:
            return
        with self.db.transaction() as session:
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.id.in_([r.id for r in rows]),
                       OutboxMessage.leased_by == self.token)
                .values(leased_by=None, next_attempt_at=utcnow())
            )

    # -- sending ----------------------------------------------------------------------
    def send_due(self, limit: int = 1000) -> int:
        """Send due messages, a batch at a time (each tried once, at most ``limit``);
        returns how many went out."""
        relay = self.settings.relay
        if relay is not None and self.relay_down:
            if time.monotonic() < self._next_probe:
                return 0
            if not probe(relay):
                self._next_probe = time.monotonic() + PROBE_EVERY
                return 0
            log.warning("relay %s:%s answers again; sending the backlog", *relay)
            self.relay_down = False
        sent = tried = 0
        while tried < limit and not self.relay_down:
            rows = self._claim(min(BATCH, limit - tried))
            if not rows:
                break
            tried += len(rows)
            sent += self._to_maildir(rows) if relay is None else self._to_relay(relay, rows)
        return sent

    def _to_maildir(self, rows: list[OutboxMessage]) -> int:
        results = []
        for row in rows:
            try:
                data = build_message(self.settings, row).as_bytes()
                deliver_maildir(self.settings.maildir, row, data)
                results.append((row.id, _sent()))
            except Exception as exc:
                results.append((row.id, _deferred(row, f"{type(exc).__name__}: {exc}")))
        with self.db.transaction() as session:
            for row_id, values in results:
                self._record(session, row_id, values)
        return sum(values.get("status") is OutboxStatus.SENT for _, values in results)

    def _to_relay(self, relay: tuple[str, int], rows: list[OutboxMessage]) -> int:
        sent = 0
        pending: tuple[int, dict[str, Any]] | None = None  # a result not yet recorded
        with RelayConnection(relay, self.settings.address) as connection:
            for i, row in enumerate(rows):
                with self.db.transaction() as session:
                    if pending is not None:
                        self._record(session, *pending)
                        pending = None
                    mine = self._renew(session, row.id)
                if not mine:
                    continue
                try:
                    connection.send(build_message(self.settings, row), row.to_addr)
                except RelayDown as exc:
                    log.warning("relay %s:%s cannot be reached (%s); probing every %ss",
                                relay[0], relay[1], exc, PROBE_EVERY)
                    self.relay_down = True
                    self._next_probe = time.monotonic() + PROBE_EVERY
                    with self.db.transaction() as session:
                        self._record(session, row.id, {"last_error": str(exc)[:2000]},
                                     charged=False)
                    self._release(rows[i:])
                    return sent
                except PermanentFailure as exc:
                    pending = (row.id, _failed(row, str(exc)))
                    continue
                except TemporaryFailure as exc:
                    pending = (row.id, _deferred(row, str(exc)))
                    continue
                pending = (row.id, _sent())
                sent += 1
        if pending is not None:
            with self.db.transaction() as session:
                self._record(session, *pending)
        return sent
