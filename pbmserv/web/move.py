"""The move page: ``GET /move/TOKEN?p=PICKS``, a player's move on a board picked by
following plain links, then written as a reply by their own mail program.

TOKEN is the reply address's token of the board mail (pbmserv.service.reply_tokens):
it names the board, the player and the move asked, and is all the page needs (no
login).  The page shows the board with the picks possible next as links (the piece,
its target, then what else the game asks: pbmserv.games.base.Engine.choose), and
once the picks choose a move, the board after it and a ``mailto:`` link that opens
the player's mail program with the reply written.  Sending that mail plays the move
as any reply does: the page itself never changes a board, and reads in one read-only
session.  A page whose board has moved on, or whose token a new password or address
revoked, says so and links to the board.  A player whose address is no longer mailed
(it bounces: pbmserv.bounces) reads it here, with how to get the mail back: the page
is the one channel to them that does not go through that address.

The work of a page is bounded: one player, one board, the legal moves of its
position once (as the mail command ``moves``), the board drawn once or twice.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pbmserv.bounces.scoring import suspended_since
from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.games.base import Choosing, RuleError
from pbmserv.notifications.drawing import Links, Marks, drawn_html
from pbmserv.notifications.move_links import PICKS, mailto, page_path, reply_header
from pbmserv.notifications.views import board_subject, board_view
from pbmserv.notifications.words import words_html
from pbmserv.render import render
from pbmserv.service.boards import engine_of, position_of
from pbmserv.service.move_asks import AskState, move_ask
from pbmserv.service.reply_tokens import server_secret
from pbmserv.web.pages import page

#: the longest token and list of picks read from an address
MAX_TAG = 100
MAX_PICKS = 600


def refused(why: str) -> str:
    """Why a move page is refused, in words (web/move_refused.txt.j2)."""
    return render("web/move_refused.txt.j2", why=why).strip()


def picks_of(text: str) -> tuple[str, ...]:
    """The picks of the ``p`` parameter: values joined by commas; 400 if it is no such
    list."""
    if len(text) > MAX_PICKS or not ((text.isascii() and text.replace(",", "").isalnum())
                                     or text == ""):
        raise HTTPException(400, refused("picks"))
    return tuple(p for p in text.lower().split(",") if p)


class MovePages:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def show(self, request: Request) -> HTMLResponse:
        response = self._show(request)
        # a page made for one player: kept out of search engines' indexes
        response.headers["X-Robots-Tag"] = "noindex, nofollow"
        return response

    def _show(self, request: Request) -> HTMLResponse:
        tag = str(request.path_params["tag"])[:MAX_TAG]
        picks = picks_of(request.query_params.get(PICKS, ""))
        with self.db.reading() as session:
            ask = move_ask(session, server_secret(session, self.settings.secret), tag)
            if ask is None:
                raise HTTPException(404, refused("not-valid"))
            board = ask.board
            engine = engine_of(board)
            view = board_view(session, engine, board)
            context: dict[str, Any] = {"board": view, "state": ask.state, "tag": tag,
                                       "userid": ask.user.userid, "page_path": page_path,
                                       "words": words_html(view),
                                       # the player's other channel: their mail bounces
                                       "suspended_since": suspended_since(session,
                                                                          ask.user.email)}
            if ask.state is AskState.ANSWER:
                subject = "Re: " + board_subject(view)
                context["answers"] = {word: mailto(self.settings, tag, subject, word + "\r\n")
                                      for word in ("accept", "reject")}
            if ask.state is not AskState.OPEN:
                status = 200 if ask.state is AskState.ANSWER else 410
                return page("move.html.j2", self.settings, status, diagram=drawn_html(
                    view.game, view.position, view.before), **context)
            position = position_of(engine, board)
            try:
                choosing: Choosing[Any] = engine.choose(position, picks)
            except RuleError:
                return page("move.html.j2", self.settings, 400, refused=True,
                            diagram=drawn_html(view.game, view.position, view.before),
                            **context)
            cells = {c["name"]: c for c in engine.describe(position)["cells"]}
            # the cells in the order of their names: a list a player can read down
            options = sorted((pick for pick, _ in choosing.options), key=lambda p: (
                p.cell is not None, p.cell[:1] if p.cell else "", int(p.cell[1:] or 0)
                if p.cell else 0))
            context.update(choosing=choosing, cells=cells, options=options, refused=False)
            if choosing.move is not None:
                after = engine.apply(position, choosing.move)
                subject = "Re: " + board_subject(view)
                to, shown = reply_header(self.settings, tag, subject)
                context.update(
                    mail=mailto(self.settings, tag, subject, f"{choosing.notation}\r\n\r\n"),
                    to=to, subject=shown,
                    diagram=drawn_html(view.game, engine.view(after), view.position,
                                       marks=self._marks(choosing)))
            else:
                links: Links = {}
                for pick, _ in choosing.options:
                    if pick.cell is not None:
                        links[pick.cell] = (page_path(tag, (*choosing.chosen(), pick.value)),
                                            pick.kind.value)
                marks = self._marks(choosing) | {name: "option" for name in links}
                context["diagram"] = drawn_html(view.game, view.position, view.before,
                                                links=links, marks=marks)
            return page("move.html.j2", self.settings, **context)

    @staticmethod
    def _marks(choosing: Choosing[Any]) -> Marks:
        return {p.cell: "picked" for p in choosing.picked if p.cell is not None}

