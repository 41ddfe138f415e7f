"""Doorbells: one process of pbmserv waking another the moment there is work for it.

A doorbell is a Unix datagram socket in Linux's abstract namespace, named after the
database and the job (``bots``: a board waits for a bot; ``worker``: mail waits to be
sent).  The process that does the job listens on it; any process that makes work for
it rings, with one datagram that never blocks and is lost harmlessly when nobody
listens.  Nothing depends on a ring arriving: each listener still looks for work every
few seconds, so a lost ring (another host, another network namespace) only delays.

A ring that must wait for a commit is *requested* inside the transaction and rung by
``ring_requested`` once the transaction has committed (``Database.transaction`` calls
it): the listener must find the work when it looks.  Requests live per thread, so one
thread's commit never rings for another's work in flight.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import threading
from collections.abc import Iterable

BOTS = "bots"
WORKER = "worker"

_requested = threading.local()


def readable(fds: Iterable[int], timeout: float) -> set[int]:
    """Which of ``fds`` have something to read within ``timeout`` seconds (poll(2):
    a descriptor of any number; select(2) takes none above 1023, and a server with many
    connections open has them)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(timeout * 1000)}


def address(database_url: str, job: str) -> bytes:
    """The doorbell's name: the same for every process of one database on this host."""
    digest = hashlib.sha256(database_url.encode("utf-8")).hexdigest()[:24]
    return f"\0pbmserv-{job}-{digest}".encode()


def ring(database_url: str, job: str) -> None:
    """Wake whoever listens for ``job`` (nobody: nothing happens)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.setblocking(False)
        s.sendto(b"!", address(database_url, job))


def request(job: str) -> None:
    """Ring for ``job`` when this thread's transaction commits."""
    pending: set[str] | None = getattr(_requested, "jobs", None)
    if pending is None:
        pending = _requested.jobs = set()
    pending.add(job)


def ring_requested(database_url: str) -> None:
    """Ring every doorbell this thread's transaction asked for (it has committed)."""
    pending: set[str] | None = getattr(_requested, "jobs", None)
    if pending:
        jobs = sorted(pending)
        pending.clear()
        for job in jobs:
            ring(database_url, job)


def forget_requested() -> None:
    """The transaction rolled back: its requests go with it."""
    pending: set[str] | None = getattr(_requested, "jobs", None)
    if pending:
        pending.clear()


class Doorbell:
    """The listening end of one doorbell; ``None`` as ``fileno`` when another process
    listens already (then this one looks for work by its interval alone)."""

    def __init__(self, database_url: str, job: str) -> None:
        self.job = job
        self._socket: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(address(database_url, job))
            self._socket.setblocking(False)
        except OSError:  # in use (another listener), or no abstract namespace here
            self._socket.close()
            self._socket = None

    @property
    def listening(self) -> bool:
        return self._socket is not None

    def fileno(self) -> int | None:
        return None if self._socket is None else self._socket.fileno()

    def drain(self) -> int:
        """Take every ring waiting; returns how many there were."""
        count = 0
        while self._socket is not None:
            try:
                self._socket.recv(64)
            except (BlockingIOError, InterruptedError):
                break
            count += 1
        return count

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class Stop:
    """A loop's stop, which wakes its wait at once: set from a signal handler (no lock
    is taken: a handler may run while the loop holds one) or from another thread; a
    wait polls its pipe beside the loop's own descriptors.  A loop asked to stop
    while waiting a long interval (SIGTERM, or its parent ``serve`` killed: the kernel
    sends it SIGTERM) ends now, not when the interval is over."""

    def __init__(self) -> None:
        self._set = False
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)

    def set(self) -> None:
        self._set = True
        with contextlib.suppress(OSError):  # full: it is set already; closed: gone
            os.write(self._write, b"!")

    def is_set(self) -> bool:
        return self._set

    def fileno(self) -> int:
        return self._read

    def wait(self, timeout: float) -> bool:
        """Wait ``timeout`` seconds or until set; returns whether it is set."""
        if not self._set:
            readable([self._read], timeout)
        return self._set

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
