"""Silence towards robots (RFC 3834): mail from lists and autoresponders, and delivery or
read reports, gets no reply whatever its envelope sender; it is kept, marked ignored,
and the reason is logged."""

from __future__ import annotations

import logging
import smtplib
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, InboundMessage, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.server import Server
from tests.conftest import Mailer, free_port, make_mail, read_maildir


def report(kind: str = "delivery-status", sender: str = "postoffice@example.org",
           wrap: bool = False) -> bytes:
    """A report as an MTA or a mail program writes one: a text part (here one that looks
    like a command), the machine-readable part, and the headers of the mail it is about;
    ``wrap``: inside a multipart/mixed, as some mail programs send them."""
    if kind == "delivery-status":
        machine = ("Reporting-MTA: dns; mx.example.org\r\n\r\n"
                   "Final-Recipient: rfc822; bob@example.org\r\nAction: failed\r\n"
                   "Status: 5.1.1\r\n")
    else:
        machine = ("Reporting-UA: mail.example.org; Mailer 1.0\r\n"
                   "Final-Recipient: rfc822; bob@example.org\r\n"
                   "Disposition: manual-action/MDN-sent-manually; displayed\r\n")
    outer = "multipart/mixed" if wrap else f"multipart/report; report-type={kind}"
    return (f"From: {sender}\r\nTo: pbmserv@localhost\r\nSubject: help\r\n"
            f"Message-ID: <report-{kind}-{wrap}@example.org>\r\nMIME-Version: 1.0\r\n"
            f'Content-Type: {outer}; boundary="b"\r\n\r\n'
            "--b\r\nContent-Type: text/plain\r\n\r\n"
            "honeydonuts move 101 alice pw-alice a1-a2\r\n"
            f"--b\r\nContent-Type: message/{kind}\r\n\r\n{machine}"
            "--b\r\nContent-Type: text/rfc822-headers\r\n\r\n"
            "From: pbmserv@localhost\r\nSubject: Honey Donuts Board 101 bob\r\n"
            "--b--\r\n").encode()


def top_level(kind: str) -> bytes:
    """A report that is nothing but its machine-readable part."""
    return (f"From: alice@example.org\r\nSubject: help\r\nMessage-ID: <top@example.org>\r\n"
            f"Content-Type: {kind}\r\n\r\nReporting-MTA: dns; mx.example.org\r\n").encode()


UNPROVED = ("; no line of it proved its account (a right password, or a reply address), "
            "nothing carried out, not answered")
ROBOTS: list[tuple[dict[str, str], str]] = [
    # a list's mail that proves no account: not carried out either (a list's mail
    # that does is, and is answered to the account alone: tests/test_list_mail.py)
    ({"List-Id": "Board games <games.lists.example.org>"},
     "mail through a mailing list (List-Id)" + UNPROVED),
    ({"List-Unsubscribe": "<mailto:leave@lists.example.org>"},
     "mail through a mailing list (List-Unsubscribe)" + UNPROVED),
    ({"Precedence": "bulk"}, "Precedence: bulk"),
    ({"Precedence": "List"}, "mail through a mailing list (Precedence: list)" + UNPROVED),
    ({"Precedence": "junk"}, "Precedence: junk"),
    ({"Precedence": "auto_reply"}, "Precedence: auto_reply"),
    ({"X-Autoreply": "yes"}, "mail from an autoresponder (X-Autoreply)"),
    ({"X-Autorespond": "Thank you for your mail"},
     "mail from an autoresponder (X-Autorespond)"),
    ({"Auto-Submitted": "auto-replied"}, "Auto-Submitted: auto-replied"),
    ({"Auto-Submitted": "auto-generated (failure)"}, "Auto-Submitted: auto-generated (failure)"),
    ({"Auto-Submitted": "auto-notified"}, "Auto-Submitted: auto-notified"),
]


@pytest.mark.parametrize(("headers", "reason"), ROBOTS)
def test_lists_and_autoresponders_get_no_reply(mailer: Mailer, db: Database,
                                               caplog: pytest.LogCaptureFixture,
                                               headers: dict[str, str], reason: str) -> None:
    with caplog.at_level(logging.INFO, logger="pbmserv"):
        out = mailer.send("help", "help", sender="desk@example.org", **headers)
    assert out == []
    with db.transaction() as s:
        row = s.scalar(select(InboundMessage))
        assert row is not None and row.status == "ignored" and row.error == reason
    assert f"message {row.id} ignored: {reason}" in caplog.messages


