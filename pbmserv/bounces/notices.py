"""Who is told when an address stops being mailed: the opponents of every board that
waits for a move of its owner (they would otherwise wait without knowing why)."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from pbmserv.bounces.scoring import boards_waiting_for, suspended_among
from pbmserv.config import Settings
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
