"""A request's body is capped before it is read: every page answers 413 to one larger
than ``MAX_BODY``, whatever its address and method.

The pages read no body but the one-click unsubscribe's (``List-Unsubscribe=One-Click``,
26 bytes).  A request that says it is larger (its Content-Length) is refused at once,
its body never read; one sent in chunks is refused as soon as what came passes the
cap, so no request holds more than ``MAX_BODY`` of the server's memory.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: the largest request body taken, in bytes
MAX_BODY = 8 * 1024
TOO_LARGE = f"This server takes requests of at most {MAX_BODY} bytes."


def too_large() -> HTTPException:
    """The refusal: 413, and the connection closed (what more comes is never read)."""
    return HTTPException(413, TOO_LARGE, headers={"Connection": "close"})


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, if it gives a number."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.strip()
            return int(text) if text.isdigit() else None
    return None


class BodyLimit:
    """ASGI middleware: 413 for a body over ``MAX_BODY`` (``refusal``: the page of an
    HTTPException, for one refused before the application runs)."""

    def __init__(self, app: ASGIApp, refusal: Callable[[HTTPException], Response]) -> None:
        self.app = app
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope)
        if declared is not None and declared > MAX_BODY:
            await self.refusal(too_large())(scope, receive, send)
            return
        taken = 0

        async def capped() -> Message:
            nonlocal taken
            message = await receive()
            if message["type"] == "http.request":
                taken += len(message.get("body", b""))
                if taken > MAX_BODY:  # the application's error page answers
                    raise too_large()
            return message

        await self.app(scope, capped, send)
