"""A bounce that came back: stored like any mail, read here, never answered.

The outgoing mail it returns is found by its VERP address (``pbmserv+bounce-o<id>-
<signature>@domain``: the envelope sender of every mail the server sends), else by
the Message-ID of the returned mail; a bounce of neither kind counts for the failed
addresses it lists that are players' addresses.  A report of a delay only (a
temporary failure), or of a delivery, counts for nothing; nor does an auto-reply
that came to the bounce address (a vacation message answers the envelope sender).
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage, User
from pbmserv.db.status import InboundStatus
from pbmserv.mail.addresses import BOUNCE_PREFIX
from pbmserv.mail.bounces import BounceReport, Failure
from pbmserv.mail.parse import ParsedMail
from pbmserv.notifications.bounces import tell_opponents
from pbmserv.service.bounces import record_bounce
from pbmserv.service.reply_tokens import read_bounce_tag, server_secret

log = logging.getLogger(__name__)


def _returned(session: Session, settings: Settings, mail: ParsedMail,
              report: BounceReport) -> OutboxMessage | None:
    tag = mail.reply_tag or ""
    if tag.startswith(BOUNCE_PREFIX):
        number = read_bounce_tag(server_secret(session, settings.secret), tag)
        if number is not None:
            return session.get(OutboxMessage, number)
    for message_id in report.message_ids[:5]:
        found = session.scalar(select(OutboxMessage)
                               .where(OutboxMessage.message_id == message_id[:255]))
        if found is not None:
            return found
    return None


def _why(failure: Failure | None) -> tuple[str, str]:
    if failure is None:
        return "", "a bounce that gives no reason"
    return failure.status, failure.diagnostic or f"status {failure.status or 'not given'}"


def handle_bounce(session: Session, settings: Settings, inbound_id: int,
                  mail: ParsedMail) -> tuple[InboundStatus, str]:
    """Count the bounce; returns the mail's status and what became of it, one line."""
    report = mail.bounce or BounceReport()
    row = _returned(session, settings, mail, report)
    bounce_like = mail.silent_reason == "bounce" or report.is_dsn or bool(report.failures)
    if not bounce_like:
        return InboundStatus.IGNORED, "mail to the bounce address that is no bounce " \
                                      "(an auto-reply?): not counted"
    if report.temporary_only:
        return InboundStatus.DONE, "bounce: a delay only (temporary failure), not counted"
    if report.is_dsn and not report.failures:
        return InboundStatus.DONE, "delivery report without a failure: not counted"
    now = utcnow()
    counted: list[str] = []
    targets: list[tuple[str, Failure | None, int | None]]
    if row is not None:
        address = row.to_addr.strip().lower()
        failure = next((f for f in report.permanent if f.address == address),
                       report.permanent[0] if report.permanent else None)
        targets = [(address, failure, row.id)]
    else:
        known = set(session.scalars(select(func.lower(User.email)).where(
            func.lower(User.email).in_({f.address for f in report.permanent}))))
        targets = [(f.address, f, None) for f in report.permanent if f.address in known]
        if not targets:
            return InboundStatus.IGNORED, "bounce for no mail and no address of ours: " \
                                          "not counted"
    for address, failure, outbox_id in targets:
        status, detail = _why(failure)
        result = record_bounce(session, settings, address, now, source="dsn", status=status,
                               detail=detail, outbox_id=outbox_id, inbound_id=inbound_id)
        if result.suspended_now:
            tell_opponents(session, settings, address, now, inbound_id)
        counted.append(f"{address}" + (f" (outbox {outbox_id})" if outbox_id else "")
                       + f": {detail}; "
                       + (f"{result.score} of {settings.bounce_threshold} bounces"
                          if result.counted else "this mail was counted already")
                       + (", no longer mailed" if result.suspended_now else ""))
    log.info("message %s: bounce for %s", inbound_id, ", ".join(t[0] for t in targets))
    return InboundStatus.DONE, ("bounce: " + "; ".join(counted))[:2000]
