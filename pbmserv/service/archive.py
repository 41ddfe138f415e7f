"""Game records of boards (pbmserv.records): one board's, every finished game's
(export), and finished games read back into the database (import).

- A record holds the game, options, board number, players, times, every move with
  its time and comment, the result and how the game ended, the players' rating
  changes (rounded to hundredths: whole points are what players read, and the tag
  then fits a mail line) and, for a tournament's board, the tournament and round.
- Import replays every move through the game's engine: a record with an illegal
  move, or a result the position contradicts, is refused, naming the record and the
  move, and nothing at all is imported.  Only finished games are imported.
- An imported board keeps its number if that number is free in its game, else it
  takes the next free one; a record already imported (same game, number, players
  and start) is skipped.  A player with no account gets a disabled one: no
  password opens it and its address (``<userid>@imported.invalid``) reaches nobody.
- An imported board keeps its record's site, tournament name and round, and its
  rating changes as recorded; the players' ratings are worked out by rating the
  imported games in the order they ended (see ``ratings.restore_board``).  So a
  complete export imported into an empty database exports identically and leaves
  every rating as it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import (
    Board,
    BoardEvent,
    BoardPlayer,
    ImportedBoard,
    Move,
    Tournament,
    TournamentGame,
    User,
)
from pbmserv.db.status import BoardStatus
from pbmserv.games.base import Termination
from pbmserv.mail.quotes import mask_addresses
from pbmserv.records import GameRecord, RatingChange, RecordError, RecordMove, replay
from pbmserv.records.model import engine_of as record_engine
from pbmserv.service.accounts import DISABLED_PASSWORD, IMPORTED_DOMAIN, USERID_RE, find_user
from pbmserv.service.boards import (
    checkpoint,
    engine_of,
    moves_of,
    next_board_number,
    position_of,
)
from pbmserv.service.ratings import board_ratings, restore_board

#: the longest tag values the tables keep
MAX_TEXT = 200


# -- records of boards ------------------------------------------------------------------
def _label(session: Session, board: Board, site: str) -> tuple[str, str | None, int | None]:
    """(site, event, round) of a board's record."""
    imported = session.get(ImportedBoard, board.id)
    if imported is not None:
        return imported.site, imported.event, imported.round
    found = session.execute(
        select(Tournament.name, TournamentGame.round)
        .join(TournamentGame, TournamentGame.tournament_id == Tournament.id)
        .where(TournamentGame.board_id == board.id)).tuples().one_or_none()
    return (site, *found) if found else (site, None, None)


def _end(board: Board) -> tuple[Termination | None, str]:
    """How a board ended; a board finished before endings were kept by kind ends as
    its position says, or else counts as abandoned."""
    if not board.finished:
        return None, ""
    if board.termination is not None:
        return board.termination, board.result or ""
    engine = engine_of(board)
    outcome = engine.outcome(position_of(engine, board))
    return (outcome.termination if outcome else Termination.ABANDONED), board.result or ""


#: what an act's comment is said after, in a record: "alice, offering to end the
#: game by agreement: Shall we?"
_ACTS = {("request-made", "draw"): "offering to end the game by agreement",
         ("request-made", "undo"): "asking to take back a move",
         ("request-answered", True): "accepting", ("request-answered", False): "rejecting",
         ("game-finished", Termination.RESIGNATION.value): "resigning",
         ("game-finished", Termination.DECLINED.value): "declining"}


