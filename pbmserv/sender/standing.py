"""How the relay stands, kept in the database (``relay_state``, one row per relay):
whether every mail tried lately was refused or deferred, and since when, with the
relay's last answer (``pbmserv status`` and ``/healthz`` read it: see
pbmserv.service.health), and the back-off every sender keeps to after a 421 or a
refused login, in this process or another, and across a restart.

The back-off doubles with each refusal in a row (pbmserv.backoff); a mail the relay
takes ends it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pbmserv.backoff import backoff
from pbmserv.config import Settings, relay_url
from pbmserv.db.base import utcnow
from pbmserv.db.models import RelayState
from pbmserv.db.session import Database

#: how often a relay that is taking mail has that written down (for the status)
OK_EVERY = timedelta(minutes=1)


def key_of(settings: Settings) -> str:
    """The relay's row: its URL (no password)."""
    return relay_url(settings)


class Standing:
    """One sender's view of the relay's row: it reads the back-off before it sends,
    and writes what the relay answers when that changes the row."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.key = key_of(settings)
        #: what this process last wrote or read: None, not known yet
        self._failing: bool | None = None
        self._answer: str | None = None
        self._ok_written: datetime | None = None

    def _row(self, session: Session) -> RelayState:
        row = session.get(RelayState, self.key)
        if row is None:
            row = RelayState(relay=self.key, refusals=0)
            session.add(row)
        return row

    def _write(self, change: Callable[[RelayState], None]) -> None:
        """Run ``change(row)`` on the row in a transaction of its own (made if there is
        none yet: a second sender making it at the same time loses, and tries again)."""
        for attempt in (1, 2):
            try:
                with self.db.transaction() as session:
                    row = self._row(session)
                    change(row)
                return
            except IntegrityError:
                if attempt == 2:
                    raise

    def held_off(self, now: datetime | None = None) -> datetime | None:
        """Until when no sender may try the relay (a 421 or a refused login), or None."""
        now = now or utcnow()
        # read each time (a key look-up, and only when mail is due): another sender
        # may have backed off, or 'pbmserv outbox retry' ended the back-off
        with self.db.reading() as session:
            row = session.get(RelayState, self.key)
            until = None if row is None else row.retry_at
        return until if until is not None and until > now else None

    def refused(self, answer: str, first: float, longest: float) -> tuple[float, bool]:
        """The relay refused the session (421, a login): back off.  Returns the wait
        and whether the answer is new (to be logged; the same again is not)."""
        now = utcnow()
        wait = 0.0

        def change(row: RelayState) -> None:
            nonlocal wait
            row.refusals = (row.refusals or 0) + 1
            wait = backoff(row.refusals, first, longest)
            row.retry_at = now + timedelta(seconds=wait)
            row.failing_since = row.failing_since or now
            row.last_answer = answer[:2000]

        new = answer != self._answer
        self._write(change)
        self._failing, self._answer = True, answer
        return wait, new

    def failed(self, answer: str) -> bool:
        """A mail was not taken (unreachable, 4xx, a 5xx not about its address); returns
        whether the answer is new."""
        new = answer != self._answer or self._failing is not True
        if new:
            now = utcnow()

            def change(row: RelayState) -> None:
                row.failing_since = row.failing_since or now
                row.last_answer = answer[:2000]

            self._write(change)
            self._failing, self._answer = True, answer
        return new

    def took(self) -> bool:
        """The relay took a mail; returns whether it was failing before (as far as this
        process knows: it then says so in the log)."""
        now = utcnow()
        was = self._failing
        if was is False and self._ok_written is not None and now - self._ok_written < OK_EVERY:
            return False

        def change(row: RelayState) -> None:
            row.failing_since = row.retry_at = None
            row.refusals = 0
            row.last_ok_at = now

        self._write(change)
        self._failing, self._answer, self._ok_written = False, None, now
        return bool(was)


def forget_backoff(db: Database, settings: Settings) -> None:
    """Let the senders try the relay at once (``pbmserv outbox retry``)."""
    with db.transaction() as session:
        session.execute(update(RelayState).where(RelayState.relay == key_of(settings))
                        .values(retry_at=None, refusals=0)
                        .execution_options(synchronize_session=False))
