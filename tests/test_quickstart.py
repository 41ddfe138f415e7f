"""The README's quick start: ``make run`` is this checkout's own server.  Whatever an
installed pbmserv on the same machine has (its settings file, PBMSERV_* variables in
the shell), ``make run`` uses only the checkout's settings, database and Maildir, and
says where they are; ``PORT`` picks the SMTP port."""

from __future__ import annotations

import os
import shutil
import signal
import smtplib
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import free_port, make_mail, read_maildir

ROOT = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")


@pytest.mark.skipif(MAKE is None, reason="make is not installed")
def test_make_run_stays_in_its_checkout(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "pbmserv").exists():
        pytest.skip("the checkout has no .venv (make run would build one)")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(ROOT / "Makefile", checkout / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    os.utime(checkout / "pyproject.toml", (0, 0))  # older than the venv: no reinstall
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    (checkout / "pbmserv.local.toml").write_text('server_name = "Local games"\n')
    # an installed server's settings, in the file and in the shell
    production = tmp_path / "production"
    production.mkdir()
    (production / "pbmserv.toml").write_text(
        f'database_url = "sqlite:///{production}/pbmserv.sqlite3"\n'
        f'maildir = "{production}/mail"\nsmtp = "127.0.0.1:{free_port()}"\n')
    port = free_port()
    env = {**os.environ, "PBMSERV_CONFIG": str(production / "pbmserv.toml"),
           "PBMSERV_DATABASE_URL": f"sqlite:///{production}/other.sqlite3",
           "PBMSERV_RELAY": f"127.0.0.1:{free_port()}", "PBMSERV_LOG_LEVEL": "info"}
    log = tmp_path / "make-run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(MAKE), "-s", "run", f"PORT={port}"], cwd=checkout,
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=lambda: os.umask(0o022))
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=5) as client:
                    client.sendmail("alice@example.org", ["pbmserv@localhost"],
                                    make_mail("signup alice pw-alice-1"))
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "make run did not listen:\n" + \
                    log.read_text()
                time.sleep(0.3)
        maildir = checkout / "var" / "mail"
        while not read_maildir(maildir):
            assert time.monotonic() < deadline, "no reply in ./var/mail:\n" + log.read_text()
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    [reply] = read_maildir(maildir)
    assert reply["Subject"].startswith("confirm alice ")  # the reply confirms the account
    assert reply["From"] == "Local games <pbmserv@localhost>"  # pbmserv.local.toml
    assert (checkout / "pbmserv.sqlite3").is_file()
    # what it writes is the owner's alone (umask 077), whatever the caller's umask was
    for made in (checkout / "pbmserv.sqlite3", maildir, *(maildir / "new").iterdir()):
        assert stat.S_IMODE(made.stat().st_mode) & 0o077 == 0, (made, oct(made.stat().st_mode))
    assert sorted(p.name for p in production.iterdir()) == ["pbmserv.toml"]  # untouched
    said = log.read_text()
    assert (f"taking mail by SMTP 127.0.0.1:{port} for pbmserv@localhost; replies go to "
            f"the Maildir {checkout.resolve()}/var/mail") in said
    assert (f"database sqlite:///pbmserv.sqlite3 ({checkout.resolve()}/pbmserv.sqlite3); "
            "settings: pbmserv.local.toml") in said
