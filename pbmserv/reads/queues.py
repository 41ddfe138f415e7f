"""The inbox and the outbox as the administrator watches them: how many mails wait in
each state, since when, what is due, and what came in and went out lately.  Read by
the status (pbmserv.service.health), the metrics (pbmserv.web.metrics) and the daily
report (pbmserv.notifications.alerts)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import InboundMessage, OutboxMessage
from pbmserv.db.status import InboundStatus, OutboxStatus


@dataclass(frozen=True)
class Queues:
    """The two queues at one moment."""

    #: stored incoming mails by status (every status present, 0 if none)
    inbox: dict[InboundStatus, int]
    #: outgoing mails by status (every status present, 0 if none)
    outbox: dict[OutboxStatus, int]
    #: when the oldest stored mail still waiting to be processed came (None: none waits)
    oldest_waiting: datetime | None
    #: when the oldest outgoing mail not sent yet was queued (None: none)
    oldest_pending: datetime | None
    #: the highest inbox and outbox numbers: mails stored and queued since the start
    received: int
    queued: int

    @property
    def waiting(self) -> int:
        return self.inbox[InboundStatus.NEW]

    @property
    def pending(self) -> int:
        return self.outbox[OutboxStatus.PENDING]


def queues(session: Session) -> Queues:
    """Both queues: counts by status, the oldest waiting of each, the highest numbers."""
    inbox = dict(session.execute(select(InboundMessage.status, func.count())
                                 .group_by(InboundMessage.status)).tuples().all())
    outbox = dict(session.execute(select(OutboxMessage.status, func.count())
                                  .group_by(OutboxMessage.status)).tuples().all())
    # each its own query, so that each follows its index
    oldest_waiting = session.scalar(select(func.min(InboundMessage.received_at))
                                    .where(InboundMessage.status == InboundStatus.NEW))
    oldest_pending = session.scalar(select(func.min(OutboxMessage.created_at))
                                    .where(OutboxMessage.status == OutboxStatus.PENDING))
    received = session.scalar(select(func.max(InboundMessage.id)))
    queued = session.scalar(select(func.max(OutboxMessage.id)))
    return Queues({s: inbox.get(s, 0) for s in InboundStatus},
                  {s: outbox.get(s, 0) for s in OutboxStatus},
                  oldest_waiting, oldest_pending, received or 0, queued or 0)


def due_by(session: Session, when: datetime) -> int:
    """Outgoing mails pending whose next attempt is due at ``when`` or before."""
    return session.scalar(select(func.count()).select_from(OutboxMessage).where(
        OutboxMessage.status == OutboxStatus.PENDING,
        OutboxMessage.next_attempt_at <= when)) or 0


def received_since(session: Session, since: datetime) -> int:
    """Mails stored after ``since``."""
    return session.scalar(select(func.count()).select_from(InboundMessage)
                          .where(InboundMessage.received_at > since)) or 0


def sent_since(session: Session, since: datetime) -> int:
    """Mails sent after ``since``."""
    return session.scalar(select(func.count()).select_from(OutboxMessage)
                          .where(OutboxMessage.status == OutboxStatus.SENT,
                                 OutboxMessage.sent_at > since)) or 0


def pending_since(session: Session, before: datetime) -> tuple[int, str | None]:
    """Outgoing mails pending that were queued before ``before``, and a last error of
    theirs (None if none has one)."""
    count, error = session.execute(
        select(func.count(), func.max(OutboxMessage.last_error)).where(
            OutboxMessage.status == OutboxStatus.PENDING,
            OutboxMessage.created_at < before)).one()
    return int(count or 0), error
