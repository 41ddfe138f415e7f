"""Running the pages with Uvicorn: its connections capped (pbmserv.connections), its
failed accepts logged once a minute, and the log left as pbmserv set it up."""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from pbmserv.config import Settings
from pbmserv.connections import (
    BACKLOG,
    CappedConnection,
    ConnectionCap,
    quiet_accept_errors,
)
from pbmserv.db.session import Database
from pbmserv.web.app import create_app


class CappedH11(CappedConnection, H11Protocol):
    """Uvicorn's HTTP/1.1 connection, counted by the class's ``cap``."""

    def busy(self) -> bool:
        """A page being made for a request that came whole is not cut short; a request
        that has not come whole yet (headers or body trickling in) may be."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body


class Pages(uvicorn.Server):
    """Uvicorn's server with failed accepts logged quietly (``quiet_accept_errors``)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        quiet_accept_errors(asyncio.get_running_loop())
        await super().startup(sockets)


def server(db: Database, settings: Settings, host: str, port: int) -> uvicorn.Server:
    """A Uvicorn server for the pages (not started); behind a reverse proxy, it trusts
    the proxy's X-Forwarded-* headers from the addresses in FORWARDED_ALLOW_IPS
    (Uvicorn's setting; 127.0.0.1 by default).  Its connections are capped by
    ``max_connections`` (the process's own, apart from ``serve``'s listeners).
    Uvicorn's own logging setup is not used: it would close pbmserv's log handlers
    (a log file then opened again at the next line, which fails when no file is
    left); its loggers log through pbmserv's."""
    protocol = type("PagesH11", (CappedH11,), {"cap": ConnectionCap.of(settings)})
    config = uvicorn.Config(create_app(db, settings), host=host, port=port,
                            log_level="warning", access_log=False, proxy_headers=True,
                            server_header=False, lifespan="off", log_config=None,
                            http=protocol, backlog=BACKLOG)
    return Pages(config)


def serve(db: Database, settings: Settings, host: str, port: int) -> None:
    """Serve the pages until interrupted (SIGINT or SIGTERM)."""
    server(db, settings, host, port).run()
