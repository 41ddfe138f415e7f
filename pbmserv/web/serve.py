"""Running the pages with Uvicorn."""

from __future__ import annotations

import uvicorn

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.web.app import create_app


def server(db: Database, settings: Settings, host: str, port: int) -> uvicorn.Server:
    """A Uvicorn server for the pages (not started); behind a reverse proxy, it trusts
    the proxy's X-Forwarded-* headers from the addresses in FORWARDED_ALLOW_IPS
    (Uvicorn's setting; 127.0.0.1 by default)."""
    config = uvicorn.Config(create_app(db, settings), host=host, port=port,
                            log_level="warning", access_log=False, proxy_headers=True,
                            server_header=False, lifespan="off")
    return uvicorn.Server(config)


def serve(db: Database, settings: Settings, host: str, port: int) -> None:
    """Serve the pages until interrupted (SIGINT or SIGTERM)."""
    server(db, settings, host, port).run()
