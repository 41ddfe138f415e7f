"""Bounces: every mail leaves with its own bounce address (VERP); bounces that come
back (an RFC 3464 report, an old Postfix one, an Exchange one) and the relay's 5xx
are counted per address; past the threshold the address is no longer mailed, the
opponents waiting for its owner are told, and mail resumes when the owner writes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope
from click.testing import CliRunner
from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Alert, Bounce, InboundMessage, MailSuspension, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus
from pbmserv.notifications.outbox import queue_mail
from pbmserv.sender.delivery import Sender
from pbmserv.timers import run_alerts
from pbmserv.web.app import create_app
from tests.conftest import Mailer, free_port

BOUNDARY = "=_report_1"


def dsn(to: str, recipient: str, status: str, original_id: str,
        action: str = "failed") -> bytes:
    """An RFC 3464 report as a Postfix of today sends it."""
    return f"""From: MAILER-DAEMON@mx.example.org (Mail Delivery System)
To: {to}
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-{status}-{original_id.strip('<>')}>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="{BOUNDARY}"

--{BOUNDARY}
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<{recipient}>: host mail.example.org[192.0.2.7] said: 550 {status} <{recipient}>:
    Recipient address rejected: User unknown (in reply to RCPT TO command)

--{BOUNDARY}
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org
Arrival-Date: Tue, 24 Nov 2026 10:00:00 +0000

Final-Recipient: rfc822; {recipient}
Original-Recipient: rfc822;{recipient}
Action: {action}
Status: {status}
Diagnostic-Code: smtp; 550 {status} <{recipient}>: Recipient address rejected: User unknown

--{BOUNDARY}
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

From: pbmserv <pbmserv@localhost>
To: {recipient}
Message-ID: {original_id}

--{BOUNDARY}--
""".encode()


def postfix_old(to: str, recipient: str) -> bytes:
    """The bounce of a Postfix before DSNs (2.2 and older): multipart/mixed, no
    status part, the reason in words."""
    return f"""From: MAILER-DAEMON@old.example.org (Mail Delivery System)
To: {to}
Subject: Undelivered Mail Returned to Sender
Message-ID: <old-postfix-{recipient}>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="B.old"

--B.old
Content-Description: Notification
Content-Type: text/plain

This is the Postfix program at host old.example.org.

I'm sorry to have to inform you that the message returned
below could not be delivered to one or more destinations.

			The Postfix program

<{recipient}>: unknown user: "bob"

--B.old
Content-Description: Undelivered Message
Content-Type: message/rfc822

From: pbmserv <pbmserv@localhost>
To: {recipient}
Subject: a board

Hello
--B.old--
""".encode()


def exchange(to: str, recipient: str, original_id: str) -> bytes:
    """An Exchange 2000 non-delivery report: plain text, no status part, the returned
    mail's header below."""
    return f"""From: System Administrator <postmaster@corp.example.org>
To: {to}
Subject: Undeliverable: a board
Message-ID: <exchange-ndr-{recipient}>
MIME-Version: 1.0
Content-Type: text/plain; charset="iso-8859-1"

Your message

  To:      {recipient}
  Subject: a board
  Sent:    Tue, 24 Nov 2026 10:00:00 +0000

did not reach the following recipient(s):

{recipient} on Tue, 24 Nov 2026 10:00:05 +0000
            The e-mail account does not exist at the organization this message was sent to.
            <corp.example.org #5.1.1>
            MSEXCH:IMS:CORP:EXAMPLE:MAIL01 0 (000C05A6) Unknown Recipient

----- original message header -----
From: pbmserv <pbmserv@localhost>
To: {recipient}
Message-ID: {original_id}
""".encode()


def sent_to(db: Database, settings: Settings, address: str) -> list[tuple[int, str, str]]:
    """Send what is due into the Maildir; (outbox id, Return-Path, Message-ID) of the
    mails to ``address``, read back from the Maildir files."""
    Sender(db, settings).send_due()
    out = []
    for path in sorted((settings.maildir / "new").iterdir()):
        head = path.read_text().split("\n\n", 1)[0]
        to = re.search(r"^To: (.*)$", head, re.M)
        if to is None or to.group(1) != address:
            continue
        number = int(path.name.split(".")[1].split("_")[0])
        return_path = re.search(r"^Return-Path: <(.*)>$", head, re.M)
        message_id = re.search(r"^Message-ID: (.*)$", head, re.M)
        assert return_path is not None and message_id is not None
        out.append((number, return_path.group(1), message_id.group(1)))
    return sorted(out)


