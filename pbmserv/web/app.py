"""The web application: read-only pages over the database (Starlette)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.web.pages import Pages, page

#: what an error page says above the detail
TITLES = {400: "Bad request", 404: "Not found", 405: "Not allowed"}


def create_app(db: Database, settings: Settings) -> Starlette:
    """The pages; ``db`` is read in read-only sessions and never written."""
    pages = Pages(db, settings)

    def error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        title = TITLES.get(exc.status_code, "Error")
        detail = exc.detail if exc.status_code in TITLES else ""
        response = page("error.html.j2", settings, exc.status_code, title=title,
                        detail=detail)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    routes = [
        Route("/", pages.home, methods=["GET"]),
        Route("/games/{game}", pages.game, methods=["GET"]),
        Route("/boards/{game}/{number}", pages.board, methods=["GET"]),
        Route("/players/{userid}", pages.player, methods=["GET"]),
        Route("/tournaments", pages.tournaments, methods=["GET"]),
        Route("/tournaments/{name}", pages.tournament, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: error})
