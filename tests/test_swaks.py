"""The README's walk-through, with the real swaks client against the real listener."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.server import Server
from tests.conftest import Mailer, free_port, read_maildir, text_of, wait_until_settled

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


def test_readme_walkthrough(port: int, settings: Settings, db: Database) -> None:
    for sender, subject in (("alice@example.org", "signup alice secret-a"),
                            ("bob@example.org", "signup bob secret-b")):
        assert swaks(port, sender, subject).returncode == 0
    deadline = time.monotonic() + 30
    while len(read_maildir(settings.maildir)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    # each answers the reply to the signup, its Subject as it is: "confirm alice CODE"
    for mail in read_maildir(settings.maildir):
        assert mail["Subject"].startswith("confirm ")
        assert swaks(port, mail["To"], f"Re: {mail['Subject']}").returncode == 0
    steps = [
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
    # every mail was stored before swaks ended: once all are answered and sent, no more
    # comes; 12 replies, 7 board mails (challenge, 2 moves, undo asked, granted, 1 move,
    # resign)
    wait_until_settled(db)
    mails = read_maildir(settings.maildir)
    subjects = sorted(m["Subject"] for m in mails)
    assert len(mails) == 19, subjects
    assert subjects.count("Honey Donuts Board 101 Game over") == 1
    assert subjects.count("Honey Donuts Board 101 Game over **") == 1
    undo = [m for m in mails if m["To"] == "alice@example.org"
            and "Oops, wrong line." in text_of(m)]
    assert len(undo) == 1 and "bob asks to take back their last move" in " ".join(
        text_of(undo[0]).split())
    assert "Honey Donuts Board 101 bob **" in subjects
    bob_board = next(m for m in mails if m["Subject"] == "Honey Donuts Board 101 bob **")
    assert "alice writes:\n  Your move, Bob." in text_of(bob_board)
    assert not any("secret" in m.as_string() for m in mails)


def readme_walkthrough() -> str:
    """The shell lines of the README's walk-through, as a reader copies them."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A game by mail, with swaks", 1)[1].split("\n## ", 1)[0]
    block = section.split("\n\n    mail() {", 1)[1].split("\n\nEvery mail gets", 1)[0]
    return "    mail() {" + block


def test_the_readme_walkthrough_on_a_server_that_is_not_new(db: Database, tmp_path: Path,
                                                          settings: Settings) -> None:
    """Run the README's lines with bash, on a database where alice and bob are taken and
    board 101 is someone else's: with two other userids and the number the new board's
    Subject gives, every step works."""
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob", "carol")
    mailer.reply("honeydonuts challenge alice carol")
    maildir = tmp_path / "var" / "mail"
    served = Settings(database_url=settings.database_url, maildir=maildir)
    srv = Server(db, served, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    try:
        script = readme_walkthrough()
        assert "A=alice B=bob" in script and "N=101" in script
        script = script.replace("127.0.0.1:2525", f"127.0.0.1:{srv.controller.port}")
        script = script.replace("A=alice B=bob", "A=ann B=ben")
        # the reader reads the number off the last such Subject once the mail is there
        script = script.replace("N=101", (
            'until N=$(grep -h "^Subject: New Honey Donuts Board [0-9]* ann$" '
            'var/mail/new/* 2>/dev/null | tail -1 | cut -d" " -f6) && [ -n "$N" ]; '
            "do sleep 0.2; done"))
        script = script.replace("ls var/mail/new && cat var/mail/new/* | less", "echo $N")
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == "102"
        wait_until_settled(db)  # every mail the lines sent is answered: no more comes
    finally:
        srv.stop()
    mails = read_maildir(maildir)
    assert not any("ERROR" in text_of(m) for m in mails), [
        text_of(m) for m in mails if "ERROR" in text_of(m)]
    over = [m for m in mails if m["Subject"] == "Honey Donuts Board 102 Game over **"]
    assert over and "Game won by ben (Blue): ann resigned." in text_of(over[0])
