"""Mail to the administrator: one summary per incident (pbmserv.service.incidents),
and the daily report if the settings ask for one.

``mail_alerts`` runs with the clock (every minute in ``serve`` and ``work --loop``):
an incident open for a minute is mailed, with how often it happened, the first and
last occurrence and the command that deals with it; one that goes on is mailed again
after a day if more happened; one whose cause is over is closed with a "resolved"
mail (a recurrence is a new incident, mailed again); one quiet for an hour is closed.
The mails go through the outbox like any other, from the game address to
``admin_address``, marked as the administrator's (``outbox.alert_id``).

When mail cannot carry them (the relay takes nothing, the administrator's address
refused a mail, outgoing mail is late), each alert also goes the second route
(pbmserv.notifications.alert_route: the log at ERROR, syslog, ``alert_command``);
an ``admin-unreachable`` incident goes that way only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.bounces.scoring import MAX_PROBES, bounce_list, problem_counts, suspended_list
from pbmserv.config import Settings, relay_url
from pbmserv.db.models import Alert, RelayState
from pbmserv.db.status import AlertKind, Resolution
from pbmserv.notifications.outbox import queue_mail
from pbmserv.reads.queues import queues, received_since, sent_since
from pbmserv.render import render
from pbmserv.service import incidents
from pbmserv.version import version_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Untold:
    """An alert that mail alone cannot carry: for the second route."""

    subject: str
    text: str
    why: str


def mail_alerts(session: Session, settings: Settings, now: datetime,
                untold: list[Untold] | None = None) -> int:
    """Queue the mails the incidents call for, close those resolved (with a mail
    saying so) or quiet, and queue the daily report when it is due; returns how many
    mails were queued.  What mail cannot carry now is added to ``untold``, for
    ``alert_route.tell`` once this transaction is committed."""
    for late in incidents.late_queues(session, now):
        incidents.record(session, AlertKind.QUEUE_LATE, late, now)
    untold = [] if untold is None else untold
    down = mail_route_down(session, settings, now)
    queued = 0
    for alert in incidents.open_alerts(session):
        if incidents.resolved(session, alert, now):
            incidents.close(alert, now, Resolution.RESOLVED)
            if alert.mailed_at is not None:  # what was told is told to be over
                _mail(session, settings, alert, now, "alert_resolved", untold, down)
                queued += 1
            continue
        due = (alert.mailed_at is None and now - alert.opened_at >= incidents.SETTLE) or (
            alert.mailed_at is not None and alert.count > alert.mailed_count
            and now - alert.mailed_at >= incidents.REMIND)
        if due:
            queued += _mail(session, settings, alert, now, "alert", untold, down)
        if (now - alert.last_at >= incidents.QUIET and alert.kind != AlertKind.ADMIN_UNREACHABLE
                and (alert.mailed_at is not None or alert.count == alert.mailed_count)):
            incidents.close(alert, now, Resolution.QUIET)
    if _report_due(session, settings, now):
        report = Alert(kind=AlertKind.REPORT, opened_at=now, last_at=now, count=1,
                       first_detail="daily report", last_detail="daily report", items="",
                       mailed_at=now, mailed_count=1, closed_at=now)
        session.add(report)
        session.flush()
        queue_mail(session, settings, to=settings.alert_address,
                   subject=render("subjects/report.txt.j2", settings=settings, now=now).strip(),
                   body=_report(session, settings, now), alert=report.id)
        queued += 1
    return queued


def mail_route_down(session: Session, settings: Settings, now: datetime) -> str:
    """Why mail to the administrator may not arrive now, in words ("": it may)."""
    if settings.relay is not None:
        state = session.get(RelayState, relay_url(settings))
        if state is not None and state.failing_since is not None:
            return (f"the relay has taken no mail since {state.failing_since:%Y-%m-%d %H:%M} "
                    f"UTC: {state.last_answer or 'no answer'}")
    unreachable = session.scalar(select(Alert.id).where(
        Alert.kind == AlertKind.ADMIN_UNREACHABLE, Alert.closed_at.is_(None)).limit(1))
    if unreachable is not None:
        return f"mail to {settings.alert_address} was refused or bounced"
    late = incidents.late_queues(session, now)
    return late[-1] if late else ""


def _mail(session: Session, settings: Settings, alert: Alert, now: datetime,
          template: str, untold: list[Untold], down: str) -> int:
    """Mail the administrator of ``alert`` (``template``: a new alert, a reminder or
    the news that it is resolved), and tell it the second way too when mail cannot
    carry it; returns how many mails were queued."""
    context = {"alert": alert, "settings": settings, "again": alert.mailed_at is not None,
               "new": alert.count - alert.mailed_count, "items": alert.items.split(),
               "now": now}
    subject = render(f"subjects/{template}.txt.j2", **context).strip()
    body = render(f"{template}.txt.j2", **context)
    mailed = 0
    if alert.kind == AlertKind.ADMIN_UNREACHABLE and template == "alert":
        down = f"mail to {settings.alert_address} does not arrive"  # told the other way only
    else:
        queue_mail(session, settings, to=settings.alert_address, subject=subject, body=body,
                   alert=alert.id)
        mailed = 1
        log.warning("alert to %s: %s%s (%d time(s) since %s)", settings.alert_address,
                    alert.kind, ", resolved" if template == "alert_resolved" else "",
                    alert.count, f"{alert.opened_at:%Y-%m-%d %H:%M}")
    if down:
        untold.append(Untold(subject, body, down))
    if template == "alert":
        alert.mailed_at = now
        alert.mailed_count = alert.count
    return mailed


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
                  bouncing=bounce_list(session, settings, now)[:20], software=version_text(),
                  suspended=suspended_list(session), day=day, max_probes=MAX_PROBES)
