"""Processing stored mail: parse, run its commands, queue the replies.

Each message is one transaction: the board changes and the outbox rows commit
together or not at all.  A message whose processing hits a bug is marked
``failed`` (kept, with the traceback, for the admin to inspect and replay).
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from pbmserv.commands import is_command, lookup
from pbmserv.commands.base import CommandError, Context, Invocation, Result
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import InboundMessage
from pbmserv.db.session import Database
from pbmserv.mail.parse import ParsedMail, parse_message
from pbmserv.outbox import queue_mail
from pbmserv.render import render
from pbmserv.summary import board_summary

log = logging.getLogger(__name__)
TRANSIENT_RETRIES = 5


@dataclass
class Section:
    """One command's part of the reply."""

    command: str
    ok: bool
    text: str
    subject: str


def run_line(ctx: Context, line: str) -> Section:
    """Run one command line in its own savepoint: a refused command changes nothing."""
    mails_before = len(ctx.board_mails)
    words = line.split()
    # until the command is known, quote only its first words: the rest may hold a password
    quoted = " ".join(words[:2]) + (" ..." if len(words) > 2 else "")
    inv: Invocation | None = None
    try:
        cmd, inv = lookup(line)
        quoted = cmd.masked(inv)
        cmd.check_arity(inv)
        with ctx.session.begin_nested():
            result: Result = cmd.run(ctx, inv)
        return Section(quoted, True, result.text, result.subject or f"pbmserv: {inv.verb}")
    except CommandError as exc:
        del ctx.board_mails[mails_before:]
        game = inv.game if inv is not None else None
        summary = None
        if exc.board is not None and game is not None:
            ctx.session.refresh(exc.board)
            summary = board_summary(ctx.session, game, exc.board)
        usage = None
        if exc.usage and inv is not None:
            usage = lookup(line)[0].usage(game.name if game else "game")
        text = render("error.txt.j2", message=exc.message, usage=usage, summary=summary,
                      hint=exc.hint)
        if exc.board is not None and game is not None:
            subject = f"{game.title} Board {exc.board.number} Error"
        else:
            subject = "pbmserv: error"
        return Section(quoted, False, text, subject)


def handle(session: Session, settings: Settings, inbound: InboundMessage) -> None:
    """Run one stored message (inside the caller's transaction)."""
    mail: ParsedMail = parse_message(inbound.raw, settings.addresses, inbound.envelope_from,
                                     is_command)
    if mail.silent_reason:
        inbound.status = "ignored"
        inbound.error = mail.silent_reason
        log.info("message %s ignored: %s", inbound.id, mail.silent_reason)
        return
    ctx = Context(session, settings, sender=mail.reply_to,
                  comment=mail.comment if mail.source != "multiple" else "")
    sections = [run_line(ctx, line) for line in mail.commands]
    if not sections:
        sections = [Section("", False, render("no_command.txt.j2"), "pbmserv: no command found")]
    if len(sections) == 1:
        subject = sections[0].subject
    else:
        failed = sum(not s.ok for s in sections)
        subject = f"pbmserv: {len(sections)} commands" + (f", {failed} refused" if failed else "")
    body = render("reply.txt.j2", sections=sections, settings=settings)
    queue_mail(session, settings, to=mail.reply_to, subject=subject, body=body,
               inbound_id=inbound.id, in_reply_to=mail.message_id)
    queued = 1
    for bm in ctx.board_mails:
        if bm.to != mail.reply_to or len(sections) > 1:
            queue_mail(session, settings, to=bm.to, subject=bm.subject, body=bm.body,
                       inbound_id=inbound.id)
            queued += 1
    inbound.status = "done"
    # what was asked is logged by verb only: command lines may hold passwords
    log.info("message %s from %s: %s; %d mail(s) queued", inbound.id, mail.reply_to,
             ", ".join(" ".join(s.command.split()[:2]) + ("" if s.ok else " (refused)")
                       for s in sections), queued)


def process_message(db: Database, settings: Settings, inbound_id: int) -> str:
    """Process one stored message once; returns its status afterwards."""
    for attempt in range(TRANSIENT_RETRIES):
        try:
            with db.transaction() as session:
                claimed = session.execute(
                    update(InboundMessage)
                    .where(InboundMessage.id == inbound_id, InboundMessage.status == "new")
                    .values(processed_at=utcnow())
                ).rowcount  # type: ignore[attr-defined]
                if not claimed:
                    return "skipped"
                inbound = session.get(InboundMessage, inbound_id)
                assert inbound is not None
                handle(session, settings, inbound)
                return inbound.status
        except (OperationalError, IntegrityError) as exc:
            log.warning("message %s: transient database error (try %d): %s",
                        inbound_id, attempt + 1, type(exc).__name__)
            last = traceback.format_exc()
        except Exception:
            last = traceback.format_exc()
            break
    log.error("message %s could not be processed; kept as failed", inbound_id)
    with db.transaction() as session:
        marked = session.execute(
            update(InboundMessage)
            .where(InboundMessage.id == inbound_id, InboundMessage.status == "new")
            .values(status="failed", error=last[-8000:], processed_at=utcnow())
        ).rowcount  # type: ignore[attr-defined]
        inbound = session.get(InboundMessage, inbound_id)
        if marked and inbound is not None:
            mail = parse_message(inbound.raw, settings.addresses, inbound.envelope_from)
            if not mail.silent_reason:
                queue_mail(session, settings, to=mail.reply_to,
                           subject="pbmserv: your mail is held for the administrator",
                           body=render("failed.txt.j2", settings=settings, number=inbound_id),
                           inbound_id=inbound_id, in_reply_to=mail.message_id)
    return "failed"


def pending_ids(db: Database, limit: int = 500) -> list[int]:
    with db.transaction() as session:
        return list(session.scalars(
            select(InboundMessage.id).where(InboundMessage.status == "new")
            .order_by(InboundMessage.id).limit(limit)
        ))


def process_pending(db: Database, settings: Settings) -> int:
    """Process every stored message not yet processed, oldest first."""
    done = 0
    while ids := pending_ids(db):
        for inbound_id in ids:
            process_message(db, settings, inbound_id)
            done += 1
    return done
