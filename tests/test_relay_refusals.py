"""A provider's submission server that says no: a 421 (its rate limit) and a refused
login are backed off for minutes, each wait drawn, shared by every sender, said once
in the log and named by ``status``; a relay that refuses or defers every mail for
longer than ``health_mail_age`` makes the server unhealthy, with its last answer; the
envelope sender is the login's own address unless ``verp`` is on, and ``config
check`` asks the relay what it thinks of it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, Envelope
from click.testing import CliRunner
from sqlalchemy import select, update
from starlette.testclient import TestClient

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import RelayState
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.operations import check_settings, retry
from pbmserv.sender.delivery import Sender
from pbmserv.service.health import status_of
from pbmserv.web.app import create_app
from tests.mailservers import Submission, start_submission
from tests.test_submission import PASSWORD, USER, certificate, queue, relay_settings, rows
from tests.test_web_ops import metric_values

__all__ = ["certificate"]  # the fixture, used by name
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


class Provider(Submission):
    """A submission server with a provider's manners: ``mail`` answers MAIL FROM with
    a code ("421 4.7.0 ..." while it throttles), ``own_sender`` takes mail only from
    the login's own address, ``rcpt`` answers every RCPT TO with a code."""

    def __init__(self) -> None:
        super().__init__(USER, PASSWORD)
        self.mail: str | None = None
        self.rcpt: str | None = None
        self.own_sender = False
        self.senders: list[str] = []

    async def handle_MAIL(self, server: SMTP, session: Any, envelope: Envelope, address: str,
                          mail_options: list[str]) -> str:
        self.senders.append(address)
        if self.mail is not None:
            return self.mail
        if self.own_sender and address.lower() != USER:
            return f"553 5.7.1 <{address}>: Sender address rejected: not owned by user {USER}"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server: SMTP, session: Any, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        if self.rcpt is not None:
            return self.rcpt
        envelope.rcpt_tos.append(address)
        return "250 OK"


@pytest.fixture
def provider(certificate: tuple[Path, Path]) -> Iterator[tuple[Provider, str]]:
    sink = Provider()
    controller, port = start_submission(sink, *certificate, implicit_tls=False)
    yield sink, f"submission://{USER}@localhost:{port}"
    controller.stop()


def relay_row(db: Database) -> RelayState:
    with db.reading() as session:
        [row] = session.scalars(select(RelayState)).all()
        session.expunge(row)
        return row


def let_try_now(db: Database) -> None:
    """The back-off is over (as if its minutes had passed)."""
    with db.transaction() as session:
        session.execute(update(RelayState).values(retry_at=utcnow() - timedelta(seconds=1)))


