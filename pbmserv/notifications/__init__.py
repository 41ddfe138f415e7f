"""Turning events into mail: the one place that decides who is told what.

Events come from the game service, whatever caused them (a mailed command, the
clock, a queued move).  For every board they touch, each player and subscriber gets
one board mail showing the board as it ends up, with notes on what happened
(worded for them) and the comments written; players who asked to hear of finished
games of that kind are told too.  A nag goes to the player to move; a chat message to
everyone on the board but its writer.  Addresses that get the reply to the mail that
caused it all are left out: the reply carries the board.

Every mail that shows a board, and the reply (``Notifier.reply``, see replies.py), is
rendered from one view of the board as it stands (views.BoardView), made once per
state of the board; what is the reader's own (their notes, their reply address) is
added on top of it.  Each reader's mail speaks the language they chose (``speaking``);
the reply speaks the sender's (pbmserv.processing.mail).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv import wakeups
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, GameNotify, User
from pbmserv.db.status import AnswerKind, DigestMode
from pbmserv.games import AnyEngine
from pbmserv.i18n import speaking
from pbmserv.mail.addresses import subaddress
from pbmserv.notifications.lists import NOTIFY, SPECTATOR, list_fields
from pbmserv.notifications.move_links import move_url
from pbmserv.notifications.notes import (
    AnswerAsked,
    answer_asked,
    comments_of,
    notes_for,
    notes_of,
)
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.replies import Reply, Section, compose
from pbmserv.notifications.tournaments import tournament_mails
from pbmserv.notifications.views import (
    BoardView,
    board_subject,
    board_view,
    status_line,
    summary_html,
    summary_text,
)
from pbmserv.notifications.words import words_html, words_text
from pbmserv.render import html_mail, render, render_mail_html
from pbmserv.service.boards import (
    engine_of,
    open_request_id,
    player_of,
    subscribers,
)
from pbmserv.service.events import (
    BoardCreated,
    ChatSent,
    Event,
    GameFinished,
    NagDue,
    TournamentEvent,
)
from pbmserv.service.mail_prefs import MailChoice, choices_of
from pbmserv.service.reply_tokens import ReplyToken, make_token, server_secret


def awaits_bot(board: Board) -> bool:
    """Whether a bot owes ``board`` a move or an answer now (see service.bot_turns)."""
    if board.finished:
        return False
    for player in board.players:
        if player.user.bot is None:
            continue
        if player.seat == board.to_move or (board.request_kind is not None
                                            and board.request_by != player.seat):
            return True
    return False


class Notifier:
    """Queues the outbox rows for events, in the caller's transaction."""

    def __init__(self, session: Session, settings: Settings, *, inbound_id: int | None = None,
                 skip_addresses: Collection[str] = (),
                 scrub: Callable[[str], str] = lambda text: text,
                 cause: str | None = None, asked: bool = False) -> None:
        self.session = session
        #: the events answer the players' own moves (a bot's move): their board mails
        #: to the board's players are never held by the hourly limits
        self.asked = asked
        self.settings = settings
        self.inbound_id = inbound_id
        #: the key of the sender whose mail caused the events: a board its challenge
        #: started is mailed to its players unasked (counted by mails_to_others_per_hour)
        self.cause = cause
        self.skip = {a.lower() for a in skip_addresses}
        #: applied to every subject and body: the caller's last guard for passwords
        self.scrub = scrub
        self.queued = 0
        #: users' mail choices read so far (None: the defaults)
        self._choices: dict[int, MailChoice | None] = {}

    def choices(self, users: Iterable[User]) -> dict[int, MailChoice]:
        """The mail choices of ``users`` (those with the defaults are absent), each
        read once per notifier."""
        users = list(users)
        unknown = list({u.id: u for u in users if u.id not in self._choices}.values())
        if unknown:
            found = choices_of(self.session, unknown)
            for u in unknown:
                self._choices[u.id] = found.get(u.id)
        return {u.id: c for u in users if (c := self._choices[u.id]) is not None}

    def _send(self, user: User, subject: str, body: str, *,
              reply_to: str | None = None, html: str | None = None,
              listed: tuple[str, str] | None = None, unasked: bool = False,
              asked: bool = False) -> None:
        if user.confirmed_at is None:  # nothing but its confirmation goes to that address
            return
        queue_mail(self.session, self.settings, to=user.email, subject=self.scrub(subject),
                   body=self.scrub(body), inbound_id=self.inbound_id, reply_to=reply_to,
                   html=None if html is None else self.scrub(html), listed=listed,
                   cause=self.cause if unasked else None, asked=asked)
        self.queued += 1

    def reply_address(self, board: Board, user: User) -> str | None:
        """The reply address for ``user``: for their move if the board waits for it;
        else, if they are to answer the board's open request, for that answer."""
        if board.finished or user.bot is not None:
            return None
        request = 0
        if player_of(board, board.to_move).id != user.id:
            if answer_asked(board, user) is None:
                return None
            request = open_request_id(self.session, board) or 0
            if not request:
                return None
        secret = server_secret(self.session, self.settings.secret)
        token = make_token(secret, ReplyToken(board.id, user.id, board.ply + 1,
                                               board.takebacks, request),
                           user.credential_changes)
        return subaddress(self.settings.address, token)

    def reply(self, sections: list[Section], *, reader: str, **context: Any) -> Reply:
        """The reply to the mail that caused it all (see replies.compose): its sections
        that show a board are rendered from the board's view, the view its board mails
        are rendered from."""
        return compose(self, sections, reader=reader, **context)

    def send_reply(self, reply: Reply, *, to: str, in_reply_to: str | None, secret: bool,
                   kind: AnswerKind | None, asked: bool = False) -> None:
        """Queue the reply (``reply``) to the mail that caused it all, to ``to``: text
        only (the reply to one's own command is on the hot path of every move, and an
        HTML part there cost 15 % of the moves a second: docs/benchmarks.md).
        ``secret``: it carries a live code; ``kind``: counted as a refusal or a
        stranger's answer; ``asked``: it answers a player's own command that proved
        their account (never held by the hourly limits)."""
        queue_mail(self.session, self.settings, to=to, subject=self.scrub(reply.subject),
                   body=self.scrub(reply.body), inbound_id=self.inbound_id,
                   in_reply_to=in_reply_to, reply_to=reply.reply_to, secret=secret, kind=kind,
                   asked=asked)

    def notify(self, events: Iterable[Event]) -> int:
        """Queue every mail the events call for; returns how many were queued."""
        by_board: dict[int, list[Event]] = {}
        tournaments: list[TournamentEvent] = []
        for event in events:
            if isinstance(event, TournamentEvent):
                tournaments.append(event)
            elif event.board_id is not None:
                by_board.setdefault(event.board_id, []).append(event)
        before = self.queued
        for board_id, board_events in by_board.items():
            board = self.session.get(Board, board_id)
            assert board is not None
            engine = engine_of(board)
            changes = [e for e in board_events if not isinstance(e, NagDue | ChatSent)]
            if changes:
                self._board_mail(engine, board, changes)
                if awaits_bot(board):  # its process is woken once this commits
                    wakeups.request(wakeups.BOTS)
            for event in board_events:
                if isinstance(event, NagDue):
                    self._nag(engine, board, event)
                elif isinstance(event, ChatSent):
                    self._chat(engine, board, event)
        for event in tournaments:  # to every player, the sender too: no reply carries it
            for user, subject, body in tournament_mails(self.session, event):
                self._send(user, subject, body)
        return self.queued - before

    def _watchers(self, board: Board, finished: bool, skip: bool = True) -> list[User]:
        """Players, subscribers, and (when the game is over) its notify list: once each
        (but for the addresses to ``skip``, unless told not to)."""
        users = [p.user for p in board.players] + subscribers(self.session, board)
        if finished:
            users += list(self.session.scalars(
                select(User).join(GameNotify, GameNotify.user_id == User.id)
                .where(GameNotify.game == board.game, User.closed_at.is_(None))
                .order_by(User.key)))
        seen: set[str] = set(self.skip) if skip else set()
        out = []
        for user in users:
            address = user.email.lower()
            if address not in seen and user.closed_at is None and user.bot is None:
                seen.add(address)
                out.append(user)
        return out

    def _board_mail(self, engine: AnyEngine, board: Board, events: list[Event]) -> None:
        finished = any(isinstance(e, GameFinished) for e in events)
        new = any(isinstance(e, BoardCreated) for e in events)
        notes = notes_of(board, events)
        comments = comments_of(board, events)
        # every reader's mail is rendered from the one view of the board (the reply to
        # the mail that caused it shows the same view)
        view = board_view(self.session, engine, board)
        # a tournament pairs boards its players did not ask for: no reply carries them
        paired = any(isinstance(e, BoardCreated) and e.tournament for e in events)
        # a challenge's board: its players did not ask for it either
        challenged = any(isinstance(e, BoardCreated) and e.tournament is None
                         and e.seek is None for e in events)
        watchers = self._watchers(board, finished, skip=not paired)
        choices = self.choices(watchers)
        drawn: dict[tuple[tuple[str, ...], bool, str | None, AnswerAsked | None, str, bool,
                          str | None], str] = {}
        playing = {p.user_id for p in board.players}
        # (the sender of the mail that caused it is left out of watchers: count readers
        # who do not play, not heads)
        watching = {u.id for u in subscribers(self.session, board)} if any(
            u.id not in playing for u in watchers) else set()
        for user in watchers:
            chosen = choices.get(user.id)
            if (chosen is not None and chosen.digest is not DigestMode.OFF and not paired
                    and user.id in playing):
                continue  # their digest tells them (it lists the boards they play)
            # what is the reader's own, on top of the view
            reply_to = self.reply_address(board, user)
            answer = answer_asked(board, user) if reply_to is not None else None
            mine = notes_for(notes, user)
            # why a reader who does not play the board gets its mail, and how to stop it
            why = "" if user.id in playing else "watch" if user.id in watching else "notify"
            link = move_url(self.settings, reply_to) if answer is None else None
            parts = {"board": view, "new": new, "notes": mine, "comments": comments,
                     "by_reply": reply_to is not None, "answer": answer, "move_url": link,
                     "example": view.example, "why": why, "reader": user.userid}
            words = chosen is not None and chosen.words
            language = chosen.language if chosen is not None else None
            with speaking(language):
                subject = board_subject(view, new=new, commented=bool(comments))
                body = render("board_mail.txt.j2", summary=summary_text(view),
                              words=words_text(view) if words else "", **parts)
                html = None
                if chosen is None or chosen.html:
                    key = (tuple(mine), reply_to is not None, link, answer,
                           why and why + user.userid, words, language)
                    if key not in drawn:  # the same for every reader with the same notes
                        drawn[key] = html_mail(subject, render_mail_html(
                            "board_mail.html.j2", summary=summary_html(view),
                            words=words_html(view, mail=True) if words else "", **parts))
                    html = drawn[key]
            listed = None if not why else list_fields(
                self.session, self.settings, SPECTATOR if why == "watch" else NOTIFY, user,
                engine, board)
            self._send(user, subject, body, reply_to=reply_to, html=html, listed=listed,
                       unasked=challenged, asked=self.asked and user.id in playing)

    def _drawn(self, subject: str, body: str, view: BoardView,
               link: str | None = None) -> str | None:
        """A text mail that shows the board's summary as HTML, the board drawn in place
        of the text board (None if the text holds no summary of it); ``link``: the
        reader's move page, linked above the board."""
        summary = summary_text(view)
        if summary not in body:
            return None
        before, after = body.split(summary, 1)
        return html_mail(subject, render_mail_html(
            "text_with_board.html.j2", before=before.rstrip("\n"), after=after.strip("\n"),
            summary=summary_html(view), move_url=link))

    def _nag(self, engine: AnyEngine, board: Board, event: NagDue) -> None:
        user = player_of(board, event.seat)
        if user.email.lower() in self.skip or board.finished or user.bot is not None:
            return
        view = board_view(self.session, engine, board)
        reply_to = self.reply_address(board, user)
        chosen = self.choices([user]).get(user.id)
        with speaking(chosen.language if chosen is not None else None):
            subject = render("subjects/nag.txt.j2", board=view, userid=user.userid)
            summary = summary_text(view)
            if chosen is not None and chosen.words:
                summary += "\n" + words_text(view)
            link = move_url(self.settings, reply_to)
            left = 0.0 if view.deadline is None else (view.deadline - utcnow()).total_seconds()
            body = render("nag.txt.j2", board=view, userid=user.userid, event=event, left=left,
                          summary=summary, by_reply=reply_to is not None, answer=None,
                          example=view.example, move_url=link)
            html = self._drawn(subject.strip(), body, view, link) \
                if chosen is None or chosen.html else None
        self._send(user, subject.strip(), body, reply_to=reply_to, html=html)

    def _chat(self, engine: AnyEngine, board: Board, event: ChatSent) -> None:
        writer = self.session.get(User, event.user_id)
        assert writer is not None
        playing = {p.user_id for p in board.players}
        readers = [u for u in self._watchers(board, finished=False)
                   if u.id != writer.id]  # a spectator may leave the board's chat too
        choices = self.choices(readers)
        said: dict[str | None, tuple[str, str]] = {}  # the players' mail, by language
        for user in readers:
            language = choices[user.id].language if user.id in choices else None
            with speaking(language):
                if language not in said:
                    said[language] = (
                        render("subjects/chat.txt.j2", engine=engine, board=board,
                               userid=writer.userid).strip(),
                        render("chat.txt.j2", engine=engine, board=board,
                               userid=writer.userid, text=event.text,
                               status=status_line(engine, board)))
                subject, body = said[language]
                if user.id in playing:
                    self._send(user, subject, body)
                    continue
                # a spectator is told why they get it, and how to stop it
                watched = {"title": engine.title, "game": engine.name, "number": board.number}
                self._send(user, subject, render(
                    "chat.txt.j2", engine=engine, board=board, userid=writer.userid,
                    text=event.text, status=status_line(engine, board), why="watch",
                    watched=watched, reader=user.userid),
                    listed=list_fields(self.session, self.settings, SPECTATOR, user, engine,
                                       board))
