"""Boards drawn in HTML, for web pages and the HTML part of board mail.

A board is an HTML table (``templates/boards/<game>.html.j2``) fed by the engine's
``view`` of a position, the same plain data the text diagram gets.  The cells that
the last move touched are marked: the views of the positions before and after the
move are compared cell by cell, and every cell whose content changed is touched
(a piece left it or arrived, a stack grew or shrank, a square slid into a hole).
This needs nothing from the engines beyond ``view``, and shows exactly what changed;
a cell a move passed over without changing it is not marked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import Session

from pbmserv.db.models import Board, Move
from pbmserv.games import AnyEngine
from pbmserv.render import render_html, render_mail_html
from pbmserv.service.boards import position_at, position_of

#: a cell's name -> the address a link on it leads to, and what following it does
Links = dict[str, tuple[str, str]]
#: a cell's name -> how it is marked: "picked" or "option" (the move page's choices)
Marks = dict[str, str]


@dataclass(frozen=True)
class Square:
    """One cell of a drawn board."""

    #: what stands there, as the engine's view writes it (a whole stack for the hex
    #: games, where the view puts a mark like [1] for a stack too tall for text)
    content: str
    #: changed by the last move
    touched: bool


def contents(view: dict[str, Any]) -> list[list[str]]:
    """The content of every cell, row by row as the view draws them."""
    tall = {t["mark"]: t["stack"] for t in view.get("tall", ())}
    return [[tall.get(cell, cell) for cell in row["cells"]] for row in view["rows"]]


def squares(view: dict[str, Any], before: dict[str, Any] | None) -> list[list[Square]]:
    """The cells of ``view``, each marked if it differs from the same cell of
    ``before`` (nothing is marked without a ``before``)."""
    now = contents(view)
    if before is None:
        return [[Square(cell, False) for cell in row] for row in now]
    old = contents(before)

    def changed(r: int, c: int) -> bool:
        return r >= len(old) or c >= len(old[r]) or old[r][c] != now[r][c]

    return [[Square(cell, changed(r, c)) for c, cell in enumerate(row)]
            for r, row in enumerate(now)]


class HexCells:
    """The cells of a hex board's row as the template's ``hexcell`` macro draws them,
    each drawn once and kept (a board changes a cell or two a move, and every board of
    a game draws the same cells): the board's template asks for a row at a time.

    A cell is known by its game, name, content, mark and whether stacks are drawn:
    the pieces it is drawn with are the game template's own, the same every time."""

    #: cells kept, at most (a cell is some 200 bytes); all are forgotten beyond it
    LIMIT = 50_000

    def __init__(self) -> None:
        self._drawn: dict[tuple[str, str, str, bool, bool], Markup] = {}

    def row(self, game: str, row: dict[str, Any], squares: list[Square],
            pieces: dict[str, Any], stacked: bool, draw: Callable[..., str],
            links: Links | None = None, marks: Marks | None = None) -> list[Markup]:
        """The row's cells; one with a link or a mark (the move page's) is drawn
        afresh, not kept."""
        drawn = self._drawn
        out = []
        for number, square in zip(row["numbers"], squares, strict=True):
            name = row["letter"] + number
            if (links and name in links) or (marks and name in marks):
                out.append(Markup(draw(name, square.content, square.touched, pieces, stacked,
                                       (links or {}).get(name), (marks or {}).get(name, ""))))
                continue
            key = (game, name, square.content, square.touched, stacked)
            cell = drawn.get(key)
            if cell is None:
                if len(drawn) >= self.LIMIT:
                    drawn.clear()
                cell = drawn[key] = Markup(draw(key[1], square.content, square.touched,
                                                pieces, stacked))
            out.append(cell)
        return out


_CELLS = HexCells()
#: the cells of mail, their styles written in
_MAIL_CELLS = HexCells()


def diagram_html(engine: AnyEngine, position: Any, before: Any = None, *,
                 mail: bool = False) -> Markup:
    """The board in ``position`` as an HTML table; with ``before`` (the position
    before the last move), the cells that move changed are marked.  For ``mail``, its
    elements carry their styles (``render.render_mail_html``)."""
    return drawn_html(engine.name, engine.view(position),
                      None if before is None else engine.view(before), mail=mail)


def drawn_html(game: str, view: dict[str, Any], before: dict[str, Any] | None, *,
               mail: bool = False, links: Links | None = None,
               marks: Marks | None = None) -> Markup:
    """The same from the engine's views of the two positions (a board's view holds
    them: notifications.views.BoardView); ``links`` and ``marks`` put links on cells
    and mark them (the move page's choices)."""
    draw = render_mail_html if mail else render_html
    return draw(f"boards/{game}.html.j2", view=view, squares=squares(view, before),
                cells=_MAIL_CELLS if mail else _CELLS, links=links or {}, marks=marks or {})


def positions_around(session: Session, engine: AnyEngine, board: Board,
                     ply: int) -> tuple[Any, Any]:
    """The position after move ``ply`` and the one before it (None for ply 0).

    The last move's positions are stored with the board; an older one is replayed
    once, up to the move before, and the move itself applied to that."""
    if ply == 0:
        return position_at(session, engine, board, 0), None
    before = position_at(session, engine, board, ply - 1)
    if ply == board.ply:
        return position_of(engine, board), before
    notation = session.scalar(select(Move.notation).where(Move.board_id == board.id,
                                                          Move.ply == ply))
    if notation is None:
        raise LookupError(f"board {board.id} has no move {ply}")
    return engine.play(before, notation, live=True)[0], before


def board_diagram_html(session: Session, engine: AnyEngine, board: Board,
                       ply: int) -> Markup:
    """The board after move ``ply``, that move marked (as the board stands: its view
    has it drawn)."""
    return diagram_html(engine, *positions_around(session, engine, board, ply))
