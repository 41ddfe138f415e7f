"""The web pages against a stranger, on the real Uvicorn server: request bodies capped
before they are read (413, on every address)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.web.limits import MAX_BODY
from pbmserv.web.serve import server
from tests.conftest import free_port


@pytest.fixture
def web(db: Database, settings: Settings) -> Iterator[int]:
    """The pages served by Uvicorn in a thread; their port."""
    port = free_port()
    pages = server(db, settings, "127.0.0.1", port)
    thread = threading.Thread(target=pages.run, name="web", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not pages.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the pages did not start"
        time.sleep(0.02)
    yield port
    pages.should_exit = True
    thread.join(timeout=30)


def answer_to(port: int, request: bytes, then: bytes = b"", limit: float = 10.0) -> bytes:
    """Send ``request``, then ``then`` in 1 KB pieces for as long as the server reads
    them; what the server answered (until it closes the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as sock:
        sock.sendall(request)
        for start in range(0, len(then), 1024):
            try:
                sock.sendall(then[start:start + 1024])
            except OSError:  # it answered and closed: it reads no more
                break
        got = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        return got


def test_a_body_declared_too_large_is_refused_before_it_is_read(web: int) -> None:
    """400 MB announced and not one byte sent: the answer comes at once, a 413 page,
    on the unsubscribe address (the one that reads a body) and on any other."""
    for target in (b"POST /unsubscribe/anything", b"GET /", b"PUT /players/x"):
        answer = answer_to(web, target + b" HTTP/1.1\r\nHost: x\r\n"
                                          b"Content-Length: 400000000\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 413 "), (target, answer[:200])
        assert b"Request too large" in answer and f"at most {MAX_BODY} bytes".encode() in answer


def test_a_chunked_body_is_cut_off_at_the_cap(web: int) -> None:
    """No Content-Length, the body in chunks: refused once it passes the cap, whatever
    more the sender has."""
    chunks = b"".join(b"400\r\n" + b"x" * 1024 + b"\r\n" for _ in range(2000))  # 2 MB
    answer = answer_to(web, b"POST /unsubscribe/anything HTTP/1.1\r\nHost: x\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n", then=chunks)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_a_small_body_is_still_read(web: int) -> None:
    """The one-click body itself passes (and a tag that is not ours is a 404)."""
    body = b"List-Unsubscribe=One-Click"
    answer = answer_to(web, b"POST /unsubscribe/not-a-tag HTTP/1.1\r\nHost: x\r\n"
                            b"Connection: close\r\n"
                            b"Content-Type: application/x-www-form-urlencoded\r\n"
                            + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    assert answer.startswith(b"HTTP/1.1 404 "), answer[:200]
