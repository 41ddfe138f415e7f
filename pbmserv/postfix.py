"""Postfix's side of the setup, written from the settings: which addresses exist
(the recipient map) and where Postfix hands their mail (the transport map).

The game domain goes in Postfix's ``relay_domains`` address class, with the
recipient map as ``relay_recipient_maps`` (Postfix then refuses any other address of
the domain at RCPT) and the transport map in ``transport_maps``.  If the game address
is in one of Postfix's own domains (``mydestination``) instead, the recipient map
goes in ``local_recipient_maps``.  See docs/admin.md.
"""

from __future__ import annotations

from pbmserv.config import Settings, SettingsError

TRANSPORT_FILE = "pbmserv_transport"
RECIPIENTS_FILE = "pbmserv_recipients"


def nexthop(settings: Settings, pipe: str | None = None) -> str:
    """The transport map's right-hand side: the LMTP listener of the settings, or the
    ``master.cf`` service named ``pipe``."""
    if pipe is not None:
        return f"{pipe}:"
    if settings.lmtp is None:
        raise SettingsError("no lmtp address is set: set lmtp (127.0.0.1:8024) in the "
                            "settings, or give --pipe SERVICE for the pipe setup")
    if settings.lmtp.startswith("/"):
        return f"lmtp:unix:{settings.lmtp}"
    return f"lmtp:inet:{settings.lmtp}"


def transport_map(settings: Settings, pipe: str | None = None) -> str:
    hop = nexthop(settings, pipe)
    return "".join(f"{address}\t{hop}\n" for address in settings.addresses)


def recipient_map(settings: Settings) -> str:
    return "".join(f"{address}\tOK\n" for address in settings.addresses)


def domains(settings: Settings) -> list[str]:
    """The game addresses' domains, each once, in order."""
    return list(dict.fromkeys(a.rpartition("@")[2] for a in settings.addresses))