# a delivery report is read as a bounce (pbmserv.bounces.handling): what became of it
# is kept instead; one that names no mail of ours counts for nothing
NOT_OURS = ("bounce not counted: it came to no bounce address and names no Message-ID of a "
            "mail we sent")


@pytest.mark.parametrize(("raw", "reason"), [
    (report("delivery-status"), NOT_OURS),
    (report("disposition-notification"), "a delivery or read report (multipart/report)"),
    (report("delivery-status", sender="bob@example.org", wrap=True), NOT_OURS),
    (report("disposition-notification", wrap=True),
     "a delivery or read report (message/disposition-notification)"),
    (top_level("message/delivery-status"), NOT_OURS),
])
def test_reports_get_no_reply_whatever_their_envelope(mailer: Mailer, db: Database,
                                                      raw: bytes, reason: str) -> None:
    # an ordinary envelope sender, not the null one: the report itself says what it is
    assert mailer.send_raw(raw, envelope_from="postoffice@example.org") == []
    with db.transaction() as s:
        assert s.scalar(select(InboundMessage.error)) == reason


def test_auto_submitted_no_and_other_precedence_are_answered(mailer: Mailer) -> None:
    assert [m.subject for m in mailer.send("help", **{"Auto-Submitted": "no"})] == [
        "pbmserv help"]
    assert [m.subject for m in mailer.send("help", Precedence="first-class")] == [
        "pbmserv help"]


def test_a_move_through_a_list_that_proves_nothing_is_ignored(mailer: Mailer,
                                                              db: Database) -> None:
    """A player's move forwarded by a list, with a wrong password: no reply (an answer
    to a list goes to everyone on it) and nothing played (a right password is played
    and answered to the player alone: tests/test_list_mail.py)."""
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob")
    out = mailer.send("honeydonuts move 101 alice wrong-password a1-a2", "Good luck!",
                      **{"List-Id": "<games.lists.example.org>",
                         "List-Unsubscribe": "<mailto:leave@lists.example.org>"})
    assert out == []
    with db.transaction() as s:
        assert s.scalar(select(Board.ply)) == 0
        assert s.scalar(select(InboundMessage.error).order_by(InboundMessage.id.desc())
                        .limit(1)) == "mail through a mailing list (List-Id)" + UNPROVED


def test_a_help_desk_that_acknowledges_everything_starts_no_loop(mailer: Mailer) -> None:
    """Eight rounds of a help desk's acknowledgements (each names a ticket, as such
    desks do) get eight silences."""
    for n in range(8):
        ack = mailer.send(f"[Ticket #{n}] Re: pbmserv help",
                          "We have received your request.\n", sender="desk@example.org",
                          **{"X-Autorespond": "auto", "Precedence": "auto_reply"})
        assert ack == []


@pytest.fixture
def server(db: Database, settings: Settings) -> Iterator[Server]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    yield srv
    srv.stop()


def test_robots_over_a_real_smtp_session(server: Server, settings: Settings,
                                         db: Database) -> None:
    """Every kind above through the listener, then one mail from a person: only the
    person is answered (the last mail, so the silences are settled when it is)."""
    mails = [make_mail("help", sender="desk@example.org", **h) for h, _ in ROBOTS]
    mails += [report(), report("disposition-notification", wrap=True)]
    with smtplib.SMTP(server.controller.hostname, server.controller.port, timeout=10) as c:
        for raw in mails:
            c.sendmail("desk@example.org", ["pbmserv@localhost"], raw)
        c.sendmail("alice@example.org", ["pbmserv@localhost"], make_mail("help"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with db.transaction() as s:
            statuses = list(s.scalars(select(InboundMessage.status)
                                      .order_by(InboundMessage.id)))
        if len(statuses) == len(mails) + 1 and "new" not in statuses \
                and read_maildir(settings.maildir):
            break
        time.sleep(0.05)
    assert statuses == ["ignored"] * len(mails) + ["done"]
    with db.transaction() as s:  # every reply is queued with the mail it answers
        assert list(s.scalars(select(OutboxMessage.to_addr))) == ["alice@example.org"]
    assert [m["To"] for m in read_maildir(settings.maildir)] == ["alice@example.org"]
