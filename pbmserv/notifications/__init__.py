"""Turning events into mail: the one place that decides who is told what.

Events come from the game service, whatever caused them (a mailed command, the
clock, a queued move).  For every board they touch, each player and subscriber gets
one board mail showing the board as it ends up, with notes on what happened
(worded for them) and the comments written; players who asked to hear of finished
games of that kind are told too.  A nag goes to the player to move; a chat message to
everyone on the board but its writer.  Addresses that get the reply to the mail that
caused it all are left out: the reply carries the board.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv import wakeups
from pbmserv.config import Settings
from pbmserv.db.models import Board, GameNotify, User
from pbmserv.db.status import DigestMode
from pbmserv.games import AnyEngine
from pbmserv.mail.addresses import subaddress
from pbmserv.notifications.lists import NOTIFY, SPECTATOR, list_fields
from pbmserv.notifications.outbox import queue_mail
from pbmserv.notifications.tournaments import tournament_mails
from pbmserv.notifications.views import (
    board_subject,
    board_summary,
    board_summary_html,
    status_line,
)
from pbmserv.render import html_mail, render, render_mail_html
from pbmserv.service.boards import (
    engine_of,
    open_request_id,
    player_of,
    seats_of,
    subscribers,
)
from pbmserv.service.events import (
    BoardAccepted,
    BoardCreated,
    ChatSent,
    Event,
    GameFinished,
    MovePlayed,
    MoveTakenBack,
    NagDue,
    QueueCleared,
    RequestAnswered,
    RequestLapsed,
    RequestMade,
    TournamentEvent,
)
from pbmserv.service.mail_prefs import MailChoice, choices_of
from pbmserv.service.reply_tokens import ReplyToken, make_token, server_secret


@dataclass(frozen=True)
class Note:
    """One sentence about an event, for everyone or for one user only."""

    kind: str
    fields: dict[str, Any]
    #: the user it is about, who reads it worded to them ("your offer ...")
    subject_id: int | None = None
    #: only this user reads it
    only: int | None = None
    #: the user whose act it reports: their own reply says it already
    actor_id: int | None = None

    def text(self, reader: User | None) -> str:
        you = reader is not None and reader.id == self.subject_id
        by_you = reader is not None and reader.id == self.actor_id
        return " ".join(render("note.txt.j2", kind=self.kind, you=you, by_you=by_you,
                               **self.fields).split())


def _seat_user(board: Board, seat: int) -> User:
    return player_of(board, seat)


def notes_of(board: Board, events: Iterable[Event]) -> list[Note]:
    """What the events on ``board`` say, in order."""
    notes: list[Note] = []
    for e in events:
        if isinstance(e, BoardCreated) and e.seek is not None:
            notes.append(Note("seek-joined", {"seek": e.seek}))
        elif isinstance(e, BoardCreated) and e.tournament is not None:
            notes.append(Note("tournament-board", {"tournament": e.tournament,
                                                   "round": e.round}))
        elif isinstance(e, BoardCreated):  # a challenge: each player may take it up
            for player in board.players:
                if player.accepted_at is None:
                    notes.append(Note("challenge-board", {
                        "userid": player.user.userid, "game": board.game,
                        "number": board.number, "forfeit": board.forfeit_days},
                        subject_id=player.user_id, only=player.user_id))
        elif isinstance(e, BoardAccepted):
            user = _seat_user(board, e.seat)
            notes.append(Note("board-accepted", {"userid": user.userid},
                              subject_id=user.id, actor_id=user.id))
        elif isinstance(e, MovePlayed) and e.automatic:
            user = _seat_user(board, e.seat)
            notes.append(Note("queued-move", {"userid": user.userid, "notation": e.notation},
                              subject_id=user.id))
        elif isinstance(e, RequestMade):
            user = _seat_user(board, e.seat)
            notes.append(Note("request-made", {"userid": user.userid, "request": e.request},
                              subject_id=user.id, actor_id=user.id))
        elif isinstance(e, RequestAnswered):
            asker, answerer = _seat_user(board, e.seat), _seat_user(board, e.by)
            notes.append(Note("request-answered", {
                "userid": asker.userid, "answerer": answerer.userid, "request": e.request,
                "accepted": e.accepted}, subject_id=asker.id, actor_id=answerer.id))
        elif isinstance(e, RequestLapsed):
            asker, mover = _seat_user(board, e.seat), _seat_user(board, e.by)
            notes.append(Note("request-lapsed", {
                "userid": asker.userid, "mover": mover.userid, "request": e.request,
                "own": e.seat == e.by}, subject_id=asker.id))
        elif isinstance(e, MoveTakenBack):
            # an undo of two moves is one note: the turn goes to the earlier mover
            user = _seat_user(board, e.seat)
            moves = [(e.ply, e.notation)]
            if notes and notes[-1].kind == "taken-back":
                moves = sorted([*notes.pop().fields["moves"], *moves])
            notes.append(Note("taken-back", {"userid": user.userid, "moves": moves},
                              subject_id=user.id))
        elif isinstance(e, QueueCleared):
            user = _seat_user(board, e.seat)
            notes.append(Note("queue-cleared", {"expected": e.expected, "played": e.played},
                              subject_id=user.id, only=user.id))
    return notes


def comments_of(board: Board, events: Iterable[Event]) -> list[tuple[str, str]]:
    """(userid, comment) for every comment written with the events, in order."""
    out = []
    for e in events:
        comment = getattr(e, "comment", None)
        if not comment:
            continue
        seat = e.by if isinstance(e, GameFinished | RequestAnswered) else getattr(e, "seat", None)
        if seat is not None:
            out.append((_seat_user(board, seat).userid, comment))
    return out


def notes_for(notes: list[Note], reader: User | None) -> list[str]:
    """The notes ``reader`` reads, worded for them."""
    rid = reader.id if reader is not None else None
    return [n.text(reader) for n in notes
            if (n.only is None or n.only == rid) and (rid is None or n.actor_id != rid)]


@dataclass(frozen=True)
class AnswerAsked:
    """An open request that a player who is not to move is asked to answer."""

    #: "draw" or "undo"
    request: str
    #: who asked
    requester: str


def answer_asked(board: Board, user: User) -> AnswerAsked | None:
    """What ``user`` is asked to answer on ``board`` while it is not their move (the
    reply address of their board mail is then for that answer); None otherwise."""
    if board.finished or board.request_kind is None or board.request_by is None:
        return None
    seats = seats_of(board, user)
    if board.to_move in seats or not [s for s in seats if s != board.request_by]:
        return None
    return AnswerAsked(board.request_kind.value, player_of(board, board.request_by).userid)


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
                 cause: str | None = None) -> None:
        self.session = session
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
        unknown = [u for u in users if u.id not in self._choices]
        if unknown:
            found = choices_of(self.session, unknown)
            for u in unknown:
                self._choices[u.id] = found.get(u.id)
        return {u.id: c for u in users if (c := self._choices[u.id]) is not None}

    def _send(self, user: User, subject: str, body: str, *,
              reply_to: str | None = None, html: str | None = None,
              listed: tuple[str, str] | None = None, unasked: bool = False) -> None:
        if user.confirmed_at is None:  # nothing but its confirmation goes to that address
            return
        queue_mail(self.session, self.settings, to=user.email, subject=self.scrub(subject),
                   body=self.scrub(body), inbound_id=self.inbound_id, reply_to=reply_to,
                   html=None if html is None else self.scrub(html), listed=listed,
                   cause=self.cause if unasked else None)
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
        summary = board_summary(self.session, engine, board)
        subject = board_subject(engine, board, new=new, commented=bool(comments))
        # a tournament pairs boards its players did not ask for: no reply carries them
        paired = any(isinstance(e, BoardCreated) and e.tournament for e in events)
        # a challenge's board: its players did not ask for it either
        challenged = any(isinstance(e, BoardCreated) and e.tournament is None
                         and e.seek is None for e in events)
        watchers = self._watchers(board, finished, skip=not paired)
        choices = self.choices(watchers)
        drawn: dict[tuple[tuple[str, ...], bool, AnswerAsked | None, str], str] = {}
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
            reply_to = self.reply_address(board, user)
            answer = answer_asked(board, user) if reply_to is not None else None
            mine = notes_for(notes, user)
            # why a reader who does not play the board gets its mail, and how to stop it
            why = "" if user.id in playing else "watch" if user.id in watching else "notify"
            parts = {"new": new, "notes": mine, "comments": comments,
                     "by_reply": reply_to is not None, "answer": answer,
                     "example": engine.forms_for(board.option_flags)[0],
                     "why": why, "reader": user.userid, "engine": engine, "board": board}
            body = render("board_mail.txt.j2", summary=summary, **parts)
            html = None
            if chosen is None or chosen.html:
                key = (tuple(mine), reply_to is not None, answer, why and why + user.userid)
                if key not in drawn:  # the same for every reader with the same notes
                    drawn[key] = html_mail(subject, render_mail_html(
                        "board_mail.html.j2",
                        summary=board_summary_html(self.session, engine, board), **parts))
                html = drawn[key]
            listed = None if not why else list_fields(
                self.session, self.settings, SPECTATOR if why == "watch" else NOTIFY, user,
                engine, board)
            self._send(user, subject, body, reply_to=reply_to, html=html, listed=listed,
                       unasked=challenged)

    def _drawn(self, subject: str, body: str, board: Board) -> str | None:
        """A text mail that shows ``board``'s summary as HTML, the board drawn in place
        of the text board (None if the text holds no summary of it)."""
        engine = engine_of(board)
        summary = board_summary(self.session, engine, board)
        if summary not in body:
            return None
        before, after = body.split(summary, 1)
        return html_mail(subject, render_mail_html(
            "text_with_board.html.j2", before=before.rstrip("\n"), after=after.strip("\n"),
            summary=board_summary_html(self.session, engine, board)))

    def _nag(self, engine: AnyEngine, board: Board, event: NagDue) -> None:
        user = player_of(board, event.seat)
        if user.email.lower() in self.skip or board.finished or user.bot is not None:
            return
        subject = render("subjects/nag.txt.j2", engine=engine, board=board, userid=user.userid)
        reply_to = self.reply_address(board, user)
        body = render("nag.txt.j2", engine=engine, board=board, userid=user.userid,
                      event=event, summary=board_summary(self.session, engine, board),
                      by_reply=reply_to is not None, answer=None,
                      example=engine.forms_for(board.option_flags)[0])
        chosen = self.choices([user]).get(user.id)
        html = self._drawn(subject.strip(), body, board) if chosen is None or chosen.html \
            else None
        self._send(user, subject.strip(), body, reply_to=reply_to, html=html)

    def _chat(self, engine: AnyEngine, board: Board, event: ChatSent) -> None:
        writer = self.session.get(User, event.user_id)
        assert writer is not None
        subject = render("subjects/chat.txt.j2", engine=engine, board=board,
                         userid=writer.userid).strip()
        body = render("chat.txt.j2", engine=engine, board=board, userid=writer.userid,
                      text=event.text, status=status_line(engine, board))
        playing = {p.user_id for p in board.players}
        for user in self._watchers(board, finished=False):
            if user.id != writer.id:  # a spectator may leave the board's chat too
                listed = None if user.id in playing else list_fields(
                    self.session, self.settings, SPECTATOR, user, engine, board)
                self._send(user, subject, body, listed=listed)
