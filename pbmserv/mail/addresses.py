"""The server's addresses and their ``+`` sub-addresses (``pbmserv+TAG@host``), and the
same tags written in brackets (``[TAG]``) where a mailbox has no sub-addresses."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: a move-by-reply tag in brackets, in a Reply-To's name or a Subject: ``b<board>u<user>``,
#: the rest of its payload, a dash and its signature (16 base32 letters)
_TAG_MARK = re.compile(r"\[(b[0-9]{1,10}u[0-9]{1,10}[a-z0-9]{0,60}-[a-z2-7]{16})\]", re.I)
#: the tag of the envelope sender (VERP) of outgoing mail: bounces come back to it
BOUNCE_PREFIX = "bounce-"
#: the tag of the address that unsubscribes from a mail people subscribe to
UNSUBSCRIBE_PREFIX = "unsub-"
#: the longest address taken (RFC 5321's 256-octet path, less its brackets): a
#: longer one could not be mailed, and is refused before it reaches the database
MAX_ADDRESS = 254


def subaddress(address: str, tag: str) -> str:
    """``pbmserv@host`` and ``TAG`` -> ``pbmserv+TAG@host``."""
    local, _, domain = address.partition("@")
    return f"{local}+{tag}@{domain}"


def tag_of(address: str, ours: Iterable[str]) -> str | None:
    """The TAG of ``local+TAG@domain`` when ``local@domain`` is one of ``ours``;
    "" for one of ``ours`` itself; None for any other address."""
    address = address.strip().lower()
    if address in ours:
        return ""
    local, at, domain = address.rpartition("@")
    base, plus, tag = local.partition("+")
    if at and plus and tag and f"{base}@{domain}" in ours:
        return tag
    return None


def is_ours(address: str, ours: Iterable[str]) -> bool:
    """Whether mail for ``address`` is the server's to take."""
    return tag_of(address, tuple(ours)) is not None


def base_address(address: str) -> str:
    """``pbmserv+TAG@host`` -> ``pbmserv@host``."""
    local, at, domain = address.rpartition("@")
    return f"{local.partition('+')[0] or local}{at}{domain}"


def address_key(address: str) -> str:
    """The one form of an address that every limit per address counts under: lower
    case, without a ``+tag`` (``Bob+Games@Example.org`` -> ``bob@example.org``), so
    that the sub-addresses and spellings of one mailbox share one count."""
    return base_address(address.strip().lower())


def tag_mark(tag: str) -> str:
    """A tag as it travels in a Reply-To's name or a Subject: ``[TAG]``."""
    return f"[{tag}]"


def marked_tag(text: str) -> str | None:
    """The tag written as ``[TAG]`` in ``text`` (a header's value), if any."""
    found = _TAG_MARK.search(text[:2000])
    return None if found is None else found.group(1).lower()


def without_tag_marks(text: str) -> str:
    """``text`` with any ``[TAG]`` taken out (a Subject that carried one); any other
    text as it was."""
    if not _TAG_MARK.search(text):
        return text
    return " ".join(_TAG_MARK.sub(" ", text).split())
