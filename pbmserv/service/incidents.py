"""Incidents: what the administrator must hear of, one row per incident however often
it happens while it lasts.

``record`` is called where a thing goes wrong, in the transaction that records it (a
mail marked failed, an outgoing mail refused, a bounce): it opens an incident of that
kind, or counts one more in the open one.  The notifications (pbmserv.notifications.
alerts) mail one summary per incident once it has settled for a minute, and close it
once it has been quiet for an hour; a new occurrence after that opens a new one.  So
a hundred failed mails in a burst are one mail, not a hundred.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Alert, InboundMessage, OutboxMessage
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus

#: an incident is mailed once it has been open this long (what follows in a burst
#: is in the same mail)
SETTLE = timedelta(minutes=1)
#: an incident with nothing new for this long is over
QUIET = timedelta(hours=1)
#: an incident that goes on is mailed again (with what is new) after this long
REMIND = timedelta(days=1)
#: mail stored this long ago and still not processed: nothing is processing it
INBOX_LATE = timedelta(minutes=5)
#: outgoing mail due this long ago and still not sent: nothing is sending it
OUTBOX_LATE = timedelta(minutes=15)
#: how many things an incident names (message or outbox numbers)
MAX_ITEMS = 10


def record(session: Session, kind: AlertKind, detail: str, now: datetime,
           item: str | None = None) -> Alert:
    """One more occurrence of ``kind``: counted in the open incident, or a new one."""
    detail = " ".join(detail.split())[:1000]
    alert = session.scalar(select(Alert).where(Alert.kind == kind, Alert.closed_at.is_(None))
                           .order_by(Alert.id.desc()).limit(1))
    if alert is None:
        alert = Alert(kind=kind, opened_at=now, last_at=now, count=1, first_detail=detail,
                      last_detail=detail, items=item or "", mailed_count=0)
        session.add(alert)
        return alert
    alert.count += 1
    alert.last_at = now
    alert.last_detail = detail
    items = alert.items.split()
    if item is not None and item not in items and len(items) < MAX_ITEMS:
        alert.items = " ".join([*items, item])[:200]
    return alert


def open_alerts(session: Session) -> list[Alert]:
    """The incidents not over yet, oldest first (the daily reports are not incidents)."""
    return list(session.scalars(select(Alert).where(Alert.closed_at.is_(None),
                                                    Alert.kind != AlertKind.REPORT)
                                .order_by(Alert.id)))


def late_queues(session: Session, now: datetime, *, inbox_late: timedelta = INBOX_LATE,
                outbox_late: timedelta = OUTBOX_LATE) -> list[str]:
    """What is late, in words: stored mail nobody processes, outgoing mail nobody sends."""
    out = []
    oldest_in = session.scalar(select(func.min(InboundMessage.received_at))
                               .where(InboundMessage.status == InboundStatus.NEW))
    if oldest_in is not None and now - oldest_in > inbox_late:
        out.append(f"stored mail is not being processed: the oldest waits since "
                   f"{oldest_in:%Y-%m-%d %H:%M} UTC (is 'pbmserv serve' or 'pbmserv work "
                   "--loop' running?)")
    overdue = session.scalar(select(func.count()).select_from(OutboxMessage).where(
        OutboxMessage.status == OutboxStatus.PENDING,
        OutboxMessage.next_attempt_at < now - outbox_late))
    if overdue:
        out.append(f"outgoing mail is not going out: {overdue} mail(s) due for more than "
                   f"{int(outbox_late.total_seconds() // 60)} minutes (is the relay down, or "
                   "nothing running that sends? 'pbmserv outbox list' shows the last error)")
    return out
