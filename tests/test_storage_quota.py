"""What one sender can make the server store: a quota per sender over 24 hours (in
mails and in bytes), answered "try again later" by every intake; and ignored mail
(bulk, robots) kept as its key alone, not whole, and only as long as a redelivery
may come."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update

from pbmserv.cli import EX_TEMPFAIL, main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.intake.store import OverQuota, Quota, store_batch, store_message
from pbmserv.processing import process_pending
from pbmserv.server import Server
from pbmserv.timers import run_purge
from tests.conftest import free_port, make_mail
from tests.test_lmtp import Lmtp


def rows(db: Database) -> list[InboundMessage]:
    with db.reading() as session:
        return list(session.scalars(select(InboundMessage).order_by(InboundMessage.id)))


@pytest.fixture
def quota_settings(settings: Settings) -> Settings:
    return replace(settings, sender_quota_mails=3, sender_quota_bytes=20_000)


@pytest.fixture
def listening(db: Database, quota_settings: Settings) -> Iterator[tuple[int, int]]:
    """SMTP and LMTP listeners with a quota of 3 mails and 20,000 bytes a sender."""
    smtp_port, lmtp_port = free_port(), free_port()
    srv = Server(db, quota_settings, "127.0.0.1", smtp_port, lmtp=f"127.0.0.1:{lmtp_port}",
                 interval=0.2, bots=False)
    srv.start()
    yield smtp_port, lmtp_port
    srv.stop()


def send(port: int, sender: str, raw: bytes) -> tuple[int, str]:
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as client:
        client.ehlo()
        client.mail(sender)
        client.rcpt("pbmserv@localhost")
        code, text = client.data(raw)
        return code, text.decode()


def test_smtp_and_lmtp_refuse_a_sender_over_its_quota_for_now(
        listening: tuple[int, int], db: Database) -> None:
    smtp_port, lmtp_port = listening
    flood = "flood@example.org"
    for n in range(3):
        code, _ = send(smtp_port, flood, make_mail("help", sender=flood,
                                                   message_id=f"<q{n}@example.org>"))
        assert code == 250
    code, text = send(smtp_port, flood, make_mail("help", sender=flood,
                                                  message_id="<q3@example.org>"))
    assert code == 451 and text == (
        "4.7.1 Not stored: <flood@example.org> has had 3 mails stored in the last 24 "
        "hours, this server's most from one sender; please try again later")
    # the same over LMTP, once for each recipient
    with Lmtp("127.0.0.1", lmtp_port) as client:
        _, answers = client.deliver(flood, ["pbmserv@localhost"],
                                    make_mail("help", sender=flood, message_id="<q4@x>"))
    assert [code for code, _ in answers] == [451]
    # a mail stored before and delivered again is acknowledged, never refused
    code, text = send(smtp_port, flood, make_mail("help", sender=flood,
                                                  message_id="<q0@example.org>"))
    assert (code, text) == (250, "2.0.0 Message already received")
    # another sender is not held back by this one
    assert send(smtp_port, "bob@example.org", make_mail("help", sender="bob@example.org"))[0] \
        == 250
    # bytes: two mails of 12 KB are more than 20,000 bytes
    big = "carol@example.org"
    assert send(smtp_port, big, make_mail("help", "x" * 12_000, sender=big))[0] == 250
    code, text = send(smtp_port, big, make_mail("help", "x" * 12_000, sender=big))
    assert code == 451 and "<carol@example.org> has had 20000 bytes stored" in text
    assert [r.sender for r in rows(db)] == [flood] * 3 + ["bob@example.org", big]


def test_the_quota_counts_the_last_24_hours(db: Database, quota_settings: Settings) -> None:
    check_window(db, quota_settings)


@pytest.mark.postgres
def test_the_quota_and_ignored_mail_on_postgres(pg_url: str, quota_settings: Settings) -> None:
    db = Database(pg_url)
    try:
        check_window(db, replace(quota_settings, database_url=pg_url))
        check_ignored(db, replace(quota_settings, database_url=pg_url))
    finally:
        db.dispose()


def check_window(db: Database, quota_settings: Settings) -> None:
    quota = Quota.of(quota_settings)
    assert quota is not None
    sent = [store_message(db, make_mail("help"), "alice@example.org", quota)
            for _ in range(4)]
    assert all(isinstance(i, int) for i in sent[:3]) and isinstance(sent[3], OverQuota)
    with db.transaction() as session:  # the first came a day and a minute ago
        session.execute(update(InboundMessage).where(InboundMessage.id == sent[0])
                        .values(received_at=utcnow() - timedelta(hours=24, minutes=1)))
    assert isinstance(store_message(db, make_mail("help"), "alice@example.org", quota), int)
    assert isinstance(store_message(db, make_mail("help"), "alice@example.org", quota),
                      OverQuota)
    # one batch counts its own mails as it goes
    batch = store_batch(db, [(make_mail("help", sender="d@example.org"), "d@example.org")
                             for _ in range(4)], quota=quota)
    assert [type(i) for i in batch] == [int, int, int, OverQuota]
    assert Quota.of(replace(quota_settings, sender_quota_mails=0,
                            sender_quota_bytes=0)) is None


def test_the_pipe_keeps_a_mail_over_the_quota_queued(quota_settings: Settings) -> None:
    env = {"PBMSERV_DATABASE_URL": quota_settings.database_url,
           "PBMSERV_MAILDIR": str(quota_settings.maildir), "PBMSERV_SENDER_QUOTA_MAILS": "1"}
    first = CliRunner().invoke(main, ["deliver", "--sender", "alice@example.org"], env=env,
                               input=make_mail("help"))
    assert first.exit_code == 0
    second = CliRunner().invoke(main, ["deliver", "--sender", "alice@example.org"], env=env,
                                input=make_mail("help"))
    assert second.exit_code == EX_TEMPFAIL
    assert ("pbmserv: not stored: <alice@example.org> has had 1 mails stored in the last 24 "
            "hours") in second.output


def test_ignored_mail_keeps_its_key_not_its_text(db: Database, settings: Settings) -> None:
    """Bulk mail is stored (and acknowledged) as any, then ignored: only its row stays
    (sender, reason, size and the key that knows it if it comes again), a week."""
    check_ignored(db, settings)


def check_ignored(db: Database, settings: Settings) -> None:
    bulk = make_mail("help", "x" * 200_000, sender="list@example.org",
                     message_id="<bulk1@example.org>", Precedence="bulk")
    played = make_mail("help", sender="bob@example.org")
    ignored = store_message(db, bulk, "list@example.org")
    done = store_message(db, played, "bob@example.org")
    assert ignored is not None and done is not None
    process_pending(db, settings)
    by_id = {r.id: r for r in rows(db)}
    assert by_id[ignored].status is InboundStatus.IGNORED and by_id[ignored].raw == b""
    assert by_id[ignored].size == len(bulk) and by_id[ignored].error
    assert by_id[done].status is InboundStatus.DONE and by_id[done].raw  # kept whole
    # delivered again: known by its key, not stored or answered twice
    assert store_message(db, bulk, "list@example.org") is None
    env = {"PBMSERV_DATABASE_URL": settings.database_url}
    shown = CliRunner().invoke(main, ["inbox", "show", str(ignored)], env=env)
    assert f"(ignored: its text, {len(bulk)} bytes, was not kept;" in shown.output
    replayed = CliRunner().invoke(main, ["inbox", "replay", str(ignored)], env=env)
    assert replayed.exit_code == 1 and "its text was not kept" in replayed.output
    # a week on, the ignored mail's row goes; the mail that was played stays its 30 days
    assert run_purge(db, settings, utcnow() + timedelta(days=6)) == 0
    assert run_purge(db, settings, utcnow() + timedelta(days=7, minutes=1)) == 1
    assert {r.id for r in rows(db)} & {ignored, done} == {done}
