"""What a board looks like in mail: its summary (text, and HTML), status line and
subject lines.

Plain data goes in, text comes out of the templates; nothing here changes a board.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, Move
from pbmserv.db.status import RequestKind
from pbmserv.games import AnyEngine
from pbmserv.games.base import Termination
from pbmserv.notifications.drawing import board_diagram_html
from pbmserv.render import render, render_mail_html
from pbmserv.service.boards import player_of, position_of, subscribers
from pbmserv.service.ratings import change_lines

#: rounds of moves a board mail shows (the latest)
SHOWN_ROUNDS = 20
#: where rendered summaries are kept for the session's lifetime
SUMMARY_CACHE = "pbmserv.summaries"
SUMMARY_CONTEXTS = "pbmserv.summary_contexts"
_MOVES = (select(Move.ply, Move.notation, Move.created_at)
          .where(Move.board_id == bindparam("board"), Move.ply >= bindparam("first"))
          .order_by(Move.ply))


def status_line(engine: AnyEngine, board: Board) -> str:
    """One sentence or two, on one line (templates wrap it)."""
    return " ".join(render("status.txt.j2", **status_context(engine, board)).split())


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
    return render(engine.board_template(), view=engine.view(position))


def summary_context(session: Session, engine: AnyEngine, board: Board,
                    watchers: tuple[str, ...], *, full: bool = False) -> dict[str, Any]:
    """What a summary shows, for summary.txt.j2 and summary.html.j2 alike (each adds
    its own ``diagram``): the latest ``SHOWN_ROUNDS`` rounds of moves, or every move
    with ``full``."""
    seats = len(engine.seats)
    first = 1 if full else max(1, ((board.ply - 1) // seats - SHOWN_ROUNDS + 1) * seats + 1)
    moves = session.execute(_MOVES, {"board": board.id, "first": first}).all()
    rows: list[tuple[int, list[str]]] = []
    for ply, notation, _ in moves:
        if (ply - 1) % seats == 0 or not rows:
            rows.append(((ply - 1) // seats + 1, []))
        rows[-1][1].append(notation)
    return {
        "title": engine.title,
        "game": engine.name,
        "board": board,
        "players": [(engine.seats[p.seat], p.user.userid, p.time_used) for p in board.players],
        # the time of those who have moved (one who has not has used none yet)
        "timed": [(engine.seats[p.seat], p.user.userid, p.time_used) for p in board.players
                  if p.seat < board.ply],
        "watchers": watchers,
        "status": status_line(engine, board),
        "to_move": None if board.finished else player_of(board, board.to_move).userid,
        "bot_to_move": not board.finished and player_of(board, board.to_move).bot is not None,
        "rows": rows,
        "hidden": first - 1,
        # the time of the last move itself (an undo or an offer changes the board later)
        "last_move_at": moves[-1][2] if moves else None,
        "ratings": change_lines(session, board) if board.finished else [],
    }


def board_summary(session: Session, engine: AnyEngine, board: Board, *,
                  full: bool = False) -> str:
    """The summary of a board as it stands.  Board mails show the latest
    ``SHOWN_ROUNDS`` rounds of moves (``full``: every move), so a mail costs the same at
    move 1,000 as at move 10; it is rendered once per state of the board, however many
    mails carry it."""
    return _summary(session, engine, board, full=full, html=False)


def board_summary_html(session: Session, engine: AnyEngine, board: Board, *,
                       full: bool = False) -> Markup:
    """The same summary in HTML for mail (summary.html.j2): the board drawn as a table
    with the cells of the last move marked, the move list with the last move marked.
    Its elements carry the styles of boards/board.css (``render.render_mail_html``):
    give it to a mail template rendered the same way."""
    return Markup(_summary(session, engine, board, full=full, html=True))


def _summary(session: Session, engine: AnyEngine, board: Board, *, full: bool,
             html: bool) -> str:
    watchers = tuple(u.userid for u in subscribers(session, board))
    key = (board.ply, board.status, board.request_kind, board.request_by, board.updated_at,
           watchers, full)
    cache: dict[tuple[int, bool], tuple[Any, str]] = session.info.setdefault(SUMMARY_CACHE, {})
    cached = cache.get((board.id, html))
    if cached is not None and cached[0] == key:
        return cached[1]
    # the text and the HTML summary of one state share their context (one read of the
    # moves); each adds its own diagram
    contexts: dict[int, tuple[Any, dict[str, Any]]] = session.info.setdefault(
        SUMMARY_CONTEXTS, {})
    known = contexts.get(board.id)
    if known is not None and known[0] == key:
        context = known[1]
    else:
        context = summary_context(session, engine, board, watchers, full=full)
        contexts[board.id] = (key, context)
    if html:
        text: str = render_mail_html("summary.html.j2",
                                     diagram=board_diagram_html(session, engine, board,
                                                                mail=True), **context)
    else:
        text = render("summary.txt.j2", diagram=diagram(engine, position_of(engine, board)),
                      **context)
    cache[(board.id, html)] = (key, text)
    return text


def board_subject(engine: AnyEngine, board: Board, *, new: bool = False,
                  commented: bool = False) -> str:
    return render("subjects/board.txt.j2", engine=engine, board=board, new=new,
                  commented=commented,
                  to_move=None if board.finished else player_of(board, board.to_move).userid
                  ).strip()
