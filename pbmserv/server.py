"""``pbmserv serve``: the SMTP listener plus the work behind it (and, with ``web``,
the read-only web pages, in a process of their own).

The listener stores mail (group commit) and wakes the workers through pipes; each
worker (pbmserv.worker) processes stored mail, runs the clock and sends the outbox.
With ``workers`` > 0 they are processes of their own, started as ``pbmserv work
--loop --wake-fd N``, niced so that acknowledging mail comes first, and ended by the
kernel if the listener dies; with ``workers`` = 0 one runs in a thread here.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import threading

from pbmserv.bot_loop import BotLoop
from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.intake.smtp import IntakeHandler, make_controller
from pbmserv.intake.writer import IntakeWriter
from pbmserv.worker import WorkLoop, die_with_parent, wake

log = logging.getLogger(__name__)
#: how much lower the workers' CPU priority is than the listener's
WORKER_NICENESS = 5
#: the bots think only with what the rest leaves over
BOTS_NICENESS = 15


def _pipe() -> tuple[int, int]:
    """A pipe whose write end never blocks."""
    read, write = os.pipe()
    flags = fcntl.fcntl(write, fcntl.F_GETFL)
    fcntl.fcntl(write, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    return read, write


def _worker_preexec() -> None:  # pragma: no cover - runs in the child
    die_with_parent()
    os.nice(WORKER_NICENESS)


def _bots_preexec() -> None:  # pragma: no cover - runs in the child
    die_with_parent()
    os.nice(BOTS_NICENESS)


class Server:
    def __init__(self, db: Database, settings: Settings, host: str = "127.0.0.1",
                 port: int = 2525, *, workers: int = 0, interval: float = 2.0,
                 clock_every: float = 60.0, web: tuple[str, int] | None = None,
                 bots: bool = True) -> None:
        self.db = db
        self.settings = settings
        self.workers = workers
        self.web = web
        self.bots = bots
        self.bot_loop: BotLoop | None = None
        self.interval = interval
        self.clock_every = clock_every
        self.pipes: list[tuple[int, int]] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.loop: WorkLoop | None = None
        self.thread: threading.Thread | None = None
        self.writer = IntakeWriter(db, on_stored=lambda _ids: self.wake())
        self.controller = make_controller(IntakeHandler(self.writer, settings), host, port,
                                          settings)

    def wake(self) -> None:
        for _, write in self.pipes:
            wake(write)

    def _spawn(self, read: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "pbmserv", "work", "--loop", "--wake-fd", str(read),
             "--interval", str(self.interval)],
            pass_fds=[read], preexec_fn=_worker_preexec,
        )

    def start(self) -> None:
        for _ in range(max(self.workers, 1)):
            self.pipes.append(_pipe())
        if self.workers:  # before any thread starts: the children are forked cleanly
            self.processes = [self._spawn(read) for read, _ in self.pipes]
        if self.bots and self.workers:  # bots think in a process of their own, niced more
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "pbmserv", "bots", "--loop"],
                preexec_fn=_bots_preexec,
            ))
        elif self.bots:
            self.bot_loop = BotLoop(self.db, self.settings, interval=self.interval)
            threading.Thread(target=self.bot_loop.run, name="bots", daemon=True).start()
        if self.web is not None:  # the read-only web pages, in a process of their own
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "pbmserv", "web", "--host", self.web[0],
                 "--port", str(self.web[1])],
                preexec_fn=_worker_preexec,
            ))
        else:
            self.loop = WorkLoop(self.db, self.settings, wake_fd=self.pipes[0][0],
                                 interval=self.interval, clock_every=self.clock_every)
            self.thread = threading.Thread(target=self.loop.run, name="worker", daemon=True)
            self.thread.start()
        self.writer.start()
        self.controller.start()
        self.wake()  # mail stored before a restart is processed now

    def stop(self) -> None:
        self.controller.stop()
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
        for read, write in self.pipes:
            os.close(read)
            os.close(write)
        self.pipes = []
