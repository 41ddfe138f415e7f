"""One log line per received and per sent mail, with its Message-ID; never a Subject or a
password; a log file; journald's priorities."""

from __future__ import annotations

import logging
import socket
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from pbmserv import logs
from pbmserv.cli import main
from pbmserv.config import Settings, SettingsError
from pbmserv.db.session import Database
from pbmserv.intake.store import store_message
from pbmserv.logs import JournalFormatter
from pbmserv.sender.delivery import Sender
from tests.conftest import make_mail
from tests.test_send import Sink, relay  # noqa: F401  (the relay fixture)


def test_received_and_sent_lines(db: Database, settings: Settings, relay: tuple[Sink, int],  # noqa: F811
                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    raw = make_mail("signup alice secret-pw", sender="alice@example.org",
                    message_id="<m1@example.org>")
    stored = store_message(db, raw, "alice@example.org")
    store_message(db, raw, "alice@example.org")
    from pbmserv.processing import process_pending

    process_pending(db, settings)
    _, port = relay
    Sender(db, replace(settings, relay=("127.0.0.1", port))).send_due()
    lines = [r.getMessage() for r in caplog.records]
    assert f"received #{stored}: <m1@example.org> from <alice@example.org>, {len(raw)} bytes" \
        in lines
    assert "received again, not stored twice: <m1@example.org> from <alice@example.org>" in lines
    [sent] = [line for line in lines if line.startswith("sent outbox")]
    assert sent.startswith("sent outbox 1: <") and "to <alice@example.org>, relay answered 250" \
        in sent
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("pbmserv"))
    assert "secret-pw" not in ours and "Subject" not in ours
    assert "secret-pw" not in caplog.text


def test_maildir_sends_are_logged(db: Database, settings: Settings,
                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    store_message(db, make_mail("help"), "alice@example.org")
    from pbmserv.processing import process_pending

    process_pending(db, settings)
    Sender(db, settings).send_due()
    assert any(r.getMessage().endswith("to <alice@example.org>, into the Maildir")
               for r in caplog.records)


def test_log_file_and_level(settings: Settings, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "pbmserv.log"
    env = {"PBMSERV_DATABASE_URL": settings.database_url, "PBMSERV_MAILDIR": str(settings.maildir)}
    result = CliRunner().invoke(main, ["--log-file", str(log), "--log-level", "info", "deliver"],
                                env=env, input=make_mail("help", message_id="<f1@example.org>"))
    assert result.exit_code == 0
    text = log.read_text()
    assert "INFO pbmserv.intake.store: received #1: <f1@example.org>" in text
    assert "INFO pbmserv.sender.delivery: sent outbox 1:" in text


def test_journald_gets_priorities() -> None:
    record = logging.LogRecord("pbmserv.x", logging.WARNING, __file__, 1, "two\nlines", None,
                               None)
    assert JournalFormatter("%(levelname)s %(message)s").format(record) == \
        "<4>WARNING two\n<4>lines"


def test_syslog_lines_reach_the_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log"
    monkeypatch.setattr(logs, "SYSLOG_SOCKET", str(path))
    with pytest.raises(SettingsError, match="there is no syslog socket"):
        logs.setup_logging("info", syslog=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(5)
    try:
        logs.setup_logging("info", syslog=True)
        logging.getLogger("pbmserv.test").info("to syslog")
        line = server.recv(4096).decode()
        # facility mail (2) * 8 + info (6) = <22>
        assert line.startswith("<22>pbmserv[") and "INFO pbmserv.test: to syslog" in line
    finally:
        logs.setup_logging("info")
        server.close()
