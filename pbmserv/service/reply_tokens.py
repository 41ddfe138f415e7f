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

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pbmserv.db.models import ServerSecret
from pbmserv.mail.addresses import BOUNCE_PREFIX, UNSUBSCRIBE_PREFIX

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
    if row is not None:
        _SECRETS[database] = row.value.encode()
        return _SECRETS[database]
    # the first use: made in a savepoint, as another process may make it at the same
    # moment (its row then stands, and is read); not remembered until read back
    # committed, as this transaction may yet roll back
    made = ServerSecret(name=SECRET_NAME, value=secrets.token_hex(32))
    try:
        with session.begin_nested():
            session.add(made)
    except IntegrityError:
        row = session.get(ServerSecret, SECRET_NAME)
        if row is None:  # (not possible: the conflict was with a committed row)
            raise
        return row.value.encode()
    return made.value.encode()


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


#: how many of a player's credential changes back ``revoked_token`` looks
REVOKED_LOOKBACK = 32


def revoked_token(secret: bytes, text: str, changes: int) -> ReplyToken | None:
    """The token ``text`` names if it was good before the player's last credential
    changes (``changes``: their credential_changes now; the last ``REVOKED_LOOKBACK``
    are tried), so that a page can say it no longer stands for a move, rather than
    that it is not the server's."""
    found = _TOKEN.fullmatch(text.strip().lower())
    if found is None:
        return None
    payload = text.strip().lower().rpartition("-")[0]
    for earlier in range(max(0, changes - REVOKED_LOOKBACK), changes):
        if hmac.compare_digest(_mac(secret, _signed(payload, earlier)), found.group(6)):
            values = [int(found.group(i) or 0) for i in (1, 2, 3, 4, 5)]
            if max(values) >= 2**31:
                return None
            return ReplyToken(*values)
    return None


# -- the other signed sub-addresses: where bounces come back, and unsubscribing ----------
# the envelope sender (VERP) of outgoing mail N: bounce-oN-MAC (mail.addresses)
_BOUNCE = re.compile(r"bounce-o([0-9]{1,10})-([a-z2-7]{16})")
#: s<board>u<user>: a spectator's board; n<game>u<user>: result notices; du<user>: digest
_UNSUBSCRIBE = re.compile(r"unsub-(s[0-9]{1,10}|n[a-z]{1,32}|d)u([0-9]{1,10})-([a-z2-7]{16})")


def bounce_tag(secret: bytes, outbox_id: int) -> str:
    """The tag of the envelope sender of outgoing mail ``outbox_id``."""
    payload = f"o{outbox_id}"
    return f"{BOUNCE_PREFIX}{payload}-{_mac(secret, 'bounce:' + payload)}"


def read_bounce_tag(secret: bytes, tag: str) -> int | None:
    """The outgoing mail a bounce address names, if it is ours and well signed."""
    found = _BOUNCE.fullmatch(tag.strip().lower())
    if found is None or int(found.group(1)) >= 2**31:
        return None
    if not hmac.compare_digest(_mac(secret, f"bounce:o{found.group(1)}"), found.group(2)):
        return None
    return int(found.group(1))


@dataclass(frozen=True)
class Unsubscribe:
    """What an unsubscribe address stops: ``kind`` "spectator" (``target`` a board
    id), "notify" (``target`` a game's name) or "digest"; for ``user_id``."""

    kind: str
    target: str
    user_id: int


_KINDS = {"s": "spectator", "n": "notify", "d": "digest"}


def unsubscribe_tag(secret: bytes, what: Unsubscribe) -> str:
    letter = {v: k for k, v in _KINDS.items()}[what.kind]
    payload = f"{letter}{what.target if what.kind != 'digest' else ''}u{what.user_id}"
    return f"{UNSUBSCRIBE_PREFIX}{payload}-{_mac(secret, 'unsub:' + payload)}"


def read_unsubscribe_tag(secret: bytes, tag: str) -> Unsubscribe | None:
    found = _UNSUBSCRIBE.fullmatch(tag.strip().lower())
    if found is None or int(found.group(2)) >= 2**31:
        return None
    payload = f"{found.group(1)}u{found.group(2)}"
    if not hmac.compare_digest(_mac(secret, "unsub:" + payload), found.group(3)):
        return None
    first = found.group(1)
    if first.startswith("s") and int(first[1:]) >= 2**31:
        return None
    return Unsubscribe(_KINDS[first[0]], first[1:], int(found.group(2)))
