"""Group commit: one thread stores the mail of every SMTP session at once.

Each session hands its mail to the writer and waits; the writer takes whatever has
piled up, stores it all in one transaction (one fsync), and answers each session.
Under load many mails share a commit; a lone mail is stored at once.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pbmserv.db.session import Database
from pbmserv.intake.store import Quota, Stored, store_batch

log = logging.getLogger(__name__)
#: the most mails stored in one transaction
MAX_BATCH = 200
#: how long the first mail of a batch waits for others to share its commit
GATHER = 0.001


@dataclass
class Pending:
    raw: bytes
    envelope_from: str
    #: the session's answer: the mail's id, None for a redelivery, OverQuota, or the
    #: error
    answer: asyncio.Future[Stored]


def _settle(answers: list[tuple[asyncio.Future[Stored], Stored,
                                BaseException | None]]) -> None:
    for answer, stored, error in answers:
        if answer.done():
            continue
        if error is None:
            answer.set_result(stored)
        else:
            answer.set_exception(error)


class IntakeWriter(threading.Thread):
    def __init__(self, db: Database,
                 on_stored: Callable[[list[int]], None] = lambda ids: None,
                 quota: Quota | None = None) -> None:
        super().__init__(name="intake-writer", daemon=True)
        self.db = db
        self.on_stored = on_stored
        self.quota = quota
        self.queue: queue.Queue[Pending | None] = queue.Queue()

    def submit(self, item: Pending) -> None:
        self.queue.put(item)

    def stop(self) -> None:
        self.queue.put(None)
        self.join(timeout=30)

    def run(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            stopping = False
            gather_until = time.monotonic() + GATHER
            while len(batch) < MAX_BATCH:
                try:
                    item = self.queue.get(timeout=max(gather_until - time.monotonic(), 0))
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            self._store(batch)
            if stopping:
                return

    def _store(self, batch: list[Pending]) -> None:
        error: BaseException | None = None
        ids: list[Stored] = [None] * len(batch)
        try:
            ids = store_batch(self.db, [(p.raw, p.envelope_from) for p in batch],
                              quota=self.quota)
        except Exception as exc:  # the database said no: every sender is told to retry
            log.error("could not store %d message(s): %s", len(batch), type(exc).__name__)
            error = exc
        # one wake-up of each event loop for the whole batch
        by_loop: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        for item, stored in zip(batch, ids, strict=True):
            by_loop.setdefault(item.answer.get_loop(), []).append((item.answer, stored, error))
        for loop, answers in by_loop.items():
            loop.call_soon_threadsafe(_settle, answers)
        fresh = [i for i in ids if isinstance(i, int)]
        if fresh:
            self.on_stored(fresh)
