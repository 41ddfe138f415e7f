"""LMTP intake: the same store-then-acknowledge promise as SMTP, one answer per recipient,
on host:port or a Unix socket."""

from __future__ import annotations

import grp
import os
import smtplib
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.config import Settings, SettingsError
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.server import Server
from tests.conftest import free_port, make_mail, read_maildir, wait_until_settled
from tests.test_smtp import wait_for_mail


class Lmtp(smtplib.LMTP):
    def deliver(self, sender: str, recipients: list[str], data: bytes
                ) -> tuple[list[tuple[int, bytes]], list[tuple[int, bytes]]]:
        """RCPT answers and the DATA answers (one per accepted recipient)."""
        self.ehlo()
        assert self.mail(sender)[0] == 250
        rcpts = [self.rcpt(r) for r in recipients]
        code, _ = self.docmd("DATA")
        assert code == 354
        self.send(data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b".\r\n")
        return rcpts, [self.getreply() for r in rcpts if r[0] == 250]


@pytest.fixture
def two(settings: Settings) -> Settings:
    return replace(settings, addresses=("pbmserv@localhost", "games@localhost"))


@pytest.fixture
def tcp(db: Database, two: Settings) -> Iterator[tuple[Server, int]]:
    port = free_port()
    server = Server(db, two, port=None, lmtp=f"127.0.0.1:{port}", interval=0.2)
    server.start()
    yield server, port
    server.stop()


def test_lmtp_answers_each_recipient_and_stores_once(tcp: tuple[Server, int], two: Settings,
                                                     db: Database) -> None:
    server, port = tcp
    assert server.controller is None  # no SMTP listener asked for
    with Lmtp("127.0.0.1", port) as client:
        rcpts, answers = client.deliver(
            "alice@example.org", ["pbmserv@localhost", "someone@localhost", "GAMES@localhost"],
            make_mail("help", message_id="<lmtp1@example.org>"))
    assert [code for code, _ in rcpts] == [250, 550, 250]
    assert answers == [(250, b"2.0.0 Message accepted as #1")] * 2
    wait_for_mail(two, 1)
    wait_until_settled(db)  # and no second reply comes
    [reply] = read_maildir(two.maildir)
    assert reply["Subject"] == "pbmserv help"
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 1


def test_lmtp_refuses_a_mail_too_large_for_each_recipient(tcp: tuple[Server, int],
                                                          two: Settings, db: Database) -> None:
    _, port = tcp
    big = make_mail("help", ("x" * 70 + "\n") * (two.max_message_size // 70 + 10))
    with Lmtp("127.0.0.1", port) as client:
        _, answers = client.deliver("alice@example.org",
                                    ["pbmserv@localhost", "games@localhost"], big)
    assert [code for code, _ in answers] == [552, 552]
    with db.reading() as s:
        assert s.scalar(select(func.count()).select_from(InboundMessage)) == 0


def test_lmtp_defers_every_recipient_when_it_cannot_store(tcp: tuple[Server, int],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    def down(*args: object) -> None:
        raise OSError("database down")

    monkeypatch.setattr("pbmserv.intake.writer.store_batch", down)
    _, port = tcp
    with Lmtp("127.0.0.1", port) as client:
        _, answers = client.deliver("alice@example.org",
                                    ["pbmserv@localhost", "games@localhost"], make_mail("help"))
    assert [code for code, _ in answers] == [451, 451]


def test_lmtp_on_a_unix_socket_beside_smtp(db: Database, settings: Settings,
                                           tmp_path: Path) -> None:
    path = tmp_path / "run" / "lmtp.sock"
    path.parent.mkdir()
    stale = socket.socket(socket.AF_UNIX)  # left by a process that died
    stale.bind(str(path))
    stale.close()
    server = Server(db, settings, "127.0.0.1", free_port(), lmtp=str(path), interval=0.2)
    server.start()
    try:
        assert path.is_socket() and path.stat().st_mode & 0o777 == 0o660
        with Lmtp(str(path)) as client:
            _, answers = client.deliver("alice@example.org", ["pbmserv@localhost"],
                                        make_mail("signup alice pw-long-1"))
        assert answers[0][0] == 250
        with smtplib.SMTP("127.0.0.1", server.controller.port) as smtp:
            smtp.sendmail("bob@example.org", ["pbmserv@localhost"],
                          make_mail("signup bob pw-long-1", sender="bob@example.org"))
        subjects = sorted(m["Subject"] for m in wait_for_mail(settings, 2))
        assert [s.split()[:2] for s in subjects] == [["confirm", "alice"], ["confirm", "bob"]]
        second = Server(db, settings, port=None, lmtp=str(path))
        with pytest.raises(OSError, match="in use"):
            second.start()  # the socket is alive: not taken over
    finally:
        server.stop()
    assert not path.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a socket to any group")
def test_the_socket_s_group_and_mode_are_settings(db: Database, settings: Settings,
                                                  tmp_path: Path) -> None:
    """Postfix's lmtp client runs as user postfix: the socket must be its group's."""
    path = tmp_path / "lmtp.sock"
    mine = replace(settings, lmtp_socket_mode=0o620, lmtp_socket_group="nogroup")
    server = Server(db, mine, port=None, lmtp=str(path), interval=0.2)
    server.start()
    try:
        made = path.stat()
        assert made.st_gid == grp.getgrnam("nogroup").gr_gid
        assert made.st_mode & 0o777 == 0o620
    finally:
        server.stop()
    with pytest.raises(SettingsError,
                       match="lmtp_socket_group: there is no group 'no-such-group-x'"):
        Server(db, replace(settings, lmtp_socket_group="no-such-group-x"), port=None,
               lmtp=str(path), interval=0.2)
    assert not path.exists()


def test_the_socket_settings_are_read_and_checked() -> None:
    read = Settings.from_values({"lmtp_socket_mode": "0666", "lmtp_socket_group": "postfix"})
    assert (read.lmtp_socket_mode, read.lmtp_socket_group) == (0o666, "postfix")
    assert Settings.from_values({"lmtp_socket_mode": 0o640}).lmtp_socket_mode == 0o640
    assert Settings().lmtp_socket_mode == 0o660 and Settings().lmtp_socket_group is None
    with pytest.raises(SettingsError, match="'0698' is not a mode: write it in octal"):
        Settings.from_values({"lmtp_socket_mode": "0698"})
    with pytest.raises(SettingsError, match="'post fix' is not a group name"):
        Settings.from_values({"lmtp_socket_group": "post fix"})
