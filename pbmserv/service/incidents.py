"""Incidents: what the administrator must hear of, one row per incident however often
it happens while it lasts.

``record`` is called where a thing goes wrong, in the transaction that records it (a
mail marked failed, an outgoing mail refused, a bounce): it opens an incident of that
kind, or counts one more in the open one.  The notifications (pbmserv.notifications.
alerts) mail one summary per incident once it has settled for a minute, and close it
once it has been quiet for an hour; a new occurrence after that opens a new one.  So
a hundred failed mails in a burst are one mail, not a hundred.

An incident ends when what it is about is over (``resolved``: the failed mail
replayed, the queue moving again; the administrator is mailed that it is, and a
recurrence is a new incident, mailed again), when it has been quiet for an hour, or
when the administrator acknowledges it (``pbmserv alerts ack``).

A mail to the administrator (``outbox.alert_id``) that the relay refuses or that
bounces is never counted against an address: it opens an ``admin-unreachable``
incident instead (``admin_unreachable``), which ``status`` reports (exit 3) and which
goes to the log, syslog and ``alert_command``, since mail cannot carry it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from pbmserv.db.models import Alert, InboundMessage, OutboxMessage
from pbmserv.db.status import AlertKind, InboundStatus, OutboxStatus, Resolution

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


def is_admin_mail(session: Session, outbox_id: int) -> bool:
    """Whether outgoing mail ``outbox_id`` went to the administrator (an alert, a
    "resolved" mail, the daily report)."""
    return session.scalar(select(OutboxMessage.alert_id)
                          .where(OutboxMessage.id == outbox_id)) is not None


def admin_unreachable(session: Session, outbox_id: int, to: str, why: str,
                      now: datetime) -> Alert:
    """A mail to the administrator was refused or bounced: kept as failed (``outbox
    retry`` sends it again once the address is fixed), counted against no address,
    and an incident of its own."""
    session.execute(update(OutboxMessage).where(OutboxMessage.id == outbox_id)
                    .values(status=OutboxStatus.FAILED, last_error=why[:2000])
                    .execution_options(synchronize_session=False))
    return record(session, AlertKind.ADMIN_UNREACHABLE,
                  f"outbox {outbox_id} to {to}: {why}", now, item=str(outbox_id))


def close(alert: Alert, now: datetime, resolution: Resolution) -> None:
    alert.closed_at = now
    alert.resolution = resolution


def resolved(session: Session, alert: Alert, now: datetime) -> bool:
    """Whether what ``alert`` is about is over: no failed incoming mail is left (an
    incoming failure), no failed outgoing mail but to the administrator (an outgoing
    one), no queue late; a mail to the administrator sent after the last refusal and
    not refused or bounced for an hour (the administrator is reached again).  A bounce
    storm is over when it has been quiet for an hour (or cleared)."""
    if alert.kind == AlertKind.INBOX_FAILED:
        return session.scalar(select(InboundMessage.id).where(
            InboundMessage.status == InboundStatus.FAILED).limit(1)) is None
    if alert.kind == AlertKind.OUTBOX_FAILED:
        return session.scalar(select(OutboxMessage.id).where(
            OutboxMessage.status == OutboxStatus.FAILED,
            OutboxMessage.alert_id.is_(None)).limit(1)) is None
    if alert.kind == AlertKind.QUEUE_LATE:
        return not late_queues(session, now)
    if alert.kind == AlertKind.ADMIN_UNREACHABLE:
        return session.scalar(select(OutboxMessage.id).where(
            OutboxMessage.alert_id.is_not(None), OutboxMessage.status == OutboxStatus.SENT,
            OutboxMessage.sent_at > alert.last_at,
            OutboxMessage.sent_at <= now - QUIET).limit(1)) is not None
    return False


def listed(session: Session, *, every: bool = False, limit: int = 50) -> list[Alert]:
    """The incidents for ``pbmserv alerts list``: the open ones, oldest first, or with
    ``every`` the latest ``limit`` of all (open or over), newest first."""
    if not every:
        return open_alerts(session)
    return list(session.scalars(select(Alert).where(Alert.kind != AlertKind.REPORT)
                                .order_by(Alert.id.desc()).limit(limit)))


def mails_about(session: Session, alert: Alert) -> list[OutboxMessage]:
    """The mails to the administrator about an incident, oldest first; of an
    ``admin-unreachable`` one, the mails to the administrator that did not arrive."""
    numbers = [int(item) for item in alert.items.split() if item.isdigit()]
    where = (OutboxMessage.id.in_(numbers) if alert.kind == AlertKind.ADMIN_UNREACHABLE
             else OutboxMessage.alert_id == alert.id)
    return list(session.scalars(select(OutboxMessage).where(where).order_by(OutboxMessage.id)))


class NoSuchAlert(LookupError):
    pass


def ack(session: Session, alert_id: int, by: str, now: datetime) -> Alert:
    """The administrator has the incident in hand: it is over (no reminder, no
    "resolved" mail; a recurrence opens a new incident, mailed again)."""
    alert = session.get(Alert, alert_id)
    if alert is None or alert.kind == AlertKind.REPORT:
        raise NoSuchAlert(alert_id)
    if alert.closed_at is None:
        close(alert, now, Resolution.ACKED)
        alert.acked_at = now
        alert.acked_by = by[:200]
    return alert


def open_by_kind(session: Session) -> dict[AlertKind, int]:
    """How many incidents of each kind are not over (the daily reports aside)."""
    return {AlertKind(kind): int(count) for kind, count in session.execute(
        select(Alert.kind, func.count()).where(Alert.closed_at.is_(None),
                                               Alert.kind != AlertKind.REPORT)
        .group_by(Alert.kind))}


def find(session: Session, number: int) -> Alert | None:
    """Incident ``number`` (None if there is none; a daily report is none)."""
    alert = session.get(Alert, number)
    return None if alert is None or alert.kind == AlertKind.REPORT else alert


def state_of(alert: Alert) -> str:
    """How an incident stands, in words: open (told or not yet), or how it ended."""
    if alert.closed_at is not None:
        by = f" by {alert.acked_by}" if alert.acked_by else ""
        return f"{alert.resolution or 'over'}{by} {alert.closed_at:%Y-%m-%d %H:%M}"
    if alert.mailed_at is None:
        return "open, not told yet"
    return f"open, told {alert.mailed_at:%Y-%m-%d %H:%M}"
