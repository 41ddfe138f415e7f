"""Unsubscribing on the web: the link of a list mail's List-Unsubscribe.

``GET /unsubscribe/TAG`` shows what the link stops and a button; only ``POST``
unsubscribes (RFC 8058: a mailbox provider's "unsubscribe" button posts
``List-Unsubscribe=One-Click`` to it, with no login and no cookie; a link checker that
follows the link changes nothing).  The tag is signed (pbmserv.service.reply_tokens):
it stops what it names for the reader it was made for, nothing else.  The one page
that writes to the database.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, User
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.service.reply_tokens import read_unsubscribe_tag, server_secret
from pbmserv.unsubscribe.changes import unsubscribe
from pbmserv.web.pages import HEADERS, page

#: the form posts to the page itself
FORM_HEADERS = {**HEADERS, "Content-Security-Policy": HEADERS["Content-Security-Policy"]
                .replace("form-action 'none'", "form-action 'self'")}
NOT_VALID = "This unsubscribe link is not one this server made, or it was cut short."


class Unsubscribing:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def ask(self, request: Request) -> HTMLResponse:
        tag = str(request.path_params["tag"])[:200]
        with self.db.reading() as session:
            what = read_unsubscribe_tag(server_secret(session, self.settings.secret), tag)
            user = session.get(User, what.user_id) if what is not None else None
            if what is None or user is None:
                raise HTTPException(404, NOT_VALID)
            title, number = "", None
            if what.kind == "spectator":
                board = session.get(Board, int(what.target))
                engine = get_engine(board.game) if board is not None else None
                if board is None or engine is None:
                    raise HTTPException(404, NOT_VALID)
                title, number = engine.title, board.number
            elif what.kind == "notify":
                engine = get_engine(what.target)
                if engine is None:
                    raise HTTPException(404, NOT_VALID)
                title = engine.title
            response = page("unsubscribe.html.j2", self.settings, kind=what.kind,
                            userid=user.userid, title=title, number=number, done=None)
        response.headers.update(FORM_HEADERS)
        return response

    async def one_click(self, request: Request) -> HTMLResponse:
        tag = str(request.path_params["tag"])[:200]
        await request.body()  # "List-Unsubscribe=One-Click", or the button's form
        return await run_in_threadpool(self._unsubscribe, tag)

    def _unsubscribe(self, tag: str) -> HTMLResponse:
        with self.db.transaction() as session:
            done = unsubscribe(session, server_secret(session, self.settings.secret), tag,
                               utcnow())
            if done is None:
                raise HTTPException(404, NOT_VALID)
            return page("unsubscribe.html.j2", self.settings, kind=done.what.kind,
                        userid=done.user.userid, title=done.title, number=done.number,
                        done=done)
