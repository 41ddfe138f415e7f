"""The connections one process holds open to its listeners (``serve``'s SMTP and LMTP
together; the web pages in their own process), so that idle or slow strangers can
never keep a real sender out, nor use up the process's open files.

- At most ``max_connections`` are open at once, and fewer if the open-files limit
  (``LimitNOFILE``) would not leave room for the rest of the process (``RESERVE``
  files: the database, the log, pipes): the soft limit is first raised as far as the
  hard one allows.  A connection that comes at the cap makes room: the one silent the
  longest is closed (an SMTP session is told so: 421), unless it is busy (its mail
  being stored, a page being made); only when every one is busy is the newcomer turned
  away.  Idle connections, even from the address of the real MTA, thus give way to
  anyone who talks.
- Each connection is closed after ``connection_idle_seconds`` without a byte from its
  peer, and after ``connection_max_seconds`` whatever it says: a trickle of NOOPs
  keeps none for ever.
- An accept that fails (the process or the system is out of files) is logged once a
  minute with a count, never with a traceback, and can end nothing: the event loop's
  own handler logs each failure with its traceback, and a log file that cannot be
  opened then (no file left) raised out of the loop.

``ConnectionCap`` is shared by the listeners of a process (each with its own event
loop, in its own thread); ``CappedConnection`` goes before a listener's protocol class.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import threading
import time
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)
#: open files kept for the rest of the process (the database, the log, pipes)
RESERVE = 64
#: a listener's backlog (asyncio's and aiosmtpd's own): an event loop accepts up to
#: this many connections at once before any is counted, so as many files are kept free
BACKLOG = 100
#: the least cap, whatever the limit
LEAST = 2
#: seconds between two log lines about the same trouble
LOG_EVERY = 60.0
#: why a connection is closed (the SMTP listeners say it in their 421)
IDLE = "idle too long, closing the connection"
TOO_LONG = "connection open too long, closing it"
MAKE_ROOM = "too many connections, closing the one idle longest"
FULL = "too many connections, try again later"


class Summary:
    """A log line at most once every ``LOG_EVERY`` seconds, with how many times its
    trouble came since the last one.  Logging never raises out of it: with no file
    left, a log file may fail to open."""

    def __init__(self, level: int, message: str) -> None:
        self.level = level
        self.message = message
        self.count = 0
        self.last = -LOG_EVERY
        self.lock = threading.Lock()

    def note(self, *args: Any) -> None:
        with self.lock:
            self.count += 1
            now = time.monotonic()
            if now - self.last < LOG_EVERY:
                return
            count, self.count, self.last = self.count, 0, now
        with contextlib.suppress(Exception):
            log.log(self.level, self.message + " (%d time(s) since the last such line)",
                    *args, count)


def usable_connections(wanted: int) -> int:
    """The cap for ``wanted`` connections: the soft open-files limit is raised (up to the
    hard one) to make room for them, ``RESERVE`` and ``BACKLOG`` more; if it cannot be,
    fewer (half the limit at most)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + RESERVE + BACKLOG
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    cap = max(min(wanted, soft - min(RESERVE + BACKLOG, soft // 2)), LEAST)
    if cap < wanted:
        log.warning("max_connections is %d, but this process may open only %d files: at "
                    "most %d connections at once (raise LimitNOFILE in its unit)",
                    wanted, soft, cap)
    return cap


class ConnectionCap:
    """The open connections of a process's listeners, at most ``limit`` at once; each
    closed after ``idle`` seconds of silence and ``life`` seconds in all."""

    def __init__(self, limit: int, idle: float, life: float) -> None:
        self.limit = limit
        self.idle = idle
        self.life = life
        self.lock = threading.Lock()
        #: each open connection and the event loop it runs on
        self.open: dict[CappedConnection, asyncio.AbstractEventLoop] = {}
        self.made_room = Summary(logging.WARNING, "connections: at the cap of %d, the "
                                                  "connection idle longest was closed")
        self.turned_away = Summary(logging.WARNING, "connections: at the cap of %d, every "
                                                    "one busy: a new one was turned away")

    @classmethod
    def of(cls, settings: Any) -> ConnectionCap:
        """The cap the settings ask for (``max_connections``, ``connection_idle_seconds``,
        ``connection_max_seconds``), lowered to the open-files limit."""
        return cls(usable_connections(settings.max_connections),
                   settings.connection_idle_seconds, settings.connection_max_seconds)

    def opened(self, conn: CappedConnection, loop: asyncio.AbstractEventLoop) -> bool:
        """Count a new connection; at the cap the longest idle other one that is not
        busy is closed to make room.  False if none can be: turn the new one away."""
        with self.lock:
            if len(self.open) >= self.limit:
                idle = [c for c in self.open if not c.busy()]
                if not idle:
                    self.turned_away.note(self.limit)
                    return False
                oldest = min(idle, key=lambda c: c.last_active)
                where = self.open.pop(oldest)  # counted out now, closed on its own loop
                with contextlib.suppress(RuntimeError):  # its loop ended: it is closed
                    where.call_soon_threadsafe(oldest.close_with, MAKE_ROOM)
                self.made_room.note(self.limit)
            self.open[conn] = loop
            return True

    def closed(self, conn: CappedConnection) -> None:
        with self.lock:
            self.open.pop(conn, None)

    def __len__(self) -> int:
        return len(self.open)


class CappedConnection(asyncio.Protocol):
    """Goes before a listener's protocol class: its connections are counted by ``cap``
    (set on the class or on each instance before it is connected), closed when idle
    or old, and closed to make room for others.  ``farewell`` says why, if the
    protocol has a way to."""

    cap: ConnectionCap
    #: when its peer last sent something (time.monotonic)
    last_active: float = 0.0
    _started: float = 0.0
    _working: int = 0
    _turned_away: bool = False
    #: its transport (the protocol's own attribute for it varies)
    capped_transport: asyncio.BaseTransport | None = None
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.last_active = self._started = time.monotonic()
        self.capped_transport = transport
        loop = asyncio.get_running_loop()
        if not self.cap.opened(self, loop):
            self._turned_away = True
            self.farewell(FULL)
            transport.close()
            return
        super().connection_made(transport)
        self._timer = loop.call_later(min(self.cap.idle, self.cap.life), self._look)

    def data_received(self, data: bytes) -> None:
        if self._turned_away:
            return
        self.last_active = time.monotonic()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._turned_away:
            return
        self.cap.closed(self)
        if self._timer is not None:
            self._timer.cancel()
        super().connection_lost(exc)

    def busy(self) -> bool:
        """Whether it is doing work for its peer that must not be cut short."""
        return self._working > 0

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """While its peer waits on the server (a mail being stored), it is busy."""
        self._working += 1
        try:
            yield
        finally:
            self._working -= 1
            self.last_active = time.monotonic()

    def farewell(self, why: str) -> None:
        """Tell the peer why the connection closes (nothing by default)."""

    def close_with(self, why: str) -> None:
        """Say why, and close the connection (on its own event loop)."""
        transport = self.capped_transport
        if transport is None or transport.is_closing():
            return
        with contextlib.suppress(Exception):
            self.farewell(why)
        transport.close()

    def _look(self) -> None:
        """The connection's one timer: closed when silent or old, else looked at again
        when it next could be."""
        now = time.monotonic()
        silent, lived = now - self.last_active, now - self._started
        if not self.busy():
            if lived >= self.cap.life:
                self.close_with(TOO_LONG)
                return
            if silent >= self.cap.idle:
                self.close_with(IDLE)
                return
        wait = min(max(self.cap.idle - silent, 0.0), max(self.cap.life - lived, 0.0))
        self._timer = asyncio.get_running_loop().call_later(max(wait, 0.1), self._look)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Log a listener's failed accepts ("Too many open files") once a minute, without a
    traceback; everything else as the loop would, but never raising out of it."""
    summary = Summary(logging.ERROR, "cannot accept a connection: %s; the listener tries "
                                     "again each second")

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        message = str(context.get("message", ""))
        if message.startswith("socket.accept()") and isinstance(error, OSError):
            summary.note(error.strerror or type(error).__name__)
            return
        if "._start_serving(" in message:
            # the loop's retry of such an accept, run after its listener closed
            log.debug("a listener closed while its accepts waited: %s", error)
            return
        with contextlib.suppress(Exception):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
