"""What a refusal does beyond marking the mail: a 5xx about the address counts as a
bounce of it (pbmserv.bounces.scoring: hard for a dead address, soft for a full
mailbox), any other refusal for good opens an incident for the administrator
(pbmserv.service.incidents).  A mail to the administrator is neither: its refusal
opens an incident of its own (``incidents.admin_unreachable``), so an alert that
cannot arrive never suspends the address nor mails the administrator again.  Each
runs in the transaction that records the mail's result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from pbmserv.bounces.notices import tell_opponents
from pbmserv.bounces.scoring import bounce_kind, enhanced_status, record_bounce
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.status import AlertKind, BounceKind, OutboxStatus
from pbmserv.sender.message import OutboxMail
from pbmserv.sender.relay import PermanentFailure
from pbmserv.service import incidents

#: what the outbox says of a mail held back
HELD = "not sent: mail to this address bounces ('pbmserv users bounces')"


def suppressed() -> dict[str, Any]:
    return {"status": OutboxStatus.SUPPRESSED, "last_error": HELD, "leased_by": None}


def failed_for_good(settings: Settings, row: OutboxMail,
                    why: str) -> Callable[[Session], None]:
    """Tell the administrator (once per incident) of a mail refused for good."""
    to, number = row.to_addr, row.id

    def after(session: Session) -> None:
        if incidents.is_admin_mail(session, number):
            incidents.admin_unreachable(session, number, to, why, utcnow())
            return
        incidents.record(session, AlertKind.OUTBOX_FAILED,
                         f"outbox {number} to {to}: {why}", utcnow(), item=str(number))
    return after


def refused(settings: Settings, row: OutboxMail,
            exc: PermanentFailure) -> tuple[dict[str, Any], Callable[[Session], None]]:
    """The row's new values and what goes with them, for the relay's 5xx ``exc``."""
    text = str(exc)[:2000]
    status = enhanced_status(text)
    kind = bounce_kind(status, exc.code)
    if exc.about == "sender" or not (kind == BounceKind.HARD or status == "5.2.2"):
        return ({"status": OutboxStatus.FAILED, "last_error": text, "leased_by": None},
                failed_for_good(settings, row, f"the relay answered {text}"))
    to, number = row.to_addr, row.id

    def count(session: Session) -> None:
        now = utcnow()
        if incidents.is_admin_mail(session, number):
            incidents.admin_unreachable(session, number, to, f"the relay answered {text}",
                                        now)
            return
        counted = record_bounce(session, settings, to, now, source="relay", kind=kind,
                                status=status, detail=f"the relay answered {text}",
                                outbox_id=number)
        if counted.suspended_now:
            tell_opponents(session, settings, to, now)
    return {"status": OutboxStatus.BOUNCED, "last_error": text, "leased_by": None}, count
