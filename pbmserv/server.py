"""``pbmserv serve``: the SMTP and LMTP listeners and the IMAP intake plus the work
behind them (and, with ``web``, the read-only web pages, in a process of their own).

The listeners store mail (group commit), the IMAP intake stores what it takes from the
mailbox, and both wake the workers through pipes; each
worker (pbmserv.worker) processes stored mail, runs the clock and sends the outbox.
With ``workers`` > 0 they are processes of their own, started as ``pbmserv work
--loop --wake-fd N`` (with the settings file and log options of ``serve``), niced
so that acknowledging mail comes first, and ended by the kernel if the listener
dies; with ``workers`` = 0 one runs in a thread here.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pbmserv.bot_loop import BotLoop
from pbmserv.config import Settings
from pbmserv.connections import ConnectionCap
from pbmserv.db.session import Database
from pbmserv.intake.imap import ImapIntake
from pbmserv.intake.lmtp import LmtpHandler, make_lmtp_controller
from pbmserv.intake.smtp import IntakeHandler, make_controller
from pbmserv.intake.store import Quota
from pbmserv.intake.writer import IntakeWriter
from pbmserv.worker import NICENESS, PARENT_PID, WorkLoop, wake

log = logging.getLogger(__name__)
#: how much lower the workers' CPU priority is than the listener's
WORKER_NICENESS = 5
#: the bots think only with what the rest leaves over
BOTS_NICENESS = 15
#: the least time between two starts of one child process
RESTART_EVERY = 5.0


def _pipe() -> tuple[int, int]:
    """A pipe whose write end never blocks."""
    read, write = os.pipe()
    flags = fcntl.fcntl(write, fcntl.F_GETFL)
    fcntl.fcntl(write, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    return read, write


@dataclass
class Child:
    """A process ``serve`` runs beside itself (a worker, the bots, the web pages)."""

    name: str
    argv: list[str]
    #: how much nicer than ``serve`` it runs
    niceness: int
    pass_fds: tuple[int, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0

    def start(self) -> None:
        """Start it: the child sets its niceness and its end with ours itself (see
        ``worker.become_child``); no code runs between fork and exec, which would be
        unsafe once ``serve``'s threads run (a restart by ``watch``)."""
        self.started = time.monotonic()
        env = {**os.environ, PARENT_PID: str(os.getpid()), NICENESS: str(self.niceness)}
        self.proc = subprocess.Popen(self.argv, pass_fds=self.pass_fds, env=env)

    def restart_if_ended(self) -> bool:
        """Start the process again if it ended (not more often than RESTART_EVERY)."""
        if self.proc is None or self.proc.poll() is None:
            return False
        if time.monotonic() - self.started < RESTART_EVERY:
            return False  # one that dies at once is not started in a tight loop
        log.error("the %s process (pid %s) ended with status %s; starting it again",
                  self.name, self.proc.pid, self.proc.returncode)
        self.start()
        return True


class Server:
    def __init__(self, db: Database, settings: Settings, host: str = "127.0.0.1",
                 port: int | None = 2525, *, lmtp: str | None = None, workers: int = 0,
                 interval: float = 2.0, clock_every: float = 60.0,
                 web: tuple[str, int] | None = None,
                 worker_options: Sequence[str] = (), bots: bool = True) -> None:
        """SMTP on host:port (none if ``port`` is None), LMTP on ``lmtp`` (host:port or
        a Unix socket's path) if given, the web pages on ``web`` if given;
        ``worker_options`` go before the command on the command line of the processes
        it starts (the settings file, the log options); with ``bots`` it runs the bots'
        loop too."""
        self.db = db
        self.settings = settings
        self.workers = workers
        self.web = web
        self.bots = bots
        self.bot_loop: BotLoop | None = None
        self.interval = interval
        self.clock_every = clock_every
        self.worker_options = list(worker_options)
        self.pipes: list[tuple[int, int]] = []
        self.children: list[Child] = []
        self.loop: WorkLoop | None = None
        self.thread: threading.Thread | None = None
        self.writer = IntakeWriter(db, on_stored=lambda _ids: self.wake(),
                                   quota=Quota.of(settings))
        #: the connections of the SMTP and LMTP listeners together
        self.cap = ConnectionCap.of(settings)
        #: the SMTP listener (None without SMTP); aiosmtpd's types are Any
        self.controller: Any = None if port is None else make_controller(
            IntakeHandler(self.writer, settings), host, port, settings, self.cap)
        self.lmtp_controller = None if lmtp is None else make_lmtp_controller(
            LmtpHandler(self.writer, settings), lmtp, settings, self.cap)
        self.imap = None if settings.imap is None else ImapIntake(
            db, settings, on_stored=lambda _ids: self.wake())
        self._started: list[Any] = []

    def wake(self) -> None:
        for _, write in self.pipes:
            wake(write)

    @property
    def processes(self) -> list[subprocess.Popen[bytes]]:
        return [child.proc for child in self.children if child.proc is not None]

    def _child(self, name: str, args: list[str], niceness: int,
               pass_fds: tuple[int, ...] = ()) -> None:
        child = Child(name, [sys.executable, "-m", "pbmserv", *self.worker_options, *args],
                      niceness, pass_fds)
        child.start()
        self.children.append(child)

    def watch(self) -> None:
        """Start again any process of ours that ended (killed by the OOM killer, a
        crash): mail must not wait in the store for an admin to notice."""
        for child in self.children:
            child.restart_if_ended()

    def start(self) -> None:
        """Listen first: a listener that cannot (the port taken) ends it all before any
        worker starts, sends or asks the relay anything; then the work behind."""
        for _ in range(max(self.workers, 1)):
            self.pipes.append(_pipe())
        self.writer.start()  # (mail taken before the workers start waits for them)
        try:
            for controller in (self.controller, self.lmtp_controller):
                if controller is not None:
                    controller.start()
                    self._started.append(controller)
        except BaseException:
            self.stop()
            raise
        if self.web is not None:  # the read-only web pages, in a process of their own
            self._child("web", ["web", "--host", self.web[0], "--port", str(self.web[1])],
                        WORKER_NICENESS)
        if self.workers:  # (each child execs at once: no code runs between fork and exec)
            for read, _ in self.pipes:
                self._child("worker", ["work", "--loop", "--wake-fd", str(read),
                                       "--interval", str(self.interval)],
                            WORKER_NICENESS, (read,))
            if self.bots:  # bots think in a process of their own, niced more
                self._child("bots", ["bots", "--loop", "--interval", str(self.interval)],
                            BOTS_NICENESS)
        else:
            self.loop = WorkLoop(self.db, self.settings, wake_fd=self.pipes[0][0],
                                 interval=self.interval, clock_every=self.clock_every)
            self.thread = threading.Thread(target=self.loop.run, name="worker", daemon=True)
            self.thread.start()
            if self.bots:
                self.bot_loop = BotLoop(self.db, self.settings, interval=self.interval)
                threading.Thread(target=self.bot_loop.run, name="bots", daemon=True).start()
        if self.imap is not None:
            self.imap.start()
        self.wake()  # mail stored before a restart is processed now

    def stop(self) -> None:
        for controller in self._started:
            controller.stop()
        self._started = []
        if self.imap is not None and self.imap.is_alive():
            self.imap.stop()
        self.writer.stop()
        if self.bot_loop is not None:
            self.bot_loop.stop()
        if self.loop is not None and self.thread is not None:
            self.loop.stop()
            self.wake()
            self.thread.join(timeout=30)
        for proc in self.processes:
            proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.children = []
        for read, write in self.pipes:
            os.close(read)
            os.close(write)
        self.pipes = []
