"""SIGKILL the server while mail is arriving: every acknowledged mail is answered once."""

from __future__ import annotations

import os
import signal
import smtplib
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from pbmserv.config import Settings
from pbmserv.db.session import Database
from tests.conftest import free_port, make_mail, read_maildir, wait_until_settled


def start_server(settings: Settings, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PBMSERV_DATABASE_URL=settings.database_url,
               PBMSERV_MAILDIR=str(settings.maildir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbmserv", "serve", "--port", str(port)],
        env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=2) as s:
                s.noop()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("server did not start: " + log.read_text())


def test_sigkill_loses_no_acknowledged_mail(settings: Settings, tmp_path: Path) -> None:
    sigkill_under_load(settings, tmp_path)


@pytest.mark.postgres
def test_sigkill_loses_no_acknowledged_mail_on_postgres(pg_url: str, tmp_path: Path) -> None:
    sigkill_under_load(Settings(database_url=pg_url, maildir=tmp_path / "mail"), tmp_path)


def sigkill_under_load(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    proc = start_server(settings, port, log)
    acked: list[str] = []
    sent: list[str] = []
    stop = threading.Event()

    def client() -> None:
        n = 0
        while not stop.is_set() and n < 400:
            n += 1
            mid = f"<crash{n}@example.org>"
            sent.append(mid)
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=5) as s:
                    s.sendmail(f"u{n}@example.org", ["pbmserv@localhost"],
                               make_mail(f"signup u{n} pw-long-1", sender=f"u{n}@example.org",
                                         message_id=mid))
                acked.append(mid)
            except (OSError, smtplib.SMTPException):
                time.sleep(0.02)

    thread = threading.Thread(target=client)
    thread.start()
    while len(acked) < 40:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.3)
    stop.set()
    thread.join()
    proc = start_server(settings, port, log)
    db = Database(settings.database_url)
    try:
        # once every stored mail is processed and none waits to be sent, no more mail
        # comes: a duplicate (a mail the killed sender wrote but could not mark sent is
        # sent again when its lease ends, 30 s on) is in the Maildir by then
        wait_until_settled(db, limit=150)
        replies = Counter(m["In-Reply-To"] for m in read_maildir(settings.maildir))
    finally:
        db.dispose()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert len(acked) >= 40
    missing = [(mid, replies[mid]) for mid in acked if replies[mid] != 1]
    assert not missing, f"acknowledged but not answered exactly once: {missing[:5]}"
    assert all(count == 1 for count in replies.values())
    assert set(replies) <= set(sent)
