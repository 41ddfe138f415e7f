"""DSNs read as their writer meant: the address we mailed (Original-Recipient, the
outgoing mail's own recipient) rather than where an alias led; nothing for addresses we
never mailed; hard bounces (the address is dead) apart from soft ones (a policy, a
full mailbox) and delays, each kind with its threshold, seen apart by the admin."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope
from click.testing import CliRunner
from sqlalchemy import select, text

from pbmserv.bounces.scoring import bounce_kind, problem_counts
from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.migrate import downgrade, upgrade
from pbmserv.db.models import Alert, Bounce, MailSuspension, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import BounceKind, InboundStatus, OutboxStatus
from pbmserv.notifications.outbox import queue_mail
from pbmserv.sender.delivery import Sender
from pbmserv.timers import run_alerts
from tests.conftest import Mailer, free_port
from tests.dsns import Group, dsn
from tests.test_bounces import inbound, sent_to

BOB = "bob@example.org"


def mails_to_bob(mailer: Mailer, db: Database, settings: Settings,
                 count: int) -> list[tuple[int, str, str]]:
    """``count`` mails sent to bob: (outbox id, bounce address, Message-ID)."""
    mailer.signup("bob")
    for _ in range(count - 1):
        mailer.send("help", sender=BOB)
    mails = sent_to(db, settings, BOB)
    assert len(mails) >= count
    return mails[:count]


def users_bounces(settings: Settings) -> str:
    """What ``pbmserv users bounces`` prints with these settings."""
    result = CliRunner().invoke(main, ["users", "bounces"], env={
        "PBMSERV_DATABASE_URL": settings.database_url,
        "PBMSERV_SOFT_BOUNCE_THRESHOLD": str(settings.soft_bounce_threshold)})
    assert result.exit_code == 0, result.output
    return str(result.output)


def kinds(db: Database) -> list[tuple[str, str, int | None]]:
    with db.reading() as s:
        return [(b.address, b.kind, b.outbox_id)
                for b in s.scalars(select(Bounce).order_by(Bounce.id))]


@pytest.mark.parametrize(("status", "code", "kind"), [
    ("5.1.1", None, "hard"), ("5.1.2", None, "hard"), ("5.1.10", None, "hard"),
    ("5.2.1", None, "hard"), ("5.4.4", None, "hard"), ("", 550, "hard"), ("", 553, "hard"),
    ("5.0.0", 550, "hard"), ("", None, "hard"),
    ("5.7.1", 550, "soft"), ("5.7.26", 550, "soft"), ("5.2.2", 552, "soft"),
    ("5.2.0", None, "soft"), ("5.3.0", None, "soft"), ("5.6.0", 554, "soft"),
    ("5.0.0", None, "soft"), ("", 554, "soft"), ("4.4.7", None, "soft")])
def test_what_each_status_says_of_the_address(status: str, code: int | None,
                                              kind: str) -> None:
    assert bounce_kind(status, code) == kind
    assert bounce_kind(status, code, permanent=False) == BounceKind.DELAY


def test_the_address_we_mailed_is_the_one_counted(mailer: Mailer, db: Database,
                                                  settings: Settings) -> None:
    (one, verp1, _), (two, verp2, _), (three, verp3, _), (four, verp4, _) = \
        mails_to_bob(mailer, db, settings, 4)
    # bob@ is an alias of a catch-all: Final-Recipient names where it led
    mailer.send_raw(dsn(verp1, [Group("robert@catchall.example.net", original=BOB)]), "<>")
    assert inbound(db).error == (
        f"bounce: {BOB} (outbox {one}): smtp; 550 5.1.1 <robert@catchall.example.net>: as the "
        "server said (delivered on to robert@catchall.example.net); 1 of 3 hard bounces "
        "(the address)")
    # no Original-Recipient: the one address the report names stands for the mail's own
    mailer.send_raw(dsn(verp2, [Group("robert@catchall.example.net")]), "<>")
    assert f"bounce: {BOB} (outbox {two}): " in (inbound(db).error or "")
    # a multi-status report: bob among others, each of another status; bob's counts, for
    # bob alone
    mailer.send_raw(dsn(verp3, [Group("carol@example.org", "5.1.1"),
                                Group("dave@example.net", "5.7.1"),
                                Group(BOB, "5.2.2")]), "<>")
    assert inbound(db).error == (
        f"bounce: {BOB} (outbox {three}): smtp; 550 5.2.2 <{BOB}>: as the server said; 1 of 5 "
        "soft bounces (a policy, a full mailbox or the like)")
    # a multi-status report that names others only says nothing of bob
    mailer.send_raw(dsn(verp4, [Group("carol@example.org"), Group("dave@example.net")]), "<>")
    assert (inbound(db).status, inbound(db).error) == (
        InboundStatus.IGNORED,
        f"bounce not counted: it names no address that outgoing mail {four} went to")
    assert kinds(db) == [(BOB, "hard", one), (BOB, "hard", two), (BOB, "soft", three)]


def test_soft_bounces_have_their_own_threshold_and_delays_never_count(
        mailer: Mailer, db: Database, settings: Settings,
        caplog: pytest.LogCaptureFixture) -> None:
    settings = replace(settings, soft_bounce_threshold=3)
    mailer = Mailer(db, settings)
    mails = mails_to_bob(mailer, db, settings, 6)
    (one, verp1, _), (two, verp2, _), (three, _, id3), (four, verp4, _) = mails[:4]
    (five, verp5, _), (six, verp6, _) = mails[4:]
    # a delay, twice for the same mail: kept once, never counted, and the log says so
    with caplog.at_level(logging.INFO, logger="pbmserv"):
        for _ in range(2):
            mailer.send_raw(dsn(verp1, [Group(BOB, "4.2.2", "delayed")]), "<>")
    assert inbound(db).error == (
        f"bounce: {BOB} (outbox {one}): smtp; 451 4.2.2 <{BOB}>: as the server said; a delay "
        "only (Action: delayed), never counted")
    assert f"a delay of outbox {one} to {BOB} (4.2.2), never counted" in caplog.text
    # policy refusals and a full mailbox: soft, two of three; then the same mail's
    # failure after its delay counts as the bounce of that mail
    mailer.send_raw(dsn(verp2, [Group(BOB, "5.7.1", diagnostic="550 5.7.1 refused by policy")]),
                    "<>")
    assert inbound(db).error == (
        f"bounce: {BOB} (outbox {two}): smtp; 550 5.7.1 refused by policy; 1 of 3 soft bounces "
        "(a policy, a full mailbox or the like)")
    mailer.send_raw(dsn("pbmserv@localhost", [Group(BOB, "5.2.2")], id3), "<>")  # by Message-ID
    assert "; 2 of 3 soft bounces" in (inbound(db).error or "")
    mailer.send_raw(dsn(verp1, [Group(BOB, "5.1.1")]), "<>")
    assert "; 1 of 3 hard bounces (the address)" in (inbound(db).error or "")
    with db.reading() as s:
        assert s.get(MailSuspension, BOB) is None
        statuses = [s.get(OutboxMessage, n).status for n in (one, two, three, four)]  # type: ignore[union-attr]
    assert statuses == [OutboxStatus.BOUNCED, OutboxStatus.BOUNCED, OutboxStatus.BOUNCED,
                        OutboxStatus.SENT]
    listed = users_bounces(settings)
    assert listed.startswith(f"{BOB} (bob): mailed; within 7 days 1 of 3 hard, 2 of 3 soft, "
                             "1 delay (never counted); last ")
    # the third soft bounce suspends the address
    out = mailer.send_raw(dsn(verp4, [Group(BOB, "5.7.26")]), "<>")
    assert out == [] and inbound(db).error == (
        f"bounce: {BOB} (outbox {four}): smtp; 550 5.7.26 <{BOB}>: as the server said; 3 of 3 "
        "soft bounces (a policy, a full mailbox or the like), no longer mailed")
    # a hard bounce of a mail with a soft one counts no more; a delay of it is kept
    mailer.send_raw(dsn(verp4, [Group(BOB, "5.1.1")]), "<>")
    assert inbound(db).error == (f"bounce: {BOB} (outbox {four}): smtp; 550 5.1.1 <{BOB}>: as "
                                 "the server said; this mail was counted already")
    mailer.send_raw(dsn(verp5, [Group(BOB, "4.4.1", "delayed")]), "<>")
    mailer.send_raw(dsn(verp6, [Group(BOB, "4.4.1", "delayed")]), "<>")
    with db.reading() as s:
        assert s.get(MailSuspension, BOB) is not None
    assert kinds(db) == [(BOB, "delay", one), (BOB, "soft", two), (BOB, "soft", three),
                         (BOB, "hard", one), (BOB, "soft", four), (BOB, "delay", five),
                         (BOB, "delay", six)]
    listed = users_bounces(settings)
    assert listed.startswith(f"{BOB} (bob): NOT MAILED since ")
    assert "; within 7 days 1 of 3 hard, 3 of 3 soft, 3 delays (never counted); last " in listed
    # delays are no bounces anywhere: not in the counts, not in a storm
    with db.reading() as s:
        assert problem_counts(s, utcnow()).bounces_last_day == 4
        assert s.scalar(select(Alert)) is None


def test_the_admin_sees_each_kind_in_the_daily_report(mailer: Mailer, db: Database,
                                                      settings: Settings) -> None:
    settings = replace(settings, daily_report=utcnow().hour)
    mailer = Mailer(db, settings)
    (_, verp1, _), (_, verp2, _) = mails_to_bob(mailer, db, settings, 2)
    mailer.send_raw(dsn(verp1, [Group(BOB, "5.2.2")]), "<>")
    mailer.send_raw(dsn(verp2, [Group(BOB, "4.2.2", "delayed")]), "<>")
    Sender(db, settings).send_due()
    assert run_alerts(db, settings, utcnow()) == 1
    with db.reading() as s:
        report = s.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "postmaster@localhost")).one()
    assert f"  {BOB} (bob):\n    0 hard, 1 soft, 1 delay\n" in report.body
    assert "  bounces         1 (addresses no longer mailed: 0)" in report.body


class Full:
    """A relay that answers one mailbox is full (552 5.2.2)."""

    async def handle_RCPT(self, server: Any, session: Any, envelope: Envelope, address: str,
                          options: list[str]) -> str:
        if address.startswith("full"):
            return f"552 5.2.2 <{address}>: mailbox full"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:
        return "250 OK"


def test_the_relays_mailbox_full_is_a_soft_bounce(db: Database, settings: Settings) -> None:
    port = free_port()
    controller = Controller(Full(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        relayed = replace(settings, relay=("127.0.0.1", port))
        with db.transaction() as s:
            number = queue_mail(s, relayed, to="full@example.org", subject="Test", body="x\n")
        Sender(db, relayed).send_due()
    finally:
        controller.stop()
    with db.reading() as s:
        row = s.get(OutboxMessage, number)
        assert row is not None and row.status == OutboxStatus.BOUNCED
        assert s.scalar(select(Alert)) is None  # no fault of ours: nobody is alerted
    assert kinds(db) == [("full@example.org", "soft", number)]
    assert run_alerts(db, relayed, utcnow() + timedelta(minutes=2)) == 0


def bounces_kept_before_kinds(url: str) -> None:
    """Bounces kept by a pbmserv before bounce kinds (schema 0015) all counted: after
    the upgrade they are hard bounces; down and up again, they are kept."""
    db = Database(url)
    try:
        upgrade(db, "0015")
        with db.engine.begin() as conn:
            conn.execute(text("INSERT INTO bounces (address, at, source, status, detail) "
                              "VALUES (:a, :t, 'dsn', '5.1.1', 'gone')"),
                         {"a": BOB, "t": utcnow()})
        upgrade(db)
        with db.reading() as s:
            assert [(b.address, b.kind) for b in s.scalars(select(Bounce))] == [
                (BOB, BounceKind.HARD)]
        downgrade(db, "0015")
        upgrade(db)
        with db.reading() as s:
            assert [b.kind for b in s.scalars(select(Bounce))] == [BounceKind.HARD]
    finally:
        db.dispose()


def test_bounces_kept_before_kinds_are_hard(tmp_path: Path) -> None:
    bounces_kept_before_kinds(f"sqlite:///{tmp_path / 'old.sqlite3'}")


@pytest.mark.postgres
def test_bounces_kept_before_kinds_are_hard_on_postgres(pg_blank_url: str) -> None:
    bounces_kept_before_kinds(pg_blank_url)
