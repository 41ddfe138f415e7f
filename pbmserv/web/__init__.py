"""Read-only web pages: games, boards, players and tournaments (``pbmserv web``).

``create_app(db, settings)`` gives the ASGI application; ``serve`` runs it with
Uvicorn.  Pages are drawn from templates/web/ (HTML, escaped) and read the database
through the service layer in read-only sessions.
"""

from __future__ import annotations

from pbmserv.web.app import create_app
from pbmserv.web.serve import serve

__all__ = ["create_app", "serve"]
