"""Who is told when an address stops being mailed: the opponents of every board that
waits for a move of its owner (they would otherwise wait without knowing why); and
the address itself, by a probe, every ``bounce_probe_days`` while it is suspended (as
GNU Mailman does): a mail from its own VERP address that says why it hears nothing,
and that lifts the suspension if it does not bounce within a day
(pbmserv.bounces.scoring.lift_answered)."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.bounces.scoring import boards_waiting_for, probes_due, suspended_among
from pbmserv.config import Settings
from pbmserv.db.models import User
from pbmserv.notifications.outbox import queue_mail
from pbmserv.render import render
from pbmserv.service.boards import engine_of

log = logging.getLogger(__name__)


def tell_opponents(session: Session, settings: Settings, address: str, now: datetime,
                   inbound_id: int | None = None) -> int:
    """Mail the opponents of the boards waiting for the owner of ``address`` (just
    suspended) that their opponent may not know; returns how many mails."""
    queued = 0
    for board, waited_for in boards_waiting_for(session, address):
        engine = engine_of(board)
        others = [p.user for p in board.players if p.user_id != waited_for.id
                  and p.user.bot is None and p.user.closed_at is None
                  and p.user.email.strip().lower() != address.strip().lower()]
        held = suspended_among(session, {u.email for u in others})
        for user in others:
            if user.email.strip().lower() in held:
                continue
            subject = render("subjects/bouncing.txt.j2", engine=engine, board=board,
                             userid=waited_for.userid).strip()
            body = render("bouncing.txt.j2", engine=engine, board=board, reader=user,
                          userid=waited_for.userid, settings=settings, now=now)
            queue_mail(session, settings, to=user.email, subject=subject, body=body,
                       inbound_id=inbound_id)
            queued += 1
    if queued:
        log.info("mail to %s bounces: %d opponent(s) told", address, queued)
    return queued


def send_probes(session: Session, settings: Settings, now: datetime) -> int:
    """A probe to each suspended address due one (``bounce_probe_days`` after its
    suspension or its last probe); returns how many."""
    sent = 0
    for suspension in probes_due(session, settings, now):
        userids = list(session.scalars(select(User.userid).where(
            func.lower(User.email) == suspension.address, User.closed_at.is_(None))
            .order_by(User.key)))
        context = {"settings": settings, "suspension": suspension, "userids": userids}
        suspension.probe_outbox_id = queue_mail(
            session, settings, to=suspension.address,
            subject=render("subjects/probe.txt.j2", **context).strip(),
            body=render("probe.txt.j2", **context))
        suspension.probed_at = now
        suspension.probes += 1
        log.info("bounces: probe %d of %s (outbox %s), suspended since %s",
                 suspension.probes, suspension.address, suspension.probe_outbox_id,
                 f"{suspension.since:%Y-%m-%d %H:%M}")
        sent += 1
    return sent
