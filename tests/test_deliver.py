"""The pipe intake never bounces a mail it could take later: any settings, database or
storage problem exits 75 (the MTA keeps the mail); only a mail too large exits 69."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import func, select, text

from pbmserv.cli import EX_TEMPFAIL, main
from pbmserv.config import Settings
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from tests.conftest import free_port, make_mail, read_maildir


def deliver(*args: str, env: dict[str, str] | None = None, mail: bytes | None = None) -> Result:
    return CliRunner().invoke(main, [*args, "deliver", "--sender", "alice@example.org"],
                              env=env, input=mail or make_mail("help"))


def env_for(settings: Settings) -> dict[str, str]:
    return {"PBMSERV_DATABASE_URL": settings.database_url,
            "PBMSERV_MAILDIR": str(settings.maildir)}


@pytest.mark.parametrize("problem", [
    ("--config", "/nonexistent/pbmserv.toml"),
    ("--log-file", "/proc/no/such/dir/pbmserv.log"),
])
def test_settings_problems_keep_the_mail(problem: tuple[str, str]) -> None:
    result = deliver(*problem)
    assert result.exit_code == EX_TEMPFAIL
    assert result.output.startswith("pbmserv: ") and "tried again" in result.output
    assert "Traceback" not in result.output


def test_bad_settings_file_keeps_the_mail(tmp_path: Path) -> None:
    path = tmp_path / "pbmserv.toml"
    path.write_text('server_name = "Example PBeM server"\nrelay = "nowhere"\n')
    result = deliver("--config", str(path))
    assert result.exit_code == EX_TEMPFAIL and "relay (PBMSERV_RELAY)" in result.output


def test_a_database_that_is_down_keeps_the_mail() -> None:
    down = {"PBMSERV_DATABASE_URL": f"postgresql+psycopg://pb@127.0.0.1:{free_port()}/pb"}
    result = deliver(env=down)
    assert result.exit_code == EX_TEMPFAIL
    assert "could not store the message: cannot reach the database server" in result.output


@pytest.mark.parametrize("argv", [
    ["deliver", "--bogus"],
    ["--confg", "/etc/pbmserv/pbmserv.toml", "deliver"],  # a misspelt option of the group
    ["--log-level", "verbose", "deliver"],  # a bad value
    ["delivr", "--sender", "alice@example.org"],  # a misspelt command
])
def test_a_wrong_command_line_keeps_the_mail(argv: list[str]) -> None:
    result = CliRunner().invoke(main, argv, input=make_mail("help"))
    assert result.exit_code == EX_TEMPFAIL


def test_a_wrong_command_line_elsewhere_is_a_usage_error() -> None:
    assert CliRunner().invoke(main, ["--confg", "x", "status"]).exit_code == 2
    assert CliRunner().invoke(main, ["stauts"]).exit_code == 2


def test_a_schema_newer_than_the_code_stores_but_does_not_process(settings: Settings,
                                                                   db: Database) -> None:
    with db.transaction() as s:
        s.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    result = deliver(env=env_for(settings))
    assert result.exit_code == 0
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 1
    assert read_maildir(settings.maildir) == []


def test_the_exit_status_survives_a_reader_that_went_away(settings: Settings,
                                                         tmp_path: Path) -> None:
    """Postfix stops reading a command's output after a while: Python would then exit
    120 (a bounce) where it meant 0."""
    env = {**env_for(settings), "PBMSERV_LOG_LEVEL": "debug", "PBMSERV_CONFIG": ""}
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "deliver"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    proc.stdout.close()
    proc.stderr.close()
    proc.stdin.write(make_mail("help"))
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert len(read_maildir(settings.maildir)) == 1


def test_the_mta_logs_what_was_stored(settings: Settings) -> None:
    """Postfix puts the command's output in its log line: the mail's number and id."""
    env = {**env_for(settings), "PBMSERV_LOG_LEVEL": "info"}
    result = deliver(env=env, mail=make_mail("help", message_id="<seen@example.org>"))
    assert result.exit_code == 0
    assert result.output.startswith("pbmserv: received #1: <seen@example.org> from "
                                    "<alice@example.org>, ")


def test_a_full_disk_keeps_the_mail(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    def full(*args: object) -> None:
        raise OperationalError("INSERT ...", {}, sqlite3.OperationalError(
            "database or disk is full"))

    monkeypatch.setattr("pbmserv.cli.mail.store_message", full)
    monkeypatch.setattr("pbmserv.cli.mail.migrate.ensure", lambda db: None)
    result = deliver(env=env_for(settings))
    assert result.exit_code == EX_TEMPFAIL
    assert "the disk that holds the database is full" in result.output
