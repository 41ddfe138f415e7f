"""The command line: rules tools and the stdin intake."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from pbmserv.cli import EX_TEMPFAIL, EX_UNAVAILABLE, main
from pbmserv.config import Settings
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from tests.conftest import Mailer, make_mail, read_maildir


def run(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def test_rules_moves_prints_the_twelve_first_moves() -> None:
    result = run("rules", "moves", "honeydonuts")
    assert result.exit_code == 0
    assert len(result.output.split()) == 12 and "a1-a2" in result.output.split()


def test_a_reader_that_goes_away_is_no_error() -> None:
    # 'pbmserv rules moves amoeba | head -1': the pipe closes after the first line
    proc = subprocess.run(
        f"{shlex.quote(sys.executable)} -m pbmserv rules moves amoeba | head -1",
        shell=True, capture_output=True, text=True, check=False, timeout=60)
    assert proc.stdout == "b1-c3\n" and proc.stderr == ""


def test_rules_perft_and_after_and_options() -> None:
    # the figures of test_honeydonuts.test_perft, counted there by a reference too
    assert run("rules", "perft", "honeydonuts", "2").output.strip() == "144"
    assert run("rules", "perft", "honeydonuts", "4", "-o", "-simple").output.strip() == "22632"
    # several options in one -o, or one -o each: the same (amoeba depth 1 counted by hand)
    assert run("rules", "perft", "amoeba", "1", "-o", "-small -single -promote -opponent"
               ).output.strip() == "189"
    assert run("rules", "perft", "amoeba", "1", "-o", "-small", "-o", "-single", "-o",
               "-promote", "-o", "-opponent").output.strip() == "189"
    after = run("rules", "moves", "honeydonuts", "--after", "a1-b1 c5-d4 b1-c2")
    assert after.exit_code == 0 and after.output == ""  # game over: no moves
    assert run("rules", "perft", "honeydonuts", "1", "--after", "a1-b1 c5-d4 b1-c2"
               ).output.strip() == "0"


def test_rules_show_and_errors() -> None:
    shown = run("rules", "show", "honeydonuts", "--after", "a1-a2")
    assert "a  r   r   R  a" in shown.output and "Blue to move." in shown.output
    bad = run("rules", "moves", "honeydonuts", "--after", "b2-a2")
    assert bad.exit_code == 1 and "your own King" in bad.output
    assert run("rules", "moves", "chess").exit_code == 2
    assert "unknown option '-x'" in run("rules", "moves", "honeydonuts", "-o", "-x").output


def env_for(settings: Settings) -> dict[str, str]:
    return {"PBMSERV_DATABASE_URL": settings.database_url,
            "PBMSERV_MAILDIR": str(settings.maildir)}


def test_deliver_stores_processes_and_replies(settings: Settings, db: Database) -> None:
    result = run("deliver", "--sender", "alice@example.org", env=env_for(settings),
                 stdin=make_mail("signup alice pw-alice"))
    assert result.exit_code == 0, result.output
    [reply] = read_maildir(settings.maildir)
    assert reply["Subject"].startswith("confirm alice ")
    again = run("deliver", env=env_for(settings), stdin=make_mail("help", message_id="<a@b>"))
    twice = run("deliver", env=env_for(settings), stdin=make_mail("help", message_id="<a@b>"))
    assert again.exit_code == twice.exit_code == 0
    assert len(read_maildir(settings.maildir)) == 2


def test_deliver_with_null_sender_is_not_answered(settings: Settings, db: Database) -> None:
    result = run("deliver", "--sender", "", env=env_for(settings), stdin=make_mail("help"))
    assert result.exit_code == 0
    assert read_maildir(settings.maildir) == []
    with db.transaction() as s:
        assert s.scalar(select(InboundMessage.error)) == (
            "bounce not counted: it came to no bounce address and names no Message-ID of a "
            "mail we sent")


def test_deliver_on_a_new_database_creates_it(tmp_path: Path) -> None:
    env = {"PBMSERV_DATABASE_URL": f"sqlite:///{tmp_path / 'new.sqlite3'}",
           "PBMSERV_MAILDIR": str(tmp_path / "mail")}
    assert run("deliver", env=env, stdin=make_mail("help")).exit_code == 0
    assert len(read_maildir(tmp_path / "mail")) == 1


def test_deliver_tempfails_when_it_cannot_store(tmp_path: Path) -> None:
    env = {"PBMSERV_DATABASE_URL": "sqlite:////dev/null/cannot/pbmserv.sqlite3"}
    result = run("deliver", env=env, stdin=make_mail("help"))
    assert result.exit_code == EX_TEMPFAIL


def test_deliver_refuses_oversized(settings: Settings, db: Database) -> None:
    big = make_mail("help", "x\n" * settings.max_message_size)
    assert run("deliver", env=env_for(settings), stdin=big).exit_code == EX_UNAVAILABLE
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 0


def test_admin_listings(settings: Settings, mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    out = run("boards", "list", env=env_for(settings)).output
    assert "honeydonuts 101  alice vs bob  [0 moves] It is alice's turn (Red), move 1." in out
    assert "alice" in run("users", "list", env=env_for(settings)).output
    assert "done" in run("inbox", "list", env=env_for(settings)).output
    assert "New Honey Donuts Board 101" in run("outbox", "list", env=env_for(settings)).output


@pytest.mark.parametrize("command", [("db", "upgrade"), ("work",)])
def test_admin_commands_run(settings: Settings, command: tuple[str, ...]) -> None:
    result = run(*command, env=env_for(settings))
    assert result.exit_code == 0, result.output
