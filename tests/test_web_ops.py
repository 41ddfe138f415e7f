"""The web pages as a service: one line and a 503 while the database is down (never a
traceback), /healthz, and Prometheus's /metrics read from the database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update
from starlette.testclient import TestClient

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.sender.delivery import Sender
from pbmserv.web import create_app
from tests.conftest import Mailer, free_port


def fetch(url: str) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, \
                answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, \
            error.read().decode()


@pytest.fixture
def web_on_a_dead_database(tmp_path: object) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``pbmserv web`` whose PostgreSQL does not answer (nothing listens on its port)."""
    pytest.importorskip("psycopg")
    dead = f"postgresql+psycopg://pbmserv@127.0.0.1:{free_port()}/pbmserv"
    http = free_port()
    env = {**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": dead,
           "PBMSERV_LOG_LEVEL": "info"}
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "web", "--port", str(http)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                fetch(f"http://127.0.0.1:{http}/healthz")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, \
                    "pbmserv web did not start"
                time.sleep(0.2)
        yield http, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


def test_a_database_that_is_down_is_a_503_and_one_line(
        web_on_a_dead_database: tuple[int, subprocess.Popen[str]]) -> None:
    http, proc = web_on_a_dead_database
    status, headers, body = fetch(f"http://127.0.0.1:{http}/players/alice")
    assert status == 503 and headers["retry-after"] == "60"
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert "<h1>Not available just now</h1>" in body
    assert "The games&#39; database does not answer just now. Try again in a minute." in body
    health = fetch(f"http://127.0.0.1:{http}/healthz")
    assert health[0] == 503
    assert health[2] == ("cannot reach the database server: is PostgreSQL running (systemctl "
                         "status postgresql), and are host and port in database_url right?\n")
    metrics = fetch(f"http://127.0.0.1:{http}/metrics")
    assert metrics[0] == 200 and "pbmserv_database_up 0.0" in metrics[2]
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "GET /players/alice" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "WARNING pbmserv.web: web: GET /players/alice: cannot reach the database server: is "
        "PostgreSQL running (systemctl status postgresql), and are host and port in "
        "database_url right?")
    assert "the database does not answer (cannot reach the database server" in err


def metric_values(text: str) -> dict[str, float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[sample.name + (f"{{{labels}}}" if labels else "")] = sample.value
    return out


def test_healthz_and_metrics_read_the_database(mailer: Mailer, db: Database,
                                               settings: Settings) -> None:
    for uid in ("alice", "bob", "carol"):  # three mails in, three replies out
        mailer.reply("help", sender=f"{uid}@example.org")
    with db.transaction() as s:
        s.execute(update(InboundMessage).where(InboundMessage.id == 3)
                  .values(status=InboundStatus.FAILED))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == 1)
                  .values(status=OutboxStatus.SENT))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == 2)
                  .values(status=OutboxStatus.FAILED))
        s.execute(update(OutboxMessage).where(OutboxMessage.id == 3)
                  .values(created_at=utcnow() - timedelta(minutes=10),
                          next_attempt_at=utcnow() + timedelta(hours=1)))
    with TestClient(create_app(db, settings)) as client:
        health = client.get("/healthz")
        # a mail that waits longer than health_mail_age (backed off for an hour) needs a
        # look: unhealthy, with the reason
        assert health.status_code == 503
        assert health.text.startswith("outgoing mail waits: 1 mail(s) made more than 300 s "
                                      "ago (health_mail_age) not sent yet, the oldest since ")
        answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    values = metric_values(answer.text)
    assert values['pbmserv_inbox_messages{status="done"}'] == 2
    assert values['pbmserv_inbox_messages{status="failed"}'] == 1
    assert values['pbmserv_inbox_messages{status="new"}'] == 0
    assert values['pbmserv_outbox_messages{status="sent"}'] == 1
    assert values['pbmserv_outbox_messages{status="failed"}'] == 1
    assert values['pbmserv_outbox_messages{status="pending"}'] == 1
    assert values['pbmserv_outbox_messages{status="discarded"}'] == 0
    assert values["pbmserv_outbox_due_messages"] == 0  # backed off for an hour
    assert 600 <= values["pbmserv_outbox_oldest_pending_seconds"] < 3600
    assert values["pbmserv_inbox_oldest_waiting_seconds"] == 0
    assert values["pbmserv_mails_received_total"] == 3
    assert values["pbmserv_mails_queued_total"] == 3
    assert values["pbmserv_database_up"] == 1


def test_healthz_says_when_the_schema_is_behind(tmp_path: object, settings: Settings) -> None:
    old = Database(f"sqlite:///{tmp_path}/old.sqlite3")
    try:
        migrate.upgrade(old, "0005")
        with TestClient(create_app(old, settings)) as client:
            health = client.get("/healthz")
        assert health.status_code == 503
        assert health.text == (f"the database schema is at revision 0005, older than this "
                               f"pbmserv's {migrate.head()}: run 'pbmserv db upgrade'\n")
    finally:
        old.dispose()


def test_healthz_is_503_through_a_relay_outage(mailer: Mailer, db: Database,
                                              settings: Settings) -> None:
    """A relay that does not answer, with mail to send: unhealthy once the mail has
    waited health_mail_age (five minutes), whatever the relay's own standing says."""
    dead = free_port()
    settings = replace(settings, relay=("127.0.0.1", dead))
    mailer.settings = settings
    mailer.reply("help")
    assert Sender(db, settings).send_due() == 0  # nothing listens there
    with TestClient(create_app(db, settings)) as client:
        assert client.get("/healthz").status_code == 200  # just queued
    with db.transaction() as s:  # eighteen minutes on
        s.execute(update(OutboxMessage).values(created_at=utcnow() - timedelta(minutes=18)))
    with TestClient(create_app(db, settings)) as client:
        health = client.get("/healthz")
    assert health.status_code == 503
    assert "outgoing mail waits: 1 mail(s) made more than 300 s ago" in health.text
    assert "a last error: " in health.text
    status = CliRunner().invoke(main, ["status"], env={
        "PBMSERV_DATABASE_URL": settings.database_url, "PBMSERV_CONFIG": "",
        "PBMSERV_RELAY": f"127.0.0.1:{dead}"})
    assert status.exit_code == 1
    assert "problem  outgoing mail waits: 1 mail(s)" in status.output
