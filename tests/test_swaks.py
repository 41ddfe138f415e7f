"""The README's walk-through, with the real swaks client against the real listener."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.server import Server
from tests.conftest import free_port, read_maildir, text_of

SWAKS = shutil.which("swaks")
pytestmark = pytest.mark.skipif(SWAKS is None,
                                reason="swaks is not installed (.ci/run installs it)")


@pytest.fixture
def port(db: Database, settings: Settings) -> Iterator[int]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    yield srv.controller.port
    srv.stop()


def swaks(port: int, sender: str, subject: str, body: str = " ", to: str = "pbmserv@localhost"
          ) -> subprocess.CompletedProcess[str]:
    assert SWAKS is not None
    return subprocess.run(
        [SWAKS, "--silent", "2", "--server", f"127.0.0.1:{port}", "--to", to, "--from", sender,
         "--header", f"Subject: {subject}", "--body", body],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_readme_walkthrough(port: int, settings: Settings) -> None:
    steps = [
        ("alice@example.org", "signup alice secret-a", " "),
        ("bob@example.org", "signup bob secret-b", " "),
        ("alice@example.org", "honeydonuts challenge alice bob", " "),
        ("alice@example.org", "honeydonuts move 101 alice secret-a a1-b1#1", "Your move, Bob."),
        ("bob@example.org", "honeydonuts move 101 bob secret-b e3-d3#2", " "),
        ("bob@example.org", "honeydonuts move 101 bob secret-b undo", "Oops, wrong line."),
        ("alice@example.org", "honeydonuts move 101 alice secret-a accept", " "),
        ("bob@example.org", "honeydonuts moves 101", " "),
        ("bob@example.org", "honeydonuts move 101 bob secret-b e3-e2#2", " "),
        ("alice@example.org", "honeydonuts resign 101 alice secret-a", "Well played."),
    ]
    for sender, subject, body in steps:
        assert swaks(port, sender, subject, body).returncode == 0
    refused = swaks(port, "x@example.org", "help", to="nobody@localhost")
    assert refused.returncode != 0 and "550" in refused.stdout + refused.stderr
    deadline = time.monotonic() + 30
    # 10 replies; 7 board mails (challenge, 2 moves, undo asked, granted, 1 move, resign)
    while len(read_maildir(settings.maildir)) < 17 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    mails = read_maildir(settings.maildir)
    subjects = sorted(m["Subject"] for m in mails)
    assert len(mails) == 17, subjects
    assert subjects.count("Honeydonuts Board 101 Game over") == 1
    assert subjects.count("Honeydonuts Board 101 Game over **") == 1
    undo = [m for m in mails if m["To"] == "alice@example.org"
            and "Oops, wrong line." in text_of(m)]
    assert len(undo) == 1 and "bob asks to take back their last move" in " ".join(
        text_of(undo[0]).split())
    assert "Honeydonuts Board 101 bob **" in subjects
    bob_board = next(m for m in mails if m["Subject"] == "Honeydonuts Board 101 bob **")
    assert "alice writes:\n  Your move, Bob." in text_of(bob_board)
    assert not any("secret" in m.as_string() for m in mails)