def act_comments(session: Session, board: Board) -> dict[int, list[str]]:
    """The comments sent with acts that are no move (an offer, a request, an answer,
    a resignation), by the move they followed: a record keeps them after that move's
    own comment.  An act's comment before any move has no move to follow and is left
    out; one that followed a move later taken back follows the move before it."""
    rows = session.execute(
        select(BoardEvent.kind, BoardEvent.data).where(
            BoardEvent.board_id == board.id,
            BoardEvent.kind.in_(("move-played", "move-taken-back", "request-made",
                                 "request-answered", "game-finished")))
        .order_by(BoardEvent.id)).all()
    seats = {p.seat: p.user.userid for p in board.players}
    ply = 0
    notes: dict[int, list[str]] = {}
    for kind, data in rows:
        fields = json.loads(data)
        if kind == "move-played":
            ply = int(fields["ply"])
            continue
        if kind == "move-taken-back":
            ply = int(fields["ply"]) - 1
            moved = notes.pop(ply + 1, [])
            if ply > 0:
                notes.setdefault(ply, []).extend(moved)
            continue
        comment = fields.get("comment")
        if not comment or ply == 0:
            continue
        key = {"request-made": fields.get("request"), "request-answered": fields.get("accepted"),
               "game-finished": fields.get("termination")}[kind]
        seat = fields.get("by") if kind in ("request-answered", "game-finished") \
            else fields.get("seat")
        act = _ACTS.get((kind, key))
        if act is not None and seat in seats:
            notes.setdefault(ply, []).append(f"{seats[seat]}, {act}: {comment}")
    return notes


def _joined(comment: str | None, notes: list[str] | None) -> str | None:
    """A move's comment and the act comments that followed it, one to a line (comments
    stored before addresses were masked on intake are masked here)."""
    text = "\n".join(([comment] if comment else []) + (notes or []))
    return mask_addresses(text) if text else None


def record_of(session: Session, board: Board, site: str) -> GameRecord:
    """The record of a board, finished or not; ``site`` names this server."""
    termination, reason = _end(board)
    site, event, round_ = _label(session, board, site)
    notes = act_comments(session, board)
    changes = tuple(RatingChange(r.user.userid, round(r.rating_before, 2),
                                 round(r.rating_after, 2)) for r in board_ratings(session, board))
    return GameRecord(
        game=board.game, options=board.option_flags, board=board.number,
        players=tuple(p.user.userid for p in board.players), started=board.created_at,
        ended=board.updated_at if board.finished else None,
        moves=tuple(RecordMove(m.notation, m.created_at, _joined(m.comment, notes.get(m.ply)))
                    for m in moves_of(session, board)),
        winner=board.winner if board.finished else None, termination=termination,
        reason=reason, ratings=changes, event=event, round=round_, site=site)


def finished_records(session: Session, site: str, *, game: str | None = None,
                     since: datetime | None = None) -> list[GameRecord]:
    """Every finished game (of ``game``, ended at or after ``since``), by game and in
    the order they ended (and were rated)."""
    # boards that ended at the same instant (one act ended two) go in the order they
    # ended, which their events keep; imported boards have none and keep their order
    # (a record says when a game ended to the second, so after an import every board
    # of a second has the same time)
    ended = (select(func.coalesce(func.min(BoardEvent.id), 0))
             .where(BoardEvent.board_id == Board.id, BoardEvent.kind == "game-finished")
             .scalar_subquery())
    query = (select(Board).where(Board.status == BoardStatus.FINISHED)
             .order_by(Board.game, Board.updated_at, ended, Board.id))
    if game is not None:
        query = query.where(Board.game == game)
    if since is not None:
        query = query.where(Board.updated_at >= since)
    return [record_of(session, board, site) for board in session.scalars(query)]


# -- import -----------------------------------------------------------------------------
@dataclass
class ImportReport:
    #: (game, board number) of every board imported
    boards: list[tuple[str, int]] = field(default_factory=list)
    #: (game, board number) of records found in the database already
    skipped: list[tuple[str, int]] = field(default_factory=list)
    #: userids of the disabled accounts made for players who had none
    users: list[str] = field(default_factory=list)


def _name(record: GameRecord, n: int) -> str:
    board = f" board {record.board}" if record.board is not None else ""
    return f"record {n} ({record.game}{board})"


def check_record(record: GameRecord) -> None:
    """Refuse what cannot be imported; the message says why (see replay for moves)."""
    if record.termination is None:
        raise RecordError("the game is still in play; only finished games are imported")
    for userid in record.players:
        if not USERID_RE.match(userid):
            raise RecordError(f"{userid!r} cannot be a userid here")
    if len({u.lower() for u in record.players}) < len(record.players):
        raise RecordError("a player cannot play against themselves")
    for what, text in (("event", record.event or ""), ("site", record.site),
                       ("reason", record.reason)):
        if len(text) > MAX_TEXT:
            raise RecordError(f"the {what} is longer than {MAX_TEXT} characters")
    if record.ratings and sorted(c.userid for c in record.ratings) != sorted(record.players):
        raise RecordError("rating changes are given for every player or for none")
    replay(record)


