"""The outbox sender: Maildir, a real relay, a relay that is down, a relay that refuses."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope
from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.mail.send import Sender, backoff_seconds
from pbmserv.outbox import queue_mail
from tests.conftest import free_port, read_maildir


class Sink:
    """A relay that keeps what it receives; refuses recipients at refused.example."""

    def __init__(self) -> None:
        self.received: list[Envelope] = []

    async def handle_RCPT(self, server: Any, session: Any, envelope: Envelope, address: str,
                          options: list[str]) -> str:
        if address.endswith("@refused.example"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        self.received.append(envelope)
        return "250 OK"


@pytest.fixture
def relay() -> Iterator[tuple[Sink, int]]:
    sink = Sink()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    yield sink, port
    controller.stop()


def queue(db: Database, settings: Settings, to: str = "bob@example.org",
          body: str = "Hello\n") -> int:
    with db.transaction() as s:
        row = queue_mail(s, settings, to=to, subject="Test", body=body)
        s.flush()
        return row.id


def row(db: Database, row_id: int) -> OutboxMessage:
    with db.transaction() as s:
        found = s.get(OutboxMessage, row_id)
        assert found is not None
        return found


def test_maildir_delivery_and_headers(db: Database, settings: Settings) -> None:
    rid = queue(db, settings, body="Grüße\n")
    assert Sender(db, settings).send_due() == 1
    [mail] = read_maildir(settings.maildir)
    assert mail["To"] == "bob@example.org" and mail["From"] == "pbmserv <pbmserv@localhost>"
    assert mail["Auto-Submitted"] == "auto-generated"
    assert mail.get_content() == "Grüße\n"
    assert row(db, rid).status == "sent"
    assert Sender(db, settings).send_due() == 0  # nothing twice


def test_relay_delivery(db: Database, settings: Settings, relay: tuple[Sink, int]) -> None:
    sink, port = relay
    rid = queue(db, settings)
    assert Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due() == 1
    assert [e.rcpt_tos for e in sink.received] == [["bob@example.org"]]
    assert sink.received[0].mail_from == "pbmserv@localhost"
    assert row(db, rid).status == "sent"


def test_relay_down_loses_nothing_and_backs_off(db: Database, settings: Settings,
                                                relay: tuple[Sink, int]) -> None:
    sink, port = relay
    down = replace(settings, relay=("127.0.0.1", free_port()))
    rid = queue(db, settings)
    assert Sender(db, down).send_due() == 0
    first = row(db, rid)
    assert first.status == "pending" and first.attempts == 1 and first.last_error
    assert first.next_attempt_at > utcnow() + timedelta(seconds=20)
    assert Sender(db, down).send_due() == 0  # not due yet: not tried again
    assert row(db, rid).attempts == 1
    with db.transaction() as s:  # time passes
        s.execute(update(OutboxMessage).values(next_attempt_at=utcnow()))
    assert Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due() == 1
    assert row(db, rid).status == "sent" and len(sink.received) == 1


def test_permanent_refusal_is_marked_failed(db: Database, settings: Settings,
                                            relay: tuple[Sink, int]) -> None:
    _, port = relay
    rid = queue(db, settings, to="x@refused.example")
    Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due()
    failed = row(db, rid)
    assert failed.status == "failed" and "550" in (failed.last_error or "")


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff_seconds(n) for n in (1, 2, 3)] == [30, 60, 120]
    assert backoff_seconds(50) == 3600


def test_leased_row_is_not_sent_by_a_second_sender(db: Database, settings: Settings) -> None:
    rid = queue(db, settings)
    sender = Sender(db, settings)
    claimed = sender._claim(10)
    assert [r.id for r in claimed] == [rid]
    assert Sender(db, settings)._claim(10) == []
    with db.transaction() as s:
        assert s.scalar(select(OutboxMessage.status)) == "pending"
