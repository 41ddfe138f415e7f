"""No secret lies around: a processed mail's stored copy has its passwords and codes
masked, a sent reset mail keeps no code, and old mail is purged by the server."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.policy import SMTP

from click.testing import CliRunner
from sqlalchemy import select, update

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.intake.store import store_message
from pbmserv.processing import process_message
from pbmserv.processing.at_rest import mask_raw
from pbmserv.sender.delivery import BLANKED, BLANKED_SUBJECT, Sender
from pbmserv.timers import run_purge
from pbmserv.worker import WorkLoop
from tests.conftest import Mailer, make_mail, read_maildir

CODE = re.compile(r"reset alice ([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}) <new password>")


def stored(db: Database) -> list[bytes]:
    with db.reading() as s:
        return list(s.scalars(select(InboundMessage.raw).order_by(InboundMessage.id)))


def test_a_processed_mail_keeps_no_password(mailer: Mailer, db: Database,
                                            settings: Settings) -> None:
    mailer.reply("signup alice kettle-blue-7", "my password is kettle-blue-7, keep it")
    mailer.reply("change password alice kettle-blue-7 green-door-42")
    [signup, change] = stored(db)
    for raw in (signup, change):
        assert b"kettle-blue-7" not in raw and b"green-door-42" not in raw
    assert b"Subject: signup alice *****" in signup
    assert b"my password is *****, keep it" in signup
    assert b"Subject: change password alice ***** *****" in change
    env = {"PBMSERV_DATABASE_URL": settings.database_url}
    shown = CliRunner().invoke(main, ["inbox", "show", "1"], env=env)
    assert shown.exit_code == 0 and "signup alice *****" in shown.output
    assert "kettle" not in shown.output


def test_words_in_a_password_place_are_masked_even_when_refused(mailer: Mailer,
                                                                db: Database) -> None:
    mailer.signup("alice")
    mailer.reply("multiple", "honeydonuts move 7 alice wrong-guess-1 a1-a2\n"
                             "vacation alice pw-alice 400\n")
    raw = stored(db)[-1]
    assert b"wrong-guess-1" not in raw and b"pw-alice" not in raw
    assert b"honeydonuts move 7 alice ***** a1-a2" in raw


def test_encoded_parts_and_headers_are_masked_too() -> None:
    msg = EmailMessage()
    msg["From"] = "bob@example.org"
    msg["To"] = "pbmserv@localhost"
    msg["Subject"] = "signup bob s\u00e9cret-pass"  # an encoded word
    msg["Message-ID"] = "<enc@example.org>"
    msg.set_content("multiple\nsignup bob s\u00e9cret-pass\n" + "\u00e9t\u00e9 " * 30,
                    cte="quoted-printable")
    msg.add_alternative("<p>signup bob s\u00e9cret-pass</p>", subtype="html", cte="base64")
    raw = msg.as_bytes(policy=SMTP)
    assert b"=?utf-8?" in raw and b"s=C3=A9cret-pass" in raw
    masked = mask_raw(raw, {"s\u00e9cret-pass"})
    assert "s\u00e9cret-pass".encode() not in masked and b"s=C3=A9cret-pass" not in masked
    again = message_from_bytes(masked, policy=policy.default)
    assert again["Subject"] == "signup bob *****"
    assert isinstance(again, EmailMessage)
    plain = again.get_body(preferencelist=("plain",))
    html = again.get_body(preferencelist=("html",))
    assert plain is not None and html is not None
    assert "signup bob *****" in plain.get_content()
    assert "<p>signup bob *****</p>" in html.get_content()
    assert mask_raw(raw, set()) == raw


def test_a_redelivered_mail_is_still_known_after_masking(db: Database,
                                                         settings: Settings) -> None:
    with_id = make_mail("signup alice kettle-blue-7", message_id="<once@example.org>")
    without = (b"From: bob@example.org\r\nTo: pbmserv@localhost\r\n"
               b"Subject: signup bob kettle-blue-8\r\n\r\nhi\r\n")
    for raw in (with_id, without):
        first = store_message(db, raw, "x@example.org")
        assert first is not None
        process_message(db, settings, first)
        assert store_message(db, raw, "x@example.org") is None  # a redelivery: not again
    assert all(b"kettle" not in raw for raw in stored(db))


def test_a_sent_reset_mail_keeps_no_code(mailer: Mailer, db: Database,
                                         settings: Settings) -> None:
    mailer.signup("alice")
    mailer.reply("reset alice", sender="alice@example.org")
    assert Sender(db, settings).send_due() >= 2
    with db.reading() as s:
        mail = s.scalars(select(OutboxMessage).where(  # after the signup's confirmation
            OutboxMessage.blank_after_send.is_(True)).order_by(OutboxMessage.id.desc())).first()
        welcome = s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject.like("%welcome%"))).one()
    assert mail is not None
    assert mail.status == "sent" and mail.body == BLANKED and mail.html_body is None
    assert mail.subject == BLANKED_SUBJECT
    assert "Welcome, alice!" in welcome.body  # other mail keeps its copy
    sent = [m for m in read_maildir(settings.maildir)
            if "code to reset" in str(m["Subject"])]
    found = CODE.search(sent[0].get_body().get_content())  # type: ignore[union-attr]
    assert found is not None  # the code went out, and nothing else keeps it
    done = mailer.reply(f"reset alice {found.group(1)} kettle-blue-7")
    assert "has been changed" in done
    assert found.group(1).encode() not in stored(db)[-1]


def test_processed_mail_is_purged_by_the_server_after_purge_days(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    for uid in ("alice", "bob"):  # two old mails, one new
        mailer.reply("help", sender=f"{uid}@example.org")
    mailer.reply("help")
    with db.transaction() as s:
        s.execute(update(InboundMessage).where(InboundMessage.id <= 2)
                  .values(received_at=utcnow() - timedelta(days=31)))
        s.execute(update(OutboxMessage).where(OutboxMessage.inbound_id <= 2)
                  .values(created_at=utcnow() - timedelta(days=31)))
    Sender(db, settings).send_due()
    failed = store_message(db, make_mail("help", message_id="<kept@example.org>"), "a@x")
    with db.transaction() as s:
        s.execute(update(InboundMessage).where(InboundMessage.id == failed)
                  .values(status="failed", received_at=utcnow() - timedelta(days=90)))
    assert run_purge(db, replace(settings, purge_days=0)) == 0  # 0: kept
    assert len(stored(db)) == 4
    loop = WorkLoop(db, settings)  # purge_days 30 by default: serve's loop does it
    loop.once()
    with db.reading() as s:
        left = list(s.scalars(select(InboundMessage.id).order_by(InboundMessage.id)))
        out = list(s.scalars(select(OutboxMessage.inbound_id)))
    assert left == [3, failed]  # the failed one waits for the administrator
    assert None not in out and set(out) == {3}


def test_a_sent_confirmation_keeps_no_code(mailer: Mailer, db: Database,
                                           settings: Settings) -> None:
    """The confirmation of a signup (the reply itself when it came from the account's
    address, else a mail of its own to that address) carries a live code in its
    Subject and text: once sent, the outbox keeps neither; the code still works."""
    mailer.send("signup carol kettle-blue-7", sender="carol@example.org")
    mailer.send("signup dave kettle-blue-8 dave@example.net", sender="carol@example.org")
    assert Sender(db, settings).send_due() >= 2
    with db.reading() as s:
        rows = list(s.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))
    assert [(r.to_addr, r.subject, r.body) for r in rows if r.blank_after_send] == [
        ("carol@example.org", BLANKED_SUBJECT, BLANKED),
        ("dave@example.net", BLANKED_SUBJECT, BLANKED)]
    assert not any("confirm " in r.subject for r in rows)
    subjects = {str(m["To"]): str(m["Subject"]) for m in read_maildir(settings.maildir)
                if str(m["Subject"]).startswith("confirm ")}
    for address, userid in (("carol@example.org", "carol"), ("dave@example.net", "dave")):
        assert subjects[address].startswith(f"confirm {userid} ")
        done = mailer.reply(subjects[address], sender=address)
        assert "confirmed" in done, done
