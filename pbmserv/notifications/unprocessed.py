"""What the sender of a mail that was not carried out is told: that it was refused
unread (what was wrong with it), or that it is held for the administrator (it failed
to process)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.status import AnswerKind
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.subjects import our_subject
from pbmserv.render import render


def tell_refused(session: Session, settings: Settings, *, to: str, refusal: str,
                 last: datetime | None, inbound_id: int, in_reply_to: str | None) -> None:
    """The mail was refused unread (``refusal`` says why); ``last``: until when the
    address gets no more counted answers, if this is its last (counted as a
    refusal)."""
    queue_mail(session, settings, to=to, subject=our_subject(settings, "your mail was not read"),
               body=render("refused.txt.j2", refusal=refusal, settings=settings, last=last),
               inbound_id=inbound_id, in_reply_to=in_reply_to, kind=AnswerKind.REFUSAL)


def tell_held(session: Session, settings: Settings, *, to: str, inbound_id: int,
              in_reply_to: str | None) -> None:
    """The mail could not be processed: it is kept for the administrator."""
    queue_mail(session, settings, to=to,
               subject=our_subject(settings, "your mail is held for the administrator"),
               body=render("failed.txt.j2", settings=settings, number=inbound_id),
               inbound_id=inbound_id, in_reply_to=in_reply_to)