def import_records(session: Session, records: Sequence[GameRecord],
                   now: datetime) -> ImportReport:
    """Import finished games; raises RecordError naming the first bad record (then
    the caller must roll back: nothing is kept)."""
    for n, record in enumerate(records, start=1):
        try:
            check_record(record)
        except RecordError as exc:
            raise RecordError(f"{_name(record, n)}: {exc}") from None
    report = ImportReport()
    for record in sorted(records, key=lambda r: r.ended or r.started):  # stable: file order
        _import(session, record, now, report)
    return report


def _user(session: Session, userid: str, report: ImportReport) -> User:
    user = find_user(session, userid)
    if user is None:
        # confirmed by the administrator who imports it: its address reaches nobody
        user = User(key=userid.lower(), userid=userid, password_hash=DISABLED_PASSWORD,
                    email=f"{userid.lower()}@{IMPORTED_DOMAIN}", confirmed_at=utcnow())
        session.add(user)
        report.users.append(userid)
    return user


def _present(session: Session, record: GameRecord, users: Sequence[User]) -> bool:
    if record.board is None:
        return False
    board = session.scalar(select(Board).where(Board.game == record.game,
                                               Board.number == record.board))
    return board is not None and board.created_at == record.started and [
        p.user_id for p in board.players] == [u.id for u in users]


def _import(session: Session, record: GameRecord, now: datetime, report: ImportReport) -> None:
    engine = record_engine(record.game)
    users = [_user(session, userid, report) for userid in record.players]
    if _present(session, record, users):
        report.skipped.append((record.game, record.board or 0))
        return
    taken = record.board is None or session.scalar(
        select(Board.id).where(Board.game == record.game, Board.number == record.board))
    number = next_board_number(session, record.game) if taken else record.board
    assert number is not None
    options = engine.check_options(record.options)
    position = engine.new(options)
    moves = []
    last = record.started
    used = [0] * len(users)
    for ply, move in enumerate(record.moves, start=1):
        seat = engine.to_move(position)
        position, notation = engine.play(position, move.notation)
        seconds = max(0, int((move.played_at - last).total_seconds()))
        used[seat] += seconds
        kept = checkpoint(ply)
        moves.append(Move(ply=ply, seat=seat, notation=notation, comment=move.comment,
                          created_at=move.played_at, turn_started_at=last, nags_before=0,
                          seconds_used=seconds, automatic=False,
                          position=engine.serialize(position) if kept else None,
                          position_version=engine.position_version if kept else None))
        last = move.played_at
    ended = record.ended or last
    board = Board(
        game=engine.name, number=number, options=" ".join(options),
        position=engine.serialize(position), position_version=engine.position_version,
        ply=len(moves), to_move=engine.to_move(position), status=BoardStatus.FINISHED,
        winner=record.winner, termination=record.termination, result=record.reason or None,
        turn_started_at=last, nags_sent=0, clock_due_at=None, created_at=record.started,
        updated_at=ended)
    session.add(board)
    session.flush()  # the board's id, for its players, moves and import record
    for seat, user in enumerate(users):
        session.add(BoardPlayer(board_id=board.id, seat=seat, user_id=user.id,
                                time_used=used[seat]))
    for move_row in moves:
        move_row.board_id = board.id
        session.add(move_row)
    session.add(ImportedBoard(board_id=board.id, site=record.site, event=record.event,
                              round=record.round, imported_at=now))
    session.refresh(board)  # (flushed first) with its players
    if record.ratings:
        changes = {c.userid: (c.before, c.after) for c in record.ratings}
        restore_board(session, board, [changes[u] for u in record.players], ended)
    report.boards.append((engine.name, number))
