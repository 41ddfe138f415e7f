"""The language of a web page: the first of the server's languages the browser's
``Accept-Language`` names (English if none), as mail speaks its reader's."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pbmserv.i18n import language_tag, speaking

#: the most of the header read
_HEADER_MOST = 200


class Speaking:
    """ASGI middleware: the page is rendered in the language the request asks for
    (``pbmserv.i18n.speaking`` around the application), and says it varies by it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        asked = next((value[:_HEADER_MOST].decode("latin-1")
                      for name, value in scope.get("headers", ())
                      if name.lower() == b"accept-language"), None)

        async def varied(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()),
                                      (b"vary", b"Accept-Language")]
            await send(message)

        with speaking(language_tag(asked)):
            await self.app(scope, receive, varied)
