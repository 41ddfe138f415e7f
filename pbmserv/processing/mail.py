"""One parsed mail: run its commands, queue the reply and the mails they call for.

Everything happens in the caller's transaction (see pbmserv.processing.batches):
the board changes and the outbox rows commit together or not at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.bounces.handling import handle_bounce
from pbmserv.bounces.scoring import resume
from pbmserv.commands import REGISTRY, lookup
from pbmserv.commands.args import shown
from pbmserv.commands.base import (
    MASK,
    Command,
    Context,
    Invocation,
    Result,
    mask_words,
)
from pbmserv.commands.play import reply_move
from pbmserv.commands.registry import is_command
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board
from pbmserv.db.status import AnswerKind, InboundStatus
from pbmserv.games import ENGINES, get_engine
from pbmserv.i18n import speaking
from pbmserv.mail.addresses import address_key
from pbmserv.mail.parse import ParsedMail
from pbmserv.notifications import Notifier
from pbmserv.notifications.answered import Answered, answered
from pbmserv.notifications.replies import BoardAnswer, Section, folded, pin
from pbmserv.notifications.subjects import our_subject
from pbmserv.notifications.unprocessed import tell_refused
from pbmserv.processing.answers import (
    DAY,
    account_address,
    answer_address,
    holds_command,
    is_last,
    kind_of,
    over_limit,
    strangers_noise,
    welcome_refused,
)
from pbmserv.processing.at_rest import secret_words
from pbmserv.render import render
from pbmserv.service.accounts import has_account
from pbmserv.service.errors import PlayerError
from pbmserv.service.games import GameService
from pbmserv.service.limits import MailsToOthers
from pbmserv.service.mail_prefs import language_of
from pbmserv.service.throttle import record_failure
from pbmserv.unsubscribe.by_mail import handle_unsubscribe

log = logging.getLogger(__name__)
TRANSIENT_RETRIES = 5
#: a command line longer than this is refused unread
MAX_LINE = 1000


#: what a line that is no command is quoted as, to a stranger
NOT_A_COMMAND = "(a line that is not a command)"
#: a quoted word in an error message: 'word' or "word"
_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
#: an error message may quote this much of a word (see commands.args.shown)
_SHOWN_PREFIX = 20


def quote_head(line: str, *, stranger: bool = False) -> str:
    """What may be quoted of a line that was not understood: its verb (and game); of a
    line that is no command, its first word (nothing of it to a ``stranger``)."""
    words = line.split()
    try:
        inv = lookup(line)[1]
    except PlayerError:
        if stranger:
            return NOT_A_COMMAND
        return words[0][:40] + (" ..." if len(words) > 1 else "") if words else ""
    head = f"{inv.game.name} {inv.verb}" if inv.game else inv.verb
    return head + (" ..." if inv.args else "")


def unquoted(message: str, words: Collection[str]) -> str:
    """``message`` without the ``words`` it quotes ('word', or the start of a long one,
    becomes '...'), and without any longer one of them standing alone."""
    def blank(found: re.Match[str]) -> str:
        inner = found.group(1) if found.group(1) is not None else found.group(2)
        bare = inner.removesuffix("...")
        if bare and any(w == bare or (len(bare) >= _SHOWN_PREFIX and w.startswith(bare))
                        for w in words):
            return "'...'"
        return found.group(0)

    message = _QUOTED.sub(blank, message)
    return mask_words(message, {w for w in words if len(w) >= 6 and not w.isdigit()})


def is_stranger(ctx: Context) -> bool:
    """Whether the mail comes from an address that is no open account's (asked once)."""
    if ctx.stranger is None:
        ctx.stranger = not has_account(ctx.session, ctx.sender)
    return ctx.stranger


class _NotProved(Exception):
    """A line of a list's mail that proved no account: undone (see run_line)."""


