"""The administrator's terminal shows what a stranger wrote, and obeys none of it: every
command's output has its control characters and escape sequences written out."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

from click.testing import CliRunner, Result

from pbmserv.cli import main
from pbmserv.cli.terminal import escape_controls
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Bounce, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.intake.store import store_message

#: clear the screen, retitle the window, hide what follows, a C1 CSI, a carriage
#: return over the line, a right-to-left override
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m \x9b31m \rover \u202eevil"
OBEYED = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def cli(settings: Settings, *args: str) -> Result:
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_MAILDIR": str(settings.maildir)}
    return CliRunner().invoke(main, list(args), env=env)


def assert_shown_not_obeyed(text: str) -> None:
    for control in OBEYED:
        assert control not in text, f"{control!r} reaches the terminal: {text!r}"
    assert "\\x1b]0;pwned\\x07" in text and "\\x9b31m" in text and "\\u202eevil" in text


def hostile_mail() -> bytes:
    return (f"From: <x@example.org>\r\nTo: pbmserv@localhost\r\nSubject: {HOSTILE}\r\n"
            f"Message-ID: <hostile@example.org>\r\n\r\nhelp\r\n{HOSTILE}\r\n").encode()


def test_escape_controls_keeps_lines_and_tabs() -> None:
    assert escape_controls("a\tb\r\nc\n") == "a\tb\nc\n"
    assert escape_controls("\x00\x1b\x7f\x85\u2066") == "\\x00\\x1b\\x7f\\x85\\u2066"
    assert escape_controls("plain: é, ü, 中文") == "plain: é, ü, 中文"


def test_inbox_show_prints_a_strangers_escapes_as_text(db: Database, settings: Settings) -> None:
    stored = store_message(db, hostile_mail(), "x@example.org")
    shown = cli(settings, "inbox", "show", str(stored))
    assert shown.exit_code == 0
    assert_shown_not_obeyed(shown.output)
    assert "\nhelp\n" in shown.output


def test_outbox_and_bounces_are_escaped_too(db: Database, settings: Settings) -> None:
    """Every command prints through the same stream: the outbox's list and show, and
    a bounce's reason in ``users bounces``."""
    with db.transaction() as session:
        session.add(OutboxMessage(message_id="<o1@localhost>", to_addr="x@example.org",
                                  subject=HOSTILE[:200], body=f"body {HOSTILE}\n",
                                  last_error=HOSTILE))
        session.add(Bounce(address="x@example.org", at=utcnow(), source="dsn",
                           detail=HOSTILE))
    for args in (("outbox", "list"), ("outbox", "show", "1"), ("users", "bounces")):
        result = cli(settings, *args)
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\\x1b]0;pwned" in result.output, args


def test_a_real_terminal_gets_no_escape(db: Database, settings: Settings) -> None:
    """``pbmserv inbox show`` run on a pseudo-terminal, as an administrator runs it:
    the bytes the terminal reads hold no ESC, BEL or C1 control."""
    stored = store_message(db, hostile_mail(), "x@example.org")
    leader, follower = pty.openpty()
    env = {**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": settings.database_url}
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "inbox", "show", str(stored)],
                            stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:  # until the command ends and the terminal has nothing more to read
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    text = seen.decode("utf-8")
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    # click strips CSI sequences from what goes to a file, not from what goes to a
    # terminal: here they are shown, escaped
    assert "\\x1b]0;pwned\\x07" in text and "Subject: \\x1b[2J" in text
