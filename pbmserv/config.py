"""Settings: one TOML file, overridden key by key by the environment (PBMSERV_*).

Every setting has one name: ``relay`` in the file is ``PBMSERV_RELAY`` in the
environment.  The file is the one given with ``--config``, else the one named by
``PBMSERV_CONFIG``, else ``/etc/pbmserv/pbmserv.toml`` if it exists; with none, the
defaults below.  ``PBMSERV_CONFIG=""`` reads no file at all.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_DATABASE_URL = "sqlite:///pbmserv.sqlite3"
DEFAULT_ADDRESS = "pbmserv@localhost"
DEFAULT_MAX_SIZE = 256 * 1024
#: the longest reply to one mail, in bytes of text
DEFAULT_MAX_REPLY = 64 * 1024
DEFAULT_SMTP = "127.0.0.1:2525"
#: read when neither --config nor PBMSERV_CONFIG names a file
DEFAULT_CONFIG = Path("/etc/pbmserv/pbmserv.toml")
CONFIG_ENV = "PBMSERV_CONFIG"
LOG_LEVELS = ("debug", "info", "warning", "error")
#: where a value came from, as ``config show`` says it
DEFAULT, FILE, ENVIRONMENT, COMMAND_LINE = "default", "file", "environment", "command line"
#: what "off" is written as, for the listeners
OFF_WORDS = ("", "off", "no", "none", "false")


class SettingsError(Exception):
    """A setting that cannot be used, or a settings file that cannot be read."""


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    #: addresses the server accepts mail for; the first is the From of its own mail
    addresses: tuple[str, ...] = (DEFAULT_ADDRESS,)
    server_name: str = "pbmserv"
    relay: tuple[str, int] | None = None
    maildir: Path = field(default_factory=lambda: Path("var/mail"))
    max_message_size: int = DEFAULT_MAX_SIZE
    #: the longest reply to a mail: what is beyond is left out, and the reply says so
    max_reply_size: int = DEFAULT_MAX_REPLY
    #: where ``serve`` listens: SMTP (host:port, or None for no SMTP) and LMTP
    #: (host:port or the path of a Unix socket, or None)
    smtp: str | None = DEFAULT_SMTP
    lmtp: str | None = None
    #: worker processes of ``serve`` (0: a thread)
    workers: int = 1
    log_level: str = "info"
    log_file: Path | None = None
    syslog: bool = False
    #: the key of move-by-reply addresses (None: one the server makes and keeps)
    secret: str | None = None
    #: the settings file these settings were read from, if any
    source: Path | None = None
    #: where each key's value came from, when not the default: (key, FILE or ENVIRONMENT
    #: or COMMAND_LINE), as ``config show`` marks them
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"

    @classmethod
    def load(cls, config: Path | str | None = None,
             env: Mapping[str, str] | None = None) -> Settings:
        """The settings of the file ``config`` (see the module's docstring for which
        file is read without one), each overridden by its PBMSERV_ variable."""
        env = os.environ if env is None else env
        path = _config_path(config, env)
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        if path is not None:
            values.update(read_file(path))
            origins.update(dict.fromkeys(values, FILE))
        for key in KEYS:
            name = env_name(key)
            if name in env:
                values[key] = env[name]
                origins[key] = ENVIRONMENT
        settings = replace(cls.from_values(values), origins=tuple(origins.items()))
        return settings if path is None else replace(settings, source=path)

    def origin(self, key: str) -> str:
        """Where the value of ``key`` came from: DEFAULT, FILE, ENVIRONMENT or
        COMMAND_LINE."""
        return dict(self.origins).get(key, DEFAULT)

    def overridden(self, key: str, value: Any) -> Settings:
        """These settings with ``key`` set on the command line."""
        return replace(self, **{KEYS[key][0]: value},
                       origins=(*((k, o) for k, o in self.origins if k != key),
                                (key, COMMAND_LINE)))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from raw values (as in the file, or strings from the environment)."""
        unknown = sorted(set(values) - set(KEYS))
        if unknown:
            raise SettingsError(f"unknown setting {unknown[0]!r}; the settings are: "
                                + ", ".join(KEYS))
        kwargs: dict[str, Any] = {}
        for key, raw in values.items():
            try:
                kwargs[KEYS[key][0]] = PARSERS[key](raw)
            except (ValueError, TypeError) as exc:
                raise SettingsError(f"{key} ({env_name(key)}): {exc}") from None
        return cls(**kwargs)


def env_name(key: str) -> str:
    return f"PBMSERV_{key.upper()}"


def _config_path(config: Path | str | None, env: Mapping[str, str]) -> Path | None:
    if config is not None and str(config) != "":
        return Path(config)
    if CONFIG_ENV in env:
        return Path(env[CONFIG_ENV]) if env[CONFIG_ENV] else None
    return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None


