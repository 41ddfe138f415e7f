"""The outbox sender: Maildir, a real relay, a relay that is down, a relay that refuses."""

from __future__ import annotations

import asyncio
import errno
import os
import quopri
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from pbmserv.config import Settings
from pbmserv.db import session as session_module
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.notifications.outbox import queue_mail
from pbmserv.sender import delivery as send
from pbmserv.sender import maildir as maildir_module
from pbmserv.sender import message
from pbmserv.sender import relay as relay_module
from pbmserv.sender.delivery import Sender, backoff_seconds
from pbmserv.sender.message import OutboxMail
from tests.conftest import Mailer, free_port, read_maildir, text_of


class Sink:
    """A relay that keeps what it receives; refuses recipients at refused.example."""

    def __init__(self) -> None:
        self.received: list[Envelope] = []

    async def handle_RCPT(self, server: Any, session: Any, envelope: Envelope, address: str,
                          options: list[str]) -> str:
        if address.endswith("@refused.example"):
            return "550 5.1.1 no such user"
        if address.endswith("@busy.example"):
            return "451 4.3.2 try again later"
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
        return queue_mail(s, settings, to=to, subject="Test", body=body)


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
    # the envelope sender is the mail's own bounce address (VERP)
    assert re.fullmatch(rf"pbmserv\+bounce-o{rid}-[a-z2-7]{{16}}@localhost",
                        sink.received[0].mail_from or "")
    assert row(db, rid).status == "sent"


def test_relay_down_charges_no_mail_and_backlog_goes_out_when_it_answers(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(send, "PROBE_EVERY", 0.2)
    port = free_port()
    sender = Sender(db, replace(settings, relay=("127.0.0.1", port)))
    ids = [queue(db, settings, to=f"p{i}@example.org") for i in range(30)]
    assert sender.send_due() == 0 and sender.relay_down
    first = row(db, ids[0])
    assert first.status == "pending" and first.attempts == 0 and first.last_error
    assert first.next_attempt_at <= utcnow() and first.leased_by is None  # still due
    assert all(row(db, i).leased_by is None for i in ids)
    assert sender.send_due() == 0  # no probe yet: nothing is tried
    sink = Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()  # the relay answers again
    try:
        time.sleep(0.25)
        assert sender.send_due() == 30
        assert not sender.relay_down
    finally:
        controller.stop()
    assert sorted(e.rcpt_tos[0] for e in sink.received) == sorted(
        f"p{i}@example.org" for i in range(30))
    assert {row(db, i).status for i in ids} == {"sent"}


def test_a_strict_relay_gets_crlf_line_ends_and_takes_every_mail(
        db: Database, settings: Settings) -> None:
    """Every line of a mail on the wire ends in CRLF: a board mail of several KB,
    text and HTML, reaches a relay that splits lines at CRLF only (no bare LF, which a
    strict relay, or Postfix with smtpd_forbid_bare_newline, refuses)."""
    sink = Sink()  # aiosmtpd as it comes: lines end at CRLF, 1,000 bytes at most
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        body = "".join(f"line {i}: " + "x" * 60 + "\n" for i in range(100)) + "Grüße\n"
        with db.transaction() as s:
            rid = queue_mail(s, settings, to="bob@example.org", subject="Board",
                             body=body, html=("<p>" + "y" * 70 + "</p>\n") * 60)
        assert Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due() == 1
    finally:
        controller.stop()
    assert row(db, rid).status == "sent"
    [envelope] = sink.received
    raw = envelope.original_content
    assert isinstance(raw, bytes) and len(raw) > 8000
    assert b"\n" not in raw.replace(b"\r\n", b""), "a bare LF reached the relay"
    assert b"\r" not in raw.replace(b"\r\n", b""), "a bare CR reached the relay"
    assert max(len(line) for line in raw.split(b"\r\n")) <= 78
    # the Maildir copy keeps LF, and both are the same mail
    assert raw.replace(b"\r\n", b"\n") == message.message_bytes(settings, row(db, rid))


def test_temporary_refusal_backs_off_that_mail_only(db: Database, settings: Settings,
                                                    relay: tuple[Sink, int]) -> None:
    sink, port = relay
    later = queue(db, settings, to="x@busy.example")
    now = queue(db, settings, to="bob@example.org")
    assert Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due() == 1
    deferred = row(db, later)
    assert deferred.status == "pending" and deferred.attempts == 1
    assert deferred.next_attempt_at > utcnow() + timedelta(seconds=20)
    assert "451" in (deferred.last_error or "")
    assert row(db, now).status == "sent" and len(sink.received) == 1


def test_permanent_refusal_of_the_address_is_a_bounce(db: Database, settings: Settings,
                                                      relay: tuple[Sink, int]) -> None:
    _, port = relay
    rid = queue(db, settings, to="x@refused.example")
    Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due()
    failed = row(db, rid)
    # the relay's answer as text, not a Python bytes repr
    assert failed.status == "bounced" and failed.last_error == "550 5.1.1 no such user"


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff_seconds(n) for n in (1, 2, 3)] == [30, 60, 120]
    assert backoff_seconds(50) == 3600


