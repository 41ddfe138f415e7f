"""A bounce that came back: stored like any mail, read here, never answered.

A bounce counts only when it is a bounce of our own mail: it came to the VERP address
of one outgoing mail, signed with the server's secret (``pbmserv+bounce-o<id>-
<signature>@domain``: the envelope sender of every mail the server sends), or it names
the Message-ID of one (each is random, and only its recipient ever saw it).  It then
counts against that mail's recipient alone, whatever other addresses it lists, and
only for what it says of that address (``BounceReport.about``: its Original-Recipient
first, then its Final-Recipient).  Anything else (a bounce to the plain game address
that names no mail of ours, a VERP address with a wrong signature) is stored as
``ignored`` with the reason, and logged: a stranger's forged bounce suspends nobody.

What counts is what the failure says of the address (pbmserv.bounces.scoring.
bounce_kind): hard, soft, or a delay (recorded, never counted).  A report of a
delivery counts for nothing; nor does an auto-reply that came to the bounce address
(a vacation message answers the envelope sender).
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.bounces.notices import tell_opponents
from pbmserv.bounces.reading import BounceReport, Failure
from pbmserv.bounces.scoring import bounce_kind, record_bounce, reply_code
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.status import BounceKind, InboundStatus
from pbmserv.mail.addresses import BOUNCE_PREFIX
from pbmserv.mail.parse import ParsedMail
from pbmserv.service import incidents
from pbmserv.service.reply_tokens import read_bounce_tag, server_secret

log = logging.getLogger(__name__)
#: the Message-IDs of a bounce looked up in the outbox (ours first)
MAX_LOOKUPS = 5
#: what is said of each kind, after the address and the reason
_KIND_WORDS = {BounceKind.HARD: "hard bounces (the address)",
               BounceKind.SOFT: "soft bounces (a policy, a full mailbox or the like)"}


def _returned(session: Session, settings: Settings, mail: ParsedMail,
              report: BounceReport) -> tuple[OutboxMessage | None, str]:
    """The outgoing mail the bounce returns, or None and why none."""
    tag = mail.reply_tag or ""
    if tag.startswith(BOUNCE_PREFIX):
        number = read_bounce_tag(server_secret(session, settings.secret), tag)
        if number is None:
            return None, "a bounce address with a wrong signature"
        row = session.get(OutboxMessage, number)
        return row, "" if row is not None else f"outgoing mail {number}, no longer kept"
    ours = f"@{settings.domain.lower()}>"
    wanted = sorted(report.message_ids, key=lambda m: not m.lower().endswith(ours))
    for message_id in wanted[:MAX_LOOKUPS]:
        found = session.scalar(select(OutboxMessage)
                               .where(OutboxMessage.message_id == message_id[:255]))
        if found is not None:
            return found, ""
    return None, "it came to no bounce address and names no Message-ID of a mail we sent"


def _kind(failure: Failure | None) -> BounceKind:
    if failure is None:  # a bounce of our mail that the readers make nothing of
        return BounceKind.SOFT
    return bounce_kind(failure.status, reply_code(failure.diagnostic),
                       permanent=failure.permanent)


def _why(failure: Failure | None) -> tuple[str, str]:
    if failure is None:
        return "", "a bounce that gives no reason"
    detail = failure.diagnostic or f"status {failure.status or 'not given'}"
    if failure.final:
        detail = f"{detail} (delivered on to {failure.final})"
    return failure.status, detail


def _dropped(inbound_id: int, why: str) -> tuple[InboundStatus, str]:
    log.info("message %s: a bounce not counted: %s", inbound_id, why)
    return InboundStatus.IGNORED, f"bounce not counted: {why}"


def handle_bounce(session: Session, settings: Settings, inbound_id: int,
                  mail: ParsedMail) -> tuple[InboundStatus, str]:
    """Count the bounce; returns the mail's status and what became of it, one line."""
    report = mail.bounce or BounceReport()
    bounce_like = mail.silent_reason == "bounce" or report.is_dsn or bool(report.failures)
    if not bounce_like:
        return InboundStatus.IGNORED, "mail to the bounce address that is no bounce " \
                                      "(an auto-reply?): not counted"
    if mail.refusal:
        return _dropped(inbound_id, f"not read, over a limit ({mail.refusal})")
    row, why_not = _returned(session, settings, mail, report)
    if row is None:
        return _dropped(inbound_id, why_not)
    address = row.to_addr.strip().lower()
    about = report.about(address)
    if report.failures and not about:
        return _dropped(inbound_id, f"it names no address that outgoing mail {row.id} went to")
    if report.is_dsn and not about:
        return InboundStatus.DONE, "delivery report without a failure: not counted"
    failure = min(about, key=lambda f: (_kind(f) != BounceKind.HARD, not f.permanent),
                  default=None)
    kind = _kind(failure)
    status, detail = _why(failure)
    now = utcnow()
    if row.alert_id is not None:  # the administrator's mail: no address is counted
        if kind == BounceKind.DELAY:
            return InboundStatus.DONE, f"a delay of outbox {row.id} to the administrator"
        incidents.admin_unreachable(session, row.id, address, f"bounced: {detail}", now)
        log.error("message %s: the mail to the administrator (outbox %s to %s) bounced: %s",
                  inbound_id, row.id, address, status or "no status")
        return InboundStatus.DONE, (f"bounce: {address} (outbox {row.id}, to the "
                                    f"administrator): {detail}; not counted: alerts do "
                                    "not reach the administrator")[:2000]
    result = record_bounce(session, settings, address, now, source="dsn", kind=kind,
                           status=status, detail=detail, outbox_id=row.id,
                           inbound_id=inbound_id)
    head = f"bounce: {address} (outbox {row.id}): {detail}; "
    if kind == BounceKind.DELAY:
        log.info("message %s: a delay of outbox %s to %s (%s), never counted", inbound_id,
                 row.id, address, status or "no status")
        return InboundStatus.DONE, (head + "a delay only (Action: delayed), never "
                                    "counted")[:2000]
    threshold = (settings.bounce_threshold if kind == BounceKind.HARD
                 else settings.soft_bounce_threshold)
    score = result.hard if kind == BounceKind.HARD else result.soft
    outcome = (f"{score} of {threshold} {_KIND_WORDS[kind]}" if result.counted
               else "this mail was counted already")
    if result.suspended_now:
        tell_opponents(session, settings, address, now, inbound_id)
        outcome += ", no longer mailed"
    log.info("message %s: %s bounce of outbox %s to %s (%s)", inbound_id, kind, row.id,
             address, status or "no status")
    return InboundStatus.DONE, (head + outcome)[:2000]
