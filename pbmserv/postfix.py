"""Postfix's side of the setup, written from the settings: which addresses exist
(the recipient map), where Postfix hands their mail (the transport map), and where
the game domains' postmaster@ and abuse@ (RFC 2142) go: to the administrator's real
mailbox (the alias map, Postfix's ``virtual_alias_maps``), so that alerts, which go
to postmaster@ the game domain unless ``admin_address`` says otherwise, arrive.

The game domain goes in Postfix's ``relay_domains`` address class, with the
recipient map as ``relay_recipient_maps`` (Postfix then refuses any other address of
the domain at RCPT) and the transport map in ``transport_maps``.  If the game address
is in one of Postfix's own domains (``mydestination``) instead, the recipient map
goes in ``local_recipient_maps``.  See docs/admin.md.
"""

from __future__ import annotations

import hashlib
import re

from pbmserv.config import Settings, SettingsError

TRANSPORT_FILE = "pbmserv_transport"
RECIPIENTS_FILE = "pbmserv_recipients"
ALIASES_FILE = "pbmserv_aliases"
#: the mailbox names every mail domain must have (RFC 2142)
ROLES = ("postmaster", "abuse")
#: where they go when admin_address is none or one of them: root of this host, which
#: Debian's Postfix delivers locally (localhost is in its mydestination)
ROOT = "root@localhost"


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


def role_addresses(settings: Settings) -> list[str]:
    """postmaster@ and abuse@ of each game domain."""
    return [f"{role}@{domain}" for domain in domains(settings) for role in ROLES]


def admin_target(settings: Settings) -> str:
    """Where the game domains' postmaster@ and abuse@ go: ``admin_address``, unless
    it is unset or one of them (root of this host then); SettingsError for another
    address in a game domain, which Postfix would refuse."""
    admin = settings.admin_address
    if admin is None or admin in role_addresses(settings):
        return ROOT
    if admin.rpartition("@")[2] in domains(settings):
        raise SettingsError(
            f"admin_address {admin} is in the game domain, where Postfix knows only the "
            "game addresses and postmaster@ and abuse@: set admin_address to a mailbox "
            "you read elsewhere (root@mail.example.org), or leave it empty for "
            f"postmaster@, handed to {ROOT}")
    return admin


def recipient_map(settings: Settings) -> str:
    wanted = [*settings.addresses,
              *(a for a in role_addresses(settings) if a not in settings.addresses)]
    return "".join(f"{address}\tOK\n" for address in wanted)


def alias_map(settings: Settings) -> str:
    target = admin_target(settings)
    return "".join(f"{address}\t{target}\n" for address in role_addresses(settings)
                   if address not in settings.addresses)


#: the first line of a map pbmserv writes, with the checksum of the rest: a map whose
#: rest no longer matches it was changed by hand
_HEADER = "# written by 'pbmserv postfix-maps' (checksum {}); a line changed by hand stops it"
_WRITTEN = re.compile(r"# written by 'pbmserv postfix-maps' \(checksum ([0-9a-f]{16})\)")


def _checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def with_header(text: str) -> str:
    """A map as written: the header line with its checksum, then ``text``."""
    return _HEADER.format(_checksum(text)) + "\n" + text


def hand_changes(old: str, new: str) -> list[str]:
    """The lines of a map as it is (``old``) that the map as pbmserv writes it now
    (``new``, without its header) would lose, when someone changed it by hand since
    pbmserv wrote it (blank lines and comments aside); [] if it is as pbmserv left it
    (a map written before the header was: every line it would lose)."""
    first, _, rest = old.partition("\n")
    written = _WRITTEN.match(first)
    if written is not None and written.group(1) == _checksum(rest):
        return []
    kept = {line.strip() for line in new.splitlines()}
    return [line for line in old.splitlines()
            if line.strip() and not line.lstrip().startswith("#") and line.strip() not in kept]


def domains(settings: Settings) -> list[str]:
    """The game addresses' domains, each once, in order."""
    return list(dict.fromkeys(a.rpartition("@")[2] for a in settings.addresses))
