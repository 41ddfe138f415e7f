"""Mail to the administrator: one summary per incident (pbmserv.service.incidents),
and the daily report if the settings ask for one.

``mail_alerts`` runs with the clock (every minute in ``serve`` and ``work --loop``):
an incident open for a minute is mailed, with how often it happened, the first and
last occurrence and the command that deals with it; one that goes on is mailed again
after a day if more happened; one quiet for an hour is closed.  The mails go through
the outbox like any other, from the game address to ``admin_address``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.bounces.scoring import bounce_list, problem_counts
from pbmserv.config import Settings
from pbmserv.db.models import Alert
from pbmserv.db.status import AlertKind
from pbmserv.notifications.outbox import queue_mail
from pbmserv.reads.queues import queues, received_since, sent_since
from pbmserv.render import render
from pbmserv.service import incidents

log = logging.getLogger(__name__)


def mail_alerts(session: Session, settings: Settings, now: datetime) -> int:
    """Queue the mails the incidents call for, close the quiet ones, and queue the
    daily report when it is due; returns how many mails were queued."""
    for late in incidents.late_queues(session, now):
        incidents.record(session, AlertKind.QUEUE_LATE, late, now)
    queued = 0
    for alert in incidents.open_alerts(session):
        due = (alert.mailed_at is None and now - alert.opened_at >= incidents.SETTLE) or (
            alert.mailed_at is not None and alert.count > alert.mailed_count
            and now - alert.mailed_at >= incidents.REMIND)
        if due:
            _mail(session, settings, alert, now)
            queued += 1
        if now - alert.last_at >= incidents.QUIET and (
                alert.mailed_at is not None or alert.count == alert.mailed_count):
            alert.closed_at = now
    if _report_due(session, settings, now):
        queue_mail(session, settings, to=settings.alert_address,
                   subject=render("subjects/report.txt.j2", settings=settings, now=now).strip(),
                   body=_report(session, settings, now))
        session.add(Alert(kind=AlertKind.REPORT, opened_at=now, last_at=now, count=1,
                          first_detail="daily report", last_detail="daily report", items="",
                          mailed_at=now, mailed_count=1, closed_at=now))
        queued += 1
    return queued


def _mail(session: Session, settings: Settings, alert: Alert, now: datetime) -> None:
    context = {"alert": alert, "settings": settings, "again": alert.mailed_at is not None,
               "new": alert.count - alert.mailed_count, "items": alert.items.split()}
    queue_mail(session, settings, to=settings.alert_address,
               subject=render("subjects/alert.txt.j2", **context).strip(),
               body=render("alert.txt.j2", **context))
    log.warning("alert to %s: %s (%d time(s) since %s)", settings.alert_address,
                alert.kind, alert.count, f"{alert.opened_at:%Y-%m-%d %H:%M}")
    alert.mailed_at = now
    alert.mailed_count = alert.count


def _report_due(session: Session, settings: Settings, now: datetime) -> bool:
    if settings.daily_report is None or now.hour != settings.daily_report:
        return False
    last = session.scalar(select(func.max(Alert.opened_at))
                          .where(Alert.kind == AlertKind.REPORT))
    return last is None or now - last > timedelta(hours=12)


def _report(session: Session, settings: Settings, now: datetime) -> str:
    day = now - timedelta(days=1)
    state = queues(session)
    alerts = list(session.scalars(select(Alert).where(Alert.last_at > day,
                                                      Alert.kind != AlertKind.REPORT)
                                  .order_by(Alert.id)))
    return render("report.txt.j2", settings=settings, now=now,
                  received=received_since(session, day), sent=sent_since(session, day),
                  waiting=state.waiting, pending=state.pending,
                  counts=problem_counts(session, now), alerts=alerts,
                  bouncing=bounce_list(session, settings, now)[:20])