def cli(settings: Settings, *args: str) -> Any:
    return CliRunner().invoke(main, list(args), env={
        "PBMSERV_DATABASE_URL": settings.database_url,
        "PBMSERV_MAILDIR": str(settings.maildir)})


def inbound(db: Database) -> InboundMessage:
    with db.reading() as s:
        found = s.scalars(select(InboundMessage).order_by(InboundMessage.id.desc())).first()
        assert found is not None
        return found


def test_three_bounces_of_three_forms_stop_mail_until_the_player_writes(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob")
    mailer.send("honeydonuts move 101 alice pw-alice a1-b1#1")  # now bob is to move
    mailer.send("honeydonuts moves 101", sender="bob@example.org")
    mails = sent_to(db, settings, "bob@example.org")
    assert len(mails) >= 3
    for number, return_path, _ in mails:  # each mail its own signed bounce address
        assert re.fullmatch(rf"pbmserv\+bounce-o{number}-[a-z2-7]{{16}}@localhost", return_path)

    # 1. a standard report, to the bounce address: counted, not answered
    (first, verp, first_id), (_, verp2, _), (_, _, third_id) = mails[:3]
    assert mailer.send_raw(dsn(verp, "bob@example.org", "5.1.1", first_id), "<>") == []
    assert inbound(db).status == InboundStatus.DONE
    assert inbound(db).error == (
        f"bounce: bob@example.org (outbox {first}): smtp; 550 5.1.1 <bob@example.org>: "
        "Recipient address rejected: User unknown; 1 of 3 hard bounces (the address)")
    # the same report again (redelivered under another Message-ID) counts nothing
    again = dsn(verp, "bob@example.org", "5.1.1", first_id).replace(b"<dsn-", b"<dsn2-")
    mailer.send_raw(again, "<>")
    assert "this mail was counted already" in (inbound(db).error or "")
    # 2. an old Postfix's bounce, to the bounce address
    assert mailer.send_raw(postfix_old(verp2, "bob@example.org"), "<>") == []
    assert "2 of 3 hard bounces" in (inbound(db).error or "")
    # 3. an Exchange report sent to the game address itself: found by the Message-ID of
    # the mail it returns
    third = mails[2][0]
    out = mailer.send_raw(exchange("pbmserv@localhost", "bob@example.org", third_id), "<>")
    assert inbound(db).error == (
        f"bounce: bob@example.org (outbox {third}): bob@example.org on Tue, 24 Nov 2026 "
        "10:00:05 +0000 The e-mail account does not exist at the organization this message "
        "was sent to. <corp.example.org #5.1.1> MSEXCH:IMS:CORP:EXAMPLE:MAIL01 0 (000C05A6) "
        "Unknown Recipient; 3 of 3 hard bounces (the address), no longer mailed")
    # alice waits for bob's move on board 101: she is told why he may be silent
    assert [(m.to_addr, m.subject) for m in out] == [
        ("alice@example.org", "Honey Donuts Board 101: mail to bob bounces")]
    assert "may not know that Honey Donuts board 101 waits for their move" in \
        " ".join(out[0].body.split())
    with db.reading() as s:
        assert s.get(MailSuspension, "bob@example.org") is not None
        assert s.get(OutboxMessage, first).status == OutboxStatus.BOUNCED  # type: ignore[union-attr]
        assert s.get(OutboxMessage, third).status == OutboxStatus.BOUNCED  # type: ignore[union-attr]

    # bob is mailed no more: his mail is kept, marked suppressed
    Sender(db, settings).send_due()  # (alice's mail goes out)
    with db.transaction() as s:
        held = queue_mail(s, settings, to="bob@example.org", subject="a board", body="x\n")
    before = len(list((settings.maildir / "new").iterdir()))
    Sender(db, settings).send_due()
    assert len(list((settings.maildir / "new").iterdir())) == before
    with db.reading() as s:
        row = s.get(OutboxMessage, held)
        assert row is not None and row.status == OutboxStatus.SUPPRESSED
    with TestClient(create_app(db, settings)) as client:  # what /metrics shows of it
        scraped = client.get("/metrics").text
    assert "pbmserv_bounces_last_day 3.0" in scraped
    assert "pbmserv_bounces_total 3.0" in scraped
    assert "pbmserv_suspended_addresses 1.0" in scraped
    assert 'pbmserv_outbox_messages{status="bounced"} 3.0' in scraped
    listed = cli(settings, "users", "bounces")
    assert listed.exit_code == 0
    assert re.fullmatch(
        r"bob@example.org \(bob\): NOT MAILED since [0-9-]{10} [0-9:]{5}; within 7 days 3 of "
        r"3 hard, 0 of 5 soft, 0 delays \(never counted\); last [0-9-]{10} [0-9:]{5} "
        r"\(hard\): bob@example.org on Tue, 24 Nov 2026 .* \(000C05A6\)\n",
        listed.output), listed.output

    # bob writes from the address: it works, so it is mailed again at once
    reply = mailer.reply("help", sender="bob@example.org")
    assert "Mail to bob@example.org had bounced since" in reply
    assert "(1 mail was not sent)" in " ".join(reply.split())
    with db.reading() as s:
        assert s.get(MailSuspension, "bob@example.org") is None
        kept = list(s.scalars(select(Bounce).where(Bounce.address == "bob@example.org")))
        assert len(kept) == 3 and all(b.cleared_at is not None for b in kept)  # forgiven
    assert cli(settings, "users", "bounces").output == "no address bounces\n"
    # the counts of bounces do not drop when the address is forgiven: the last day's
    # is still 3, and the total only grows
    with TestClient(create_app(db, settings)) as client:
        scraped = client.get("/metrics").text
    assert "pbmserv_bounces_last_day 3.0" in scraped
    assert "pbmserv_bounces_total 3.0" in scraped
    assert "pbmserv_suspended_addresses 0.0" in scraped


def test_what_is_no_failure_counts_nothing(mailer: Mailer, db: Database,
                                           settings: Settings) -> None:
    mailer.signup("bob")
    *_, (number, verp, message_id) = sent_to(db, settings, "bob@example.org")  # the welcome
    # a delay only (Action: delayed, 4.x.x): kept to be seen, never counted
    mailer.send_raw(dsn(verp, "bob@example.org", "4.2.2", message_id, action="delayed"), "<>")
    assert inbound(db).status == InboundStatus.DONE
    assert inbound(db).error == (
        f"bounce: bob@example.org (outbox {number}): smtp; 550 4.2.2 <bob@example.org>: "
        "Recipient address rejected: User unknown; a delay only (Action: delayed), never "
        "counted")
    # a vacation message answers the envelope sender: the bounce address
    out = mailer.send_raw(f"""From: bob@example.org
To: {verp}
Subject: Out of office
Auto-Submitted: auto-replied
Message-ID: <away-1@example.org>

I am away until Monday.
""".encode(), "bob@example.org")
    assert out == [] and inbound(db).status == InboundStatus.IGNORED
    assert inbound(db).error == ("mail to the bounce address that is no bounce "
                                 "(an auto-reply?): not counted")
    # a forged bounce address names no mail: the report counts for nothing
    forged = verp.replace(f"-o{number}-", "-o999-")
    mailer.send_raw(dsn(forged, "carol@example.net", "5.1.1", "<x@example.net>"), "<>")
    assert inbound(db).status == InboundStatus.IGNORED
    assert inbound(db).error == ("bounce not counted: a bounce address with a wrong "
                                 "signature")
    # a report of a delivery (Action: delivered)
    mailer.send_raw(dsn(verp, "bob@example.org", "2.0.0", message_id, action="delivered"), "<>")
    assert inbound(db).error == "delivery report without a failure: not counted"
    with db.reading() as s:
        assert [(b.kind, b.outbox_id) for b in s.scalars(select(Bounce))] == [
            ("delay", number)]
        assert s.get(MailSuspension, "bob@example.org") is None
    assert cli(settings, "users", "bounces").output.startswith(
        "bob@example.org (bob): mailed; within 7 days 0 of 3 hard, 0 of 5 soft, 1 delay "
        "(never counted); last ")


class Refusing:
    """A relay that refuses one address as unknown and any mail to another for its form."""

    def __init__(self) -> None:
        self.received: list[Envelope] = []

    async def handle_RCPT(self, server: Any, session: Any, envelope: Envelope, address: str,
                          options: list[str]) -> str:
        if address.startswith("gone"):
            return f"550 5.1.1 <{address}>: Recipient address rejected: User unknown"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        if any(r.startswith("strict@") for r in envelope.rcpt_tos):
            return "554 5.7.1 message refused: its headers are not signed"
        self.received.append(envelope)
        return "250 OK"


@pytest.fixture
def refusing() -> Iterator[tuple[Refusing, int]]:
    sink = Refusing()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    yield sink, port
    controller.stop()


def test_the_relays_5xx_counts_as_a_bounce_or_tells_the_administrator(
        db: Database, settings: Settings, refusing: tuple[Refusing, int]) -> None:
    _, port = refusing
    relayed = replace(settings, relay=("127.0.0.1", port), bounce_threshold=2)
    with db.transaction() as s:
        gone = [queue_mail(s, relayed, to="gone@example.org", subject="Test", body="x\n")
                for _ in range(3)]
        strict = [queue_mail(s, relayed, to="strict@example.org", subject="Test", body="x\n")
                  for _ in range(2)]
        fine = queue_mail(s, relayed, to="fine@example.org", subject="Test", body="x\n")
    Sender(db, relayed).send_due()
    with db.reading() as s:
        rows = {r.id: r for r in s.scalars(select(OutboxMessage))}
        # the first two bounce (550 5.1.1) and suspend the address; the third is held
        assert [rows[i].status for i in gone] == ["bounced", "bounced", "suppressed"]
        assert rows[gone[0]].last_error == (
            "550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown")
        assert s.get(MailSuspension, "gone@example.org") is not None
        # refused for its form: failed, not the address's fault, no bounce counted
        assert [rows[i].status for i in strict] == ["failed", "failed"]
        assert rows[strict[0]].last_error == (
            "554 5.7.1 message refused: its headers are not signed")
        assert s.scalar(select(Bounce).where(Bounce.address == "strict@example.org")) is None
        assert rows[fine].status == "sent"
        alerts = list(s.scalars(select(Alert)))
        assert [(a.kind, a.count, a.items) for a in alerts] == [
            (AlertKind.OUTBOX_FAILED, 2, f"{strict[0]} {strict[1]}")]
    # one mail to the administrator (postmaster of the game domain) for both
    assert run_alerts(db, relayed, utcnow() + timedelta(minutes=2)) == 1
    assert run_alerts(db, relayed, utcnow() + timedelta(minutes=3)) == 0
    with db.reading() as s:
        alert = s.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "postmaster@localhost")).one()
    assert alert.subject == "pbmserv: 2 outgoing mails refused"
    assert "the relay answered 554 5.7.1 message refused: its headers are not signed" in \
        " ".join(alert.body.split())
    assert "pbmserv outbox retry --all" in alert.body
    status = cli(relayed, "status")
    assert status.exit_code == 3, status.output
    assert "attend   2 outgoing mail(s) refused for good" in status.output
    assert status.output.endswith("health   ok, but needs you\n")


