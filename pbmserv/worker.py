"""The work behind the intake: processing stored mail, the clock, the sender.

One loop does all three, woken through a pipe whenever the intake has stored mail
(and every ``interval`` seconds anyway, so a lost wake-up only delays).  ``pbmserv
serve`` runs it in worker processes of their own (``--workers``), so the intake, in
the listening process, never waits for move processing; or in a thread
(``--workers 0``).  ``pbmserv work --loop`` runs it for pipe setups.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import time

from pbmserv import wakeups
from pbmserv.config import Settings
from pbmserv.db.problems import describe, explain
from pbmserv.db.session import Database
from pbmserv.processing import process_pending
from pbmserv.sender.delivery import Sender
from pbmserv.timers import (
    run_alerts,
    run_bounce_probes,
    run_clocks,
    run_digests,
    run_folds,
    run_lapses,
    run_purge,
    run_tournament_steps,
)

log = logging.getLogger(__name__)
#: how often the clock looks for due boards
CLOCK_EVERY = 60.0
#: how often processed mail older than ``purge_days`` is deleted
PURGE_EVERY = 3600.0
#: while mail keeps coming, what is due is sent this often (a round that finds no
#: mail to process always sends): a sending round costs a durable commit and a flush
#: of the Maildir however few mails it sends
SEND_EVERY = 0.05
#: while mail keeps coming and no tournament's start is under way, whether one waits
#: to go on is looked at this often (a round that finds no mail always looks)
STEPS_EVERY = 0.5
_PR_SET_PDEATHSIG = 1


def wake(fd: int) -> None:
    """Wake the loop reading the other end of the pipe ``fd`` (never blocks)."""
    # the pipe full: a wake-up is pending already; broken: the worker is gone
    with contextlib.suppress(BlockingIOError, BrokenPipeError):
        os.write(fd, b"!")


def die_with_parent() -> None:
    """On Linux, have the kernel end this process when its parent ends."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


#: set by ``serve`` for the processes it starts (see ``become_child``)
PARENT_PID = "PBMSERV_PARENT_PID"
NICENESS = "PBMSERV_NICENESS"


def become_child() -> None:
    """In a process ``serve`` started: end with ``serve`` and run as nice as it asked.
    Done here, after exec, not between fork and exec (unsafe in a threaded parent)."""
    parent = os.environ.pop(PARENT_PID, None)
    niceness = os.environ.pop(NICENESS, "0")
    if parent is None:
        return
    die_with_parent()
    if os.getppid() != int(parent):  # serve ended before this could be asked
        raise SystemExit(0)
    os.nice(int(niceness))


class WorkLoop:
    def __init__(self, db: Database, settings: Settings, *, wake_fd: int | None = None,
                 interval: float = 2.0, clock_every: float = CLOCK_EVERY) -> None:
        self.db = db
        self.settings = settings
        self.wake_fd = wake_fd
        self.interval = interval
        self.clock_every = clock_every
        self.sender = Sender(db, settings)
        self.stopping = wakeups.Stop()
        self._next_clock = 0.0
        self._next_purge = 0.0
        self._next_send = 0.0
        self._next_steps = 0.0
        self._steps_waiting = False

    def once(self) -> tuple[int, int]:
        """One round: process a batch of stored mail, run the clock if due, send what
        is due (so replies go out batch by batch, however much mail waits: every
        SEND_EVERY seconds while mail keeps coming, at once when it stops).  Each step
        runs whatever became of the others; a failure is raised at the end, several
        together as one ExceptionGroup (each is logged: see ``_run``)."""
        failures: list[Exception] = []
        processed = sent = 0
        try:
            processed = process_pending(self.db, self.settings, reads=1)
        except Exception as exc:
            failures.append(exc)
        if time.monotonic() >= self._next_clock:
            self._next_clock = time.monotonic() + self.clock_every
            for job in (run_clocks, run_digests, run_alerts, run_lapses, run_folds,
                        run_bounce_probes):
                try:
                    job(self.db, self.settings)
                except Exception as exc:
                    failures.append(exc)
        if time.monotonic() >= self._next_purge:  # old processed mail, once an hour
            self._next_purge = time.monotonic() + PURGE_EVERY
            try:
                run_purge(self.db, self.settings)
            except Exception as exc:
                failures.append(exc)
        if self._steps_waiting or not processed or time.monotonic() >= self._next_steps:
            self._next_steps = time.monotonic() + STEPS_EVERY
            try:  # a tournament's start: one step between two batches of mail
                self._steps_waiting = run_tournament_steps(self.db, self.settings) > 0
            except Exception as exc:
                failures.append(exc)
        if not processed or time.monotonic() >= self._next_send:
            self._next_send = time.monotonic() + SEND_EVERY
            try:  # whatever failed before, what is due is sent
                sent = self.sender.send_due()
            except Exception as exc:
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise ExceptionGroup(f"{len(failures)} steps of a worker round failed", failures)
        return processed, sent

    def drain(self) -> tuple[int, int]:
        """Rounds until nothing stored waits; returns how many were processed and sent."""
        processed = sent = 0
        while True:
            done, out = self.once()
            processed, sent = processed + done, sent + out
            if not done:
                return processed, sent

    def _wait(self, bell: wakeups.Doorbell) -> None:
        fds = [fd for fd in (self.wake_fd, bell.fileno(), self.stopping.fileno())
               if fd is not None]
        ready = wakeups.readable(fds, self.interval)
        if self.wake_fd in ready:
            woken = b"!"
            with contextlib.suppress(BlockingIOError):
                woken = os.read(self.wake_fd, 65536)  # every wake-up so far, at once
            if not woken:  # the end of the pipe: serve, which held its other end, is gone
                log.warning("worker: serve is gone; stopping")
                self.stopping.set()
        if bell.fileno() in ready:
            bell.drain()

    def run(self) -> None:
        """Rounds until stopped: woken by the intake (``wake_fd``), by the doorbell when
        another process queued mail (the bots: see pbmserv.wakeups; one worker of a
        database listens), and every ``interval`` seconds anyway."""
        bell = wakeups.Doorbell(self.db.url, wakeups.WORKER)
        try:
            self._run(bell)
        finally:
            bell.close()

    def _run(self, bell: wakeups.Doorbell) -> None:
        trouble = ""  # the last round's error: a database that is down is logged once
        while not self.stopping.is_set():
            try:
                processed, _ = self.once()
                if trouble:
                    log.warning("worker: working again")
                    trouble = ""
            except Exception as exc:
                said = self._report(exc, trouble)
                trouble = said
                processed = 0
            if not processed and not self.stopping.is_set():
                self._wait(bell)

    def _report(self, exc: Exception, before: str) -> str:
        """Log what failed in a round, each failure of it (unless the round before
        failed in the very same words: a database that is down is logged once), an
        error not known here with its traceback; returns what was said."""
        failures = exc.exceptions if isinstance(exc, ExceptionGroup) else (exc,)
        lines = [(explain(failure, self.db.url), failure) for failure in failures]
        said = "; ".join(known or describe(failure) for known, failure in lines)
        if said != before:
            for known, failure in lines:
                log.error("worker round failed, will try again every %ss: %s",
                          self.interval, known or describe(failure),
                          exc_info=None if known is not None else failure)
        return said

    def stop(self) -> None:
        self.stopping.set()
