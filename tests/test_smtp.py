"""A real SMTP session against the real listener, workers and Maildir."""

from __future__ import annotations

import os
import smtplib
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv import server as server_module
from pbmserv.config import Settings
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.server import Server
from tests.conftest import free_port, make_mail, read_maildir, text_of, wait_until_settled


@pytest.fixture
def server(db: Database, settings: Settings) -> Iterator[Server]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def smtp(server: Server) -> Iterator[smtplib.SMTP]:
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=10) as client:
        yield client


def wait_for_mail(settings: Settings, count: int, limit: float = 20.0) -> list[EmailMessage]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        mails = read_maildir(settings.maildir)
        if len(mails) >= count:
            return mails
        time.sleep(0.05)
    raise AssertionError(f"expected {count} mails, got {len(read_maildir(settings.maildir))}")


def test_unknown_recipient_is_refused(smtp: smtplib.SMTP) -> None:
    smtp.ehlo()
    smtp.mail("alice@example.org")
    code, text = smtp.rcpt("someone@elsewhere.org")
    assert code == 550 and b"pbmserv@localhost" in text


ADDRESS_ARGUMENTS = [
    "<alice@example.org>", "alice@example.org", "<alice@example.org> SIZE=100 BODY=8BITMIME",
    "<>", "", "<\"odd local\"@example.org>", "<a.b+c@example.org>", "<üser@exämple.org>",
    "<not an address>", "<@relay.example:alice@example.org>", "<" + "x" * 64 + "@example.org>",
    "<" + "x" * 65 + "@example.org>", "<alice@example.org", "alice@", "<ali\x00ce@example.org>",
    "<a@b@c>", "a b c", '"x',
]


@pytest.mark.parametrize("arg", ADDRESS_ARGUMENTS)
@pytest.mark.parametrize("limit", [64, 0])
def test_the_intake_reads_addresses_as_aiosmtpd_does(arg: str, limit: int) -> None:
    """The intake's SMTP and LMTP servers read each MAIL FROM and RCPT TO argument once
    (intake.smtp.CachedAddresses); what they read is what aiosmtpd reads, the local
    part limit included, the first time and every time after."""
    from aiosmtpd.lmtp import LMTP
    from aiosmtpd.smtp import SMTP

    from pbmserv.intake.lmtp import IntakeLMTP
    from pbmserv.intake.smtp import IntakeSMTP

    def read(kind: type[SMTP]) -> object:
        server = kind(None)
        server.local_part_limit = limit
        try:
            return server._getaddr(arg)
        except Exception as exc:  # aiosmtpd's own parse fails on some ("alice@")
            return type(exc)

    for ours, theirs in ((IntakeSMTP, SMTP), (IntakeLMTP, LMTP)):
        expected = read(theirs)
        assert read(ours) == expected and read(ours) == expected


def test_the_listener_answers_addresses_as_aiosmtpd(server: Server, smtp: smtplib.SMTP) -> None:
    """The listener is the intake's server (addresses read once), and over a real
    session an address aiosmtpd takes is taken, with its parameters; one it cannot
    read is refused as it refuses it."""
    from pbmserv.intake.smtp import IntakeSMTP

    assert isinstance(server.controller.smtpd, IntakeSMTP)
    smtp.ehlo()
    assert smtp.docmd("MAIL", "FROM:<a@b@c>")[0] == 553
    assert smtp.docmd("MAIL", "FROM:<alice@example.org> SIZE=100")[0] == 250
    assert smtp.docmd("RCPT", "TO:<pbmserv@localhost>")[0] == 250
    assert smtp.docmd("RCPT", "TO:<pbmserv@localhost>")[0] == 250
    assert smtp.docmd("RCPT", "TO:<a@b@c>")[0] == 553


