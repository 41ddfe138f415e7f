"""``pbmserv serve`` run from a mailbox: it reads a real Dovecot by IMAP IDLE and
answers through an authenticated submission server (STARTTLS, a login); a SIGKILL
between fetch and commit, or between commit and marking the mail done, loses nothing
and answers nothing twice; a cut connection is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.intake.imap import CRASH_ENV, DONE_KEYWORD
from tests.conftest import make_mail, text_of
from tests.mailservers import (
    PASSWORD,
    USER,
    Dovecot,
    Submission,
    dovecot,
    start_submission,
    wait_for,
)

__all__ = ["dovecot"]  # the fixture, used by name
ADDRESS = "clubgames@games.test"
RELAY_USER, RELAY_PASSWORD = "clubgames@games.test", "smtp-app-password"
DONE = DONE_KEYWORD.encode()


class Served:
    """A settings file for ``serve`` pointed at the Dovecot and the submission server,
    the processes started with it, and what they logged."""

    def __init__(self, root: Path, server: Dovecot, relay_port: int,
                 relay_user: str = RELAY_USER, relay_password: str = RELAY_PASSWORD) -> None:
        self.root = root
        self.log = root / "serve.log"
        self.database = root / "pbmserv.sqlite3"
        (root / "imap-password").write_text(PASSWORD + "\n")
        (root / "relay-password").write_text(relay_password + "\n")
        self.config = root / "pbmserv.toml"
        self.config.write_text(f"""\
