"""What ``serve`` and its processes do when things are wrong at the start or the end:
a weak secret refuses the start; a listener that cannot listen ends it before any
worker starts or the relay is asked anything; the bots' loop waits out a database
that is down, quietly; a loop told to stop stops at once, and ``kill -9`` of
``serve`` leaves no process of its behind; a log file any command makes is not
readable by everyone; ``config check`` tries the listen addresses."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy.engine import make_url

from pbmserv.config import Settings
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.notifications.outbox import queue_mail
from tests.conftest import free_port


def run(*args: str, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pbmserv", *args], text=True,
                            env={**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_LOG_LEVEL": "info",
                                 **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def wait_for(what: Callable[[], bool], describe: Callable[[], str], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(describe())
        time.sleep(0.1)


class Recorder:
    """A relay that records every session opened to it."""

    def __init__(self) -> None:
        self.sessions = 0
        self.mails: list[Any] = []

    async def handle_EHLO(self, server: Any, session: Any, envelope: Any, hostname: str,
                          responses: list[str]) -> list[str]:
        self.sessions += 1
        return responses

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append(envelope)
        return "250 2.0.0 kept"


@pytest.fixture
def relay() -> Iterator[tuple[Recorder, int]]:
    recorder, port = Recorder(), free_port()
    controller = Controller(recorder, hostname="127.0.0.1", port=port)
    controller.start()
    yield recorder, port
    controller.stop()


def test_serve_refuses_to_start_with_a_secret_config_check_fails(settings: Settings) -> None:
    proc = run("serve", "--smtp", f"127.0.0.1:{free_port()}", env={
        "PBMSERV_DATABASE_URL": settings.database_url, "PBMSERV_SECRET": "short"})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.startswith("Error: not started: the setting secret is too weak to sign "
                          "move-by-reply addresses"), err


def test_serve_with_its_lmtp_port_taken_starts_no_worker_and_asks_no_relay(
        db: Database, settings: Settings, relay: tuple[Recorder, int]) -> None:
    recorder, relay_port = relay
    with db.transaction() as session:  # a mail a worker would send at once
        queue_mail(session, settings, to="alice@example.org", subject="s", body="b\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("serve", "--smtp", "off", "--lmtp", f"127.0.0.1:{port}", "--workers", "1",
                   env={"PBMSERV_DATABASE_URL": settings.database_url,
                        "PBMSERV_RELAY": f"127.0.0.1:{relay_port}"})
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert f"cannot listen on LMTP 127.0.0.1:{port}: " in err, err
    assert "working: processing" not in err  # no worker started
    assert recorder.sessions == 0 and recorder.mails == []  # the relay was not asked
    with db.reading() as session:
        (mail,) = session.query(OutboxMessage).all()
        assert (mail.status, mail.attempts) == (OutboxStatus.PENDING, 0)


class Forwarder:
    """A TCP port that carries connections on to another (PostgreSQL's): nothing
    listens on it before ``start``, as when the database's host is down."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()

    def start(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            client, _ = listener.accept()
            server = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def test_the_bots_loop_waits_out_a_database_that_is_down_quietly(pg_url: str,
                                                                 tmp_path: Path) -> None:
    url = make_url(pg_url)
    forwarder = Forwarder(url.port or 5432)
    log = tmp_path / "bots.log"
    old = os.umask(0o022)  # as a shell's: the log file's mode is pbmserv's own doing
    try:
        proc = run("--log-level", "debug", "--log-file", str(log), "bots", "--loop",
                   env={"PBMSERV_DATABASE_URL": url.set(port=forwarder.port)
                        .render_as_string(hide_password=False)})
    finally:
        os.umask(old)
    try:
        # tried three times (after 1 s, then about 2): said once at WARNING, then at DEBUG
        wait_for(lambda: log.exists() and log.read_text().count("trying again in") >= 3,
                 lambda: f"the bots did not try again: {proc.poll()} {log.read_text()}")
        assert proc.poll() is None  # it waits; it did not end (to be started again)
        lines = log.read_text().splitlines()
        tries = [line for line in lines if "trying again in" in line]
        assert " WARNING pbmserv.bot_loop: bots: " in tries[0]
        assert all(" DEBUG pbmserv.bot_loop: " in line for line in tries[1:])
        assert not [line for line in lines if " ERROR " in line]
        forwarder.start()  # the database answers again: the loop goes on
        wait_for(lambda: "bots: the database answers again" in log.read_text(),
                 lambda: "the bots did not come back: " + log.read_text(), limit=90)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert log.stat().st_mode & 0o777 == 0o640  # made by the command: not everyone's


@pytest.mark.parametrize("command", [["work", "--loop"], ["bots", "--loop"]])
def test_a_loop_told_to_stop_stops_at_once_not_after_its_interval(
        settings: Settings, tmp_path: Path, command: list[str]) -> None:
    log = tmp_path / "loop.log"
    proc = run("--log-file", str(log), *command, "--interval", "600",
               env={"PBMSERV_DATABASE_URL": settings.database_url})
    started = "working: processing" if command[0] == "work" else "bots: answering the games"
    try:
        wait_for(lambda: log.exists() and started in log.read_text(),
                 lambda: f"{command} did not start: " + (log.read_text() if log.exists()
                                                          else ""))
        time.sleep(0.5)  # (into its wait of 600 s)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)  # not 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_of_serve_leaves_no_process_of_its_behind(settings: Settings) -> None:
    proc = run("serve", "--smtp", f"127.0.0.1:{free_port()}", "--workers", "1",
               env={"PBMSERV_DATABASE_URL": settings.database_url})
    try:
        wait_for(lambda: len(_children(proc.pid)) == 2,  # the worker and the bots
                 lambda: f"serve did not start its worker and bots: {_children(proc.pid)}")
        children = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        wait_for(lambda: not any(_alive(child) for child in children),
                 lambda: f"left behind: {[c for c in children if _alive(c)]}", limit=20)
    finally:
        for child in _children(proc.pid):
            os.kill(child, signal.SIGKILL)


def test_config_check_tries_the_listen_addresses(settings: Settings) -> None:
    env = {"PBMSERV_DATABASE_URL": settings.database_url}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("config", "check", env={**env, "PBMSERV_SMTP": "192.0.2.7:2525",
                                            "PBMSERV_LMTP": f"127.0.0.1:{port}"})
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = out.splitlines()
    (smtp,) = [line for line in lines if line[5:].startswith("smtp ")]
    (lmtp,) = [line for line in lines if line[5:].startswith("lmtp ")]
    assert smtp.startswith("FAIL smtp         192.0.2.7:2525: cannot listen there: "), smtp
    assert lmtp == (f"warn lmtp         127.0.0.1:{port}: the port is in use (by a 'pbmserv "
                    "serve' that runs? else 'ss -ltnp' names who holds it)")
