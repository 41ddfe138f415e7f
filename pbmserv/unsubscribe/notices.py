"""Who is told what an unsubscribe did: the player it was for, at their own address
(never the sender: a mailbox provider may send the mail in the player's name), or
the sender when the address was none of ours."""

from __future__ import annotations

from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.subjects import our_subject
from pbmserv.render import render
from pbmserv.unsubscribe.changes import Unsubscribed


def confirmation(done: Unsubscribed, settings: Settings) -> tuple[str, str]:
    """(subject, body) of the mail that says what an unsubscribe did."""
    context = {"done": done, "settings": settings}
    return (render("subjects/unsubscribed.txt.j2", **context).strip(),
            render("unsubscribed.txt.j2", **context))


def tell_unsubscribed(session: Session, settings: Settings, done: Unsubscribed,
                      inbound_id: int) -> None:
    """Mail the player what the unsubscribe stopped (or that it was off already)."""
    subject, body = confirmation(done, settings)
    queue_mail(session, settings, to=done.user.email, subject=subject, body=body,
               inbound_id=inbound_id)


def tell_not_ours(session: Session, settings: Settings, to: str, inbound_id: int,
                  in_reply_to: str | None) -> None:
    """Answer a mail to an unsubscribe address this server did not make."""
    queue_mail(session, settings, to=to, subject=our_subject(settings, "not unsubscribed"),
               body=render("unsubscribe_invalid.txt.j2", settings=settings),
               inbound_id=inbound_id, in_reply_to=in_reply_to)