def read_file(path: Path) -> dict[str, Any]:
    """The settings of a TOML file, as written (checked by ``from_values``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingsError(f"settings file {path} does not exist") from None
    except PermissionError:
        raise SettingsError(f"settings file {path} cannot be read by this user "
                            f"(uid {os.getuid()}): check its owner and mode") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"settings file {path} cannot be read: {exc}") from None
    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"settings file {path} is not valid TOML: {exc}") from None
    try:
        Settings.from_values(values)
    except SettingsError as exc:
        raise SettingsError(f"settings file {path}: {exc}") from None
    return values


# -- parsing each setting -------------------------------------------------------------
def _text(raw: Any) -> str:
    if not isinstance(raw, str):
        raise TypeError(f"expected text in quotes, not {raw!r}")
    return raw.strip()


def _database_url(raw: Any) -> str:
    url = _text(raw)
    for plain in ("postgresql://", "postgres://"):  # the driver pbmserv installs
        if url.startswith(plain):
            url = "postgresql+psycopg://" + url[len(plain):]
    try:
        make_url(url)
    except ArgumentError:
        raise ValueError(f"{url!r} is not a database URL; write sqlite:////path/file.sqlite3 "
                         "or postgresql+psycopg://user@host/database") from None
    return url


def _addresses(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, list) else _text(raw).split(",")
    out = tuple(_text(a).lower() for a in items if _text(a))
    for address in out:
        local, at, domain = address.rpartition("@")
        if not at or not local or not domain or " " in address:
            raise ValueError(f"{address!r} is not a mail address like pbmserv@example.org")
    if not out:
        raise ValueError("give at least one address")
    return out


def _relay(raw: Any) -> tuple[str, int] | None:
    text = _text(raw)
    if text.lower() in OFF_WORDS:
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("write host:port, for example localhost:25")
    return host.strip("[]"), int(port)


def parse_listen(raw: Any) -> str | None:
    text = _text(raw)
    if text.lower() in OFF_WORDS:
        return None
    if text.startswith("/"):
        return text
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("write host:port (127.0.0.1:8024), the absolute path of a Unix "
                         "socket, or off")
    return text


def _number(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError(f"expected a number, not {raw!r}")
    value = int(raw)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _size(raw: Any) -> int:
    value = _number(raw)
    if value < 1024:
        raise ValueError("the largest message must be at least 1024 bytes")
    return value


def _reply_size(raw: Any) -> int:
    value = _number(raw)
    if value < 4096:
        raise ValueError("the longest reply must be at least 4096 bytes")
    return value


def _level(raw: Any) -> str:
    level = _text(raw).lower()
    if level not in LOG_LEVELS:
        raise ValueError("one of " + ", ".join(LOG_LEVELS))
    return level


def _path(raw: Any) -> Path:
    text = _text(raw)
    if not text:
        raise ValueError("give a path")
    return Path(text)


def _optional_path(raw: Any) -> Path | None:
    text = _text(raw)
    return Path(text) if text else None


def _flag(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = _text(raw).lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("write true or false")


def _secret(raw: Any) -> str | None:
    return _text(raw) or None


def _name(raw: Any) -> str:
    text = _text(raw)
    if not text or "\n" in text:
        raise ValueError("give one line of text")
    return text


#: the settings: file key -> (field, meaning); in the order ``config show`` lists them
KEYS: dict[str, tuple[str, str]] = {
    "database_url": ("database_url", "SQLAlchemy URL of the database"),
    "address": ("addresses", "the game addresses, comma-separated or a list; the first is "
                             "the From of the server's mail"),
    "name": ("server_name", "display name on outgoing mail"),
    "relay": ("relay", "host:port of the SMTP relay for outgoing mail; off: the Maildir"),
    "maildir": ("maildir", "Maildir for outgoing mail when no relay is set"),
    "max_size": ("max_message_size", "largest message taken, in bytes"),
    "max_reply": ("max_reply_size", "longest reply to one mail, in bytes; the rest is left "
                                    "out, and the reply says so"),
    "smtp": ("smtp", "where 'serve' listens for SMTP: host:port, or off"),
    "lmtp": ("lmtp", "where 'serve' listens for LMTP: host:port, a Unix socket's path, or off"),
    "workers": ("workers", "worker processes of 'serve' (0: a thread)"),
    "log_level": ("log_level", "debug, info, warning or error"),
    "log_file": ("log_file", "a file to log to as well (empty: none)"),
    "syslog": ("syslog", "log to syslog (facility mail) as well: true or false"),
    "secret": ("secret", "the key of move-by-reply addresses (empty: one the server makes "
                         "and keeps in the database)"),
}
PARSERS: dict[str, Any] = {
    "database_url": _database_url, "address": _addresses, "name": _name, "relay": _relay,
    "maildir": _path, "max_size": _size, "max_reply": _reply_size, "smtp": parse_listen,
    "lmtp": parse_listen,
    "workers": _number, "log_level": _level, "log_file": _optional_path, "syslog": _flag,
    "secret": _secret,
}
assert set(PARSERS) == set(KEYS) and {f for f, _ in KEYS.values()} <= {
    f.name for f in fields(Settings)}


def masked_url(url: str) -> str:
    """A database URL with its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a URL)"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def as_toml(settings: Settings) -> str:
    """The settings as a settings file would say them, secrets masked, each with its
    meaning and its environment variable, and where its value came from (default,
    file, environment or command line) in a comment after it."""
    lines = [f"# read from: {settings.source or 'no file'}; "
             "PBMSERV_* variables override the file", ""]
    for key, (name, meaning) in KEYS.items():
        value: Any = getattr(settings, name)
        if key == "database_url":
            value = masked_url(value)
        elif key == "secret" and value:
            value = "***"
        elif key == "relay":
            value = f"{value[0]}:{value[1]}" if value else "off"
        elif value is None:
            value = "off" if key in ("smtp", "lmtp") else ""
        lines += [f"# {meaning} ({env_name(key)})",
                  f"{key} = {_toml(value)}  # {settings.origin(key)}"]
    return "\n".join(lines) + "\n"
