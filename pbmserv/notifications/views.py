"""What a board looks like in mail and on the web: its view, and what is rendered from
it.

A ``BoardView`` is the board as it stands, in plain data: players, clocks, the move
list, the status line, and the engine's ``view`` of the position and of the one
before the last move.  It is built once per state of the board (``board_view``): a
move's reply, its board mails (text and HTML, for every reader) and their subjects
are all rendered from the one view, each piece once (``summary_text``,
``summary_html``, ``board_subject``), and the web page's board is rendered from a
view too.  A piece is drawn once per language (``pbmserv.i18n.speaking``): the status
line too is kept as what it is made of and said in the reader's language.  What
differs from one reader to the next (notes worded for them, their
reply address) is added by the mail's own template, on top of the view.

Plain data goes in, text comes out of the templates; nothing here changes a board.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any, TypeVar, cast

from markupsafe import Markup
from sqlalchemy import bindparam, inspect, select
from sqlalchemy.orm import Session

from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, Move
from pbmserv.db.status import RequestKind
from pbmserv.games import AnyEngine
from pbmserv.games.base import Termination
from pbmserv.i18n import spoken
from pbmserv.notifications.drawing import drawn_html
from pbmserv.reads import clocks
from pbmserv.render import render, render_mail_html
from pbmserv.service.boards import player_of, position_at, position_of, subscribers
from pbmserv.service.ratings import change_lines

#: rounds of moves a board mail shows (the latest)
SHOWN_ROUNDS = 20
#: rounds of moves 'show' lists at most (the latest): more than a reply holds
LISTED_ROUNDS = 2000
#: rounds of moves a board's web page lists, around the move it shows
PAGE_ROUNDS = 100
#: where the views made are kept for the session's lifetime (the latest of each board)
VIEWS = "pbmserv.board_views"
_MOVES = (select(Move.ply, Move.notation, Move.created_at)
          .where(Move.board_id == bindparam("board"), Move.ply >= bindparam("first"),
                 Move.ply <= bindparam("last"))
          .order_by(Move.ply))
#: the time of the last move
_LAST = select(Move.created_at).where(Move.board_id == bindparam("board"),
                                      Move.ply == bindparam("ply"))

#: the board's own values (what a status line may say of it)
_BOARD_COLUMNS = inspect(Board).column_attrs
#: a seat's name, its player's userid and the seconds they have used
Seat = tuple[str, str, int]
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class BoardView:
    """A board as every mail and page shows it, in plain data (see ``board_view``).
    Templates get it as ``board``: ``board.number``, ``board.status``, ``board.rows``..."""

    id: int
    #: the game's name and title
    game: str
    title: str
    number: int
    options: str
    ply: int
    finished: bool
    created_at: datetime
    #: the time of the last move itself (an undo or an offer changes the board later)
    last_move_at: datetime | None
    nag_days: int
    forfeit_days: int
    #: when the clock of the player to move runs out (reads.clocks.clock_of; None: no
    #: clock runs), and whether they took the board up (if not, it ends with no result)
    deadline: datetime | None
    taken_up: bool
    #: the players on vacation now, and until when: (userid, end), in seat order
    away: tuple[tuple[str, datetime], ...]
    players: tuple[Seat, ...]
    #: the time of those who have moved (one who has not has used none yet)
    timed: tuple[Seat, ...]
    #: the userids of its subscribers
    watchers: tuple[str, ...]
    #: what the status line says (``status``): whose turn, an open offer, the result
    said: dict[str, Any]
    #: who is to move (None: the game is over), and whether that is a bot
    to_move: str | None
    bot_to_move: bool
    #: the moves shown, a row a round: (round, [notation, ...])
    rows: list[tuple[int, list[str]]]
    #: how many moves before the first shown are not shown, and after the last (a web
    #: page's window around a move)
    hidden: int
    later: int
    #: every move was asked for ('show'), and the most such a list holds
    full: bool
    listed_most: int
    #: the rating changes of a finished game
    ratings: list[str]
    #: how a move is written (the first form): the example of an answer by reply
    example: str
    #: the engine's view of the position (``template`` draws it in text, and
    #: boards/<game>.html.j2 in HTML), and of the position before the last move (None
    #: at the start): the cells that move changed are marked
    template: str
    position: dict[str, Any]
    before: dict[str, Any] | None
    #: the positions themselves (the engine's values), for what is worked out only when
    #: a reader asks for it: the board in words (notifications.words)
    state: Any = field(default=None, repr=False)
    state_before: Any = field(default=None, repr=False)
    #: the pieces rendered from this view, each once (see ``drawn_once``)
    drawn: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def status(self) -> str:
        """The status line, in the language spoken (one line: templates wrap it)."""
        return drawn_once(self, "status", lambda: _status(self.said))


def board_view(session: Session, engine: AnyEngine, board: Board, *,
               full: bool = False, around: int | None = None) -> BoardView:
    """The view of ``board`` as it stands: the latest ``SHOWN_ROUNDS`` rounds of moves
    (a mail costs the same at move 1,000 as at move 10), or with ``full`` the latest
    ``LISTED_ROUNDS`` (every move of all but the longest games), or ``PAGE_ROUNDS``
    around move ``around`` (a web page).  Made once per state of the board in a
    session, however many mails and pages show it."""
    session.flush()  # the newest move belongs in the list
    watchers = tuple(u.userid for u in subscribers(session, board))
    # (a vacation begun or ended in the session changes the clock, not the board)
    key = (board.ply, board.status, board.request_kind, board.request_by, board.updated_at,
           watchers, clocks.vacations_changed(session))
    views: dict[tuple[int, bool, int | None], tuple[Any, BoardView]] = \
        session.info.setdefault(VIEWS, {})
    known = views.get((board.id, full, around))
    if known is not None and known[0] == key:
        return known[1]
    clock = clocks.clock_of(session, board, utcnow())
    away = tuple((p.user.userid, clock.away[p.user_id]) for p in board.players
                 if p.user_id in clock.away)
    seats = len(engine.seats)
    rounds = PAGE_ROUNDS if around is not None else LISTED_ROUNDS if full else SHOWN_ROUNDS
    first, last = listed(board, seats, rounds, around)
    moves = session.execute(_MOVES, {"board": board.id, "first": first, "last": last}).all()
    rows: list[tuple[int, list[str]]] = []
    for ply, notation, _ in moves:
        if (ply - 1) % seats == 0 or not rows:
            rows.append(((ply - 1) // seats + 1, []))
        rows[-1][1].append(notation)
    if last == board.ply:
        last_move_at = moves[-1][2] if moves else None
    else:
        last_move_at = session.scalar(_LAST, {"board": board.id, "ply": board.ply})
    players = tuple((engine.seats[p.seat], p.user.userid, p.time_used) for p in board.players)
    moved = tuple(s for s, p in zip(players, board.players, strict=True) if p.seat < board.ply)
    mover = None if board.finished else player_of(board, board.to_move)
    state = position_of(engine, board)
    previous = position_at(session, engine, board, board.ply - 1) if board.ply else None
    view = BoardView(
        id=board.id, game=engine.name, title=engine.title, number=board.number,
        options=board.options, ply=board.ply, finished=board.finished,
        created_at=board.created_at, last_move_at=last_move_at,
        nag_days=board.nag_days, forfeit_days=board.forfeit_days,
        deadline=clock.deadline,
        taken_up=mover is None or all(p.accepted_at is not None for p in board.players
                                      if p.user_id == mover.id),
        away=away, players=players,
        timed=moved,
        watchers=watchers, said=_kept(status_context(engine, board)),
        to_move=None if mover is None else mover.userid,
        bot_to_move=mover is not None and mover.bot is not None,
        rows=rows, hidden=first - 1, later=board.ply - last, full=full,
        listed_most=LISTED_ROUNDS * seats,
        ratings=change_lines(session, board) if board.finished else [],
        example=engine.forms_for(board.option_flags)[0],
        template=engine.board_template(),
        position=engine.view(state), before=None if previous is None else engine.view(previous),
        state=state, state_before=previous,
    )
    views[(board.id, full, around)] = (key, view)
    return view


def summary_text(view: BoardView) -> str:
    """The board's summary for text mail (summary.txt.j2), the board drawn in text."""
    return drawn_once(view, "text", lambda: render(
        "summary.txt.j2", board=view,
        diagram=render(view.template, view=view.position)))


