"""Connections against the real listeners (SMTP, LMTP, the web pages): at most
``max_connections`` open at once, the longest idle closed to make room for a sender who
talks; silent connections closed, and every one closed at the end of its life however
many NOOPs it sends; a process whose open files run short keeps serving, and logs its
failed accepts once a minute."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import smtplib
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.connections import BACKLOG, RESERVE, quiet_accept_errors, usable_connections
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.server import Server
from pbmserv.web.serve import server as web_server
from tests.conftest import free_port, make_mail

CAP = 8


def greeted(port: int) -> socket.socket:
    """An idle SMTP or LMTP connection, once the server has greeted it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert sock.recv(1024).startswith(b"220 ")
    return sock


def closed_with(sock: socket.socket, limit: float = 10.0) -> bytes:
    """What the server said before it closed ``sock`` (waits for the close)."""
    sock.settimeout(limit)
    said = b""
    while True:
        chunk = sock.recv(1024)
        if not chunk:
            return said
        said += chunk


def still_open(sock: socket.socket) -> bool:
    """Whether ``sock`` is open with nothing said on it."""
    sock.setblocking(False)
    try:
        sock.recv(1024)  # something said, or the end of the connection
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)
    return False


@pytest.fixture
def listeners(db: Database, settings: Settings) -> Iterator[tuple[Server, int, int]]:
    """SMTP and LMTP listeners under one cap of CAP connections."""
    settings = replace(settings, max_connections=CAP)
    smtp_port, lmtp_port = free_port(), free_port()
    srv = Server(db, settings, "127.0.0.1", smtp_port, lmtp=f"127.0.0.1:{lmtp_port}",
                 interval=0.2, bots=False)
    srv.start()
    yield srv, smtp_port, lmtp_port
    srv.stop()


def test_idle_connections_give_way_to_a_sender(listeners: tuple[Server, int, int],
                                               db: Database) -> None:
    """CAP idle connections from the sender's own address, SMTP and LMTP together:
    each newcomer closes the one idle longest, and a real client is served."""
    srv, smtp_port, lmtp_port = listeners
    idle = [greeted(smtp_port if n % 2 else lmtp_port) for n in range(CAP)]
    assert len(srv.cap) == CAP
    extra = [greeted(smtp_port) for _ in range(3)]  # each closes the oldest
    for sock in idle[:3]:
        assert closed_with(sock).startswith(b"421 4.3.2 localhost too many connections, "
                                            b"closing the one idle longest")
    assert all(still_open(sock) for sock in idle[3:] + extra)
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=10) as client:
        client.sendmail("alice@example.org", ["pbmserv@localhost"], make_mail("help"))
    assert closed_with(idle[3]).startswith(b"421 4.3.2 ")
    assert len(srv.cap) <= CAP
    with db.reading() as session:
        assert session.scalar(select(func.count()).select_from(InboundMessage)) == 1
    for sock in idle + extra:
        sock.close()


@pytest.fixture
def short_lived(db: Database, settings: Settings) -> Iterator[int]:
    settings = replace(settings, connection_idle_seconds=1, connection_max_seconds=3)
    port = free_port()
    srv = Server(db, settings, "127.0.0.1", port, interval=0.2, bots=False)
    srv.start()
    yield port
    srv.stop()


def test_a_trickle_of_noops_keeps_no_session(short_lived: int) -> None:
    """A NOOP every 0.3 s keeps a session from being idle, never past its life."""
    client = smtplib.SMTP("127.0.0.1", short_lived, timeout=10)
    client.ehlo()
    started = time.monotonic()
    with pytest.raises(smtplib.SMTPServerDisconnected):
        while time.monotonic() - started < 20:
            code, said = client.noop()
            if code != 250:
                assert (code, said) == (421, b"4.4.2 localhost connection open too long, "
                                             b"closing it")
                client.noop()  # the connection is closed
            time.sleep(0.3)
    assert 3 <= time.monotonic() - started < 10


def test_a_silent_session_is_closed(short_lived: int) -> None:
    sock = greeted(short_lived)
    started = time.monotonic()
    said = closed_with(sock)
    assert said == b"421 4.4.2 localhost idle too long, closing the connection\r\n"
    assert 1 <= time.monotonic() - started < 5


@pytest.fixture
def pages(db: Database, settings: Settings) -> Iterator[int]:
    settings = replace(settings, max_connections=CAP, connection_idle_seconds=2,
                       connection_max_seconds=4)
    port = free_port()
    web = web_server(db, settings, "127.0.0.1", port)
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    yield port
    web.should_exit = True
    thread.join(timeout=30)


