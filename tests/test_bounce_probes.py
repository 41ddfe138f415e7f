"""Bounces the Mailman way: a suspended address is probed every bounce_probe_days (a
mail from its own VERP address, sent though the address is suspended); a probe that
does not bounce within a day mails the address again, one that bounces leaves it
suspended until the next probe (at most MAX_PROBES); the daily report lists the
suspended addresses."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select, update

from pbmserv.bounces.scoring import MAX_PROBES
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import MailSuspension, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.notifications.outbox import queue_mail
from pbmserv.sender.delivery import Sender
from pbmserv.timers import run_alerts, run_bounce_probes
from tests.conftest import Mailer, check_mail_shape
from tests.test_bounces import dsn, sent_to


def suspend(mailer: Mailer, db: Database, settings: Settings, address: str) -> None:
    """Three of the mails to ``address`` bounce (real DSNs to their VERP addresses)."""
    with db.transaction() as s:
        for n in range(3):
            queue_mail(s, settings, to=address, subject=f"a board {n}", body="x\n")
    for _, verp, message_id in sent_to(db, settings, address)[-3:]:
        mailer.send_raw(dsn(verp, address, "5.1.1", message_id), "<>")
    with db.reading() as s:
        assert s.get(MailSuspension, address) is not None


def suspension(db: Database, address: str) -> MailSuspension | None:
    with db.reading() as s:
        return s.get(MailSuspension, address)


def test_a_probe_that_does_not_bounce_mails_the_address_again(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("bob")
    suspend(mailer, db, settings, "bob@example.org")
    before = len(sent_to(db, settings, "bob@example.org"))
    now = utcnow()
    assert run_bounce_probes(db, settings, now) == 0  # not yet: bounce_probe_days (3)
    later = now + timedelta(days=settings.bounce_probe_days, minutes=1)
    assert run_bounce_probes(db, settings, later) == 1
    assert run_bounce_probes(db, settings, later) == 0  # one probe at a time
    probes = sent_to(db, settings, "bob@example.org")[before:]
    assert len(probes) == 1  # sent, though the address is suspended
    found = suspension(db, "bob@example.org")
    assert found is not None and found.probes == 1 and found.probe_outbox_id == probes[0][0]
    with db.reading() as s:
        probe = s.get(OutboxMessage, probes[0][0])
        assert probe is not None and probe.status == OutboxStatus.SENT
        assert probe.subject == "pbmserv: is this address still yours? (a test, no answer " \
            "needed)"
        assert "write any command to the server from this address" in " ".join(
            probe.body.split())
        check_mail_shape([probe])
    # other mail to bob is still held back meanwhile
    with db.transaction() as s:
        held = queue_mail(s, settings, to="bob@example.org", subject="a board", body="x\n")
    Sender(db, settings).send_due()
    with db.reading() as s:
        row = s.get(OutboxMessage, held)
        assert row is not None and row.status == OutboxStatus.SUPPRESSED
    # a day on, no bounce of the probe came back: bob is mailed again
    with db.transaction() as s:
        s.execute(update(OutboxMessage).where(OutboxMessage.id == probes[0][0])
                  .values(sent_at=utcnow() - timedelta(days=1, minutes=1)))
    run_bounce_probes(db, settings, utcnow())
    assert suspension(db, "bob@example.org") is None
    with db.transaction() as s:
        again = queue_mail(s, settings, to="bob@example.org", subject="a board", body="x\n")
    Sender(db, settings).send_due()
    with db.reading() as s:
        row = s.get(OutboxMessage, again)
        assert row is not None and row.status == OutboxStatus.SENT


def test_a_probe_that_bounces_keeps_the_address_suspended_and_probes_stop(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("bob")
    suspend(mailer, db, settings, "bob@example.org")
    when = utcnow()
    for n in range(1, MAX_PROBES + 1):
        when += timedelta(days=settings.bounce_probe_days, minutes=1)
        assert run_bounce_probes(db, settings, when) == 1
        Sender(db, settings).send_due()
        number, verp, message_id = sent_to(db, settings, "bob@example.org")[-1]
        mailer.send_raw(dsn(verp, "bob@example.org", "5.1.1", message_id), "<>")
        with db.transaction() as s:  # (sent long enough ago to be judged)
            s.execute(update(OutboxMessage).where(OutboxMessage.id == number)
                      .values(sent_at=when - timedelta(days=2)))
        run_bounce_probes(db, settings, when + timedelta(days=1, minutes=1))
        found = suspension(db, "bob@example.org")
        assert found is not None and found.probes == n  # it bounced: still suspended
    when += timedelta(days=settings.bounce_probe_days * 2)
    assert run_bounce_probes(db, settings, when) == 0  # no more than MAX_PROBES
    # no probe at all with bounce_probe_days = 0
    assert run_bounce_probes(db, replace(settings, bounce_probe_days=0), when) == 0


def test_the_daily_report_lists_the_suspended_addresses(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("bob")
    suspend(mailer, db, settings, "bob@example.org")
    now = utcnow()
    morning = datetime(now.year, now.month, now.day, 7, 0, 30, tzinfo=now.tzinfo)
    if morning <= now:  # the next 07:00, within a day of the suspension
        morning += timedelta(days=1)
    settings = replace(settings, daily_report=7)
    assert run_alerts(db, settings, morning) >= 1
    with db.reading() as s:
        report = s.scalars(select(OutboxMessage).where(
            OutboxMessage.subject.like("pbmserv: daily report%"))).one()
    assert "\nAddresses no longer mailed (1; 1 new in the last day):\n" \
        "  bob@example.org (bob) NEW\n" in report.body
    assert f", 0 of {MAX_PROBES} probes sent\n" in report.body
    check_mail_shape([report])
