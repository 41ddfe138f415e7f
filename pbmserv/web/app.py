"""The web application: read-only pages over the database (Starlette), and two
addresses for machines: ``/healthz`` (200 "ok" while the server is healthy as
``pbmserv status`` says, pbmserv.service.health: the database answers with this
pbmserv's schema and mail moves; then a line for the IMAP reader's heartbeat and one
for the relay where they are set; else 503 and why, a line a problem) and
``/metrics`` (Prometheus)."""

from __future__ import annotations

import logging
from urllib.parse import quote

from sqlalchemy.exc import DBAPIError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Match, Route

from pbmserv.config import Settings
from pbmserv.db import migrate
from pbmserv.db.problems import describe
from pbmserv.db.session import Database
from pbmserv.service.health import status_of
from pbmserv.unsubscribe.web import Unsubscribing
from pbmserv.web.languages import Speaking
from pbmserv.web.limits import BodyLimit
from pbmserv.web.metrics import exposition, registry_for
from pbmserv.web.move import MovePages
from pbmserv.web.pages import Pages, page

log = logging.getLogger("pbmserv.web")
#: what an error page says above the detail
TITLES = {400: "Bad request", 404: "Not found", 405: "Not allowed",
          413: "Request too large", 503: "Not available just now"}
#: seconds a client is asked to wait when the database is down
RETRY_AFTER = 60
#: Prometheus's text format
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_app(db: Database, settings: Settings) -> Starlette:
    """The pages; ``db`` is read in read-only sessions, and written only to unsubscribe
    (pbmserv.unsubscribe.web)."""
    pages = Pages(db, settings)
    leaving = Unsubscribing(db, settings)
    moving = MovePages(db, settings)
    registry = registry_for(db)

    def error(request: Request | None, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        title = TITLES.get(exc.status_code, "Error")
        detail = exc.detail if exc.status_code in TITLES else ""
        response = page("error.html.j2", settings, exc.status_code, title=title,
                        detail=detail)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    def database_down(request: Request, exc: Exception) -> Response:
        """The database does not answer: 503 and one log line, never a traceback."""
        log.warning("web: %s %s: %s", request.method, request.url.path,
                    describe(exc, db.url))
        return error(request, HTTPException(
            503, "The games' database does not answer just now. Try again in a minute.",
            headers={"Retry-After": str(RETRY_AFTER)}))

    def healthz(request: Request) -> Response:
        try:
            migrate.check(db)
        except Exception as exc:
            return PlainTextResponse(f"{describe(exc, db.url)}\n", status_code=503,
                                     headers={"Retry-After": str(RETRY_AFTER)})
        health = status_of(db, settings)
        if health.problems:
            return PlainTextResponse("".join(f"{p}\n" for p in health.problems),
                                     status_code=503, headers={"Retry-After": str(RETRY_AFTER)})
        lines = [f"imap {health.imap}"] if health.imap else []
        lines += [f"relay {health.relay}"] if health.relay else []
        return PlainTextResponse("".join(f"{line}\n" for line in ["ok", *lines]))

    def metrics(request: Request) -> Response:
        return Response(exposition(registry), media_type=METRICS_TYPE)

    def trailing_slash(request: Request) -> Response:
        """An address with a slash too many (/tournaments/) is sent to the one without,
        at the configured web_url or as a path alone: never at the Host the request
        named (Starlette's own redirect would put that in Location)."""
        path = request.url.path
        asked = {"type": "http", "path": path, "root_path": "", "method": request.method}
        if any(route.matches(asked)[0] is Match.PARTIAL for route in routes):
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        target = path.rstrip("/") or "/"
        scope = {"type": "http", "path": target, "root_path": "", "method": "GET"}
        if path != target and any(route.matches(scope)[0] is Match.FULL
                                  for route in routes):
            query = request.url.query
            location = (settings.web_url or "") + quote(target) + (f"?{query}" if query
                                                                   else "")
            return RedirectResponse(location, status_code=308)
        raise HTTPException(404, "there is no such page")

    routes = [
        Route("/", pages.home, methods=["GET"]),
        Route("/play", pages.play, methods=["GET"]),
        Route("/games/{game}", pages.game, methods=["GET"]),
        Route("/boards/{game}/{number}", pages.board, methods=["GET"]),
        Route("/players/{userid}", pages.player, methods=["GET"]),
        Route("/tournaments", pages.tournaments, methods=["GET"]),
        Route("/tournaments/{name}", pages.tournament, methods=["GET"]),
        Route("/move/{tag}", moving.show, methods=["GET"]),
        Route("/unsubscribe/{tag}", leaving.ask, methods=["GET"]),
        Route("/unsubscribe/{tag}", leaving.one_click, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    app = Starlette(routes=[*routes, Route("/{path:path}", trailing_slash,
                                                methods=["GET", "HEAD", "POST", "PUT",
                                                         "DELETE", "PATCH", "OPTIONS"])],
                    exception_handlers={HTTPException: error, DBAPIError: database_down},
                    middleware=[Middleware(BodyLimit, refusal=lambda exc: error(None, exc)),
                                Middleware(Speaking)])
    app.router.redirect_slashes = False
    return app
