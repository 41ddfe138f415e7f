"""``pbmserv serve``: the SMTP listener plus the workers behind it.

The listener stores mail and wakes the processor; the processor runs commands
and wakes the sender; the sender empties the outbox; the clock nags and forfeits.
Each worker also wakes on its own every little while, so nothing waits for a
wake-up that was missed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.intake.smtp import IntakeHandler, make_controller
from pbmserv.intake.writer import IntakeWriter
from pbmserv.processing import process_pending
from pbmserv.sender.delivery import Sender
from pbmserv.timers import run_clocks

log = logging.getLogger(__name__)


class Worker(threading.Thread):
    """Runs ``job`` whenever woken, and at least every ``interval`` seconds."""

    def __init__(self, name: str, job: Callable[[], int], interval: float) -> None:
        super().__init__(name=name, daemon=True)
        self.job = job
        self.interval = interval
        self.wakeup = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.wakeup.wait(self.interval)
            self.wakeup.clear()
            try:
                self.job()
            except Exception:
                log.exception("%s failed; will try again", self.name)

    def stop(self) -> None:
        self.stopping.set()
        self.wakeup.set()
        self.join(timeout=30)


class Server:
    def __init__(self, db: Database, settings: Settings, host: str = "127.0.0.1",
                 port: int = 2525, send_interval: float = 2.0,
                 clock_interval: float = 60.0) -> None:
        self.db = db
        self.settings = settings
        sender = Sender(db, settings)
        self.sender = Worker("sender", sender.send_due, send_interval)
        self.processor = Worker("processor", self._process, 5.0)
        self.clock = Worker("clock", self._clock, clock_interval)
        self.writer = IntakeWriter(db, on_stored=lambda _ids: self.processor.wakeup.set())
        self.controller = make_controller(IntakeHandler(self.writer, settings), host, port,
                                          settings)

    def _process(self) -> int:
        done = process_pending(self.db, self.settings)
        if done:
            self.sender.wakeup.set()
        return done

    def _clock(self) -> int:
        done = run_clocks(self.db, self.settings)
        if done:
            self.sender.wakeup.set()
        return done

    def start(self) -> None:
        self.writer.start()
        self.processor.start()
        self.sender.start()
        self.clock.start()
        self.processor.wakeup.set()  # mail stored before a crash is processed now
        self.sender.wakeup.set()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.writer.stop()
        self.processor.stop()
        self.clock.stop()
        self.sender.stop()
