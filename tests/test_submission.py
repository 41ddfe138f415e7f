"""Sending through a provider's submission server: STARTTLS or TLS from the first
byte, a login, the certificate checked; a wrong password or an untrusted certificate
charges no mail; the daily sending limit holds mail back without losing any."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.notifications.outbox import queue_mail
from pbmserv.operations import check_settings, status
from pbmserv.sender import delivery
from pbmserv.sender.delivery import Sender
from tests.mailservers import OPENSSL, Submission, make_certificate, start_submission

USER, PASSWORD = "club@example.org", "app-password"
# the smtps server is TLS from the first byte, which aiosmtpd does not count as TLS
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


@pytest.fixture(scope="module")
def certificate() -> Iterator[tuple[Path, Path]]:
    if OPENSSL is None:
        pytest.skip("openssl is not installed (it makes the test certificate)")
    folder = Path(tempfile.mkdtemp(prefix="pbmserv-cert-"))
    yield make_certificate(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["submission", "smtps"])
def server(request: pytest.FixtureRequest, certificate: tuple[Path, Path],
           ) -> Iterator[tuple[Submission, str]]:
    """The server, and the relay setting that reaches it."""
    sink = Submission(USER, PASSWORD)
    controller, port = start_submission(sink, *certificate,
                                        implicit_tls=request.param == "smtps")
    yield sink, f"{request.param}://{USER}@localhost:{port}"
    controller.stop()


def relay_settings(settings: Settings, url: str, ca: Path | None, tmp_path: Path,
                   password: str = PASSWORD, **more: object) -> Settings:
    secret = tmp_path / "relay-password"
    secret.write_text(password + "\n")
    loaded = Settings.from_values({"relay": url, "relay_password_file": str(secret),
                                   "relay_ca_file": str(ca) if ca else "", **more})
    return replace(settings, relay=loaded.relay, relay_scheme=loaded.relay_scheme,
                   relay_user=loaded.relay_user, relay_password_file=loaded.relay_password_file,
                   relay_ca_file=loaded.relay_ca_file,
                   daily_send_limit=loaded.daily_send_limit)


def queue(db: Database, settings: Settings, n: int) -> list[int]:
    with db.transaction() as session:
        return [queue_mail(session, settings, to=f"player{i}@example.net", subject=f"Test {i}",
                           body=f"Hello {i}\n") for i in range(n)]


def rows(db: Database) -> list[OutboxMessage]:
    with db.reading() as session:
        return list(session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def test_sent_after_tls_and_login(db: Database, settings: Settings, tmp_path: Path,
                                  server: tuple[Submission, str],
                                  certificate: tuple[Path, Path]) -> None:
    sink, url = server
    settings = relay_settings(settings, url, certificate[0], tmp_path)
    queue(db, settings, 2)
    assert Sender(db, settings).send_due() == 2
    assert sink.logins == [(USER, True)]  # one session, one login, for both mails
    [first] = sink.to("player0@example.net")
    assert message_from_bytes(first, policy=policy.default)["Subject"] == "Test 0"
    assert [r.status for r in rows(db)] == [OutboxStatus.SENT, OutboxStatus.SENT]
    checks = {c.name: c for c in check_settings(settings)}
    assert checks["relay"].level == "ok"
    assert checks["relay"].text.endswith(f"answers and takes the login of {USER}")


def test_a_wrong_password_charges_no_mail_and_is_not_tried_every_few_seconds(
        db: Database, settings: Settings, tmp_path: Path, server: tuple[Submission, str],
        certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    sink, url = server
    settings = relay_settings(settings, url, certificate[0], tmp_path, password="wrong")
    queue(db, settings, 2)
    sender = Sender(db, settings)
    assert sender.send_due() == 0 and sender.relay_down
    # smtplib tries each mechanism the server offers (PLAIN, then LOGIN): all refused
    tried = len(sink.logins)
    assert tried and set(sink.logins) == {(USER, False)} and sink.received == []
    [row, other] = rows(db)
    assert row.status == other.status == OutboxStatus.PENDING
    assert row.attempts == other.attempts == 0  # the relay, not the mail, is to blame
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert f"the relay refused the login of {USER} (535 " in line
    assert "check relay_password_file" in line and "trying again in 300s" in line
    assert sender.send_due() == 0 and len(sink.logins) == tried  # not yet again
    checks = {c.name: c for c in check_settings(settings)}
    assert checks["relay"].level == "FAIL" and "refused the login" in checks["relay"].text


def test_an_untrusted_certificate_is_refused(db: Database, settings: Settings,
                                             tmp_path: Path, server: tuple[Submission, str],
                                             caplog: pytest.LogCaptureFixture) -> None:
    sink, url = server
    settings = relay_settings(settings, url, None, tmp_path)  # the system's authorities
    queue(db, settings, 1)
    sender = Sender(db, settings)
    assert sender.send_due() == 0 and sender.relay_down
    assert sink.logins == [] and rows(db)[0].attempts == 0
    assert "its certificate is not trusted" in caplog.text
    assert "set relay_ca_file" in caplog.text


def test_the_daily_limit_holds_mail_back_and_loses_none(
        db: Database, settings: Settings, tmp_path: Path, server: tuple[Submission, str],
        certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    sink, url = server
    settings = relay_settings(settings, url, certificate[0], tmp_path, daily_send_limit=3)
    queue(db, settings, 5)
    sender = Sender(db, settings)
    assert sender.send_due() == 3 and sender.send_due() == 0
    assert [r.status for r in rows(db)] == [OutboxStatus.SENT] * 3 + [OutboxStatus.PENDING] * 2
    assert all(r.attempts == 0 for r in rows(db)[3:])  # waiting is no failure
    assert len(sink.received) == 3
    assert caplog.text.count("daily_send_limit reached: 3 mails sent in the last 24 hours") == 1
    # the status says why mail waits, and waiting by design is not "not going out"
    later = utcnow() + timedelta(hours=1)
    held = status(db, later, daily_send_limit=3)
    assert held.sending == ("daily_send_limit reached: 3 mails sent in the last 24 hours; "
                            "2 wait until older ones are a day old")
    assert held.overdue == 2 and held.healthy
    assert not status(db, later).healthy  # without the limit, those two would be overdue
    # a day later, the first three no longer count
    with db.transaction() as session:
        session.execute(update(OutboxMessage).where(OutboxMessage.status == OutboxStatus.SENT)
                        .values(sent_at=utcnow() - delivery.DAY - timedelta(minutes=1)))
    assert sender.send_due() == 2 and len(sink.received) == 5
    assert all(r.status == OutboxStatus.SENT for r in rows(db))


def test_relay_settings_are_read_and_shown_without_the_password(tmp_path: Path) -> None:
    values = Settings.from_values({"relay": "submission://Club%40example.org@smtp.example.org",
                                   "relay_password": "s3cret"})
    assert values.relay == ("smtp.example.org", 587)
    assert (values.relay_scheme, values.relay_user) == ("submission", "Club@example.org")
    assert Settings.from_values({"relay": "smtps://a@b.example"}).relay == ("b.example", 465)
    from pbmserv.config import SettingsError, as_toml

    shown = as_toml(values)
    assert 'relay = "submission://Club@example.org@smtp.example.org:587"' in shown
    assert "s3cret" not in shown and 'relay_password = "***"' in shown
    # the passwords from the environment, as a service's unit would give them
    env = Settings.load(None, {"PBMSERV_CONFIG": "", "PBMSERV_IMAP_PASSWORD": "imap-pw",
                               "PBMSERV_IMAP": "imaps://club@imap.example.org/Games",
                               "PBMSERV_RELAY_PASSWORD": "smtp-pw"})
    assert (env.imap_password, env.relay_password) == ("imap-pw", "smtp-pw")
    assert env.imap is not None and (env.imap.host, env.imap.folder) == ("imap.example.org",
                                                                        "Games")
    shown = as_toml(env)
    assert "imap-pw" not in shown and "smtp-pw" not in shown
    assert 'imap = "imaps://club@imap.example.org:993/Games"' in shown
    with pytest.raises(SettingsError, match="a login needs TLS"):
        Settings.from_values({"relay": "smtp://user@host:25"})
    with pytest.raises(SettingsError, match="unknown scheme 'lmtp'"):
        Settings.from_values({"relay": "lmtp://host"})
