"""Mail held back by the hourly limits (pbmserv.notifications.outbox) goes out folded
into one mail per address when its hour is up (run by the worker's timers)."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, OutboxMessage, User
from pbmserv.db.status import OutboxStatus
from pbmserv.games import ENGINES
from pbmserv.mail.addresses import marked_tag, tag_of
from pbmserv.notifications.outbox import HOUR, OUTBOX_INSERT, new_message_id
from pbmserv.notifications.views import status_line
from pbmserv.render import render
from pbmserv.service.boards import engine_of, open_request_id
from pbmserv.service.reply_tokens import read_token, server_secret

#: the most held mails folded into one mail (more: the rest in the next one)
FOLD_MOST = 50


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
        session.execute(OUTBOX_INSERT, {
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


#: the board a board mail's (or a nag's) Subject names (subjects/board.txt.j2)
_BOARD_SUBJECT = re.compile(r"(?:New |Nag: )?(.+?) Board ([0-9]{1,10})\b")


def out_of_date(session: Session, settings: Settings, secret: bytes,
                mail: OutboxMessage) -> str:
    """How the board a held mail shows stands now, if it moved on since the mail was
    made (the mail's board, and its reply address if it has one, are out of date);
    "" if it did not, or the mail shows no board."""
    tag = None
    if mail.reply_to:
        tag = tag_of(mail.reply_to, settings.addresses) or marked_tag(mail.reply_to)

    def changes(user_id: int) -> int:
        user = session.get(User, user_id)
        return 0 if user is None else user.credential_changes

    token = None if not tag else read_token(secret, tag, changes)
    board = None
    if token is not None:
        board = session.get(Board, token.board_id)
    else:
        named = _BOARD_SUBJECT.match(mail.subject)
        engine = next((e for e in ENGINES.values() if named and e.title == named.group(1)),
                      None)
        if named is not None and engine is not None:
            board = session.scalar(select(Board).where(
                Board.game == engine.name, Board.number == int(named.group(2))))
    if board is None:
        return ""
    if token is not None:
        moved = (board.finished or board.takebacks != token.takebacks
                 or board.ply + 1 != token.ply
                 or (bool(token.request) and open_request_id(session, board) != token.request))
    else:
        moved = board.updated_at > mail.created_at
    if not moved:
        return ""
    engine = engine_of(board)
    return render("held_stale.txt.j2", engine=engine, board=board, by_reply=token is not None,
                  status=status_line(engine, board)).strip()
