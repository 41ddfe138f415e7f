"""Queueing outgoing mail: rows written in the caller's transaction.

No address gets more than ``mails_per_address_hour`` mails in an hour, nor more than
``replies_per_sender_hour`` replies to its own mails: the mails beyond are held (never
dropped) and, an hour after the first of them, go out folded into one mail that says
why (``fold_held``, run by the worker).  An address is counted in one form, lower case
and without its ``+tag`` (``address_key``): ``rv+1@`` and ``RV+2@`` are one mailbox.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import formataddr

from sqlalchemy import bindparam, func, insert, or_, select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, OutboxMessage, User
from pbmserv.db.status import AnswerKind, OutboxStatus
from pbmserv.mail.addresses import address_key, base_address, marked_tag, tag_mark, tag_of
from pbmserv.notifications.views import status_line
from pbmserv.render import render
from pbmserv.service.accounts import has_account
from pbmserv.service.boards import engine_of, open_request_id
from pbmserv.service.reply_tokens import read_token, server_secret

#: a queued mail: a row written and not held as an object (the outbox is written for
#: every mail the server answers)
_INSERT = insert(OutboxMessage).returning(OutboxMessage.id)
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
#: the most held mails folded into one mail (more: the rest in the next one)
FOLD_MOST = 50
#: the longest Subject stored
MAX_SUBJECT = 255


def new_message_id(settings: Settings) -> str:
    return f"<{uuid.uuid4().hex}@{settings.domain}>"


def our_subject(settings: Settings, what: str, *, colon: bool = True) -> str:
    """The Subject of a mail of the server's own (a reply, an account's news), headed
    by the ``name`` setting: "Club games: error", "Club games help"."""
    return render("subjects/ours.txt.j2", server=settings.server_name, what=what,
                  colon=colon).strip()


def queue_mail(session: Session, settings: Settings, *, to: str, subject: str, body: str,
               inbound_id: int | None = None, in_reply_to: str | None = None,
               reply_to: str | None = None, html: str | None = None,
               secret: bool = False, listed: tuple[str, str] | None = None,
               cause: str | None = None, kind: AnswerKind | None = None,
               asked: bool = False) -> int:
    """Queue one mail; returns its outbox id.  ``html``: the same mail as HTML, sent
    beside the text as multipart/alternative.  Where the mailbox has no sub-addresses
    (``subaddressing`` off), a ``pbmserv+TAG@host`` Reply-To becomes the plain address
    with ``[TAG]`` in its name, and the Subject carries ``[TAG]`` too: a reply keeps
    one or the other.  ``secret``: the body holds a live secret (a reset code): it is
    blanked once the mail is sent.  ``listed``: (List-Id, unsubscribe tag) of a mail
    people subscribe to (pbmserv.notifications.lists).  ``cause``: the key of the
    sender whose mail makes this one for someone who did not ask for it (counted by
    ``mails_to_others_per_hour``; nothing when it is the sender's own address);
    ``kind``: a reply counted by ``refusals_per_address_day``.  ``asked``: the mail
    answers its reader's own mail that proved their account (the reply to a player's
    own command, a bot's move on their board): it counts toward the hourly limits
    but is never held by them.  The first mail held for an account's address in its
    hour is announced at once (``held_notice.txt.j2``): until when, and why."""
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
    return int(session.execute(_INSERT, {
        "inbound_id": inbound_id, "created_at": now, "message_id": new_message_id(settings),
        "to_addr": to, "to_key": key, "subject": subject[:MAX_SUBJECT], "body": body,
        "in_reply_to": in_reply_to, "reply_to": reply_to, "html_body": html,
        "blank_after_send": secret,
        "list_id": listed[0] if listed else None, "unsubscribe": listed[1] if listed else None,
        "status": status, "attempts": 0, "next_attempt_at": due,
        "cause_key": cause if cause and cause != key else None, "answer_kind": kind,
    }).scalar_one())


def _announce(session: Session, settings: Settings, to: str, key: str, until: datetime, *,
              replies: bool, inbound_id: int | None) -> None:
    """Tell ``to`` that mail to it is held until ``until`` (``replies``: by the limit
    of replies to one sender), once an hour at most (only the first held mail of an
    hour calls this)."""
    now = utcnow()
    session.execute(_INSERT, {
        "inbound_id": inbound_id, "created_at": now, "message_id": new_message_id(settings),
        "to_addr": to,
        "to_key": key, "subject": our_subject(settings, f"mail held until {until:%H:%M} UTC"),
        "body": render("held_notice.txt.j2", settings=settings, until=until,
                       replies=replies),
        "status": OutboxStatus.PENDING, "attempts": 0, "next_attempt_at": now})


@dataclass(frozen=True)
class Answered:
    """The replies to one address since a time that ``refusals_per_address_day``
    counts (those with an ``answer_kind``)."""

    count: int
    #: of them, welcomes (to a stranger's mail with no command)
    welcomes: int
    #: when the first of them was made (None: there is none)
    first: datetime | None


_ANSWERED = (select(func.count(), func.count(OutboxMessage.id).filter(
                 OutboxMessage.answer_kind == AnswerKind.WELCOME),
                    func.min(OutboxMessage.created_at))
             .where(OutboxMessage.to_key == bindparam("to"),
                    OutboxMessage.created_at > bindparam("since"),
                    OutboxMessage.answer_kind.is_not(None)))


def answered(session: Session, address: str, since: datetime) -> Answered:
    """The counted replies to ``address`` (any spelling or +tag of it) since ``since``."""
    count, welcomes, first = session.execute(
        _ANSWERED, {"to": address_key(address), "since": since}).one()
    return Answered(int(count), int(welcomes), first)


def _tag_outside_address(settings: Settings, reply_to: str, subject: str) -> tuple[str, str]:
    tag = tag_of(reply_to, settings.addresses)
    if not tag:
        return reply_to, subject
    mark = tag_mark(tag)
    named = formataddr((f"{settings.server_name} {mark}", base_address(reply_to)), "utf-8")
    return named, f"{subject[:MAX_SUBJECT - len(mark) - 1]} {mark}"


def fold_held(session: Session, settings: Settings, now: datetime | None = None) -> int:
    """Send the mails held for an address whose hour is up, folded into one mail per
    address (at most FOLD_MOST in one: the rest an hour later); returns how many
    folded mails were queued."""
    now = now or utcnow()
    held = list(session.scalars(
        select(OutboxMessage).where(OutboxMessage.status == OutboxStatus.HELD,
                                    OutboxMessage.next_attempt_at <= now)
        .order_by(OutboxMessage.to_key, OutboxMessage.id).limit(1000)))
    by_address: dict[str, list[OutboxMessage]] = {}
    for mail in held:
        by_address.setdefault(mail.to_key, []).append(mail)
    secret = server_secret(session, settings.secret)
    for key, mails in by_address.items():
        folded, later = mails[:FOLD_MOST], mails[FOLD_MOST:]
        body = render("held.txt.j2", mails=folded, settings=settings,
                      stale=[out_of_date(session, settings, secret, m) for m in folded])
        session.execute(_INSERT, {
            "created_at": now, "message_id": new_message_id(settings),
            # to the address of the newest of them (a +tag of the mailbox, maybe)
            "to_addr": folded[-1].to_addr, "to_key": key,
            "subject": f"{settings.server_name}: {len(folded)} mails held for you this hour",
            "body": body,
            # a live code in one of them: the fold is blanked once sent, like its part
            "blank_after_send": any(m.blank_after_send for m in folded),
            "status": OutboxStatus.PENDING, "attempts": 0, "next_attempt_at": now})
        for mail in folded:
            mail.status = OutboxStatus.FOLDED
        for mail in later:
            mail.next_attempt_at = now + HOUR
    return len(by_address)


def out_of_date(session: Session, settings: Settings, secret: bytes,
                mail: OutboxMessage) -> str:
    """How the board a held mail asked its reader to move on (or to answer on)
    stands now, if it moved on since the mail was made: the mail's board and reply
    address are out of date; "" if it did not, or the mail asked nothing."""
    tag = None
    if mail.reply_to:
        tag = tag_of(mail.reply_to, settings.addresses) or marked_tag(mail.reply_to)

    def changes(user_id: int) -> int:
        user = session.get(User, user_id)
        return 0 if user is None else user.credential_changes

    token = None if not tag else read_token(secret, tag, changes)
    if token is None:
        # a reply address a new password revoked, or none: nothing to say
        return ""
    board = session.get(Board, token.board_id)
    if board is None:
        return ""
    current = (not board.finished and board.takebacks == token.takebacks
               and board.ply + 1 == token.ply
               and (not token.request or open_request_id(session, board) == token.request))
    if current:
        return ""
    engine = engine_of(board)
    return render("held_stale.txt.j2", engine=engine, board=board,
                  status=status_line(engine, board)).strip()
