"""The administrator is told: one mail per incident, with the command that deals with
it; ``status`` exits 3 while something needs a person; the inbox shows each failure's
cause in one line; a daily report if asked for."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from pbmserv.cli import main
from pbmserv.commands.general import Help
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Alert, Bounce, InboundMessage, MailSuspension, OutboxMessage
from pbmserv.db.problems import reason_line
from pbmserv.db.session import Database
from pbmserv.db.status import AlertKind, OutboxStatus, Resolution
from pbmserv.sender.delivery import Sender
from pbmserv.timers import run_alerts
from pbmserv.version import version_text
from tests.conftest import Mailer, check_mail_shape, free_port
from tests.dsns import Group, dsn


def cli(settings: Settings, *args: str) -> Any:
    return CliRunner().invoke(main, list(args), env={
        "PBMSERV_DATABASE_URL": settings.database_url,
        "PBMSERV_MAILDIR": str(settings.maildir)})


def admin_mails(db: Database, settings: Settings) -> list[OutboxMessage]:
    with db.reading() as s:
        return list(s.scalars(select(OutboxMessage)
                              .where(OutboxMessage.to_addr == settings.alert_address)
                              .order_by(OutboxMessage.id)))


def test_failed_mails_make_one_incident_and_one_mail(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = replace(settings, admin_address="ops@example.org")

    def broken(*args: object) -> None:
        raise OperationalError("SELECT 1", {}, Exception("disk I/O error"))

    mailer.settings = settings
    monkeypatch.setattr(Help, "run", broken)
    for sender in ("alice@example.org", "bob@example.org", "carol@example.org"):
        assert [m.subject for m in mailer.send("help", sender=sender)] == [
            "pbmserv: your mail is held for the administrator"]
    monkeypatch.undo()
    # each failure's cause in one line: the database's message, not SQLAlchemy's link
    listed = cli(settings, "inbox", "list", "--status", "failed")
    assert listed.output.splitlines()[0].endswith(
        "alice@example.org  [the database said: disk I/O error]") or \
        listed.output.splitlines()[-1].endswith("[the database said: disk I/O error]")
    assert "sqlalche.me" not in listed.output
    status = cli(settings, "status")
    assert status.exit_code == 3
    assert status.output.splitlines()[-2:] == [
        "attend   3 incoming mail(s) failed: 'pbmserv inbox list --status failed', then "
        "'pbmserv inbox replay --all-failed'",
        "health   ok, but needs you"]
    now = utcnow()
    assert run_alerts(db, settings, now) == 0  # not settled yet: a burst is one mail
    assert run_alerts(db, settings, now + timedelta(minutes=2)) == 1
    assert run_alerts(db, settings, now + timedelta(minutes=3)) == 0
    (mail,) = admin_mails(db, settings)
    assert mail.subject == "pbmserv: 3 incoming mails failed"
    with db.reading() as s:
        first = s.scalars(select(InboundMessage.id).order_by(InboundMessage.id)).first()
    assert f"message {first} from alice@example.org: the database said: disk I/O error" in \
        " ".join(mail.body.split())
    assert f"  pbmserv inbox show {first}" in mail.body
    # the failure's reason comes first, before the mail (a header bomb is long)
    shown = cli(settings, "inbox", "show", str(first)).output
    assert shown.startswith("--- failed:\n")
    assert shown.index("disk I/O error") < shown.index("--- the message as received:\n") \
        < shown.index("Subject: help")
    assert "  pbmserv inbox replay --all-failed      once the fault is fixed" in mail.body
    # quiet for an hour: the incident is over; the next failure opens a new one
    Sender(db, settings).send_due()  # (or, two hours on, the outbox is late too)
    assert run_alerts(db, settings, now + timedelta(hours=2)) == 0
    with db.reading() as s:
        (alert,) = s.scalars(select(Alert))
        assert alert.closed_at is not None and alert.count == 3
    monkeypatch.setattr(Help, "run", broken)
    mailer.send("help", sender="dave@example.org")
    monkeypatch.undo()
    assert run_alerts(db, settings, utcnow() + timedelta(minutes=2)) == 1
    assert [m.subject for m in admin_mails(db, settings)] == [
        "pbmserv: 3 incoming mails failed", "pbmserv: 1 incoming mail failed"]
    # fixed and replayed: nothing needs a person any more
    replayed = cli(settings, "inbox", "replay", "--all-failed")
    assert replayed.output.splitlines()[-1] == "replayed 4 message(s)"
    assert cli(settings, "status").exit_code == 0


def test_reason_line_of_an_old_sqlalchemy_traceback() -> None:
    old = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
sqlite3.OperationalError: database or disk is full

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "y.py", line 2, in run
sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database or disk is full
[SQL: INSERT INTO boards (game) VALUES (?)]
[parameters: ('amoeba',)]
(Background on this error at: https://sqlalche.me/e/20/e3q8)"""
    assert reason_line(old) == ("sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) "
                                "database or disk is full")
    assert reason_line("ZeroDivisionError: division by zero\n\nTraceback ...") == \
        "ZeroDivisionError: division by zero"


