"""The pages: each reads in one read-only session and renders one template under
templates/web/.  They show what mail commands show to anyone (boards, moves and
their comments, results, ratings, tournaments), never an address or a password.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.notifications.drawing import board_diagram_html, drawn_html
from pbmserv.notifications.move_links import page_path
from pbmserv.notifications.views import board_view, status_line
from pbmserv.notifications.words import words_html
from pbmserv.ratings import PROVISIONAL_RD, format_rating
from pbmserv.reads import clocks
from pbmserv.reads.boards import board_counts, open_seek_counts, open_seeks, tournament_of
from pbmserv.reads.pages import boards_of_game, boards_of_player, tournaments_page
from pbmserv.reads.turns import turns_of
from pbmserv.render import render_html
from pbmserv.service.accounts import shown_user, similar_userid
from pbmserv.service.boards import load_board, moves_of
from pbmserv.service.errors import PlayerError
from pbmserv.service.move_asks import AskState, move_ask
from pbmserv.service.ratings import rating_of
from pbmserv.service.reply_tokens import server_secret
from pbmserv.service.tournaments import describe, find

#: the largest number a page takes in its address (board numbers, moves, keys)
LARGEST = 2**31 - 1
#: the most open challenges the front page lists
SEEKS_SHOWN = 100
#: every page: no scripts, frames, forms or remote anything; only inline styles
HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; "
                                "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def page(template: str, settings: Settings, status_code: int = 200,
         **context: Any) -> HTMLResponse:
    html = render_html(f"web/{template}", site=settings.server_name,
                       address=settings.address, **context)
    return HTMLResponse(html, status_code=status_code, headers=HEADERS)


def number_of(text: str | None, what: str) -> int | None:
    """A number from the address (None if not given); 400 if it is not one."""
    if text is None or text == "":
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > LARGEST:
        raise HTTPException(400, f"{what} must be a number from 0 to {LARGEST}")
    return int(text)


def engine_named(name: str) -> AnyEngine:
    engine = get_engine(name)
    if engine is None:
        raise HTTPException(404, "there is no such game on this server")
    return engine


def status_lines(boards: list[Board]) -> list[tuple[Board, str]]:
    out = []
    for board in boards:
        engine = get_engine(board.game)
        out.append((board, status_line(engine, board) if engine else "(game not installed)"))
    return out


class Pages:
    """The endpoints, each a plain function run in Starlette's thread pool."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def _page(self, template: str, **context: Any) -> HTMLResponse:
        return page(template, self.settings, **context)

    def home(self, request: Request) -> HTMLResponse:
        with self.db.reading() as session:
            active = board_counts(session, BoardStatus.ACTIVE)
            finished = board_counts(session, BoardStatus.FINISHED)
            seeks = open_seek_counts(session)
            games = [(engine, active.get(engine.name, 0), finished.get(engine.name, 0),
                      seeks.get(engine.name, 0)) for engine in ENGINES.values()]
            return self._page("home.html.j2", games=games,
                              seeks=open_seeks(session, SEEKS_SHOWN),
                              engines=ENGINES)

    def play(self, request: Request) -> HTMLResponse:
        """How to play: the address to mail and the first commands."""
        return self._page("play.html.j2", engines=ENGINES)

    def game(self, request: Request) -> HTMLResponse:
        engine = engine_named(request.path_params["game"])
        before = number_of(request.query_params.get("before"), "before")
        after = number_of(request.query_params.get("after"), "after")
        with self.db.reading() as session:
            found = boards_of_game(session, engine.name, before=before, after=after)
            return self._page("game.html.j2", engine=engine, page=found,
                              rows=status_lines(list(found.boards)))

    def board(self, request: Request) -> HTMLResponse:
        engine = engine_named(request.path_params["game"])
        number = number_of(request.path_params["number"], "the board number")
        asked = number_of(request.query_params.get("ply"), "ply")
        tag = request.query_params.get("move", "")[:100]
        with self.db.reading() as session:
            board = self._board(session, engine, number or 0)
            # opened from its player's move page: the way back to it, while it stands
            ask = move_ask(session, server_secret(session, self.settings.secret), tag) \
                if tag else None
            move_link = page_path(tag) if ask is not None and ask.board.id == board.id \
                and ask.state is AskState.OPEN else None
            ply = board.ply if asked is None else asked
            if ply > board.ply:
                raise HTTPException(404, f"board {board.number} has moves 1 to {board.ply}; "
                                    f"there is no move {ply}")
            # the moves around the one shown, however long the game
            view = board_view(session, engine, board, around=ply)
            moves = {move.ply: move for move in moves_of(
                session, board, view.hidden + 1, board.ply - view.later)}
            # the page adds to the board's view: any move's position, the comments
            diagram = (drawn_html(view.game, view.position, view.before) if ply == view.ply
                       else board_diagram_html(session, engine, board, ply))
            return self._page("board.html.j2", board=view, ply=ply, moves=moves,
                              shown=moves.get(ply), diagram=diagram, move_link=move_link,
                              words=words_html(view, moves=False) if ply == view.ply
                              else None,
                              tournament=tournament_of(session, board))

    def _board(self, session: Session, engine: AnyEngine, number: int) -> Board:
        try:
            return load_board(session, engine, number)
        except PlayerError:
            raise HTTPException(404, f"there is no {engine.name} board {number}") from None

    def player(self, request: Request) -> HTMLResponse:
        userid = request.path_params["userid"]
        before = number_of(request.query_params.get("before"), "before")
        after = number_of(request.query_params.get("after"), "after")
        with self.db.reading() as session:
            user = shown_user(session, userid)
            if user is None:
                guess = similar_userid(session, userid)
                meant = f" (did you mean {guess}?)" if guess else ""
                raise HTTPException(404, f"there is no player of that name{meant}")
            found = boards_of_player(session, user.id, before=before, after=after)
            ratings = [(engine, rated) for engine in ENGINES.values()
                       if (rated := rating_of(session, user, engine.name)) is not None]
            now = utcnow()
            # the list 'turns' mails (without the reply addresses: a page is public)
            waiting = None if user.closed_at else turns_of(session, user, now)
            away = clocks.current_vacation(session, user.id, now)
            return self._page("player.html.j2", userid=user.userid, page=found,
                              closed_at=user.closed_at, waiting=waiting,
                              away=None if away is None else away.ends_at,
                              rows=status_lines(list(found.boards)), ratings=ratings,
                              format_rating=format_rating, provisional=PROVISIONAL_RD)

    def tournaments(self, request: Request) -> HTMLResponse:
        before = number_of(request.query_params.get("before"), "before")
        after = number_of(request.query_params.get("after"), "after")
        with self.db.reading() as session:
            found = tournaments_page(session, before=before, after=after)
            views = [describe(session, t) for t in found.tournaments]
            return self._page("tournaments.html.j2", tournaments=views, page=found)

    def tournament(self, request: Request) -> HTMLResponse:
        with self.db.reading() as session:
            try:
                found = find(session, request.path_params["name"])
            except PlayerError:
                raise HTTPException(404, "there is no tournament of that name") from None
            view = describe(session, found)
            return self._page("tournament.html.j2", view=view, t=found)
