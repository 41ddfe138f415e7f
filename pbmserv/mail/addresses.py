"""The server's addresses and their ``+`` sub-addresses (``pbmserv+TAG@host``)."""

from __future__ import annotations

from collections.abc import Iterable


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
