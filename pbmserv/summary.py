"""The board summary every board mail and move reply carries, and its subject line."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from pbmserv.boards import moves_of, player_of, position_of
from pbmserv.db.models import Board
from pbmserv.games import AnyEngine
from pbmserv.render import render


def status_line(engine: AnyEngine, board: Board) -> str:
    if not board.finished:
        user = player_of(board, board.to_move)
        line = f"It is {user.userid}'s turn ({engine.seats[board.to_move]}), move {board.ply + 1}."
        if board.offer_by is not None:
            line += (f" {player_of(board, board.offer_by).userid} has offered to end the "
                     "game by agreement (answer with the move accept or reject).")
        return line
    reason = f": {board.result}" if board.result else ""
    if board.winner is None:
        return f"Game was a tie{reason}."
    winner = player_of(board, board.winner)
    return f"Game won by {winner.userid} ({engine.seats[board.winner]}){reason}."


def diagram(engine: AnyEngine, position: Any) -> str:
    return render(engine.board_template(), view=engine.view(position))


def board_summary(session: Session, engine: AnyEngine, board: Board) -> str:
    moves = moves_of(session, board)
    seats = len(engine.seats)
    rows = [
        (i // seats + 1, [m.notation for m in moves[i:i + seats]])
        for i in range(0, len(moves), seats)
    ]
    players = [(engine.seats[p.seat], p.user.userid) for p in board.players]
    return render(
        "summary.txt.j2",
        title=engine.title,
        game=engine.name,
        board=board,
        players=players,
        options=board.options,
        status=status_line(engine, board),
        to_move=None if board.finished else player_of(board, board.to_move).userid,
        rows=rows,
        diagram=diagram(engine, position_of(engine, board)),
        started=board.created_at,
        last_move=board.updated_at if board.ply else None,
    )


def board_subject(engine: AnyEngine, board: Board, *, new: bool = False,
                  commented: bool = False) -> str:
    tail = "Game over" if board.finished else player_of(board, board.to_move).userid
    subject = f"{'New ' if new else ''}{engine.title} Board {board.number} {tail}"
    return subject + (" **" if commented else "")