def summary_html(view: BoardView) -> Markup:
    """The same summary in HTML for mail (summary.html.j2): the board drawn as a table
    with the cells of the last move marked, the move list with the last move marked.
    Its elements carry the styles of boards/board.css (``render.render_mail_html``):
    give it to a mail template rendered the same way."""
    return drawn_once(view, "html", lambda: render_mail_html(
        "summary.html.j2", board=view, diagram=drawn_html(view.game, view.position,
                                                          view.before, mail=True)))


def board_subject(view: BoardView, *, new: bool = False, commented: bool = False) -> str:
    """The subject of a board mail, or of the reply to a command that changed it."""
    return drawn_once(view, ("subject", new, commented), lambda: render(
        "subjects/board.txt.j2", board=view, new=new, commented=commented).strip())


def drawn_once(view: BoardView, piece: Any, draw: Callable[[], T]) -> T:
    """``piece`` of ``view`` in the language spoken, rendered by ``draw`` the first time
    it is asked for."""
    key = (spoken(), piece)
    found = view.drawn.get(key)  # (None is never a piece drawn)
    if found is None:
        found = view.drawn[key] = draw()
    return cast(T, found)


def board_summary(session: Session, engine: AnyEngine, board: Board, *,
                  full: bool = False) -> str:
    """The text summary of a board as it stands (``full``: every move listed)."""
    return summary_text(board_view(session, engine, board, full=full))