database_url = "sqlite:///{self.database}"
addresses = ["{ADDRESS}"]
smtp = "off"
imap = "imaps://{USER}@localhost:{server.imaps}/INBOX"
imap_password_file = "{root / 'imap-password'}"
imap_ca_file = "{server.cert}"
# an hour: a mail that comes within the test was seen by IDLE, not by a poll
imap_poll = 3600
relay = "submission://{relay_user}@localhost:{relay_port}"
relay_password_file = "{root / 'relay-password'}"
relay_ca_file = "{server.cert}"
""")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pbmserv", "--config", str(self.config), "serve",
             "--no-bots"], env={**environment, **env},
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        return self.proc

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def idle_count(self) -> int:
        return self.text().count("waiting with IDLE")

    def wait_idle(self, times: int = 1) -> None:
        wait_for(lambda: self.idle_count() >= times,
                 lambda: "serve never waited with IDLE:\n" + self.text())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stored(self) -> int:
        db = Database(f"sqlite:///{self.database}")
        try:
            with db.reading() as session:
                return int(session.scalar(select(func.count()).select_from(InboundMessage))
                           or 0)
        finally:
            db.dispose()


@pytest.fixture
def submission(dovecot: Dovecot) -> Iterator[tuple[Submission, int]]:
    sink = Submission(RELAY_USER, RELAY_PASSWORD)
    controller, port = start_submission(sink, dovecot.cert, dovecot.key, implicit_tls=False)
    yield sink, port
    controller.stop()


@pytest.fixture
def served(dovecot: Dovecot, submission: tuple[Submission, int],
           tmp_path: Path) -> Iterator[Served]:
    run = Served(tmp_path, dovecot, submission[1])
    yield run
    run.stop()


def command(subject: str, sender: str, n: int) -> bytes:
    return (f"Return-Path: <{sender}>\r\n".encode()
            + make_mail(subject, sender=sender, message_id=f"<imap{n}@example.org>",
                        To=ADDRESS))


def answers(sink: Submission, to: str) -> list[str]:
    """The In-Reply-To of every mail the server sent ``to``."""
    out = []
    for raw in sink.to(to):
        msg = message_from_bytes(raw, policy=policy.default)
        out.append(str(msg["In-Reply-To"] or ""))
    return out


def test_serve_reads_the_mailbox_by_idle_and_answers_by_submission(
        dovecot: Dovecot, submission: tuple[Submission, int], served: Served) -> None:
    sink, _ = submission
    served.start()
    served.wait_idle()
    dovecot.deliver(command("signup alice secret-a", "alice@example.org", 1))
    wait_for(lambda: answers(sink, "alice@example.org") == ["<imap1@example.org>"],
             lambda: "no answer to alice:\n" + served.text())
    [raw] = sink.to("alice@example.org")
    reply = message_from_bytes(raw, policy=policy.default)
    assert reply["From"] == f"pbmserv <{ADDRESS}>"
    assert "alice" in str(reply["Subject"])
    # one login for the reply, and one at the start: serve asks whether the relay takes
    # mail for the administrator (admin_address)
    assert sink.logins == [(RELAY_USER, True)] * 2
    wait_for(lambda: all(DONE in flags for flags in dovecot.messages().values()),
             lambda: f"not marked done: {dovecot.messages()}")
    # a second mail comes by the same IDLE (no poll within the hour)
    dovecot.deliver(command("signup bob secret-b", "bob@example.org", 2))
    wait_for(lambda: answers(sink, "bob@example.org") == ["<imap2@example.org>"],
             lambda: "no answer to bob:\n" + served.text())
    assert served.stored() == 2 and served.idle_count() == 1
    assert answers(sink, "alice@example.org") == ["<imap1@example.org>"]


@pytest.mark.parametrize("step", ["imap-fetched", "imap-stored"])
def test_sigkill_at_each_step_loses_nothing_and_answers_once(
        dovecot: Dovecot, submission: tuple[Submission, int], served: Served,
        step: str) -> None:
    sink, _ = submission
    proc = served.start(**{CRASH_ENV: step})
    served.wait_idle()
    dovecot.deliver(command("signup alice secret-a", "alice@example.org", 1))
    assert proc.wait(timeout=60) == -signal.SIGKILL
    # killed after the fetch: nothing stored; after the commit: stored; never marked
    assert served.stored() == (0 if step == "imap-fetched" else 1)
    [flags] = dovecot.messages().values()
    assert DONE not in flags
    served.start()
    wait_for(lambda: answers(sink, "alice@example.org") == ["<imap1@example.org>"],
             lambda: "no answer to alice after the restart:\n" + served.text())
    # a later mail, answered after the first: had the first been answered twice, the
    # second answer would have come by then
    dovecot.deliver(command("signup bob secret-b", "bob@example.org", 2))
    wait_for(lambda: answers(sink, "bob@example.org") == ["<imap2@example.org>"],
             lambda: "no answer to bob:\n" + served.text())
    served.stop()
    assert answers(sink, "alice@example.org") == ["<imap1@example.org>"]
    assert served.stored() == 2
    assert all(DONE in flags for flags in dovecot.messages().values())


def test_a_cut_connection_and_a_restarted_server_are_read_again(
        dovecot: Dovecot, submission: tuple[Submission, int], served: Served) -> None:
    sink, _ = submission
    served.start()
    served.wait_idle()
    dovecot.kick()  # the provider drops the connection
    served.wait_idle(2)
    dovecot.deliver(command("signup alice secret-a", "alice@example.org", 1))
    wait_for(lambda: answers(sink, "alice@example.org") == ["<imap1@example.org>"],
             lambda: "no answer after the cut:\n" + served.text())
    dovecot.stop()  # the IMAP server goes away for a while, and comes back
    wait_for(lambda: "IMAP clubgames@localhost/INBOX: the connection to localhost:"
             in served.text(), lambda: "no word of the lost server:\n" + served.text())
    dovecot.start()
    served.wait_idle(3)
    assert "readable again" in served.text()
    dovecot.deliver(command("signup bob secret-b", "bob@example.org", 2))
    wait_for(lambda: answers(sink, "bob@example.org") == ["<imap2@example.org>"],
             lambda: "no answer after the restart:\n" + served.text())
    assert answers(sink, "alice@example.org") == ["<imap1@example.org>"]


def mails_to(sink: Submission, to: str) -> list[EmailMessage]:
    out = []
    for raw in sink.to(to):
        msg = message_from_bytes(raw, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        out.append(msg)
    return out


def test_a_game_by_reply_through_a_mailbox_without_sub_addresses(
        dovecot: Dovecot, submission: tuple[Submission, int], served: Served) -> None:
    """The board mail's Reply-To (the plain address, the token in its name) comes
    through the submission server; the reply, delivered into the mailbox, is the move."""
    sink, _ = submission
    served.config.write_text(served.config.read_text() + "subaddressing = false\n")
    served.start()
    served.wait_idle()
    dovecot.deliver(command("signup alice secret-a", "alice@example.org", 1))
    dovecot.deliver(command("signup bob secret-b", "bob@example.org", 2))
    for n, uid in enumerate(("alice", "bob"), start=10):  # each answers the reply
        address = f"{uid}@example.org"
        wait_for(lambda address=address: bool(mails_to(sink, address)),  # type: ignore[misc]
                 lambda: "no reply to a signup:\n" + served.text())
        dovecot.deliver(command(f"Re: {mails_to(sink, address)[0]['Subject']}", address, n))
    wait_for(lambda: all(len(mails_to(sink, f"{uid}@example.org")) == 2
                         for uid in ("alice", "bob")),
             lambda: "no welcome:\n" + served.text())
    dovecot.deliver(command("honeydonuts challenge alice bob", "alice@example.org", 3))

    def board_mail() -> EmailMessage | None:
        for msg in mails_to(sink, "alice@example.org"):
            if "[b" in str(msg.get("Reply-To", "")):
                return msg
        return None

    wait_for(lambda: board_mail() is not None,
             lambda: "no board mail with a reply address:\n" + served.text())
    board = board_mail()
    assert board is not None
    name, address = parseaddr(str(board["Reply-To"]))
    assert address == ADDRESS and name.startswith("pbmserv [b")
    assert str(board["Subject"]).endswith(name.removeprefix("pbmserv "))
    reply = (b"Return-Path: <alice@example.org>\r\n"
             + make_mail(f"Re: {board['Subject']}", "a1-a2\nHave fun!\n",
                         sender="alice@example.org", message_id="<imap4@example.org>",
                         To=str(board["Reply-To"])))
    dovecot.deliver(reply)

    def played() -> list[str]:
        return [text_of(m) for m in mails_to(sink, "alice@example.org")
                if m["In-Reply-To"] == "<imap4@example.org>"]

    wait_for(lambda: bool(played()), lambda: "no answer to the reply:\n" + served.text())
    [answer] = played()
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in answer
    wait_for(lambda: any("Have fun!" in text_of(m) for m in mails_to(sink, "bob@example.org")),
             lambda: "bob was not told of the move:\n" + served.text())