def test_a_bounce_storm_is_one_incident_that_needs_a_person(
        db: Database, settings: Settings, refusing: tuple[Refusing, int]) -> None:
    _, port = refusing
    relayed = replace(settings, relay=("127.0.0.1", port))
    with db.transaction() as s:  # the relay refuses 25 addresses within minutes
        for n in range(25):
            queue_mail(s, relayed, to=f"gone{n}@example.org", subject="Test", body="x\n")
    Sender(db, relayed).send_due()
    with db.reading() as s:
        (storm,) = s.scalars(select(Alert))
        assert storm.kind == AlertKind.BOUNCE_STORM and storm.count == 6  # the 20th on
        # in the server's words alone: nothing of the remote server's text
        number = s.scalar(select(OutboxMessage.id)
                          .where(OutboxMessage.to_addr == "gone19@example.org"))
        assert storm.first_detail == ("20 bounces within an hour; the last: "
                                      f"gone19@example.org (outbox {number}), hard bounce, "
                                      "status 5.1.1")
    status = cli(relayed, "status")
    assert status.exit_code == 3
    assert "attend   a bounce storm since " in status.output
    assert run_alerts(db, relayed, utcnow() + timedelta(minutes=2)) == 1
    with db.reading() as s:
        alert = s.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "postmaster@localhost")).one()
    assert alert.subject == "pbmserv: many bounces"
    assert "  pbmserv users clear-bounces --all      once our mail is taken again" in alert.body
    assert "User unknown" not in alert.body and "rejected" not in alert.body
    cleared = cli(relayed, "users", "clear-bounces", "--all")
    assert cleared.output == "cleared 25 address(es): mailed again\n"
    assert cli(relayed, "status").exit_code == 0  # the storm is dealt with