def run_line(ctx: Context, line: str, *, proving: bool = False) -> Section:
    """Run one command line in its own savepoint: a refused command changes nothing.
    ``proving`` (a list's mail): a line that does not prove its account, by its
    password, is undone as well, whatever it did, and says so."""
    ctx.events_mark = len(ctx.service.events)
    logins_before = ctx.logins
    secret_reply = ctx.secret_reply
    # until the command is known to be well formed, quote only its verb: any other
    # word may be a password
    quoted = quote_head(line)
    cmd: Command | None = None
    inv: Invocation | None = None
    try:
        if len(line) > MAX_LINE:
            raise PlayerError(f"the command is longer than {MAX_LINE} characters")
        cmd, inv = lookup(line)
        cmd.check_arity(inv)
        with ctx.session.begin_nested():
            result: Result = cmd.run(ctx, inv)
            if proving and ctx.logins == logins_before:
                raise _NotProved
        return Section(cmd.masked(inv), True, result.text, result.subject or (
            None if result.answer else our_subject(ctx.settings, inv.verb)), result.board,
            answer=result.answer)
    except _NotProved:
        del ctx.service.events[ctx.events_mark:]
        ctx.secret_reply = secret_reply
        assert cmd is not None and inv is not None
        return Section(cmd.masked(inv), False, render("list_unproved.txt.j2",
                                                      settings=ctx.settings),
                       our_subject(ctx.settings, "not carried out"))
    except PlayerError as exc:
        hidden: set[str] = set()
        if is_stranger(ctx):
            # to an address that is no account's (a forged From, it may be), nothing
            # of the line but its verb: the reply must reflect nothing to a victim
            quoted = quote_head(line, stranger=True)
            head = 2 if inv is not None and inv.game is not None else 1
            hidden = set(line.split()[head if inv is not None else 0:])
            if exc.owner is not None and exc.owner[1] == ctx.sender.lower():
                hidden.discard(exc.owner[0])  # their own userid, to their own address
        elif (cmd is not None and inv is not None and not exc.verb_only
              and (ctx.logins > logins_before or not cmd.secrets(inv))):
            quoted = cmd.masked(inv)  # its words were in order: the password is masked
        elif inv is not None and cmd is not None:
            # not understood, any word may be the password; else the password's place
            hidden = set(inv.args) if exc.verb_only else {
                inv.args[i] for i in cmd.secrets(inv) if i < len(inv.args)}
        game = inv.game.name if inv is not None and inv.game is not None else "game"
        usage = cmd.usage(game) if exc.usage and cmd else None
        return refusal(ctx, exc, quoted, usage, hidden)


def refusal(ctx: Context, exc: PlayerError, quoted: str, usage: str | None,
            hidden: Collection[str] = ()) -> Section:
    """The reply section of a refused command (its savepoint rolled back already);
    the message quotes none of the ``hidden`` words."""
    del ctx.service.events[ctx.events_mark:]
    if exc.failed_keys:  # charged outside the savepoint, so that it sticks
        record_failure(ctx.session, exc.failed_keys, utcnow())
    engine = get_engine(exc.board.game) if exc.board is not None else None
    message = unquoted(exc.message, hidden) if hidden else exc.message
    said = {"message": message, "usage": usage, "hint": exc.hint}
    if exc.board is None or engine is None:
        return Section(quoted, False, render("error.txt.j2", summary=None, **said),
                       our_subject(ctx.settings, "error"), exc.board)
    ctx.session.refresh(exc.board)
    # the board as it stands is shown below the error (from its view, with the reply)
    return Section(quoted, False, "", f"{engine.title} Board {exc.board.number} Error",
                   exc.board, answer=BoardAnswer("error.txt.j2", said))


def run_reply(ctx: Context, tag: str, move: str) -> Section:
    """A reply to a move-by-reply address: the move of the player it was sent to."""
    ctx.events_mark = len(ctx.service.events)
    quoted = f"(your reply) {move[:60]}"
    try:
        with ctx.session.begin_nested():
            result = reply_move(ctx, tag, move)
        return Section(quoted, True, result.text, result.subject or (
            None if result.answer else our_subject(ctx.settings, "move")), result.board,
            answer=result.answer)
    except PlayerError as exc:
        return refusal(ctx, exc, quoted, None)


def board_reply_section(ctx: Context, game: str, number: int, *,
                        by_reply: bool = False, kind: str = "",
                        first_line: str = "") -> Section:
    """A reply to a board mail whose Subject was left as it was, with no command in
    the body: how to answer with a move (``by_reply``: it came to a move-by-reply
    address, where the move alone will do), and the board.  ``kind``: "chat" for a
    reply to a chat message (how to answer in the chat, too); ``first_line``: the
    body's first line, which was no command (its first word is quoted)."""
    engine = get_engine(game)
    assert engine is not None
    board = ctx.session.scalar(select(Board).where(Board.game == engine.name,
                                                   Board.number == number))
    subject = f"{engine.title} Board {number}: how to move"
    words = first_line.split()
    said = {"number": number, "by_reply": by_reply, "chat": kind == "chat",
            # its first word only: any other may be a password
            "first_word": shown(words[0]) if words else "", "more": len(words) > 1}
    if board is None:
        return Section("", False, render("board_reply.txt.j2", engine=engine, board=None,
                                         summary=None, **said), subject)
    return Section("", False, "", subject, board, answer=BoardAnswer("board_reply.txt.j2",
                                                                     said))


