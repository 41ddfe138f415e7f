"""What a board looks like in mail: its summary, status line and subject lines.

Plain data goes in, text comes out of the templates; nothing here changes a board.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, Subscription, User
from pbmserv.db.status import RequestKind
from pbmserv.games import AnyEngine
from pbmserv.games.base import Termination
from pbmserv.render import render
from pbmserv.service.boards import moves_of, player_of, position_of
from pbmserv.service.ratings import change_lines


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
    elif board.winner is not None:
        context["winner"] = player_of(board, board.winner).userid
    return context


def diagram(engine: AnyEngine, position: Any) -> str:
    return render(engine.board_template(), view=engine.view(position))


def subscribers(session: Session, board: Board) -> list[User]:
    return [s.user for s in session.scalars(
        select(Subscription).where(Subscription.board_id == board.id))]


def board_summary(session: Session, engine: AnyEngine, board: Board) -> str:
    moves = moves_of(session, board)
    seats = len(engine.seats)
    rows = [
        (i // seats + 1, [m.notation for m in moves[i:i + seats]])
        for i in range(0, len(moves), seats)
    ]
    return render(
        "summary.txt.j2",
        title=engine.title,
        game=engine.name,
        board=board,
        players=[(engine.seats[p.seat], p.user.userid, p.time_used) for p in board.players],
        watchers=[u.userid for u in subscribers(session, board)],
        status=status_line(engine, board),
        to_move=None if board.finished else player_of(board, board.to_move).userid,
        rows=rows,
        diagram=diagram(engine, position_of(engine, board)),
        ratings=change_lines(session, board) if board.finished else [],
    )


def board_subject(engine: AnyEngine, board: Board, *, new: bool = False,
                  commented: bool = False) -> str:
    return render("subjects/board.txt.j2", engine=engine, board=board, new=new,
                  commented=commented,
                  to_move=None if board.finished else player_of(board, board.to_move).userid
                  ).strip()
