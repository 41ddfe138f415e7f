"""Text taken from a mail, made safe to store and show.

Nothing a sender writes reaches the database or another player with NUL bytes,
control characters or lone surrogates in it.
"""

from __future__ import annotations

import re
from email.message import Message

# C0 and C1 control characters but tab and newline; DEL; lone surrogates
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` without control characters (tab and newline stay; CR goes)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def clean_line(text: str, limit: int | None = None) -> str:
    """One line: control characters and line breaks become spaces, runs of blanks one."""
    if limit is not None:
        text = text[:limit]
    return " ".join(_CONTROL.sub(" ", text).split())


def from_bytes_header(value: str) -> str:
    """A header value read with the compat32 policy: its raw 8-bit bytes (kept as
    surrogate escapes) are read as UTF-8, which is what senders of raw 8-bit headers
    almost always mean."""
    if value.isascii():
        return value
    try:
        return value.encode("ascii", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return value


def payload_text(part: Message, limit: int | None = None) -> str:
    """A leaf part's content as text ("" if it has none or cannot be decoded): its
    transfer encoding undone, then decoded by its charset, UTF-8 if it names none or
    one Python does not know; bytes that do not decode are replaced.  ``limit``: at
    most this many bytes of it are read."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:  # a broken encoding: the email package raises what it likes
        return ""
    if not isinstance(payload, bytes):
        return ""
    if limit is not None:
        payload = payload[:limit]
    try:
        return payload.decode(part.get_content_charset() or "utf-8", "replace")
    except (LookupError, ValueError):
        return payload.decode("utf-8", "replace")