def test_the_pages_make_room_and_drop_a_slow_request(pages: int) -> None:
    idle = [socket.create_connection(("127.0.0.1", pages), timeout=10) for _ in range(CAP)]
    with urllib.request.urlopen(f"http://127.0.0.1:{pages}/healthz", timeout=10) as answer:
        assert answer.status == 200
    assert closed_with(idle[0]) == b""  # the one idle longest made room
    # a request whose headers trickle in, a byte every 0.3 s: closed at its life's end
    slow = socket.create_connection(("127.0.0.1", pages), timeout=10)
    started = time.monotonic()
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    cut_off = None
    for byte in request:  # until the server closes the connection
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            cut_off = time.monotonic() - started
            break
        time.sleep(0.3)
    assert cut_off is not None, "the slow request was never cut off"
    assert 4 <= cut_off < 20
    for sock in [*idle, slow]:
        sock.close()


def test_failed_accepts_are_one_line_a_minute_and_a_broken_log_ends_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    class Broken(logging.Handler):  # a log file that cannot be opened: no file left
        def emit(self, record: logging.LogRecord) -> None:
            raise OSError(24, "Too many open files")

    loop = asyncio.new_event_loop()
    broken = Broken()
    try:
        quiet_accept_errors(loop)
        context = {"message": "socket.accept() out of system resource",
                   "exception": OSError(24, "Too many open files")}
        with caplog.at_level(logging.ERROR, "pbmserv.connections"):
            for _ in range(500):
                loop.call_exception_handler(context)
        lines = [r for r in caplog.records if r.name == "pbmserv.connections"]
        assert [r.getMessage() for r in lines] == [
            "cannot accept a connection: Too many open files; the listener tries again "
            "each second (1 time(s) since the last such line)"]
        assert lines[0].exc_info is None
        # the loop's retry of such an accept, after its listener closed: no traceback
        with caplog.at_level(logging.DEBUG, "asyncio"):
            loop.call_exception_handler({
                "message": "Exception in callback BaseSelectorEventLoop._start_serving(...)",
                "exception": ValueError("Invalid file descriptor: -1")})
        assert not [r for r in caplog.records if r.name == "asyncio"]
        logging.getLogger().addHandler(broken)
        for _ in range(3):  # neither kind of trouble raises out of the loop's handler
            loop.call_exception_handler(context)
            loop.call_exception_handler({"message": "something else",
                                         "exception": ValueError("x")})
    finally:
        logging.getLogger().removeHandler(broken)
        loop.close()


def test_the_cap_stays_below_the_open_files_limit() -> None:
    assert usable_connections(100) == 100  # this process may open 264 files
    script = ("import resource; from pbmserv.connections import usable_connections; "
              "resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)); "
              "print(usable_connections(500))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "64\n" and "raise LimitNOFILE" in done.stderr


@pytest.mark.parametrize("unit", ["pbmserv.service", "pbmserv-web.service"])
def test_the_units_leave_room_for_the_connections(unit: str) -> None:
    text = (Path(__file__).resolve().parent.parent / "deploy" / unit).read_text()
    found = re.search(r"^LimitNOFILE=(\d+)$", text, re.MULTILINE)
    assert found is not None
    assert int(found.group(1)) >= Settings().max_connections + RESERVE + BACKLOG


def listening(port: int) -> bool:
    """Whether an SMTP server greets on ``port`` (OSError if none listens)."""
    with greeted(port):
        return True


def wait_for(check: Callable[[], bool], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_process_short_of_files_serves_on(tmp_path: Path, db_url: str) -> None:
    """``pbmserv serve`` and its web pages with 256 open files at most and a log file
    (as the attack found them: 1,100 connections kept Postfix out and ended the web
    process): 600 idle connections to each, then a real mail and a real page."""
    smtp_port, web_port = free_port(), free_port()
    log_file = tmp_path / "pbmserv.log"
    env = {**os.environ, "PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": db_url,
           "PBMSERV_MAILDIR": str(tmp_path / "mail"), "PBMSERV_LOG_FILE": str(log_file),
           "PBMSERV_MAX_CONNECTIONS": "1000", "PBMSERV_WORKERS": "0"}

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "serve", "--smtp",
                             f"127.0.0.1:{smtp_port}", "--web", f"127.0.0.1:{web_port}",
                             "--no-bots"], env=env, preexec_fn=few_files,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    idle: list[socket.socket] = []
    try:
        wait_for(lambda: listening(smtp_port))
        wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{web_port}/healthz",
                                                timeout=5).status == 200)
        for port in (smtp_port, web_port):
            for _ in range(600):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as client:
            client.sendmail("alice@example.org", ["pbmserv@localhost"], make_mail("help"))
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/healthz",
                                    timeout=30) as answer:
            assert answer.status == 200
        assert proc.poll() is None
    finally:
        for sock in idle:
            sock.close()
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    text = log_file.read_text()
    assert "Traceback" not in text and "Traceback" not in err.decode()
    assert "at most 128 connections at once (raise LimitNOFILE in its unit)" in text
    # a burst of accepts may still run out of files before the cap closes the oldest:
    # the listener tries again, and it is one line a minute (here: at most one each)
    assert text.count("cannot accept a connection") <= 2
    assert "the process (pid" not in text  # the web process never ended