def test_oversized_mail_is_refused(server: Server, settings: Settings) -> None:
    big = make_mail("help", ("x" * 70 + "\n") * (settings.max_message_size // 70 + 10))
    address = (server.controller.hostname, server.controller.port)
    with smtplib.SMTP(*address) as client, pytest.raises(smtplib.SMTPResponseException) as err:
        client.sendmail("alice@example.org", ["pbmserv@localhost"], big)  # refused at SIZE=
    assert err.value.smtp_code == 552
    with smtplib.SMTP(*address) as client:
        client.helo()  # plain SMTP: no SIZE announced, refused after DATA
        with pytest.raises(smtplib.SMTPDataError) as err2:
            client.sendmail("alice@example.org", ["pbmserv@localhost"], big)
        assert err2.value.smtp_code == 552


def test_game_over_smtp(smtp: smtplib.SMTP, settings: Settings) -> None:
    def send(subject: str, sender: str) -> None:
        smtp.sendmail(sender, ["pbmserv@localhost"], make_mail(subject, sender=sender))

    send("signup alice pw-alice-1", "alice@example.org")
    send("signup bob pw-bob-1", "bob@example.org")
    for confirmation in wait_for_mail(settings, 2):  # each player answers it
        send(f"Re: {confirmation['Subject']}", confirmation["To"])
    send("honeydonuts challenge alice bob", "alice@example.org")
    send("honeydonuts move 101 alice pw-alice-1 a1-a2#1", "alice@example.org")
    mails = wait_for_mail(settings, 8)
    subjects = [(m["To"], m["Subject"]) for m in mails]
    assert ("alice@example.org", "pbmserv: welcome, alice") in subjects
    assert ("bob@example.org", "New Honey Donuts Board 101 alice") in subjects
    assert ("alice@example.org", "Honey Donuts Board 101 bob") in subjects
    assert ("bob@example.org", "Honey Donuts Board 101 bob") in subjects
    reply = next(m for m in mails if m["Subject"] == "pbmserv: welcome, alice")
    assert reply["Auto-Submitted"] == "auto-replied" and reply["In-Reply-To"]
    assert all(len(line) <= 76 for m in mails for line in text_of(m).splitlines())


def test_same_message_id_twice_is_applied_once(smtp: smtplib.SMTP, settings: Settings,
                                                db: Database) -> None:
    raw = make_mail("signup alice pw-long-1", message_id="<once@example.org>")
    smtp.sendmail("alice@example.org", ["pbmserv@localhost"], raw)
    smtp.sendmail("alice@example.org", ["pbmserv@localhost"], raw)
    wait_for_mail(settings, 1)
    wait_until_settled(db)  # both copies were stored or refused before 250
    assert len(read_maildir(settings.maildir)) == 1
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 1


def test_a_mail_without_message_id_sent_twice_is_applied_once(
        smtp: smtplib.SMTP, settings: Settings, db: Database) -> None:
    """The sending MTA lost our 250 and sent the same bytes again."""
    raw = b"From: alice@example.org\nTo: pbmserv@localhost\nSubject: signup alice pw-long-1\n\n\n"
    other = raw.replace(b"alice", b"bob")
    for mail in (raw, raw, other):
        smtp.sendmail("alice@example.org", ["pbmserv@localhost"], mail)
    wait_for_mail(settings, 2)
    wait_until_settled(db)
    assert sorted(m["To"] for m in read_maildir(settings.maildir)) == [
        "alice@example.org", "bob@example.org"]
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 2


def test_bounces_and_garbage_are_stored_not_answered(smtp: smtplib.SMTP, settings: Settings,
                                                      db: Database) -> None:
    smtp.sendmail("<>", ["pbmserv@localhost"], make_mail("help", sender="mailer-daemon@x.org"))
    smtp.sendmail("a@example.org", ["pbmserv@localhost"],
                  make_mail("help", **{"Auto-Submitted": "auto-replied"}))
    smtp.sendmail("a@example.org", ["pbmserv@localhost"], b"\x00\x01\x02\xff" * 100)
    smtp.sendmail("a@example.org", ["pbmserv@localhost"], make_mail("help"))
    wait_for_mail(settings, 2)
    wait_until_settled(db)
    # the garbage came from a real sender with no account: it is told how to begin
    assert sorted(m["Subject"] for m in read_maildir(settings.maildir)) == [
        "pbmserv help", "pbmserv: how to begin"]
    with db.transaction() as s:
        statuses = sorted(s.scalars(select(InboundMessage.status)))
    assert statuses == ["done", "done", "ignored", "ignored"]


def nul_envelope_session(server: Server) -> int:
    """MAIL FROM with a NUL byte in it, over a real SMTP session: the DATA code."""
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=10) as c:
        c.ehlo()
        assert c.docmd("MAIL", "FROM:<ali\x00ce@example.org>")[0] == 250
        assert c.rcpt("pbmserv@localhost")[0] == 250
        code, _ = c.data(make_mail("help"))
        return code


def test_nul_in_the_envelope_is_stored_not_deferred(server: Server, db: Database,
                                                     settings: Settings) -> None:
    assert nul_envelope_session(server) == 250
    [reply] = wait_for_mail(settings, 1)
    assert reply["To"] == "alice@example.org" and reply["Subject"] == "pbmserv help"


@pytest.mark.postgres
def test_nul_in_the_envelope_is_stored_on_postgres(pg_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    db = Database(pg_url)
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    try:
        assert nul_envelope_session(srv) == 250
        [reply] = wait_for_mail(settings, 1)
        assert reply["Subject"] == "pbmserv help"
    finally:
        srv.stop()
        db.dispose()


def test_serve_starts_a_killed_worker_again(db: Database, settings: Settings,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The OOM killer ends the worker process: mail is still answered."""
    monkeypatch.setenv("PBMSERV_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("PBMSERV_MAILDIR", str(settings.maildir))
    monkeypatch.setattr(server_module, "RESTART_EVERY", 0.0)
    srv = Server(db, settings, "127.0.0.1", free_port(), workers=1, interval=0.2, bots=False)
    srv.start()
    try:
        [worker] = srv.processes
        worker.kill()
        worker.wait()
        srv.watch()
        [again] = srv.processes
        assert again.pid != worker.pid and again.poll() is None
        # the new one niced as the first (it does it itself, after exec): wait for it
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        deadline = time.monotonic() + 20
        while (os.getpriority(os.PRIO_PROCESS, again.pid) != mine + server_module.WORKER_NICENESS
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, again.pid) == mine + server_module.WORKER_NICENESS
        with smtplib.SMTP(srv.controller.hostname, srv.controller.port, timeout=10) as client:
            client.sendmail("alice@example.org", ["pbmserv@localhost"],
                            make_mail("signup alice pw-alice"))
        [welcome] = wait_for_mail(settings, 1)
        assert welcome["To"] == "alice@example.org"
    finally:
        srv.stop()
