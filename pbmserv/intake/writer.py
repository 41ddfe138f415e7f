"""Group commit: one thread stores the mail of every SMTP session at once.

Each session hands its mail to the writer and waits; the writer takes whatever has
piled up, stores it all in one transaction (one fsync), and answers each session.
Under load many mails share a commit; a lone mail is stored at once.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pbmserv.db.session import Database
from pbmserv.intake.store import store_batch

log = logging.getLogger(__name__)
#: the most mails stored in one transaction
MAX_BATCH = 200


@dataclass
class Pending:
    raw: bytes
    envelope_from: str
    #: called from the writer's thread: (id or None for a redelivery, or the error)
    done: Callable[[int | None, BaseException | None], None]


class IntakeWriter(threading.Thread):
    def __init__(self, db: Database,
                 on_stored: Callable[[list[int]], None] = lambda ids: None) -> None:
        super().__init__(name="intake-writer", daemon=True)
        self.db = db
        self.on_stored = on_stored
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
            while len(batch) < MAX_BATCH:
                try:
                    item = self.queue.get_nowait()
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
        try:
            ids = store_batch(self.db, [(p.raw, p.envelope_from) for p in batch])
        except Exception as exc:  # the database said no: every sender is told to retry
            log.error("could not store %d message(s): %s", len(batch), type(exc).__name__)
            for item in batch:
                item.done(None, exc)
            return
        for item, stored in zip(batch, ids, strict=True):
            item.done(stored, None)
        fresh = [i for i in ids if i is not None]
        if fresh:
            self.on_stored(fresh)
