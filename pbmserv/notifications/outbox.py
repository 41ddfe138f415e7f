"""Queueing outgoing mail: rows written in the caller's transaction.  Only the
notifications queue mail (they alone decide who is told what; an import contract in
pyproject.toml holds every other module off this one).

No address gets more than ``mails_per_address_hour`` mails in an hour, nor more than
``replies_per_sender_hour`` replies to its own mails: the mails beyond are held (never
dropped) and, an hour after the first of them, go out folded into one mail that says
why (pbmserv.notifications.held, run by the worker).  An address is counted in one form, lower case
and without its ``+tag`` (``address_key``): ``rv+1@`` and ``RV+2@`` are one mailbox.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from email.utils import formataddr

from sqlalchemy import bindparam, func, insert, or_, select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.status import AnswerKind, OutboxStatus
from pbmserv.mail.addresses import address_key, base_address, tag_mark, tag_of
from pbmserv.notifications.subjects import our_subject
from pbmserv.render import render
from pbmserv.service.accounts import has_account

#: a queued mail: a row written and not held as an object (the outbox is written for
#: every mail the server answers)
OUTBOX_INSERT = insert(OutboxMessage).returning(OutboxMessage.id)
_COUNTED = (OutboxStatus.PENDING, OutboxStatus.SENT, OutboxStatus.FAILED)
#: mails and replies to an address in the last hour (held ones not counted), read
#: from the index ix_outbox_recent alone (the statuses as equalities: SQLAlchemy
#: expands an IN list of constants again at every run)
_RECENT = (select(func.count(), func.count(OutboxMessage.in_reply_to))
           .where(OutboxMessage.to_key == bindparam("to"),
                  OutboxMessage.created_at > bindparam("since"),
                  or_(*(OutboxMessage.status == status for status in _COUNTED))))
#: when the mails held for an address go out
_RELEASE = (select(func.min(OutboxMessage.next_attempt_at))
            .where(OutboxMessage.to_key == bindparam("to"),
                   OutboxMessage.status == OutboxStatus.HELD))
HOUR = timedelta(hours=1)
#: the longest Subject stored
MAX_SUBJECT = 255


def new_message_id(settings: Settings) -> str:
    return f"<{uuid.uuid4().hex}@{settings.domain}>"


def queue_mail(session: Session, settings: Settings, *, to: str, subject: str, body: str,
               inbound_id: int | None = None, in_reply_to: str | None = None,
               reply_to: str | None = None, html: str | None = None,
               secret: bool = False, listed: tuple[str, str] | None = None,
               cause: str | None = None, kind: AnswerKind | None = None,
               alert: int | None = None, asked: bool = False) -> int:
    """Queue one mail; returns its outbox id.  ``html``: the same mail as HTML, sent
    beside the text as multipart/alternative.  Where the mailbox has no sub-addresses
    (``subaddressing`` off), a ``pbmserv+TAG@host`` Reply-To becomes the plain address
    with ``[TAG]`` in its name, and the Subject carries ``[TAG]`` too: a reply keeps
    one or the other.  ``secret``: the body holds a live secret (a reset code): it is
    blanked once the mail is sent.  ``listed``: (List-Id, unsubscribe tag) of a mail
    people subscribe to (pbmserv.notifications.lists).  ``cause``: the key of the
    sender whose mail makes this one for someone who did not ask for it (counted by
    ``mails_to_others_per_hour``; nothing when it is the sender's own address);
    ``kind``: a reply counted by ``refusals_per_address_day``; ``alert``: the incident
    (or report) a mail to the administrator is about.  ``asked``: the mail answers its
    reader's own mail that proved their account (the reply to a player's own command,
    a bot's move on their board): it counts toward the hourly limits but is never
    held by them.  The first mail held for an account's address in its hour is
    announced at once (``held_notice.txt.j2``): until when, and why."""
    if reply_to and not settings.subaddressing:
        reply_to, subject = _tag_outside_address(settings, reply_to, subject)
    now = utcnow()
    status, due = OutboxStatus.PENDING, now
    key = address_key(to)
    total, replies = session.execute(_RECENT, {"to": key, "since": now - HOUR}).one()
    too_many_replies = in_reply_to is not None and replies >= settings.replies_per_sender_hour
    if not asked and (total >= settings.mails_per_address_hour or too_many_replies):
        status = OutboxStatus.HELD  # folded into one mail when its hour is up
        release = session.scalar(_RELEASE, {"to": key})
        due = release or now + HOUR
        if release is None and has_account(session, to):  # the first held: a player is
            # told at once (not an address that is no account's: its mail may be forged)
            _announce(session, settings, to, key, due, replies=too_many_replies,
                      inbound_id=inbound_id)
    return int(session.execute(OUTBOX_INSERT, {
        "inbound_id": inbound_id, "created_at": now, "message_id": new_message_id(settings),
        "to_addr": to, "to_key": key, "subject": subject[:MAX_SUBJECT], "body": body,
        "in_reply_to": in_reply_to, "reply_to": reply_to, "html_body": html,
        "blank_after_send": secret,
        "list_id": listed[0] if listed else None, "unsubscribe": listed[1] if listed else None,
        "status": status, "attempts": 0, "next_attempt_at": due,
        "cause_key": cause if cause and cause != key else None, "answer_kind": kind,
        "alert_id": alert,
    }).scalar_one())


def _announce(session: Session, settings: Settings, to: str, key: str, until: datetime, *,
              replies: bool, inbound_id: int | None) -> None:
    """Tell ``to`` that mail to it is held until ``until`` (``replies``: by the limit
    of replies to one sender), once an hour at most (only the first held mail of an
    hour calls this)."""
    now = utcnow()
    session.execute(OUTBOX_INSERT, {
        "inbound_id": inbound_id, "created_at": now, "message_id": new_message_id(settings),
        "to_addr": to, "to_key": key,
        "subject": our_subject(settings, f"mail held until {until:%H:%M} UTC"),
        "body": render("held_notice.txt.j2", settings=settings, until=until,
                       replies=replies),
        "status": OutboxStatus.PENDING, "attempts": 0, "next_attempt_at": now})


def _tag_outside_address(settings: Settings, reply_to: str, subject: str) -> tuple[str, str]:
    tag = tag_of(reply_to, settings.addresses)
    if not tag:
        return reply_to, subject
    mark = tag_mark(tag)
    named = formataddr((f"{settings.server_name} {mark}", base_address(reply_to)), "utf-8")
    return named, f"{subject[:MAX_SUBJECT - len(mark) - 1]} {mark}"