def test_leased_row_is_not_sent_by_a_second_sender(db: Database, settings: Settings) -> None:
    rid = queue(db, settings)
    sender = Sender(db, settings)
    _, claimed, _ = sender._claim(10)
    assert [r.id for r in claimed] == [rid]
    assert Sender(db, settings)._claim(10)[1] == []
    with db.transaction() as s:
        assert s.scalar(select(OutboxMessage.status)) == "pending"


class SlowSink(Sink):
    """A relay that takes its time over every mail."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        await asyncio.sleep(self.delay)
        return await super().handle_DATA(server, session, envelope)


def test_two_senders_and_a_slow_relay_send_every_mail_once(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    two_senders_and_a_slow_relay(db, db, settings, monkeypatch)


@pytest.mark.postgres
def test_two_senders_and_a_slow_relay_on_postgres(
        pg_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sender with a database connection pool of its own, as two processes have."""
    pg = replace(settings, database_url=pg_url)
    first, second = Database(pg_url), Database(pg_url)
    try:
        two_senders_and_a_slow_relay(first, second, pg, monkeypatch)
    finally:
        first.dispose()
        second.dispose()


def two_senders_and_a_slow_relay(db: Database, other: Database, settings: Settings,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # a lease shorter than a batch takes to send: each mail's lease is renewed just
    # before it goes, and its result recorded at once, so nobody sends it again
    monkeypatch.setattr(send, "LEASE", timedelta(seconds=0.5))
    monkeypatch.setattr(send, "SEND_LEASE", timedelta(seconds=0.5))
    monkeypatch.setattr(send, "BATCH", 8)
    sink = SlowSink(0.1)
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    relayed = replace(settings, relay=("127.0.0.1", port))
    ids = [queue(db, settings, to=f"p{i}@example.org") for i in range(24)]
    stop = threading.Event()

    def run(database: Database) -> None:
        sender = Sender(database, relayed)
        while not stop.is_set():
            sender.send_due()
            time.sleep(0.05)

    threads = [threading.Thread(target=run, args=(d,)) for d in (db, other)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(sink.received) < 24 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.2)  # well past every lease: a duplicate would show now
    finally:
        stop.set()
        for t in threads:
            t.join()
        controller.stop()
    to = [e.rcpt_tos[0] for e in sink.received]
    assert sorted(to) == sorted(f"p{i}@example.org" for i in range(24))
    assert {row(db, i).status for i in ids} == {"sent"}


# -- addresses and Message-IDs from hostile or international mail ---------------------
def test_a_hostile_mail_stops_no_outgoing_mail(mailer: Mailer, db: Database,
                                               settings: Settings) -> None:
    """A non-ASCII sender and Message-ID (a Maildir): its reply goes out in UTF-8 with no
    In-Reply-To, and the mail before and after it go out too."""
    mailer.send("help", sender="alice@example.org")
    mailer.send_raw(
        "From: müller@bücher.example\nTo: pbmserv@localhost\nSubject: help\n"
        "Message-ID: \u2039ü@example.org>\n\n\n".encode(), "müller@bücher.example")
    mailer.send("help", sender="bob@example.org")
    assert Sender(db, settings).send_due() == 3
    mails = read_maildir(settings.maildir)
    assert sorted(m["To"] for m in mails) == ["alice@example.org", "bob@example.org",
                                              "müller@xn--bcher-kva.example"]
    [theirs] = [m for m in mails if m["To"].startswith("müller")]
    assert theirs["In-Reply-To"] is None and theirs["Auto-Submitted"] == "auto-replied"
    assert "pbmserv: board games by mail" in text_of(theirs)


def test_smtputf8_to_the_relay(db: Database, settings: Settings,
                               relay: tuple[Sink, int]) -> None:
    sink, port = relay
    rid = queue(db, settings, to="müller@bücher.example")
    assert Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due() == 1
    assert [e.rcpt_tos for e in sink.received] == [["müller@xn--bcher-kva.example"]]
    assert "SMTPUTF8" in sink.received[0].mail_options
    assert row(db, rid).status == "sent"


def test_a_relay_without_smtputf8_fails_that_mail_only(db: Database, settings: Settings) -> None:
    sink = Sink()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port, enable_SMTPUTF8=False)
    controller.start()
    try:
        bad = queue(db, settings, to="müller@example.org")
        good = queue(db, settings, to="bob@example.org")
        sender = Sender(db, replace(settings, relay=("127.0.0.1", port)))
        assert sender.send_due() == 1 and not sender.relay_down
    finally:
        controller.stop()
    failed = row(db, bad)
    assert failed.status == "failed" and "SMTPUTF8" in (failed.last_error or "")
    assert row(db, good).status == "sent"


