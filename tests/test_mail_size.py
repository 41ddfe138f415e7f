"""A real reply with attachments, long header lines and a base64 attachment on one
line, through every intake (the SMTP and LMTP listeners, the pipe, an IMAP mailbox):
taken whole (up to ``max_message_size``, 10 MB as Postfix's), played, and stored
without its attachments (pbmserv.mail.attachments).  What is too large or too long
is refused with the limit in the answer."""

from __future__ import annotations

import base64
import random
import smtplib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, InboundMessage, Move
from pbmserv.db.session import Database
from pbmserv.intake.imap import ImapIntake
from pbmserv.intake.smtp import MAX_LINE
from pbmserv.intake.store import Quota, store_message
from pbmserv.server import Server
from tests.conftest import Mailer, free_port, make_mail
from tests.mailservers import Dovecot, dovecot
from tests.test_cli import env_for, run
from tests.test_imap import imap_settings, take_once
from tests.test_lmtp import Lmtp

__all__ = ["dovecot"]  # the fixture, used by name
LINE_TOO_LONG = (b"5.6.0 Line too long: this server takes lines of at most 1048576 bytes "
                 b"(RFC 5321 4.5.3.1.6)")


def real_reply(to: str, *, pdf_bytes: int = 560_000, message_id: str = "<o1@example.org>"
               ) -> bytes:
    """An Outlook reply as Exchange passes it on: a header line of 1,187 characters
    (unfolded), the move in a text and an HTML part, an inline image whose base64 is
    one line of 28 KB, and two PDFs: 1.5 MB in all."""
    rng = random.Random(7)
    pdf = base64.encodebytes(rng.randbytes(pdf_bytes)).replace(b"\n", b"\r\n")
    image = base64.b64encode(rng.randbytes(21_000))  # one line, no breaks
    antispam = b"X-Microsoft-Antispam-Message-Info: " + b"Qm9hcmQ" * 164
    assert len(antispam) == 1183 and len(image) == 28_000
    return (b"From: Alice <alice@example.org>\r\nTo: " + to.encode() + b"\r\n"
            b"Subject: RE: New Honey Donuts Board 101 alice\r\n"
            b"Message-ID: " + message_id.encode() + b"\r\n" + antispam + b"\r\n"
            b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="_004_"\r\n\r\n'
            b'--_004_\r\nContent-Type: multipart/related; boundary="_005_"\r\n\r\n'
            b'--_005_\r\nContent-Type: multipart/alternative; boundary="_000_"\r\n\r\n'
            b"--_000_\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
            b"a1-a2\r\nThe papers are attached.\r\n\r\n"
            b"From: pbmserv <pbmserv@localhost>\r\nSent: Sunday, November 22, 2026 6:02 PM\r\n"
            b"To: Alice <alice@example.org>\r\nSubject: New Honey Donuts Board 101 alice\r\n"
            b"\r\n--_000_\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n"
            b"<html><body><p>a1-a2</p><p>The papers are attached.</p>"
            b'<img src="cid:image001.png"></body></html>\r\n--_000_--\r\n\r\n'
            b"--_005_\r\nContent-Type: image/png\r\nContent-ID: <image001.png>\r\n"
            b"Content-Transfer-Encoding: base64\r\n\r\n" + image + b"\r\n--_005_--\r\n\r\n"
            b'--_004_\r\nContent-Type: application/pdf; name="rules.pdf"\r\n'
            b'Content-Disposition: attachment; filename="rules.pdf"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\n" + pdf +
            b'\r\n--_004_\r\nContent-Type: application/pdf; name="board.pdf"\r\n'
            b'Content-Disposition: attachment; filename="board.pdf"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\n" + pdf + b"\r\n--_004_--\r\n")


def start(mailer: Mailer) -> str:
    """A board of alice's and bob's, alice to move: her board mail's reply address."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")
    [mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert mail.reply_to is not None
    return mail.reply_to


def wait_for_move(db: Database, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with db.reading() as s:
            if s.scalar(select(Board.ply)) == 1:
                return
        time.sleep(0.05)
    raise AssertionError("the reply was not played")


def played_and_stored_small(db: Database, received: int) -> None:
    """The move is played with the reply's words, and its row holds the text only."""
    with db.reading() as s:
        assert s.scalar(select(Move.comment)) == "The papers are attached."
        row = s.scalars(select(InboundMessage).order_by(InboundMessage.id.desc())).first()
        assert row is not None and row.status == "done"
    stored_small(row, received)


def stored_small(row: InboundMessage, received: int) -> None:
    assert received > 1_500_000
    assert row.size == len(row.raw) < 4000
    assert row.raw.count(b"X-Pbmserv-Dropped: ") == 3
    assert b"X-Pbmserv-Dropped: 28002 bytes of image/png not stored" in row.raw
    assert b"a1-a2\r\nThe papers are attached." in row.raw


# -- SMTP ------------------------------------------------------------------------------
@contextmanager
def serving(db: Database, settings: Settings, lmtp: str | None = None) -> Iterator[Server]:
    """The server (SMTP, or LMTP on ``lmtp``), started once the test has made its
    board (its worker would take the test's own mails from it)."""
    srv = Server(db, settings, "127.0.0.1", None if lmtp else free_port(), lmtp=lmtp,
                 interval=0.2)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def server(db: Database, settings: Settings) -> Iterator[Server]:
    with serving(db, settings) as srv:
        yield srv


def test_a_real_reply_with_attachments_is_played_over_smtp(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """Before: 552 (256 KB was the limit), and 500 for the 1,187-character header line
    and the 28 KB line of base64."""
    assert settings.max_message_size == 10_240_000
    reply = real_reply(start(mailer))
    with serving(db, settings) as server, smtplib.SMTP(
            server.controller.hostname, server.controller.port, timeout=30) as c:
        assert c.sendmail("alice@example.org", ["pbmserv@localhost"], reply) == {}
        wait_for_move(db)
    played_and_stored_small(db, len(reply))


def one_long_line(length: int, n: int = 1) -> bytes:
    """A mail whose body is a line of ``length`` bytes with its line end (CR LF)."""
    return (f"From: alice@example.org\r\nSubject: help\r\nMessage-ID: <l{n}@example.org>"
            "\r\n\r\n").encode() + b"x" * (length - 2) + b"\r\n"


def test_a_line_over_the_cap_is_refused_with_its_limit(server: Server,
                                                       settings: Settings) -> None:
    """A line of MAX_LINE + 1 bytes with its line end: 500 and the cap; the session
    goes on, and a line of MAX_LINE bytes is taken."""
    over = one_long_line(MAX_LINE + 1)
    at = one_long_line(MAX_LINE, 2)
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=30) as c:
        with pytest.raises(smtplib.SMTPDataError) as err:
            c.sendmail("alice@example.org", ["pbmserv@localhost"], over)
        assert (err.value.smtp_code, err.value.smtp_error) == (500, LINE_TOO_LONG)
        assert c.sendmail("alice@example.org", ["pbmserv@localhost"], at) == {}


@pytest.fixture
def small_server(db: Database, settings: Settings) -> Iterator[Server]:
    with serving(db, replace(settings, max_message_size=4096)) as srv:
        yield srv


def test_a_mail_too_large_is_refused_with_the_limit(small_server: Server) -> None:
    big = make_mail("help", ("x" * 70 + "\n") * 100)
    address = (small_server.controller.hostname, small_server.controller.port)
    text = b"5.3.4 Message too big for this server (at most 4096 bytes)"
    with smtplib.SMTP(*address) as client, pytest.raises(smtplib.SMTPSenderRefused) as early:
        client.sendmail("alice@example.org", ["pbmserv@localhost"], big)  # refused at SIZE=
    assert (early.value.smtp_code, early.value.smtp_error) == (552, text)
    with smtplib.SMTP(*address) as client:
        client.helo()  # plain SMTP: no SIZE announced, refused after DATA
        with pytest.raises(smtplib.SMTPDataError) as late:
            client.sendmail("alice@example.org", ["pbmserv@localhost"], big)
    assert (late.value.smtp_code, late.value.smtp_error) == (552, text)


# -- LMTP ------------------------------------------------------------------------------
def test_a_real_reply_over_lmtp_and_a_line_too_long_for_each_recipient(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    two = replace(settings, addresses=("pbmserv@localhost", "games@localhost"))
    reply = real_reply(start(mailer))
    recipients = ["pbmserv@localhost", "games@localhost"]
    port = free_port()
    with serving(db, two, lmtp=f"127.0.0.1:{port}"), \
            Lmtp("127.0.0.1", port) as client:
        _, answers = client.deliver("alice@example.org", recipients, reply)
        assert [code for code, _ in answers] == [250, 250]
        too_long = one_long_line(MAX_LINE + 1)
        _, answers = client.deliver("alice@example.org", recipients, too_long)
        assert answers == [(500, LINE_TOO_LONG)] * 2
        wait_for_move(db)
    played_and_stored_small(db, len(reply))


# -- the pipe, and IMAP ----------------------------------------------------------------
def test_a_real_reply_through_the_pipe(settings: Settings, mailer: Mailer,
                                       db: Database) -> None:
    reply = real_reply(start(mailer))
    result = run("deliver", "--sender", "alice@example.org", env=env_for(settings),
                 stdin=reply)
    assert result.exit_code == 0, result.output
    played_and_stored_small(db, len(reply))


def test_a_real_reply_from_an_imap_mailbox(dovecot: Dovecot, db: Database,
                                           settings: Settings, tmp_path: Path) -> None:
    reply = real_reply("clubgames@games.test")
    dovecot.deliver(reply)
    assert take_once(ImapIntake(db, imap_settings(settings, dovecot, tmp_path))) == 1
    with db.reading() as s:
        [row] = s.scalars(select(InboundMessage)).all()
    stored_small(row, len(reply))


# -- the sender's quota ---------------------------------------------------------------
def test_the_quota_counts_what_is_stored(db: Database) -> None:
    """A quota of 12 KB a day takes four replies of 1.5 MB (each stored in 2.5 KB), and
    a fifth is over it by what is stored."""
    quota = Quota(mails=0, size=12_000)
    ids = [store_message(db, real_reply("pbmserv@localhost", message_id=f"<q{n}@example.org>"),
                         "alice@example.org", quota) for n in range(5)]
    assert all(isinstance(i, int) for i in ids[:4])
    assert str(ids[4]) == ("<alice@example.org> has had 12000 bytes stored in the last 24 "
                           "hours, this server's most from one sender")
    with db.reading() as s:
        sizes = list(s.scalars(select(InboundMessage.size)))
    assert len(sizes) == 4 and 9_000 < sum(sizes) <= 12_000


@pytest.mark.postgres
def test_the_quota_counts_what_is_stored_on_postgres(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        test_the_quota_counts_what_is_stored(db)
    finally:
        db.dispose()