def test_a_421_backs_off_for_minutes_and_is_said_once(
        db: Database, settings: Settings, tmp_path: Path, certificate: tuple[Path, Path],
        provider: tuple[Provider, str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pbmserv.sender.delivery")
    sink, url = provider
    settings = relay_settings(settings, url, certificate[0], tmp_path)
    queue(db, settings, 3)
    sink.mail = "421 4.7.0 Too many messages, try again later"
    sender = Sender(db, settings)
    assert sender.send_due() == 0
    assert sink.logins == [(USER, True)] and len(sink.senders) == 1
    assert all(r.status == OutboxStatus.PENDING and r.attempts == 0 for r in rows(db))
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert line.startswith(f"relay localhost:{url.rsplit(':', 1)[1]}: 421 4.7.0 Too many "
                           "messages, try again later; no mail is tried for ")
    first = int(line.split("no mail is tried for ")[1].split("s ")[0])
    assert 48 <= first <= 72  # a minute, give or take a fifth
    # no login, no MAIL FROM, by this sender or another (another worker process), every
    # few seconds: a throttle is not made a lock
    for _ in range(5):
        assert sender.send_due() == 0 and Sender(db, settings).send_due() == 0
    assert len(sink.logins) == 1 and len(sink.senders) == 1
    status = status_of(db, settings)
    assert status.healthy
    assert f"{url}: nothing taken since " in status.relay
    assert "its last answer: 421 4.7.0 Too many messages, try again later; no mail tried " \
           "before " in status.relay
    # the back-off over, the relay still throttles: twice as long, and not said again
    let_try_now(db)
    assert sender.send_due() == 0 and len(sink.senders) == 2
    assert relay_row(db).refusals == 2
    again = relay_row(db).retry_at
    assert again is not None
    assert 96 <= (again - utcnow()).total_seconds() <= 145
    assert len([r for r in caplog.records if r.levelname == "ERROR"]) == 1
    # still refusing after health_mail_age: unhealthy, with the relay's word
    later = status_of(db, settings, utcnow() + timedelta(seconds=settings.health_mail_age + 1))
    [problem] = later.problems
    assert problem.endswith("its last answer: 421 4.7.0 Too many messages, try again later")
    # it takes mail again: everything goes, the status is well again
    sink.mail = None
    let_try_now(db)
    assert sender.send_due() == 3
    assert "relay localhost:" in caplog.text and "takes mail again" in caplog.text
    assert relay_row(db).failing_since is None and relay_row(db).refusals == 0
    assert status_of(db, settings).relay.startswith(f"{url}: taking mail, the last at ")


def test_outbox_retry_ends_the_back_off(
        db: Database, settings: Settings, tmp_path: Path, certificate: tuple[Path, Path],
        provider: tuple[Provider, str]) -> None:
    sink, url = provider
    settings = relay_settings(settings, url, certificate[0], tmp_path)
    queue(db, settings, 1)
    sink.mail = "421 4.7.0 Try again later"
    assert Sender(db, settings).send_due() == 0
    sink.mail = None
    assert Sender(db, settings).send_due() == 0  # backing off
    assert retry(db, None, settings) == 1
    assert Sender(db, settings).send_due() == 1


def test_the_envelope_sender_is_the_logins_own_address_unless_verp(
        db: Database, settings: Settings, tmp_path: Path, certificate: tuple[Path, Path],
        provider: tuple[Provider, str]) -> None:
    """A submission server that takes mail only from the login's own address refused
    every mail from the default plus-address (club+bounce-o...@), and config check
    said ok."""
    sink, url = provider
    sink.own_sender = True
    settings = replace(relay_settings(settings, url, certificate[0], tmp_path),
                       addresses=("games@example.org",))
    checks = {c.name: c for c in check_settings(settings)}
    assert (checks["sender"].level, checks["sender"].text) == (
        "ok", f"the relay takes mail from <{USER}> (the login's own address)")
    queue(db, settings, 1)
    assert Sender(db, settings).send_due() == 1
    assert sink.received[0].mail_from == USER
    verp = replace(settings, verp=True)
    checks = {c.name: c for c in check_settings(verp)}
    assert checks["sender"].level == "FAIL"
    assert checks["sender"].text.startswith("the relay refuses mail from <games+bounce-o1-")
    assert checks["sender"].text.endswith(
        f"(one address per mail, VERP: bounces name the mail): it answered 553 5.7.1 "
        f"Sender address rejected: not owned by user {USER}; set verp = false (mail then "
        f"goes from <{USER}>)".replace("553 5.7.1 ", f"553 5.7.1 <{sink.senders[-1]}>: "))
    [sent] = rows(db)
    queue(db, verp, 1)
    assert Sender(db, verp).send_due() == 0
    refused = rows(db)[-1]
    assert refused.status == OutboxStatus.FAILED and "553 5.7.1" in (refused.last_error or "")
    assert sent.status == OutboxStatus.SENT
    # the relay's refusal of the sender is the relay's fault: after health_mail_age,
    # the server is unhealthy with it
    later = status_of(db, verp, utcnow() + timedelta(seconds=verp.health_mail_age + 1))
    assert any("553 5.7.1" in p and "has refused or deferred every mail since" in p
               for p in later.problems)


def test_a_relay_deferring_everything_makes_the_server_unhealthy(
        db: Database, settings: Settings, tmp_path: Path, certificate: tuple[Path, Path],
        provider: tuple[Provider, str]) -> None:
    """Each mail deferred moves its own next try, so none is ever overdue: the relay's
    state says what the queue cannot."""
    sink, url = provider
    sink.rcpt = "450 4.7.1 Recipient address rejected: try again later"
    settings = relay_settings(settings, url, certificate[0], tmp_path)
    queue(db, settings, 2)
    assert Sender(db, settings).send_due() == 0
    assert all(r.attempts == 1 for r in rows(db))  # each mail's own back-off
    now = utcnow()
    assert status_of(db, settings, now).healthy
    late = status_of(db, settings, now + timedelta(seconds=settings.health_mail_age + 1))
    assert late.overdue == 0  # what the queue alone said: all well
    with TestClient(create_app(db, settings)) as client:
        metrics = metric_values(client.get("/metrics").text)
    assert metrics[f'pbmserv_relay_failing_seconds{{relay="{url}"}}'] > 0
    [problem] = late.problems
    assert problem.startswith(f"the relay {url} has refused or deferred every mail since ")
    assert problem.endswith("its last answer: 450 4.7.1 Recipient address rejected: try "
                            "again later")
    with db.transaction() as session:  # ten minutes on
        session.execute(update(RelayState).values(
            failing_since=utcnow() - timedelta(minutes=10)))
    result = CliRunner().invoke(main, ["status"], env={
        "PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": settings.database_url,
        "PBMSERV_RELAY": url})
    assert result.exit_code == 1
    assert f"relay    {url}: nothing taken since " in result.output
    assert f"problem  the relay {url} has refused or deferred every mail since " \
        in result.output


@pytest.mark.postgres
def test_a_421_backs_off_every_sender_on_postgres(
        pg_url: str, tmp_path: Path, certificate: tuple[Path, Path],
        provider: tuple[Provider, str]) -> None:
    sink, url = provider
    settings = relay_settings(Settings(database_url=pg_url, maildir=tmp_path / "mail"), url,
                              certificate[0], tmp_path)
    db = Database(pg_url)
    try:
        queue(db, settings, 2)
        sink.mail = "421 4.7.0 Try again later"
        assert Sender(db, settings).send_due() == 0
        assert Sender(db, settings).send_due() == 0 and len(sink.senders) == 1
        assert relay_row(db).refusals == 1
        sink.mail = None
        let_try_now(db)
        assert Sender(db, settings).send_due() == 2
        assert relay_row(db).failing_since is None
    finally:
        db.dispose()