def test_mail_that_does_not_move_is_one_incident(mailer: Mailer, db: Database,
                                                  settings: Settings) -> None:
    mailer.reply("help")  # one mail to send
    hour_ago = utcnow() - timedelta(hours=1)
    with db.transaction() as s:  # the relay has taken nothing for an hour
        s.execute(update(OutboxMessage).values(created_at=hour_ago, next_attempt_at=hour_ago))
    now = utcnow()
    assert run_alerts(db, settings, now) == 0
    assert run_alerts(db, settings, now + timedelta(minutes=1)) == 1
    assert run_alerts(db, settings, now + timedelta(minutes=5)) == 0
    (mail,) = admin_mails(db, settings)
    assert mail.to_addr == "postmaster@localhost"  # no admin_address: the postmaster
    assert mail.subject == "pbmserv: mail is not moving"
    assert "outgoing mail is not going out: 1 mail(s) due for more than 15 minutes" in \
        " ".join(mail.body.split())
    with db.reading() as s:
        (alert,) = s.scalars(select(Alert))
        assert alert.kind == AlertKind.QUEUE_LATE and alert.count == 3


def test_the_daily_report_comes_once_a_day_at_its_hour(mailer: Mailer, db: Database,
                                                       settings: Settings) -> None:
    settings = replace(settings, daily_report=7)
    mailer.signup("alice")
    Sender(db, settings).send_due()
    morning = datetime(2030, 5, 6, 7, 0, 30, tzinfo=utcnow().tzinfo)
    assert run_alerts(db, settings, morning - timedelta(hours=1)) == 0
    assert run_alerts(db, settings, morning) == 1
    Sender(db, settings).send_due()  # (else, in 2030, the report is late mail)
    assert run_alerts(db, settings, morning + timedelta(minutes=30)) == 0
    Sender(db, settings).send_due()
    assert run_alerts(db, settings, morning + timedelta(days=1)) == 1
    mails = admin_mails(db, settings)
    assert [m.subject for m in mails] == ["pbmserv: daily report 2030-05-06",
                                          "pbmserv: daily report 2030-05-07"]
    assert "  failed          0 incoming, 0 outgoing" in mails[0].body
    assert "This report comes every day at 7:00 UTC" in " ".join(mails[0].body.split())
    # which pbmserv wrote it, as 'pbmserv --version' says
    assert mails[0].body.rstrip().endswith("\n--\n" + version_text())
    assert cli(settings, "status").exit_code == 0  # a report is no incident


def _alert_command(tmp_path: Path) -> tuple[str, Path]:
    """An alert_command that keeps what it reads (each run appended), and the file."""
    kept = tmp_path / "paged.txt"
    script = tmp_path / "page-me"
    script.write_text(f"#!/bin/sh\ncat >> {kept}\necho '-- end' >> {kept}\n")
    script.chmod(0o755)
    return f"{script} --urgent", kept


def _sent_to(settings: Settings, address: str) -> tuple[str, str]:
    """(Return-Path, Message-ID) of the one mail to ``address`` in the Maildir."""
    for path in sorted((settings.maildir / "new").iterdir()):
        head = path.read_text().split("\n\n", 1)[0]
        if re.search(rf"^To: {re.escape(address)}$", head, re.M):
            verp = re.search(r"^Return-Path: <(.*)>$", head, re.M)
            message_id = re.search(r"^Message-ID: (.*)$", head, re.M)
            assert verp is not None and message_id is not None
            return verp.group(1), message_id.group(1)
    raise AssertionError(f"no mail to {address}")


