"""The reply to a mail of commands: a section a command, put together in one mail.

A command that changed a board, or was refused on one, answers with a template and
plain values (``BoardAnswer``), not with text: its section is rendered from the
board's view as it stood when the command ran (``pin`` keeps that view when a later
command of the mail may change the board), together with the rest of the reply
(``compose``).  The view is the one the board's mails are rendered from, so a move's
reply and its board mails show one view, made once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from pbmserv.db.models import Board, User
from pbmserv.notifications.move_links import move_url
from pbmserv.notifications.notes import AnswerAsked, Note, answer_asked, notes_for
from pbmserv.notifications.subjects import our_subject
from pbmserv.notifications.views import BoardView, board_subject, board_view, summary_text
from pbmserv.notifications.words import words_text
from pbmserv.render import render
from pbmserv.service.boards import engine_of, player_of

if TYPE_CHECKING:
    from pbmserv.notifications import Notifier

#: what a reply needs beside its sections (the footer, a note of what is left out)
_REPLY_ROOM = 1024


@dataclass
class BoardAnswer:
    """What a section says of its board: ``template`` rendered with the board's view
    (as ``board``), its text summary (``summary``), the notes worded for ``reader``
    (``notes``), the game (``engine``), and the plain values of ``context``."""

    template: str
    context: dict[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    reader: User | None = None
    #: the section's subject is the board's own ("New ..." with ``new``) unless given
    new: bool = False
    #: the view shown, kept before a later command of the mail may change the board
    view: BoardView | None = None


@dataclass
class Section:
    """One command's part of the reply."""

    command: str
    ok: bool
    #: the text (a section with an ``answer`` gets it from the board's view)
    text: str
    #: the subject it suggests for the reply (None: the board's, from its view)
    subject: str | None
    #: the board the section shows, if one
    board: Board | None = None
    #: how many more lines of the mail were refused with the very same words
    repeats: int = 0
    answer: BoardAnswer | None = None


@dataclass(frozen=True)
class Reply:
    """The reply, ready to queue."""

    subject: str
    body: str
    #: the address that takes a move (or an answer) by reply, if one
    reply_to: str | None


def pin(session: Session, sections: list[Section]) -> None:
    """Keep the views of the boards that ``sections`` show as they stand now, before
    another command may change them."""
    for section in sections:
        answer, board = section.answer, section.board
        if answer is not None and answer.view is None and board is not None:
            answer.view = board_view(session, engine_of(board), board)


def _rendered(notifier: Notifier, section: Section) -> None:
    """The text and subject of a section that shows its board, from the board's view
    (and the board in words, for a reader who asked for it)."""
    answer, board = section.answer, section.board
    if answer is None or board is None:
        return
    engine = engine_of(board)
    view = answer.view or board_view(notifier.session, engine, board)
    summary = summary_text(view)
    reader = answer.reader
    # (the board's players' choices read with the reader's, in one query: the board
    # mail that follows to the others needs them)
    chosen = notifier.choices([reader, *(p.user for p in board.players)]).get(
        reader.id) if reader is not None else None
    if chosen is not None and chosen.words:
        summary += "\n" + words_text(view)
    section.text = render(answer.template, engine=engine, board=view,
                          notes=notes_for(answer.notes, answer.reader),
                          summary=summary, **answer.context)
    if section.subject is None:
        section.subject = board_subject(view, new=answer.new)
    section.answer = None


def folded(sections: list[Section]) -> list[Section]:
    """The sections with each refusal said once: a later one in the very same words
    (fifty lines that are no command, say) is counted on the first instead."""
    out: list[Section] = []
    first: dict[tuple[str, str], Section] = {}
    for section in sections:
        key = (section.command, section.text)
        if not section.ok and section.board is None and key in first:
            first[key].repeats += 1
            continue
        if not section.ok:
            first.setdefault(key, section)
        out.append(section)
    return out


def capped(sections: list[Section], cap: int) -> list[Section]:
    """The sections of a reply that fit in ``cap`` bytes, the last one cut if need be;
    the commands whose replies are left out were run all the same, and a last section
    says so."""
    budget = cap - _REPLY_ROOM
    out: list[Section] = []
    used = 0
    for place, section in enumerate(sections):
        size = len(section.command.encode()) + len(section.text.encode()) + 100
        if used + size <= budget:
            out.append(section)
            used += size
            continue
        room = budget - used - len(section.command.encode()) - 100
        if room >= _REPLY_ROOM:  # enough room to show the start of it
            text = section.text.encode()[:room].decode(errors="ignore")
            text = text[:text.rfind("\n") + 1] if "\n" in text else text
            out.append(Section(section.command, section.ok, text + "\n" + render(
                "capped.txt.j2", cap=cap, cut=True, left=0), section.subject, section.board))
            place += 1
        left = len(sections) - place
        if left:
            out.append(Section("", False, render("capped.txt.j2", cap=cap, cut=False,
                                                 left=left), ""))
        break
    return out


def _reply_address(notifier: Notifier, sections: list[Section],
                   reader: str) -> tuple[str | None, str, AnswerAsked | None]:
    """The reply address for the reply, a move to show as an example, and the request
    the address answers (None: it is for a move): when the reply shows one board and
    its reader plays there, to move or to answer their opponent's request."""
    board = sections[0].board if len(sections) == 1 else None
    if board is None or board.finished:
        return None, "", None
    readers = [p.user for p in board.players if p.user.email.lower() == reader.lower()]
    if not readers:
        return None, "", None
    mover = player_of(board, board.to_move)
    user = mover if mover in readers else readers[0]
    address = notifier.reply_address(board, user)
    if address is None:
        return None, "", None
    return address, engine_of(board).forms_for(board.option_flags)[0], answer_asked(board, user)


def compose(notifier: Notifier, sections: list[Section], *, reader: str,
            **context: Any) -> Reply:
    """The reply to ``reader`` holding ``sections`` (folded already), under
    reply.txt.j2 with ``context`` (``resumed``, ``last``); cut to fit
    ``max_reply_size``."""
    for section in sections:
        _rendered(notifier, section)
    if len(sections) == 1:
        subject = sections[0].subject or ""
    else:
        failed = sum(not s.ok for s in sections)
        subject = our_subject(notifier.settings, f"{len(sections)} commands"
                              + (f", {failed} refused" if failed else ""))
    settings = notifier.settings
    reply_to, example, answer = _reply_address(notifier, sections, reader)
    link = move_url(settings, reply_to) if answer is None else None
    body = render("reply.txt.j2", sections=sections, settings=settings,
                  by_reply=reply_to is not None, example=example, answer=answer,
                  move_url=link, **context)
    if len(body.encode()) > settings.max_reply_size:
        body = render("reply.txt.j2", sections=capped(sections, settings.max_reply_size),
                      settings=settings, by_reply=reply_to is not None, example=example,
                      answer=answer, move_url=link, **context)
    return Reply(subject, body, reply_to)
