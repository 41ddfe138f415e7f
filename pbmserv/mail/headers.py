"""Reading the few headers the server needs, with bounded work.

The standard library's modern header parser takes quadratic time, or recurses
without end, on some hostile header values (80 KB of dots in a From header took
51 s), so headers are read with the compat32 policy, cut to a length no honest
header needs, and decoded by hand.
"""

from __future__ import annotations

import contextlib
import re
from email.header import decode_header, make_header
from email.message import Message

from pbmserv.mail.text import clean_line, from_bytes_header

#: no header the server reads needs more than this (RFC 5322 lines are <= 998)
MAX_HEADER_VALUE = 2000

_ANGLE = re.compile(r"<\s*([^<>\s@\"(),;:\\\[\]]+@[^<>\s\"(),;:\\\[\]]+)\s*>")
_BARE = re.compile(r"(?<![^\s<>(),;:\"])([^<>\s@\"(),;:\\\[\]]+@[^<>\s@\"(),;:\\\[\]]+)")
_MAX_ADDRESS = 320


def header(msg: Message, name: str) -> str:
    """A header as one clean line ("" when absent or unreadable), encoded words decoded."""
    wanted = name.lower()
    try:  # the raw value: compat32 would wrap an 8-bit one in a Header that loses it
        value = next((v for k, v in msg.raw_items() if k.lower() == wanted), None)
    except Exception:
        return ""
    if value is None:
        return ""
    raw = from_bytes_header(str(value)[:MAX_HEADER_VALUE])
    if "=?" in raw:
        with contextlib.suppress(Exception):  # a broken encoded word stays as written
            raw = str(make_header(decode_header(raw)))
    return clean_line(raw, MAX_HEADER_VALUE)


def address_of(value: str) -> str:
    """The first mail address in a header value, lower-cased; "" if there is none.

    ``Name <addr>`` gives addr; otherwise the first bare ``local@domain``.  Only
    characters an address may hold are taken, so whatever surrounds it (comments,
    quotes, NUL bytes) cannot leak into the address.
    """
    text = value[:MAX_HEADER_VALUE]
    found = _ANGLE.search(text) or _BARE.search(text)
    if found is None:
        return ""
    address = found.group(1).strip(".").lower()
    local, _, domain = address.rpartition("@")
    if not local or not domain or len(address) > _MAX_ADDRESS or not address.isprintable():
        return ""
    return address
