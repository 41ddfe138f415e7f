"""The address of a mailbox header (From, Reply-To, Sender), read from the raw header.

A header is read as it came, before any encoded word (``=?utf-8?q?...?=``) is decoded:
an encoded word belongs to a display name, so it may say anything, ``<victim@example.net>``
included, and never supplies an address.  The header is split by RFC 5322's rules, in
one pass: quoted strings and (nested) comments are display text; the address of a
mailbox is its one angle address, or the whole mailbox when it is a bare addr-spec; a
group's name (``friends: a@x, b@y;``) is display text too.  A mailbox whose shape leaves
its address in doubt (two angle addresses, an addr-spec with words around it, an encoded
word inside the address, an unclosed quote, comment or angle) gives no address at all:
the caller falls back to the envelope sender, which is what an upstream SPF check saw.
"""

from __future__ import annotations

import re
from email.message import Message

from pbmserv.mail.headers import MAX_HEADER_VALUE
from pbmserv.mail.text import clean_line, from_bytes_header

_MAX_ADDRESS = 320
#: local@domain, no room for anything else (one @; none of the specials)
_ADDR_SPEC = re.compile(r"[^\s<>()\[\],;:\\\"@]+@[^\s<>()\[\],;:\\\"@]+")
#: an RFC 2047 encoded word, or what starts one
_ENCODED = "=?"


def raw_header(msg: Message, name: str) -> str:
    """A header's first value exactly as it came (unfolded, cut to MAX_HEADER_VALUE,
    control characters made blanks): no encoded word decoded; "" when absent."""
    wanted = name.lower()
    try:
        value = next((v for k, v in msg.raw_items() if k.lower() == wanted), None)
    except Exception:
        return ""
    if value is None:
        return ""
    return clean_line(from_bytes_header(str(value)[:MAX_HEADER_VALUE]))


def first_mailbox(value: str) -> str:
    """The address of the first mailbox of a raw address header, lower-cased; "" when
    the first mailbox has none, or its address is in doubt (see the module's note)."""
    text = value[:MAX_HEADER_VALUE]
    angles: list[str] = []
    bare: list[str] = []  # the mailbox's characters outside quotes, comments and angles
    quoted = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":  # a quoted pair: the next character stands for itself
            bare.append("\\")
            i += 2
            continue
        if c == '"':
            end = _closing_quote(text, i + 1)
            if end < 0:
                return ""
            bare.append('"')  # display text; as part of an addr-spec, not ours to take
            quoted = True
            i = end + 1
            continue
        if c == "(":
            end = _closing_comment(text, i + 1)
            if end < 0:
                return ""
            bare.append(" ")  # a comment separates words like a blank
            i = end + 1
            continue
        if c == "<":
            end = text.find(">", i + 1)
            if end < 0:
                return ""
            angles.append(text[i + 1:end])
            bare.append(" ")
            i = end + 1
            continue
        if c == ":" and not angles:  # a group's name ends here; its mailboxes follow
            bare = []
            quoted = False
            i += 1
            continue
        if c in ",;":
            found = _mailbox(angles, "".join(bare), quoted)
            if found is not None:
                return found
            angles, bare, quoted = [], [], False  # an empty member: read the next one
            i += 1
            continue
        bare.append(c)
        i += 1
    return _mailbox(angles, "".join(bare), quoted) or ""


def _closing_quote(text: str, i: int) -> int:
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _closing_comment(text: str, i: int) -> int:
    depth = 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _mailbox(angles: list[str], bare: str, quoted: bool) -> str | None:
    """The address of one mailbox; None for an empty one (a group's end, ",,"), ""
    for one whose address is in doubt."""
    if angles:
        if len(angles) > 1:
            return ""
        spec = angles[0].strip()
        if spec.startswith("@"):  # an obsolete source route: @relay,@relay:local@domain
            spec = spec.rpartition(":")[2].strip()
        return _address(spec)
    words = bare.split()
    if not words:
        return None
    if len(words) > 1 or quoted:
        return ""
    return _address(words[0])


def _address(spec: str) -> str:
    if _ENCODED in spec or _ADDR_SPEC.fullmatch(spec) is None:
        return ""
    address = spec.strip(".").lower()
    local, _, domain = address.partition("@")
    if not local or not domain or len(address) > _MAX_ADDRESS or not address.isprintable():
        return ""
    return address