def test_an_alert_that_bounces_counts_against_no_address_and_is_told_otherwise(
        mailer: Mailer, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    command, paged = _alert_command(tmp_path)
    settings = replace(settings, admin_address="ops@example.org", alert_command=command)
    mailer.settings = settings
    def broken(*args: object) -> None:
        raise OperationalError("SELECT 1", {}, Exception("disk I/O error"))

    monkeypatch.setattr(Help, "run", broken)
    mailer.send("help", sender="bob@example.org")
    monkeypatch.undo()
    now = utcnow() + timedelta(minutes=2)
    assert run_alerts(db, settings, now) == 1
    assert not paged.exists()  # mail can carry it: nothing goes the second way
    Sender(db, settings).send_due()
    verp, message_id = _sent_to(settings, "ops@example.org")
    # the admin's mailbox does not exist: the DSN comes back to the alert's VERP address
    mailer.send_raw(dsn(verp, [Group("ops@example.org")], message_id), "<>")
    with db.reading() as s:
        assert list(s.scalars(select(Bounce))) == []  # never counted against an address
        assert list(s.scalars(select(MailSuspension))) == []
        (mail,) = admin_mails(db, settings)
        assert mail.status == OutboxStatus.FAILED  # retried once fixed, as any failed mail
        assert mail.last_error is not None and mail.last_error.startswith("bounced: ")
        (bounce,) = s.scalars(select(InboundMessage).order_by(InboundMessage.id.desc()).limit(1))
        assert f"(outbox {mail.id}, to the administrator)" in (bounce.error or "")
    status = cli(settings, "status")
    assert status.exit_code == 3, status.output
    assert "attend   the administrator cannot be reached: mail to the admin address was " \
        "refused or bounced since" in status.output
    # the incident goes the second way: the log at ERROR, and alert_command
    caplog.set_level(logging.ERROR, logger="pbmserv.alert")
    assert run_alerts(db, settings, now + timedelta(minutes=3)) == 0  # not by mail
    told = paged.read_text()
    assert told.startswith("Subject: pbmserv: alerts do not reach the administrator\n\n")
    assert "Mail to the administrator (ops@example.org) does not arrive" in " ".join(told.split())
    assert told.count("-- end") == 1
    assert any(r.levelno == logging.ERROR and r.getMessage().startswith(
        "ALERT pbmserv: alerts do not reach the administrator (not by mail alone: mail to "
        "ops@example.org does not arrive)") for r in caplog.records), caplog.text
    listed = cli(settings, "alerts", "list")
    assert listed.exit_code == 0
    (unreachable,) = re.findall(r"^ *(\d+)  admin-unreachable +1x since", listed.output, re.M)
    shown = cli(settings, "alerts", "show", unreachable)
    assert f"mail      outbox {mail.id} to ops@example.org, failed: bounced: " in shown.output
    acked = cli(settings, "alerts", "ack", unreachable)
    assert acked.exit_code == 0 and acked.output.startswith(f"incident {unreachable}: acked by ")
    left = cli(settings, "alerts", "list").output
    assert "admin-unreachable" not in left and "inbox-failed" in left
    # what remains needs a person still: the failed mails (the alert, bob's)
    assert "attend   the administrator cannot" not in cli(settings, "status").output
    assert cli(settings, "outbox", "retry", "--all").exit_code == 0
    assert cli(settings, "inbox", "replay", "--all-failed").exit_code == 0
    assert cli(settings, "status").exit_code == 0
    assert run_alerts(db, settings, utcnow()) == 1  # the failed mail's: resolved
    assert cli(settings, "alerts", "list").output == "no incident is open\n"
    check_mail_shape(admin_mails(db, settings))
    assert all(len(line) <= 76 for line in told.splitlines())


def test_a_resolved_incident_is_mailed_and_a_recurrence_is_mailed_again(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise OperationalError("SELECT 1", {}, Exception("disk I/O error"))

    monkeypatch.setattr(Help, "run", broken)
    mailer.send("help", sender="bob@example.org")
    monkeypatch.undo()
    now = utcnow()
    assert run_alerts(db, settings, now + timedelta(minutes=2)) == 1
    (first,) = admin_mails(db, settings)
    assert '"pbmserv status" exits 3 while the failed mail waits for you' in \
        " ".join(first.body.split())
    assert cli(settings, "inbox", "replay", "--all-failed").exit_code == 0
    assert run_alerts(db, settings, now + timedelta(minutes=3)) == 1
    resolved = admin_mails(db, settings)[-1]
    assert resolved.subject.startswith("pbmserv: resolved: incoming mail failed (since ")
    assert resolved.body.startswith("Resolved: no incoming mail is left failed (replayed or "
                                    "purged).\n")
    # the same again ten minutes later: a new incident, mailed again
    monkeypatch.setattr(Help, "run", broken)
    mailer.send("help", sender="carol@example.org")
    monkeypatch.undo()
    assert run_alerts(db, settings, utcnow() + timedelta(minutes=2)) == 1
    assert [m.subject for m in admin_mails(db, settings)][-1] == \
        "pbmserv: 1 incoming mail failed"
    with db.reading() as s:
        kinds = [(a.kind, a.resolution) for a in s.scalars(select(Alert).order_by(Alert.id))]
    assert kinds == [(AlertKind.INBOX_FAILED, Resolution.RESOLVED),
                     (AlertKind.INBOX_FAILED, None)]
    check_mail_shape(admin_mails(db, settings))  # 76 columns, the "resolved" one too


def test_mail_not_moving_says_status_exits_1_and_goes_the_second_way_with_the_relay_down(
        mailer: Mailer, db: Database, settings: Settings, tmp_path: Path) -> None:
    command, paged = _alert_command(tmp_path)
    settings = replace(settings, relay=("127.0.0.1", free_port()), alert_command=command)
    mailer.settings = settings
    mailer.reply("help")
    Sender(db, settings).send_due()  # the relay cannot be reached
    hour_ago = utcnow() - timedelta(hours=1)
    with db.transaction() as s:
        s.execute(update(OutboxMessage).values(created_at=hour_ago, next_attempt_at=hour_ago))
    now = utcnow()
    run_alerts(db, settings, now)
    assert run_alerts(db, settings, now + timedelta(minutes=1)) == 1
    (mail,) = admin_mails(db, settings)
    text = " ".join(mail.body.split())
    assert '"pbmserv status" exits 1 (unhealthy) while mail is not moving' in text
    assert "exits 3" not in text
    check_mail_shape([mail])
    told = paged.read_text()
    assert told.startswith("Subject: pbmserv: mail is not moving\n\nMail is not moving: ")
    assert cli(settings, "status").exit_code == 1
