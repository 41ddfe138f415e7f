"""Settings, read once from the environment (PBMSERV_*)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DATABASE_URL = "sqlite:///pbmserv.sqlite3"
DEFAULT_ADDRESS = "pbmserv@localhost"
DEFAULT_MAX_SIZE = 256 * 1024


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    #: addresses the server accepts mail for; the first is the From of its own mail
    addresses: tuple[str, ...] = (DEFAULT_ADDRESS,)
    server_name: str = "pbmserv"
    relay: tuple[str, int] | None = None
    maildir: Path = field(default_factory=lambda: Path("var/mail"))
    max_message_size: int = DEFAULT_MAX_SIZE
    #: the key of move-by-reply addresses (None: one the server makes and keeps)
    secret: str | None = None

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        relay = None
        if env.get("PBMSERV_RELAY"):
            host, _, port = env["PBMSERV_RELAY"].rpartition(":")
            if not host or not port.isdigit():
                raise ValueError("PBMSERV_RELAY must be host:port, for example localhost:25")
            relay = (host, int(port))
        addresses = tuple(
            a.strip().lower() for a in env.get("PBMSERV_ADDRESS", DEFAULT_ADDRESS).split(",")
            if a.strip()
        )
        return cls(
            database_url=env.get("PBMSERV_DATABASE_URL", DEFAULT_DATABASE_URL),
            addresses=addresses or (DEFAULT_ADDRESS,),
            server_name=env.get("PBMSERV_NAME", "pbmserv"),
            relay=relay,
            maildir=Path(env.get("PBMSERV_MAILDIR", "var/mail")),
            max_message_size=int(env.get("PBMSERV_MAX_SIZE", DEFAULT_MAX_SIZE)),
            secret=env.get("PBMSERV_SECRET") or None,
        )