def handle(session: Session, settings: Settings, inbound_id: int,
           mail: ParsedMail, secrets: set[str] | None = None) -> InboundStatus:
    """Run one parsed mail (inside the caller's transaction); returns its new status.
    ``secrets`` gets the passwords and codes the mail held (to mask in its stored
    copy).  A mail left unanswered, a bounce or an unsubscribe leaves why in
    ``mail.silent_reason`` (kept with the mail: ``pbmserv inbox list``).  The reply
    speaks the language the sender's account chose, else the one the mail's
    Content-Language names (English if neither); the mails to others speak theirs."""
    if mail.bounce is not None or mail.unsubscribe_tag is not None:
        return _handle(session, settings, inbound_id, mail, secrets)
    with speaking(language_of(session, mail.reply_to) or mail.language):
        return _handle(session, settings, inbound_id, mail, secrets)


def _handle(session: Session, settings: Settings, inbound_id: int,
            mail: ParsedMail, secrets: set[str] | None) -> InboundStatus:
    if mail.bounce is not None:
        status, mail.silent_reason = handle_bounce(session, settings, inbound_id, mail)
        return status
    if mail.unsubscribe_tag is not None:
        status, mail.silent_reason = handle_unsubscribe(session, settings, inbound_id, mail)
        return status
    # a list's mail: carried out as far as it proves its account, never answered to
    # its sender (pbmserv.processing.answers)
    listed = bool(mail.via_list)
    if listed:
        why_not = (f"not read ({mail.refusal})" if mail.refusal
                   else "" if holds_command(mail) else "no command in it")
        if why_not:
            mail.silent_reason += f"; {why_not}, nothing carried out, not answered"
            log.info("message %s ignored: %s", inbound_id, mail.silent_reason)
            return InboundStatus.IGNORED
    elif not mail.silent_reason:
        mail.silent_reason = strangers_noise(session, mail)
    if mail.silent_reason and not listed:
        log.info("message %s ignored: %s", inbound_id, mail.silent_reason)
        return InboundStatus.IGNORED
    now = utcnow()
    ctx = Context(session, settings, sender=mail.reply_to, service=GameService(session),
                  commands=REGISTRY, inbound_id=inbound_id, reply_tag=mail.reply_tag,
                  named_reply_to=mail.named_reply_to, language=mail.language,
                  raw_comment=mail.comment if mail.source != "multiple" else "",
                  others=MailsToOthers(address_key(mail.reply_to),
                                       settings.mails_to_others_per_mail,
                                       settings.mails_to_others_per_hour))
    welcome = not listed and not mail.refusal and not holds_command(mail) and is_stranger(ctx)
    if welcome:
        mail.silent_reason = welcome_refused(session, settings, mail, now)
        if mail.silent_reason:
            log.info("message %s ignored: %s", inbound_id, mail.silent_reason)
            return InboundStatus.IGNORED
    # the player writes from an address whose mail bounced: it is alive again
    resumed = None if listed else resume(session, mail.from_addr)
    if resumed is not None:
        log.info("message %s: %s mails the server again; mail to it resumes", inbound_id,
                 resumed.address)
    if mail.refusal:
        done = answered(session, mail.reply_to, now - DAY)
        mail.silent_reason = over_limit(settings, done)
        if mail.silent_reason:
            log.info("message %s from %s refused (%s), %s", inbound_id, mail.reply_to,
                     mail.refusal, mail.silent_reason)
            return InboundStatus.IGNORED
        tell_refused(session, settings, to=mail.reply_to, refusal=mail.refusal,
                     last=_last_answer(settings, done), inbound_id=inbound_id,
                     in_reply_to=mail.message_id)
        log.info("message %s from %s refused: %s", inbound_id, mail.reply_to, mail.refusal)
        return InboundStatus.DONE
    if welcome:
        sections = [welcome_section(ctx)]
    elif mail.reply_tag and mail.reply_move:
        sections = [run_reply(ctx, mail.reply_tag, mail.reply_move)]
    elif our_mail_replied(settings, mail):
        sections = [Section("", False, render(
            "ours_reply.txt.j2", settings=settings, digest="digest" in mail.subject.lower()),
            our_subject(settings, "no command found"))]
    else:
        sections = []
        for line in mail.commands:
            pin(session, sections)  # the boards shown so far, as the commands left them
            sections.append(run_line(ctx, line, proving=listed))
    if secrets is not None:
        secrets.update(ctx.passwords, secret_words(mail.commands))
    if listed and not ctx.proved:
        mail.silent_reason += ("; no line of it proved its account (a right password, "
                               "or a reply address), nothing carried out, not answered")
        log.info("message %s ignored: %s", inbound_id, mail.silent_reason)
        return InboundStatus.IGNORED
    if mail.board_reply is not None and not sections:
        sections = [board_reply_section(ctx, *mail.board_reply,
                                        by_reply=mail.reply_tag is not None,
                                        kind=mail.board_reply_kind,
                                        first_line=mail.first_line)]
    if not sections:
        sections = [Section("", False, render("no_command.txt.j2"),
                            our_subject(settings, "no command found"))]
    sections = folded(sections)

    def scrub(text: str) -> str:  # the last guard: no password of this mail goes out
        return mask_words(text, ctx.passwords)

    answer_to = account_address(mail, ctx.proved) if listed else answer_address(mail, ctx.proved)
    notifier = Notifier(session, settings, inbound_id=inbound_id,
                        skip_addresses=(answer_to,), scrub=scrub,
                        cause=address_key(mail.reply_to))
    refused = not any(s.ok for s in sections)
    kind = AnswerKind.WELCOME if welcome else None if ctx.secret_reply else kind_of(
        refused, not refused and not ctx.proved and _stranger_now(ctx))
    last = None
    unanswered = ""
    if kind is not None:
        done = answered(session, answer_to, now - DAY)
        unanswered = over_limit(settings, done)
        last = _last_answer(settings, done)
    if listed:  # kept with the mail: what became of it (pbmserv inbox list)
        mail.silent_reason += (f"; carried out as {answer_to}'s"
                               + (f", {unanswered}" if unanswered else
                                  ", answered to that address alone"))
    else:
        mail.silent_reason = unanswered
    if unanswered:  # carried out (if anything was), not answered
        queued = notifier.notify(ctx.service.events)
        log.info("message %s from %s: %s; %d mail(s) queued", inbound_id, mail.reply_to,
                 mail.silent_reason, queued)
        return InboundStatus.DONE
    # the sections that show a board are rendered from its view, as its board mails are
    reply = notifier.reply(sections, reader=answer_to, resumed=resumed, last=last,
                           via_list=mail.via_list,
                           password_seen=listed and bool(ctx.passwords))
    notifier.send_reply(reply, to=answer_to, in_reply_to=mail.message_id,
                        secret=ctx.secret_reply, kind=kind,
                        # a player's own command, proved from their account's address
                        asked=address_key(answer_to) in ctx.proved)
    queued = 1 + notifier.notify(ctx.service.events)
    # what was asked is logged by verb only: command lines may hold passwords
    log.info("message %s from %s: %s; %d mail(s) queued%s", inbound_id, answer_to,
             ", ".join(" ".join(w for w in s.command.split()[:2] if w != MASK)
                       + ("" if s.ok else " (refused)") for s in sections), queued,
             f"; it came through a mailing list ({mail.via_list}): answered to the "
             "account's address alone" if listed else "")
    return InboundStatus.DONE


