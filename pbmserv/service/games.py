"""The game service: every change to a board goes through here.

Creating boards (challenges, seeks), moves, resigning, requests to the opponent (a
draw offer, an undo), declining, the clock, conditional moves, spectators and chat.
Each change records events (pbmserv.service.events): in ``self.events`` for the
caller, and as rows of ``board_events``.  Who is told what is not decided here; what
follows an event elsewhere (a tournament's next round after one of its boards
finished) is done by the event's followers, listed in one place
(pbmserv.service.followers).

A board started by a challenge (which needs no password) is a player's only once
they take it up: by acting on it (a move, resign, an offer or request, an answer, a
queue) or with ``accept``.  Until then it is not rated for anyone, and a clock that
runs out on that player ends it with no result, like ``decline``.  Boards of a
seek or a tournament are taken up by both players at the start (they logged in to
make them), and the bots take up every board.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session

from pbmserv.bots import get_bot
from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    Board,
    BoardEvent,
    BoardPlayer,
    GameNotify,
    Move,
    QueuedMove,
    Seek,
    Subscription,
    User,
    Vacation,
)
from pbmserv.db.status import BoardStatus, RequestKind, SeekStatus
from pbmserv.games import AnyEngine, get_engine
from pbmserv.games.base import Outcome, RuleError, Termination
from pbmserv.i18n import N_
from pbmserv.reads import clocks
from pbmserv.service import clock
from pbmserv.service.boards import (
    acting_seat,
    checkpoint,
    engine_of,
    forget_subscribers,
    last_move,
    next_board_number,
    player_of,
    position_at,
    position_of,
    seats_of,
    tournament_of_board,
)
from pbmserv.service.consent import check_consent
from pbmserv.service.errors import PlayerError
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
)
from pbmserv.service.followers import EVENT_FOLLOWERS
from pbmserv.service.limits import challenger_of
from pbmserv.service.ratings import rate_board

_QUEUE = (select(QueuedMove)
          .where(QueuedMove.board_id == bindparam("board"), QueuedMove.seat == bindparam("seat"))
          .order_by(QueuedMove.position))
#: rows of a log, written and never changed: inserted, not held as objects (each
#: statement built once, as the outbox's is)
_EVENT_INSERT = insert(BoardEvent)
_MOVE_INSERT = insert(Move)


REQUEST_WORDS = {RequestKind.DRAW: "an agreed end of the game", RequestKind.UNDO: "an undo"}
MAX_QUEUE_PAIRS = 20
MAX_CHAT = 4000


def move_hint(engine: AnyEngine, board: Board) -> str:
    forms = " or ".join(engine.forms_for(board.option_flags))
    return (f"{engine.title} moves are written like {forms}; "
            f'"{engine.name} moves {board.number}" lists every legal move.')


class GameService:
    """All changes to boards, within the caller's session and transaction."""

    def __init__(self, session: Session, now: datetime | None = None) -> None:
        self.session = session
        self.now = now or utcnow()
        self.events: list[Event] = []
        #: the boards the events are about (the session keeps loaded objects only
        #: while something refers to them)
        self.boards: dict[int, Board] = {}

    # -- events -------------------------------------------------------------------------
    def _record(self, event: Event) -> None:
        self.events.append(event)
        board = None if event.board_id is None else self.session.get(Board, event.board_id)
        if board is not None:
            self.boards[board.id] = board
        self.session.execute(_EVENT_INSERT, {
            "board_id": event.board_id, "kind": event.kind, "data": event.data(),
            "created_at": self.now})
        for follower in EVENT_FOLLOWERS.get(type(event), ()):
            follower(self, event)

    # -- creating boards ----------------------------------------------------------------
    def challenge(self, engine: AnyEngine, users: Sequence[User], flags: Sequence[str], *,
                  nag_days: int = 7, forfeit_days: int = 21, sender: str | None = None,
                  taken_by: User | None = None) -> Board:
        """Start a board at once between ``users`` (the first moves first), asked for
        by ``sender`` (an address: a challenge needs no password, so nobody has taken
        the board up yet), or by ``taken_by``, one of ``users`` who proved their
        account with it (their password, or their reply address): the board is theirs
        at once."""
        if len(users) != len(engine.seats):
            raise PlayerError(f"{engine.name} needs exactly {len(engine.seats)} userids",
                              usage=True)
        options = self._options(engine, flags)
        clock.check_clock_days(nag_days, forfeit_days)
        clock.check_challenge_clock(nag_days, forfeit_days)
        check_consent(self.session, engine.name, users)
        board = self._create(engine, users, options, nag_days, forfeit_days, taken=False)
        board.challenged_by = sender.lower() if sender else None
        challenger = taken_by or (challenger_of(users, sender) if sender else None)
        board.challenger_id = challenger.id if challenger is not None else None
        if taken_by is not None:
            self._take_up(board, taken_by)
        return board

    def start_agreed(self, engine: AnyEngine, users: Sequence[User], flags: Sequence[str], *,
                     nag_days: int, forfeit_days: int, tournament: str, round_: int) -> Board:
        """Start a board its players agreed to in advance: a tournament's pairing.

        Joining the tournament was their consent, so their challenge preferences
        (accept, reject, limit) do not apply; everything else is as for a challenge.
        """
        options = self._options(engine, flags)
        clock.check_clock_days(nag_days, forfeit_days)
        return self._create(engine, users, options, nag_days, forfeit_days,
                            tournament=(tournament, round_))

    def _options(self, engine: AnyEngine, flags: Sequence[str]) -> tuple[str, ...]:
        try:
            return engine.check_options(flags)
        except RuleError as exc:
            raise PlayerError(str(exc)) from None

    def _create(self, engine: AnyEngine, users: Sequence[User], options: Sequence[str],
                nag_days: int, forfeit_days: int, seek: Seek | None = None,
                tournament: tuple[str, int] | None = None, *, taken: bool = True) -> Board:
        """A new board; ``taken``: its players logged in to start it, so they took it
        up (the bots always do)."""
        position = engine.new(options)
        board = Board(
            game=engine.name,
            number=next_board_number(self.session, engine.name),
            options=" ".join(options),
            position=engine.serialize(position),
            position_version=engine.position_version,
            to_move=engine.to_move(position),
            nag_days=nag_days,
            forfeit_days=forfeit_days,
            turn_started_at=self.now,
            created_at=self.now,
            updated_at=self.now,
            players=[BoardPlayer(seat=seat, user=user,
                                 accepted_at=self.now if taken or user.bot else None)
                     for seat, user in enumerate(users)],
        )
        board.clock_due_at = clock.first_deadline(board, self.now)
        self.session.add(board)
        self.session.flush()  # the board's id, for its event
        name, round_ = tournament or (None, None)
        self._record(BoardCreated(board.id, seek=seek.number if seek else None,
                                  tournament=name, round=round_))
        return board

    def seek(self, engine: AnyEngine, user: User, flags: Sequence[str], *, nag_days: int = 7,
             forfeit_days: int = 21) -> Seek:
        """Post an open challenge that anyone may join."""
        options = self._options(engine, flags)
        clock.check_clock_days(nag_days, forfeit_days)
        highest = self.session.scalar(select(func.max(Seek.number))
                                      .where(Seek.game == engine.name))
        seek = Seek(game=engine.name, number=(highest or 0) + 1, user=user,
                    options=" ".join(options), nag_days=nag_days, forfeit_days=forfeit_days,
                    status=SeekStatus.OPEN, created_at=self.now)
        self.session.add(seek)
        return seek

    def open_seek(self, engine: AnyEngine, number: int, *, lock: bool = False) -> Seek:
        query = select(Seek).where(Seek.game == engine.name, Seek.number == number)
        if lock:  # only the seek's row: PostgreSQL locks no outer-joined rows
            query = query.with_for_update(of=Seek)
        seek = self.session.scalar(query)
        if seek is None or seek.status is not SeekStatus.OPEN:
            raise PlayerError(f"there is no open {engine.name} seek {number}; "
                              f"'list {engine.name}' shows the open ones")
        return seek

    def withdraw(self, engine: AnyEngine, number: int, user: User) -> Seek:
        seek = self.open_seek(engine, number, lock=True)
        if seek.user_id != user.id:
            raise PlayerError(f"{engine.name} seek {number} is {seek.user.userid}'s, not yours")
        seek.status = SeekStatus.WITHDRAWN
        return seek

    def join(self, engine: AnyEngine, number: int, user: User) -> Board:
        """Take up an open seek: the board starts at once, the seeker moving first."""
        seek = self.open_seek(engine, number, lock=True)
        if seek.user_id == user.id:
            raise PlayerError("a player cannot play against themselves; "
                              f"withdraw the seek with: {engine.name} unseek {number} "
                              "userid password")
        users = [seek.user, user]
        check_consent(self.session, engine.name, users)
        board = self._create(engine, users, seek.options.split(), seek.nag_days,
                             seek.forfeit_days, seek=seek)
        seek.status, seek.board_id = SeekStatus.JOINED, board.id
        return board

    # -- who acts -------------------------------------------------------------------------
    def seat_of(self, board: Board, user: User) -> int:
        engine = engine_of(board)
        if not seats_of(board, user):
            raise PlayerError(f"{user.userid} does not play {engine.name} board "
                              f"{board.number}", board=board)
        if board.finished:
            raise PlayerError(f"{engine.title} board {board.number} is over", board=board)
        return acting_seat(board, user)

    # -- taking a board up ------------------------------------------------------------------
    def taken_up(self, board: Board, user: User) -> bool:
        return all(p.accepted_at is not None for p in board.players if p.user_id == user.id)

    def _take_up(self, board: Board, user: User) -> None:
        """The player acts on the board: from now on it is theirs (rated, timed)."""
        for player in board.players:
            if player.user_id == user.id and player.accepted_at is None:
                player.accepted_at = self.now

    def accept(self, board: Board, user: User) -> None:
        """Take up a board someone else started (``<game> accept board``)."""
        seat = self.seat_of(board, user)
        if self.taken_up(board, user):
            mine = next(p for p in board.players if p.user_id == user.id)
            when = mine.accepted_at
            raise PlayerError(
                f"you took board {board.number} up already"
                + (f" ({when:%Y-%m-%d %H:%M} UTC)" if when is not None else "")
                + f"; to answer an offer or request on it, write: {board.game} move "
                f"{board.number} {user.userid} <password> accept", board=board)
        self._take_up(board, user)
        self._record(BoardAccepted(board.id, seat))

    # -- moves ----------------------------------------------------------------------------
    def play(self, board: Board, user: User, text: str, *, comment: str = "",
             expected_ply: int | None = None) -> str:
        """Play a move for ``user``; returns its canonical notation."""
        seat = self.seat_of(board, user)
        if board.to_move not in seats_of(board, user) and (
                expected_ply is None or expected_ply > board.ply):
            # a #n ahead of the board is a move out of turn, not an old mail
            mover = player_of(board, board.to_move)
            raise PlayerError(f"it is {mover.userid}'s turn, not yours", board=board)
        self.check_ply(board, expected_ply)
        engine = engine_of(board)
        try:
            # the board is in play, so its position is not over
            position, notation = engine.play(position_of(engine, board), text, live=True)
        except RuleError as exc:
            raise PlayerError(f"{text} is not possible here: {exc}", board=board,
                              hint=move_hint(engine, board)) from None
        assert seat == board.to_move
        self._take_up(board, user)
        self._apply(board, engine, position, notation, comment or None, automatic=False)
        return notation

    def check_ply(self, board: Board, expected_ply: int | None) -> None:
        if expected_ply is not None and expected_ply != board.ply + 1:
            raise PlayerError(
                f"this would be move {board.ply + 1} of board {board.number}, "
                f"not move {expected_ply}; your mail may be old or sent twice",
                board=board,
            )

    def _apply(self, board: Board, engine: AnyEngine, position: Any, notation: str,
               comment: str | None, *, automatic: bool) -> None:
        seat = board.to_move
        used = clocks.idle(self.session, board, self.now)
        used_seconds = int(used.total_seconds())
        serialized = engine.serialize(position)
        kept = checkpoint(board.ply + 1)
        self.session.execute(_MOVE_INSERT, {
            "board_id": board.id, "ply": board.ply + 1, "seat": seat, "notation": notation,
            "comment": comment, "created_at": self.now,
            "turn_started_at": board.turn_started_at, "nags_before": board.nags_sent,
            "seconds_used": used_seconds, "automatic": automatic,
            "position": serialized if kept else None,
            "position_version": engine.position_version if kept else None})
        board.ply += 1
        board.previous_position, board.previous_version = board.position, board.position_version
        board.position = serialized
        board.position_version = engine.position_version
        board.to_move = engine.to_move(position)
        board.updated_at = board.turn_started_at = self.now
        board.nags_sent = 0
        board.clock_due_at = clock.first_deadline(board, self.now)
        # a request lapses when its answerer moves instead; an undo also when its asker
        # moves (it stood for the moves before this one); a draw offer stands
        lapsed = board.request_kind is not None and (
            board.request_by != seat or board.request_kind is RequestKind.UNDO)
        if lapsed:
            self._record(RequestLapsed(board.id, board.request_kind,  # type: ignore[arg-type]
                                       board.request_by or 0, by=seat))
            self._clear_request(board)
        self._player(board, seat).time_used += used_seconds
        self._record(MovePlayed(board.id, board.ply, seat, notation, comment, automatic))
        outcome = engine.outcome(position)
        if outcome is not None:
            self.finish(board, outcome)
        else:
            self._fire_queue(board, engine, position, notation)

    def _player(self, board: Board, seat: int) -> BoardPlayer:
        return next(p for p in board.players if p.seat == seat)

    def finish(self, board: Board, outcome: Outcome, *, by: int | None = None,
               comment: str | None = None) -> None:
        board.status = BoardStatus.FINISHED
        board.winner = outcome.winner
        board.termination = outcome.termination
        board.result = outcome.reason[:200]
        board.updated_at = self.now
        board.clock_due_at = None
        self._clear_request(board)
        self._clear_queues(board, None)
        # rated first: the event's followers (a tournament's next round) see it rated
        rate_board(self.session, board, self.now)
        self._record(GameFinished(board.id, outcome.winner, outcome.termination, outcome.reason,
                                  by=by, comment=comment))

    def resign(self, board: Board, user: User, *, comment: str = "") -> None:
        seat = self.seat_of(board, user)
        self._take_up(board, user)
        self.finish(board, Outcome(1 - seat, Termination.RESIGNATION,
                                   f"{user.userid} resigned"), by=seat, comment=comment or None)

    def decline(self, board: Board, user: User, *, comment: str = "") -> None:
        """End a board the player has not moved on yet: no result for anyone."""
        seat = self.seat_of(board, user)
        moved = self.session.scalar(select(func.count()).select_from(Move).where(
            Move.board_id == board.id, Move.seat == seat))
        if moved:
            raise PlayerError(N_("you have moved on this board already, so you cannot decline "
                                 "it; you may resign instead"), board=board)
        tournament = tournament_of_board(self.session, board)
        # no result on the board; a tournament scores it as lost by who declined it
        scored = (f"; tournament {tournament} scores it as a loss for {user.userid} "
                  f"({'0-1' if seat == 0 else '1-0'})" if tournament else "")
        self.finish(board, Outcome(None, Termination.DECLINED,
                                   f"{user.userid} declined the game{scored}"),
                    by=seat, comment=comment or None)

    # -- requests to the opponent ----------------------------------------------------------
    def request(self, board: Board, user: User, kind: RequestKind, *, comment: str = "") -> None:
        """Offer an agreed end (DRAW) or ask to take back one's last move (UNDO)."""
        seat = self.seat_of(board, user)
        self._take_up(board, user)
        if board.request_kind is not None:
            who = player_of(board, board.request_by or 0).userid
            raise PlayerError(f"{who} has asked for {REQUEST_WORDS[board.request_kind]} "
                              "already; it must be answered first", board=board)
        if kind is RequestKind.UNDO:
            last = last_move(self.session, board)
            if last is None:
                raise PlayerError(N_("there is no move to take back"), board=board)
            if last.seat not in seats_of(board, user):
                before = self.session.scalar(select(Move.seat).where(
                    Move.board_id == board.id, Move.ply == board.ply - 1))
                if before is None or before not in seats_of(board, user):
                    raise PlayerError(N_("you may take back your own last move only (with the "
                                      "answer to it, if your opponent has answered)"),
                                      board=board)
        # an undo on one's own turn takes back the opponent's answer too
        answer_too = kind is RequestKind.UNDO and board.to_move == seat
        board.request_kind, board.request_by = kind, seat
        self._record(RequestMade(board.id, kind, seat, comment or None, answer_too))
        answerer = player_of(board, 1 - seat)
        bot = get_bot(answerer.bot) if answerer.bot is not None else None
        if kind is RequestKind.UNDO and bot is not None:
            # a bot grants an undo by a rule that needs no thought: answered at once,
            # so the one reply shows the board as the undo leaves it (and the reply
            # address for the move asked now), not one to be taken back in seconds
            engine = engine_of(board)
            self.answer(board, answerer,
                        bot.accepts_undo(engine, position_of(engine, board), 1 - seat))

    def answer(self, board: Board, user: User, accept: bool, *, comment: str = "") -> None:
        seat = self.seat_of(board, user)
        kind, by = board.request_kind, board.request_by
        if kind is None or by is None:
            raise PlayerError(N_("nobody has asked you anything on this board: 'accept' and "
                              "'reject' answer an offer to end the game ('propose') or a "
                              "request to take back a move ('undo')"), board=board)
        if seats_of(board, user) == [by]:
            raise PlayerError(f"you asked for {REQUEST_WORDS[kind]}; your opponent must "
                              "answer it", board=board)
        answerer = seat if seat != by else 1 - by
        self._take_up(board, user)
        self._clear_request(board)
        self._record(RequestAnswered(board.id, kind, by, answerer, accept, comment or None))
        if not accept:
            return
        if kind is RequestKind.DRAW:
            engine = engine_of(board)
            self.finish(board, engine.agreed_outcome(position_of(engine, board)))
        else:  # the asker's last move goes back, and the answer to it if there is one
            for _ in range(2):
                if self._take_back(board) == by:
                    break

    def _clear_request(self, board: Board) -> None:
        board.request_kind = board.request_by = None

    def _take_back(self, board: Board) -> int:
        """The board exactly as before its last move: position, move list, ko and
        repetition state, clocks (the mover's turn resumes where it stood).  Returns the
        seat whose move it was."""
        engine = engine_of(board)
        move = last_move(self.session, board)
        assert move is not None
        previous = position_at(self.session, engine, board, board.ply - 1)
        board.previous_position = board.previous_version = None  # known again by replay only
        board.position = engine.serialize(previous)
        board.position_version = engine.position_version
        board.ply -= 1
        board.takebacks += 1
        board.to_move = move.seat
        board.updated_at = self.now
        started = move.turn_started_at or move.created_at
        board.turn_started_at = self.now - (move.created_at - started)
        board.nags_sent = move.nags_before
        self._player(board, move.seat).time_used -= move.seconds_used
        if board.queued:
            for seat in sorted({q.seat for q in self.session.scalars(
                    select(QueuedMove).where(QueuedMove.board_id == board.id))}):
                self._record(QueueCleared(board.id, seat, None, None))
            self._clear_queues(board, None)
        self.session.delete(move)
        clock.schedule(self.session, board, self.now)
        self._record(MoveTakenBack(board.id, move.ply, move.seat, move.notation))
        return move.seat

    # -- conditional moves ------------------------------------------------------------------
    def queue_of(self, board: Board, seat: int) -> list[QueuedMove]:
        return list(self.session.scalars(_QUEUE, {"board": board.id, "seat": seat}))

    def set_queue(self, board: Board, user: User, words: Sequence[str]) -> list[QueuedMove]:
        """Replace the player's queue with pairs ``OPP MINE ...``, each checked on the
        position it would be played in."""
        seat = self.seat_of(board, user)
        if len(words) % 2:
            raise PlayerError(N_("conditional moves come in pairs: the opponent's move, then "
                              "your answer"), usage=True, board=board)
        if len(words) > 2 * MAX_QUEUE_PAIRS:
            raise PlayerError(f"at most {MAX_QUEUE_PAIRS} pairs may be queued", board=board)
        if board.to_move == seat:
            raise PlayerError(N_("it is your turn: play your move first; a queue answers your "
                              "opponent's next moves"), board=board)
        engine = engine_of(board)
        position = position_of(engine, board)
        pairs: list[tuple[str, str]] = []
        for i in range(0, len(words), 2):
            theirs, mine = words[i], words[i + 1]
            n = i // 2 + 1
            try:
                position, theirs_text = engine.play(position, theirs)
            except RuleError as exc:
                raise PlayerError(f"pair {n}: your opponent's move {theirs} would not be "
                                  f"possible: {exc}", board=board,
                                  hint=move_hint(engine, board)) from None
            if engine.outcome(position) is not None:
                raise PlayerError(f"pair {n}: after {theirs_text} the game would be over",
                                  board=board)
            try:
                position, mine_text = engine.play(position, mine)
            except RuleError as exc:
                raise PlayerError(f"pair {n}: your answer {mine} to {theirs_text} would not "
                                  f"be possible: {exc}", board=board,
                                  hint=move_hint(engine, board)) from None
            if engine.outcome(position) is not None and i + 2 < len(words):
                raise PlayerError(f"pair {n}: after {mine_text} the game would be over, so "
                                  "no pair may follow it", board=board)
            pairs.append((theirs_text, mine_text))
        self._take_up(board, user)
        self._clear_queues(board, seat)
        rows = [QueuedMove(board_id=board.id, seat=seat, position=n, opponent_move=theirs,
                           reply=mine) for n, (theirs, mine) in enumerate(pairs, 1)]
        self.session.add_all(rows)
        board.queued += len(rows)
        return rows

    def _clear_queues(self, board: Board, seat: int | None) -> None:
        if not board.queued:
            return
        query = delete(QueuedMove).where(QueuedMove.board_id == board.id)
        if seat is not None:
            query = query.where(QueuedMove.seat == seat)
        gone = self.session.execute(query).rowcount  # type: ignore[attr-defined]
        board.queued = 0 if seat is None else max(board.queued - gone, 0)

    def _fire_queue(self, board: Board, engine: AnyEngine, position: Any,
                    played: str) -> None:
        """After a move: the next player's first queued pair answers it, or the queue,
        now out of date, is cleared."""
        seat = board.to_move
        queue = self.queue_of(board, seat) if board.queued else []
        if not queue:
            return
        first = queue[0]
        if first.opponent_move != played:
            self._clear_queues(board, seat)
            self._record(QueueCleared(board.id, seat, first.opponent_move, played))
            return
        try:
            after, notation = engine.play(position, first.reply)
        except RuleError:  # cannot happen: checked when queued; but never trust a queue
            self._clear_queues(board, seat)
            self._record(QueueCleared(board.id, seat, first.opponent_move, played))
            return
        self.session.delete(first)
        board.queued -= 1
        self._apply(board, engine, after, notation, None, automatic=True)

    # -- watching, talking --------------------------------------------------------------------
    def subscribe(self, board: Board, user: User, on: bool) -> bool:
        """Start or stop watching a board; returns whether anything changed."""
        found = self.session.get(Subscription, (board.id, user.id))
        forget_subscribers(self.session, board)
        if on and found is None:
            if seats_of(board, user):
                raise PlayerError(f"{user.userid} plays board {board.number} and gets its "
                                  "board mails anyway", board=board)
            self.session.add(Subscription(board_id=board.id, user_id=user.id))
            board.watchers += 1
            return True
        if not on and found is not None:
            self.session.delete(found)
            board.watchers -= 1
            return True
        return False

    def chat(self, board: Board, user: User, text: str) -> None:
        if not seats_of(board, user) and self.session.get(
                Subscription, (board.id, user.id)) is None:
            raise PlayerError(f"only the players and subscribers of board {board.number} "
                              "may chat on it", board=board)
        if not text.strip():
            raise PlayerError(N_("write your message in the body of the mail"))
        self._record(ChatSent(board.id, user.id, text.strip()[:MAX_CHAT]))

    def set_notify(self, user: User, game: str, on: bool | None) -> bool:
        """Result notices for every finished board of a game; None toggles."""
        found = self.session.get(GameNotify, (user.id, game))
        want = found is None if on is None else on
        if want and found is None:
            self.session.add(GameNotify(user_id=user.id, game=game))
        elif not want and found is not None:
            self.session.delete(found)
        return want

    # -- the clock --------------------------------------------------------------------------
    def check_clock(self, board: Board) -> None:
        """A board whose clock is due: nag the player to move, or end the game on time."""
        if board.finished:
            board.clock_due_at = None
            return
        if player_of(board, board.to_move).bot is not None:  # bots never time out
            board.clock_due_at = clock.first_deadline(board, self.now)
            return
        waited = clocks.idle(self.session, board, self.now)
        if waited >= board.forfeit_days * clocks.DAY:
            loser = player_of(board, board.to_move)
            # the days as the player lived them: those on vacation said apart
            away = round((self.now - board.turn_started_at - waited) / clocks.DAY)
            days = (f"{board.forfeit_days + away} days ({away} of them on vacation, which "
                    "the clock does not count)" if away else f"{board.forfeit_days} days")
            if not self.taken_up(board, loser):  # nobody loses a board they never took up
                # no result, like a decline (which a record gives no moves, so it ends
                # as abandoned)
                self.finish(board, Outcome(None, Termination.ABANDONED,
                                           f"{loser.userid} did not take the board up within "
                                           f"{days}"))
                return
            self.finish(board, Outcome(1 - board.to_move, Termination.TIME,
                                       f"{loser.userid} did not move for {days}"))
            return
        due_nags = min(int(waited / (board.nag_days * clocks.DAY)),
                       math.ceil(board.forfeit_days / board.nag_days) - 1)
        if due_nags > board.nags_sent:
            board.nags_sent = due_nags
            self._record(NagDue(board.id, board.to_move, int(waited / clocks.DAY),
                                board.forfeit_days))
        clock.schedule(self.session, board, self.now)

    def due_boards(self, limit: int = 100, *, board_id: int | None = None) -> list[Board]:
        """Boards whose clock is due (only ``board_id``, if given), the most overdue first."""
        query = (select(Board).where(Board.status == BoardStatus.ACTIVE,
                                     Board.clock_due_at <= self.now)
                 .order_by(Board.clock_due_at).limit(limit))
        if board_id is not None:
            query = query.where(Board.id == board_id)
        if self.session.get_bind().dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        return list(self.session.scalars(query))

    def postpone_clock(self, board_id: int, delay: timedelta) -> None:
        """Look at a board's clock again only after ``delay`` (its check failed)."""
        self.session.execute(update(Board).where(Board.id == board_id)
                             .values(clock_due_at=self.now + delay))

    # -- vacations --------------------------------------------------------------------------
    def vacation(self, user: User, days: int | None) -> Vacation | None:
        """Stop the user's clocks for ``days`` from now (None: end a vacation now)."""
        current = clocks.current_vacation(self.session, user.id, self.now)
        if days is None:
            if current is None:
                raise PlayerError(f"{user.userid} is not on vacation")
            current.ends_at = self.now
            self._reschedule(user)
            return None
        if days < 1:
            raise PlayerError(N_("a vacation is at least one day"))
        taken = clocks.days_taken(self.session, user.id, self.now)
        if current is not None:  # a new length replaces the rest of the current one
            taken -= (current.ends_at - self.now) / clocks.DAY
        left = clock.VACATION_DAYS_PER_YEAR - taken
        if days > left + 1e-9:
            raise PlayerError(f"{user.userid} has {max(round(left), 0)} vacation day(s) left "
                              f"this year (of {clock.VACATION_DAYS_PER_YEAR}); ask for no "
                              "more than that")
        if current is not None:
            current.ends_at = self.now + timedelta(days=days)
            self._reschedule(user)
            return current
        vacation = Vacation(user_id=user.id, starts_at=self.now,
                            ends_at=self.now + timedelta(days=days))
        self.session.add(vacation)
        self._reschedule(user)
        return vacation

    def _reschedule(self, user: User) -> None:
        # the views of boards made before in the session show the clocks as they were
        self.session.info[clocks.VACATIONS_CHANGED] = clocks.vacations_changed(self.session) + 1
        boards = self.session.scalars(
            select(Board).join(BoardPlayer)
            .where(BoardPlayer.user_id == user.id, Board.status == BoardStatus.ACTIVE)
        ).unique()
        for board in boards:
            if player_of(board, board.to_move).id == user.id:
                clock.schedule(self.session, board, self.now)


def board_engine(name: str) -> AnyEngine:
    engine = get_engine(name)
    if engine is None:
        raise PlayerError(f"there is no game {name!r}")
    return engine
