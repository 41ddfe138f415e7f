"""What the events on a board say: notes (one sentence an event, worded for the
reader), the comments written with them, and the request a reader is asked to answer.

Plain data from the events and the board's players; the notes are worded by
templates/note.txt.j2 for each reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pbmserv.db.models import Board, User
from pbmserv.render import render
from pbmserv.service.boards import player_of, seats_of
from pbmserv.service.events import (
    BoardAccepted,
    BoardCreated,
    Event,
    GameFinished,
    MovePlayed,
    MoveTakenBack,
    QueueCleared,
    RequestAnswered,
    RequestLapsed,
    RequestMade,
)


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
        if e.board_id != board.id:  # a command's events may touch other boards too
            continue
        if isinstance(e, BoardCreated) and e.seek is not None:
            notes.append(Note("seek-joined", {"seek": e.seek}))
        elif isinstance(e, BoardCreated) and e.tournament is not None:
            notes.append(Note("tournament-board", {"tournament": e.tournament,
                                                   "round": e.round}))
        elif isinstance(e, BoardCreated):  # a challenge: each player may take it up
            # a person who took it up already did so with the challenge (their reply says
            # so; a bot always does)
            taken = [p.user for p in board.players
                     if p.accepted_at is not None and p.user.bot is None]
            for player in board.players:
                if player.accepted_at is None:
                    notes.append(Note("challenge-board", {
                        "userid": player.user.userid, "game": board.game,
                        "number": board.number, "forfeit": board.forfeit_days,
                        "taken": [u.userid for u in taken if u.id != player.user_id],
                        "nobody": all(p.accepted_at is None for p in board.players)},
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
            notes.append(Note("request-made", {
                "userid": user.userid, "request": e.request, "answer_too": e.answer_too,
                "answerer": _seat_user(board, 1 - e.seat).userid},
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