def our_mail_replied(settings: Settings, mail: ParsedMail) -> bool:
    """Whether the mail is a reply to one of the server's own mails (a digest, a
    notice: their Subjects begin with its name) with no command in it."""
    if mail.source != "subject" or mail.commands != [mail.subject]:
        return False
    name = settings.server_name.lower()
    subject = mail.subject.lower()
    return subject.startswith(name) and subject[len(name):len(name) + 1] in (":", " ") \
        and not is_command(mail.subject)


def _stranger_now(ctx: Context) -> bool:
    """Whether the sender has no account once the mail's commands ran (a 'confirm'
    makes one)."""
    ctx.stranger = None
    return is_stranger(ctx)


def _last_answer(settings: Settings, done: Answered) -> datetime | None:
    """Until when the address gets no more counted answers, if this one is its last."""
    if not is_last(settings, done):
        return None
    return (done.first or utcnow()) + DAY


def welcome_section(ctx: Context) -> Section:
    """The answer to a stranger's mail that holds no command: what the server is and
    how to begin, said once a day (short: the From may be forged)."""
    games = ", ".join(e.title for e in ENGINES.values())
    return Section("", False, render("welcome.txt.j2", settings=ctx.settings, games=games),
                   our_subject(ctx.settings, "how to begin"))
