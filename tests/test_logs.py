"""One log line per received and per sent mail, with its Message-ID; never a Subject or a
password; a log file; journald's priorities."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from pbmserv import logs
from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.intake.store import store_message
from pbmserv.logs import JournalFormatter
from pbmserv.notifications import alert_route
from pbmserv.sender.delivery import Sender
from tests.conftest import make_mail
from tests.test_postfix import pipe_command
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


def test_no_syslog_socket_is_a_warning_never_a_deferral(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "SYSLOG_SOCKET", str(tmp_path / "no-such-log"))
    env = {"PBMSERV_DATABASE_URL": settings.database_url, "PBMSERV_MAILDIR": str(settings.maildir),
           "PBMSERV_SYSLOG": "true"}
    delivered = CliRunner().invoke(main, ["deliver", "--sender", "alice@example.org"], env=env,
                                   input=make_mail("help", message_id="<s1@example.org>"))
    assert delivered.exit_code == 0, delivered.output
    assert (f"WARNING pbmserv.logs: syslog: there is no syslog socket at "
            f"{tmp_path / 'no-such-log'} (is a syslog daemon or journald running?): "
            "logging without syslog") in delivered.output
    assert len(list((settings.maildir / "new").iterdir())) == 1  # stored and answered
    listed = CliRunner().invoke(main, ["users", "list"], env=env)
    assert listed.exit_code == 0 and "WARNING pbmserv.logs: syslog: there is no syslog socket" \
        in listed.output


def test_audit_lines_reach_syslog_without_the_syslog_setting(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log"
    monkeypatch.setattr(logs, "SYSLOG_SOCKET", str(path))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(5)
    try:
        env = {"PBMSERV_DATABASE_URL": settings.database_url}
        done = CliRunner().invoke(main, ["users", "disable", "bot2"], env=env)
        assert done.exit_code == 0 and done.output == "bot2: disabled\n"
        line = server.recv(4096).decode().rstrip("\x00")
        assert line.startswith("<22>pbmserv[")
        assert line.endswith(f"INFO pbmserv.audit: admin {logs.operator()}: users disable "
                             "bot2: disabled")
    finally:
        logs.setup_logging("info")
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root makes files for other users")
def test_root_makes_the_log_file_for_the_owner_of_its_folder(
        settings: Settings, request: pytest.FixtureRequest) -> None:
    folder = Path(tempfile.mkdtemp(prefix="pbmserv-logs-"))  # one that nobody reaches
    request.addfinalizer(lambda: shutil.rmtree(folder, ignore_errors=True))
    nobody = pwd.getpwnam("nobody")
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_LOG_FILE": str(folder / "pbmserv.log")}
    assert CliRunner().invoke(main, ["users", "disable", "bot1"], env=env).exit_code == 0
    made = (folder / "pbmserv.log").stat()
    assert (made.st_uid, made.st_gid) == (nobody.pw_uid, nobody.pw_gid)
    # one root made before: given back to the folder's owner too
    os.chown(folder / "pbmserv.log", 0, 0)
    assert CliRunner().invoke(main, ["users", "list"], env=env).exit_code == 0
    assert (folder / "pbmserv.log").stat().st_uid == nobody.pw_uid
    # the service's user: writes it (a root-made file would have stopped it)
    os.chmod(folder / "pbmserv.log", 0o640)
    ran = subprocess.run(["/bin/sh", "-c", 'echo written >> "$0"', str(folder / "pbmserv.log")],
                         user="nobody", capture_output=True, text=True, timeout=60, cwd="/")
    assert ran.returncode == 0, ran.stderr


def test_a_log_file_that_cannot_be_written_is_one_clear_line(settings: Settings,
                                                             tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_LOG_FILE": str(blocked / "pbmserv.log")}
    done = CliRunner().invoke(main, ["users", "list"], env=env)
    assert done.exit_code == 1
    user = pwd.getpwuid(os.geteuid()).pw_name
    assert done.output == (f"pbmserv: log_file: user {user} cannot write {blocked}/pbmserv.log"
                           ": File exists; run pbmserv as the service's user (runuser -u "
                           "pbmserv -- pbmserv ...), give that user the file, or set another "
                           "log_file\n")


def test_a_noisy_library_is_quieted_where_logging_is_set_up() -> None:
    """flufl.bounce logs each of its detectors that raises as an error: its level is set
    by setup_logging, with the rest of the log's setup, not by importing the module
    that reads bounces."""
    import pbmserv.bounces.reading  # noqa: F401  (reading bounces leaves the level alone)

    flufl = logging.getLogger("flufl.bounce")
    flufl.setLevel(logging.NOTSET)
    try:
        assert flufl.level == logging.NOTSET
        logs.setup_logging("info")
        assert flufl.level == logging.CRITICAL
    finally:
        flufl.setLevel(logging.NOTSET)


def test_an_alert_mail_cannot_carry_reaches_syslog_without_the_syslog_setting(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log"
    monkeypatch.setattr(logs, "SYSLOG_SOCKET", str(path))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(5)
    try:
        logs.setup_logging("warning")  # syslog = false
        alert_route.tell(settings, "pbmserv: mail is not moving", "Mail is not moving: x\n",
                         "the relay has taken no mail since 2026-11-27 10:00 UTC")
        line = server.recv(4096).decode().rstrip("\x00")
        assert line.startswith("<19>pbmserv[")  # mail.err
        assert line.endswith("ERROR pbmserv.alert: ALERT pbmserv: mail is not moving (not by "
                             "mail alone: the relay has taken no mail since 2026-11-27 10:00 "
                             "UTC): Mail is not moving: x")
    finally:
        logs.setup_logging("info")
        server.close()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None,
                    reason="runuser, as root, to be another user")
def test_the_audit_names_the_login_user_behind_runuser(
        settings: Settings, request: pytest.FixtureRequest) -> None:
    """As the docs run admin commands: 'runuser -u pbmserv -- pbmserv ...' by root,
    who logged in (the kernel's loginuid, which runuser keeps; SUDO_USER is not set)."""
    outer = Path(tempfile.mkdtemp(prefix="pbmserv-runuser-"))  # (tmp_path is root's alone)
    outer.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(outer, ignore_errors=True))
    folder = outer / "state"
    folder.mkdir()
    database = folder / "pbmserv.sqlite3"
    shutil.copy(settings.database_url.split("///", 1)[1], database)
    shutil.chown(folder, "nobody")
    shutil.chown(database, "nobody")
    command = pipe_command(outer)
    if command is None:
        pytest.skip("user nobody cannot run this Python with pbmserv")
    log = folder / "pbmserv.log"
    script = (f"echo 0 > /proc/self/loginuid && exec runuser -u nobody -- {command} "
              f"--log-file {log} users clear-bounces --all")
    env = {**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": f"sqlite:///{database}"}
    env.pop("SUDO_USER", None)
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                          timeout=120, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cleared 0 address(es): mailed again\n"
    assert log.read_text().rstrip().endswith(
        "INFO pbmserv.audit: admin root (as nobody): users clear-bounces --all: cleared 0 "
        "address(es): mailed again")