def board_summary_html(session: Session, engine: AnyEngine, board: Board, *,
                       full: bool = False) -> Markup:
    """The HTML summary of a board as it stands, for mail (see ``summary_html``)."""
    return summary_html(board_view(session, engine, board, full=full))


def status_line(engine: AnyEngine, board: Board) -> str:
    """One sentence or two, on one line (templates wrap it)."""
    return _status(status_context(engine, board))


def _status(said: dict[str, Any]) -> str:
    return " ".join(render("status.txt.j2", **said).split())


def _kept(said: dict[str, Any]) -> dict[str, Any]:
    """``status_context`` with the board's columns copied: a view's status said later,
    in another language, says what was so when the view was made."""
    board = said["board"]
    return {**said, "board": SimpleNamespace(
        **{column.key: getattr(board, column.key) for column in _BOARD_COLUMNS})}


def status_context(engine: AnyEngine, board: Board) -> dict[str, Any]:
    context: dict[str, Any] = {"board": board, "seats": engine.seats,
                               "Termination": Termination, "RequestKind": RequestKind}
    if not board.finished:
        context["mover"] = player_of(board, board.to_move).userid
        if board.request_kind is not None and board.request_by is not None:
            context["requester"] = player_of(board, board.request_by).userid
            context["answerer"] = player_of(board, 1 - board.request_by).userid
            if board.request_kind is RequestKind.DRAW:
                context["agreed"] = agreed_ending(engine, board)
    elif board.winner is not None:
        context["winner"] = player_of(board, board.winner).userid
    return context


def agreed_ending(engine: AnyEngine, board: Board) -> str | None:
    """How an agreed end would be scored now, where the rules score it (Hexamoeba
    counts stacks); None where it is a plain draw."""
    outcome = engine.agreed_outcome(position_of(engine, board))
    if outcome.winner is None and outcome.reason == "ended by agreement":
        return None
    tally = outcome.reason.removeprefix("ended by agreement; ")
    if outcome.winner is None:
        return f"{tally}: it would be a draw"
    return f"{tally}: {player_of(board, outcome.winner).userid} would win"


def diagram(engine: AnyEngine, position: Any) -> str:
    """Any position of the game drawn in text (a board's own is in its view)."""
    return render(engine.board_template(), view=engine.view(position))


def listed(board: Board, seats: int, rounds: int, around: int | None = None) -> tuple[int, int]:
    """The first and last move of a list of ``rounds`` whole rounds: the latest, or
    those around move ``around`` (the list starts and ends at its rounds' ends)."""
    if board.ply == 0:
        return 1, 0
    last_round = (board.ply - 1) // seats
    middle = last_round if around is None else (max(around, 1) - 1) // seats
    first_round = max(0, middle - rounds // 2) if around is not None else last_round
    end_round = min(last_round, first_round + rounds - 1)
    first_round = max(0, end_round - rounds + 1)
    return first_round * seats + 1, min(board.ply, (end_round + 1) * seats)