def test_a_row_that_cannot_be_made_into_a_mail_is_failed_alone(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [queue(db, settings, to=f"p{i}@example.org") for i in range(3)]
    real = message.message_bytes

    def broken_for_the_second(settings: Settings, row: OutboxMessage) -> bytes:
        if row.id == ids[1]:
            raise ValueError("a bug")
        return real(settings, row)

    monkeypatch.setattr(send, "message_bytes", broken_for_the_second)
    assert Sender(db, settings).send_due() == 2
    assert [row(db, i).status for i in ids] == ["sent", "failed", "sent"]
    assert "ValueError: a bug" in (row(db, ids[1]).last_error or "")


def test_a_line_break_in_a_header_value_starts_no_header_of_its_own(
        db: Database, settings: Settings) -> None:
    """On the wire every CR is a line end: a subject with a CR or LF in it stays one
    header (the break becomes a blank), and folding of a long encoded one is kept."""
    long = "Grüße " * 30
    for subject in ("Board 101\rBcc: x@evil.example", "Board 101\nBcc: x@evil.example", long):
        with db.transaction() as s:
            rid = queue_mail(s, settings, to="bob@example.org", subject=subject, body="Hi\n")
        wire = relay_module.on_the_wire(message.message_bytes(settings, row(db, rid)))
        head = wire.split(b"\r\n\r\n", 1)[0]
        assert not any(line.lower().startswith(b"bcc:") for line in head.split(b"\r\n"))
        parsed = message_from_bytes(wire, policy=policy.default)
        assert str(parsed["Subject"]) == subject.replace("\r", " ").replace("\n", " ")


# -- the Maildir: a batch in one transaction, one flush of the files --------------------
def test_nothing_due_takes_no_write_lock(settings: Settings,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked every worker round, mostly in vain: with nothing due the sender only
    reads, so it does not wait for another process's writer holding SQLite's lock."""
    monkeypatch.setattr(session_module, "BUSY_TIMEOUT", 0.1)  # a writer gives up soon
    db = Database(settings.database_url)
    writer = sqlite3.connect(db.engine.url.database or "", timeout=0)
    try:
        later = queue(db, settings)
        with db.transaction() as s:
            s.execute(update(OutboxMessage).where(OutboxMessage.id == later)
                      .values(next_attempt_at=utcnow() + timedelta(hours=1)))
        writer.execute("BEGIN IMMEDIATE")
        assert Sender(db, settings).send_due() == 0
        with pytest.raises(OperationalError, match="locked"), db.transaction() as s:
            s.execute(update(OutboxMessage).values(attempts=5))  # as a write would fare
        writer.rollback()
        assert row(db, later).status == "pending" and row(db, later).attempts == 0
    finally:
        writer.close()
        db.dispose()


def test_two_senders_into_one_maildir_write_every_mail_once(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    two_senders_into_one_maildir(db, Database(settings.database_url), settings, monkeypatch)


@pytest.mark.postgres
def test_two_senders_into_one_maildir_on_postgres(
        pg_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sender with a connection pool of its own, as two processes have: a batch's
    rows are held by its transaction (SKIP LOCKED), so the other sender takes others."""
    pg = replace(settings, database_url=pg_url)
    two_senders_into_one_maildir(Database(pg_url), Database(pg_url), pg, monkeypatch)


def two_senders_into_one_maildir(db: Database, other: Database, settings: Settings,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(send, "BATCH", 3)
    written: list[str] = []
    real = maildir_module.deliver_all

    def counted(maildir: Path, mails: Sequence[tuple[OutboxMail, bytes]]) -> list[str | None]:
        written.extend(maildir_module.file_name(r) for r, _ in mails)
        time.sleep(0.01)  # a slow disk: the other sender runs meanwhile
        return real(maildir, mails)

    monkeypatch.setattr(send, "deliver_all", counted)
    try:
        ids = [queue(db, settings, to=f"p{i}@example.org") for i in range(30)]
        sent: list[int] = []

        def run(database: Database) -> None:
            sent.append(Sender(database, settings).send_due())

        threads = [threading.Thread(target=run, args=(d,)) for d in (db, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(sent) == 30 and sorted(written) == sorted(set(written))
        assert len(written) == 30 and len(read_maildir(settings.maildir)) == 30
        rows = [row(db, i) for i in ids]
        assert {(r.status, r.attempts, r.leased_by) for r in rows} == {("sent", 1, None)}
    finally:
        db.dispose()
        other.dispose()


def test_one_flush_of_the_file_system_a_batch(db: Database, settings: Settings,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if maildir_module.SYNCFS is None:
        pytest.skip("no syncfs(2) here: a file is flushed at a time")
    flushed: list[int] = []
    real = maildir_module.SYNCFS

    def syncfs(fd: int) -> None:
        flushed.append(fd)
        real(fd)

    monkeypatch.setattr(maildir_module, "SYNCFS", syncfs)
    for i in range(5):
        queue(db, settings, to=f"p{i}@example.org")
    assert Sender(db, settings).send_due() == 5
    assert len(flushed) == 1 and len(read_maildir(settings.maildir)) == 5


def test_a_file_at_a_time_without_syncfs(db: Database, settings: Settings,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maildir_module, "SYNCFS", None)
    flushed: list[int] = []
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        flushed.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    ids = [queue(db, settings, to=f"p{i}@example.org", body=f"Mail {i}\n") for i in range(3)]
    assert Sender(db, settings).send_due() == 3
    assert len(flushed) == 3
    assert sorted(text_of(m) for m in read_maildir(settings.maildir)) == [
        "Mail 0\n", "Mail 1\n", "Mail 2\n"]
    assert [row(db, i).status for i in ids] == ["sent"] * 3


def test_a_batch_whose_flush_fails_is_not_counted_and_waits(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write error the flush reports (as syncfs does since Linux 5.8) names no file:
    no mail of the batch is moved into new/ or counted sent; all are tried later."""
    if maildir_module.SYNCFS is None:
        pytest.skip("no syncfs(2) here")

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "syncfs: Input/output error")

    monkeypatch.setattr(maildir_module, "SYNCFS", failing)
    ids = [queue(db, settings, to=f"p{i}@example.org") for i in range(3)]
    assert Sender(db, settings).send_due() == 0
    assert read_maildir(settings.maildir) == []
    for i in ids:
        waiting = row(db, i)
        assert waiting.status == "pending" and waiting.attempts == 1
        assert "Input/output error" in (waiting.last_error or "")
        assert waiting.next_attempt_at > utcnow() + timedelta(seconds=20)
    monkeypatch.undo()
    with db.transaction() as s:  # their back-off over: they go out, once each
        s.execute(update(OutboxMessage).values(next_attempt_at=utcnow()))
    assert Sender(db, settings).send_due() == 3 and len(read_maildir(settings.maildir)) == 3


@pytest.mark.parametrize("text", [
    "Grüße, ünïcödé ● ♚\n",
    "x" * 75 + "\n" + "y" * 76 + "\n" + "z" * 77 + "\n" + "é" * 40 + "\n",
    "a line with blanks at its end   \nand a tab\t\n \n\t\nlast blank ",
    "=start\n.\n. \n.x\n==\n" + "=" * 30 + "\n" + "a" * 73 + "=b\n" + "a" * 74 + "é\n",
    "é", ".", "", "\n\n\n", "abc = def" * 40, "<p>" + "wide é " * 200 + "</p>",
])
def test_quoted_printable_is_as_the_standard_library_makes_it(
        db: Database, settings: Settings, text: str) -> None:
    """The text part (not ASCII), quoted-printable: the same bytes as quopri makes
    them, and read back as it was written.  The HTML part is ASCII (characters beyond
    it written as character references): 7bit while its lines fit in 998 octets, else
    quoted-printable as quopri makes it; read back, the same HTML."""
    body = "é" + text  # not ASCII: quoted-printable
    with db.transaction() as s:
        rid = queue_mail(s, settings, to="bob@example.org", subject="Board", body=body,
                         html=text or "<p></p>")
    raw = message.message_bytes(settings, row(db, rid))
    wanted = body if body.endswith("\n") else body + "\n"
    assert quopri.encodestring(wanted.encode()) in raw
    ascii_html = (text or "<p></p>").encode("ascii", "xmlcharrefreplace")
    fits = max(map(len, ascii_html.split(b"\n"))) <= 998
    assert (ascii_html if fits else quopri.encodestring(ascii_html)) in raw
    mail = message_from_bytes(raw, policy=policy.default)
    assert isinstance(mail, EmailMessage)
    assert text_of(mail) == wanted
    html = mail.get_body(preferencelist=("html",))
    assert isinstance(html, EmailMessage)
    assert html["Content-Transfer-Encoding"] == ("7bit" if fits else "quoted-printable")
    assert html.get_content().isascii()
    assert unescape(html.get_content()).rstrip("\n") == (text or "<p></p>").rstrip("\n")


def test_an_html_part_with_a_nul_is_quoted_printable(db: Database, settings: Settings) -> None:
    """7bit holds no NUL (RFC 2045): such an HTML part goes quoted-printable, read back
    the same (no HTML of ours holds one; the parser cleans a mail's text of them)."""
    with db.transaction() as s:
        rid = queue_mail(s, settings, to="bob@example.org", subject="Board", body="b",
                         html="<p>a\x00b</p>")
    mail = message_from_bytes(message.message_bytes(settings, row(db, rid)),
                              policy=policy.default)
    assert isinstance(mail, EmailMessage)
    html = mail.get_body(preferencelist=("html",))
    assert isinstance(html, EmailMessage)
    assert html["Content-Transfer-Encoding"] == "quoted-printable"
    assert html.get_content().rstrip("\n") == "<p>a\x00b</p>"
