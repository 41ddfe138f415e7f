"""Move-by-reply addresses: ``pbmserv+TOKEN@host``, where TOKEN names a board, a
player and the move asked of them, signed with the server's secret.

A reply to such an address is that player's move on that board, without userid
or password; the signature makes the token impossible to forge, and the move
number makes it good for one move only (a late or repeated reply is refused like
a wrong ``#n``); the board's count of moves taken back makes it void once a move is
taken back, even when the same move number comes round again.

An address made for answering the board's open request (a draw offer, an undo
request) while it is not the player's move also names that request (the id of the
event that made it): it is good for the answer to that one request only, while the
board stands as it did when the address was made.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from pbmserv.db.models import ServerSecret

SECRET_NAME = "reply-tokens"
#: the "t" part (moves taken back) is missing from addresses made before 2026-11-23:
#: they stand for a board with none taken back, and are still good
#: the "r" part is there in the address that answers an open request (a draw offer, an
#: undo request): the id of the event that made it
_TOKEN = re.compile(r"b([0-9]{1,10})u([0-9]{1,10})m([0-9]{1,10})(?:t([0-9]{1,10}))?"
                    r"(?:r([0-9]{1,10}))?-([a-z2-7]{16})")
_SECRETS: dict[str, bytes] = {}


@dataclass(frozen=True)
class ReplyToken:
    board_id: int
    user_id: int
    #: the number of the move the board mail asked for
    ply: int
    #: the board's count of moves taken back when the address was made
    takebacks: int
    #: for an address that answers the board's open request, not a move: the id of the
    #: event that made the request (0: a move's address)
    request: int = 0


def server_secret(session: Session, configured: str | None) -> bytes:
    """The key of the tokens: the configured secret, else one the server made for
    itself once and keeps in the database (so tokens outlive restarts)."""
    if configured:
        return configured.encode()
    database = session.connection().engine.url.render_as_string()
    known = _SECRETS.get(database)
    if known is not None:
        return known
    row = session.get(ServerSecret, SECRET_NAME)
    if row is None:
        row = ServerSecret(name=SECRET_NAME, value=secrets.token_hex(32))
        session.add(row)
        session.flush()
    value = row.value.encode()
    _SECRETS[database] = value
    return value


def _mac(secret: bytes, payload: str) -> str:
    digest = hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:10]
    return base64.b32encode(digest).decode().lower()


def _signed(payload: str, changes: int) -> str:
    """What is signed: the address's payload and, once the player's password or
    address changed, how often (not written in the address: the server knows it, and
    an address made before a change no longer matches)."""
    return payload if not changes else f"{payload}c{changes}"


def make_token(secret: bytes, token: ReplyToken, changes: int = 0) -> str:
    """The token for ``token``, for a player whose credentials changed ``changes``
    times (users.credential_changes)."""
    payload = f"b{token.board_id}u{token.user_id}m{token.ply}t{token.takebacks}"
    if token.request:
        payload += f"r{token.request}"
    return f"{payload}-{_mac(secret, _signed(payload, changes))}"


def read_token(secret: bytes, text: str,
               changes_of: Callable[[int], int] = lambda _user_id: 0) -> ReplyToken | None:
    """The token ``text`` names, if it is well formed and signed by ``secret`` for the
    player's current credentials (``changes_of``: a user id's credential_changes)."""
    found = _TOKEN.fullmatch(text.strip().lower())
    if found is None:
        return None
    payload = text.strip().lower().rpartition("-")[0]
    board_id, user_id, ply, takebacks, request = (
        int(found.group(i) or 0) for i in (1, 2, 3, 4, 5))
    if max(board_id, user_id, ply, takebacks, request) >= 2**31:
        return None
    signed = _signed(payload, changes_of(user_id))
    if not hmac.compare_digest(_mac(secret, signed), found.group(6)):
        return None
    return ReplyToken(board_id, user_id, ply, takebacks, request)
