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
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_DATABASE_URL = "sqlite:///pbmserv.sqlite3"
DEFAULT_ADDRESS = "pbmserv@localhost"
DEFAULT_MAX_SIZE = 256 * 1024
#: the longest reply to one mail, in bytes of text
DEFAULT_MAX_REPLY = 64 * 1024
#: processed mail is kept this many days
DEFAULT_PURGE_DAYS = 30
#: a signed-off player's userid is kept from others this many days
DEFAULT_USERID_RESERVE_DAYS = 365
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


class Relay(NamedTuple):
    """Where outgoing mail goes, as the ``relay`` setting says it."""

    host: str
    port: int
    #: "smtp" (plain, as to the local Postfix), "submission" (STARTTLS, required) or
    #: "smtps" (TLS from the first byte)
    scheme: str = "smtp"
    #: the login name for authenticated submission ("" for none)
    user: str = ""


class Mailbox(NamedTuple):
    """The IMAP mailbox ``serve`` takes mail from (the ``imap`` setting)."""

    #: "imaps" (TLS from the first byte) or "imap" (STARTTLS, required)
    scheme: str
    user: str
    host: str
    port: int
    folder: str = "INBOX"

    def __str__(self) -> str:
        return f"{self.user}@{self.host}/{self.folder}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.user}@{self.host}:{self.port}/{self.folder}"


#: what the server does with a mail in the IMAP folder once it is stored
IMAP_DONE = ("flag", "delete")
IMAP_MOVE = "move:"


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
    #: processed mail (in and out) older than this many days is deleted (0: kept)
    purge_days: int = DEFAULT_PURGE_DAYS
    #: a userid whose account closed is kept from others this many days
    userid_reserve_days: int = DEFAULT_USERID_RESERVE_DAYS
    #: where ``serve`` listens: SMTP (host:port, or None for no SMTP) and LMTP
    #: (host:port or the path of a Unix socket, or None)
    smtp: str | None = DEFAULT_SMTP
    lmtp: str | None = None
    #: an LMTP Unix socket's mode and group (None: this process's group), so that the
    #: MTA's user may connect to it
    lmtp_socket_mode: int = 0o660
    lmtp_socket_group: str | None = None
    #: worker processes of ``serve`` (0: a thread)
    workers: int = 1
    log_level: str = "info"
    log_file: Path | None = None
    syslog: bool = False
    #: the key of move-by-reply addresses (None: one the server makes and keeps)
    secret: str | None = None
    #: how outgoing mail reaches the relay: "smtp", "submission" (STARTTLS) or "smtps"
    relay_scheme: str = "smtp"
    #: the login at the relay ("": none)
    relay_user: str = ""
    relay_password: str | None = None
    relay_password_file: Path | None = None
    #: certificates to trust for the relay (None: the system's)
    relay_ca_file: Path | None = None
    #: the most mails the relay is given in any 24 hours (0: no limit)
    daily_send_limit: int = 0
    #: the IMAP mailbox to take mail from (None: none)
    imap: Mailbox | None = None
    imap_password: str | None = None
    imap_password_file: Path | None = None
    imap_ca_file: Path | None = None
    #: False only for a test host: the IMAP server's certificate is not checked
    imap_verify: bool = True
    #: seconds between two looks at a mailbox whose server has no IDLE
    imap_poll: int = 60
    #: "flag", "delete" or "move:FOLDER": what is done to a stored mail on the server
    imap_done: str = "flag"
    #: the longest the IMAP reader says nothing to the server (a NOOP, or IDLE ended
    #: and begun again): a connection gone silent is noticed within this and a minute
    imap_keepalive: int = 60
    #: which mail of the folder is taken: "now" (what comes after the first read),
    #: "all", or what came on or after a day ("2026-11-01")
    imap_since: str = "now"
    #: the envelope sender: True, one address per mail (VERP, user+bounce-...@); False,
    #: the relay login's own address (else the game address); None: VERP unless the
    #: relay has a login (a provider's submission server wants its own address)
    verp: bool | None = None
    #: seconds after which mail not moving makes the server unhealthy: a relay that
    #: refused or deferred every mail for this long
    health_mail_age: int = 300
    #: whether mail for ``user+tag@`` reaches the mailbox: move-by-reply addresses use
    #: it; without, the tag travels in the Reply-To's name and the Subject
    subaddressing: bool = True
    #: who is told when something needs a person (None: postmaster@ the game domain)
    admin: str | None = None
    #: the hour (UTC) of a daily report to the administrator; None: no report
    daily_report: int | None = None
    #: hard bounces (the address is dead: 5.1.x, 5.2.1, 5.4.4) within ``bounce_days``
    #: after which an address is no longer mailed
    bounce_threshold: int = 3
    #: soft bounces (a policy refusal 5.7.x, a full mailbox 5.2.2, any other permanent
    #: failure) within ``bounce_days`` after which an address is no longer mailed
    soft_bounce_threshold: int = 5
    bounce_days: int = 7
    #: where the web pages are seen from outside (https://games.example.org), if they are:
    #: the one-click unsubscribe link, and absolute redirects (None: the path alone)
    web_url: str | None = None
    #: hours an account (or a new address) may wait for the answer to its confirmation
    #: mail; then it lapses, and its userid is free again
    confirm_hours: int = 24
    #: the limits that keep one mail, or one sender, from making many mails
    signups_per_sender_day: int = 5
    challenges_per_sender_day: int = 20
    challenges_per_player_day: int = 10
    seeks_per_player: int = 10
    tournaments_per_creator: int = 3
    subscribers_per_board: int = 20
    mails_per_address_hour: int = 60
    replies_per_sender_hour: int = 30
    #: the most mail one sender may have stored in any 24 hours, in mails and in bytes
    #: (0: no limit); beyond it the intake says "try again later" (pbmserv.intake.store)
    sender_quota_mails: int = 300
    sender_quota_bytes: int = 20 * 1024 * 1024
    #: connections open at once to the SMTP and LMTP listeners together, and to the web
    #: pages; beyond, the longest idle is closed (pbmserv.connections)
    max_connections: int = 500
    #: seconds a connection may stay silent, and the longest it may last
    connection_idle_seconds: int = 60
    connection_max_seconds: int = 600
    #: mails to others than the sender (a challenge's players, a reset code, a
    #: confirmation) that one incoming mail, and one sender's mails in an hour, may make
    mails_to_others_per_mail: int = 3
    mails_to_others_per_hour: int = 10
    #: answers a day to one address whose mail carried nothing out (every command
    #: refused), or which has no account; the rest get none
    refusals_per_address_day: int = 10
    #: the authserv-ids (lower case) of our own mail server's Authentication-Results
    #: headers: a stranger's mail that fails SPF, DKIM or DMARC there is not answered
    trusted_authserv_ids: tuple[str, ...] = ()
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

    @property
    def admin_address(self) -> str:
        """Where alerts and reports go: the setting, else the game domain's postmaster."""
        return self.admin or f"postmaster@{self.domain}"

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
        relay = kwargs.get("relay")
        if isinstance(relay, Relay):  # one URL, three settings: where, how, who
            kwargs.update(relay=(relay.host, relay.port), relay_scheme=relay.scheme,
                          relay_user=relay.user)
        return cls(**kwargs)

    @property
    def uses_verp(self) -> bool:
        """Whether each mail goes out from an address of its own (``verp``; by default
        only without a relay login)."""
        return self.verp if self.verp is not None else not self.relay_user

    @property
    def login_address(self) -> str:
        """The envelope sender without VERP: the relay login when it is an address (a
        provider takes mail from its own address), else the game address."""
        user = self.relay_user.lower()
        return user if "@" in user.strip("@") else self.address

    @property
    def relay_target(self) -> Relay | None:
        """The relay with how to talk to it, or None for the Maildir."""
        if self.relay is None:
            return None
        return Relay(self.relay[0], self.relay[1], self.relay_scheme, self.relay_user)


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


#: the relay URL schemes and their ports when none is written
RELAY_PORTS = {"smtp": 25, "submission": 587, "smtps": 465}
IMAP_PORTS = {"imaps": 993, "imap": 143}


def _user_at_host(rest: str) -> tuple[str, str]:
    """``user@host:port/...`` -> (user, the rest after the last @); the user may hold an
    @ of its own (alice@example.org@smtp.example.org), written as is or as %40."""
    user, at, where = rest.rpartition("@")
    return (unquote(user) if at else ""), where


def _host_port(where: str, default: int | None, example: str) -> tuple[str, int]:
    host, colon, port = where.rpartition(":")
    if not colon or "]" in port:
        host, port = where, ""
    host = host.strip("[]")
    if not port and default is not None:
        return host, default
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(example)
    return host, int(port)


def _relay(raw: Any) -> Relay | None:
    text = _text(raw)
    if text.lower() in OFF_WORDS:
        return None
    example = ("write host:port (localhost:25), submission://user@smtp.example.org:587 "
               "(STARTTLS) or smtps://user@smtp.example.org:465 (TLS)")
    scheme, sep, rest = text.partition("://")
    if not sep:
        return Relay(*_host_port(text, None, example))
    scheme = scheme.lower()
    if scheme not in RELAY_PORTS:
        raise ValueError(f"unknown scheme {scheme!r}: {example}")
    user, where = _user_at_host(rest.rstrip("/"))
    host, port = _host_port(where, RELAY_PORTS[scheme], example)
    if scheme == "smtp" and user:
        raise ValueError("a login needs TLS: write submission://... or smtps://...")
    return Relay(host, port, scheme, user)


def _imap(raw: Any) -> Mailbox | None:
    text = _text(raw)
    if text.lower() in OFF_WORDS:
        return None
    example = "write imaps://user@imap.example.org/INBOX (or imap://... for STARTTLS)"
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in IMAP_PORTS:
        raise ValueError(example)
    user, where = _user_at_host(rest)  # a folder with an @ in its name: write %40
    where, _, folder = where.partition("/")
    if not user:
        raise ValueError("name the login: " + example)
    host, port = _host_port(where, IMAP_PORTS[scheme], example)
    return Mailbox(scheme, user, host, port, unquote(folder.strip("/")) or "INBOX")


def _imap_done(raw: Any) -> str:
    text = _text(raw)
    if text.lower() in IMAP_DONE:
        return text.lower()
    if text.lower().startswith(IMAP_MOVE) and text[len(IMAP_MOVE):].strip():
        return IMAP_MOVE + text[len(IMAP_MOVE):].strip()
    raise ValueError("flag, delete, or move:FOLDER (move:Processed)")


def _imap_since(raw: Any) -> str:
    text = _text(raw).lower()
    if text in ("now", "all"):
        return text
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise ValueError("now (mail that comes after the first read), all, or a day "
                         "like 2026-11-01") from None


def _flag_or_auto(raw: Any) -> bool | None:
    if isinstance(raw, str) and _text(raw).lower() in ("", "auto"):
        return None
    return _flag(raw)


def _seconds(raw: Any) -> int:
    value = _number(raw)
    if value < 1:
        raise ValueError("at least 1 second")
    return value


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


def _mode(raw: Any) -> int:
    """A file mode, written in octal ("0660", or 0o660 in TOML)."""
    if isinstance(raw, bool):
        raise TypeError(f"expected a mode like \"0660\", not {raw!r}")
    if isinstance(raw, int):
        value = raw
    else:
        text = _text(raw).lower().removeprefix("0o")
        if not text or any(c not in "01234567" for c in text):
            raise ValueError(f"{raw!r} is not a mode: write it in octal, like \"0660\"")
        value = int(text, 8)
    if not 0 <= value <= 0o777:
        raise ValueError("a mode is at most 0777 (read, write for owner, group, others)")
    return value


def _group(raw: Any) -> str | None:
    text = _text(raw)
    if not text:
        return None
    if any(c.isspace() or c in ":/" for c in text):
        raise ValueError(f"{text!r} is not a group name")
    return text


def _number(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError(f"expected a number, not {raw!r}")
    value = int(raw)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _limit(raw: Any) -> int:
    value = _number(raw)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _size(raw: Any) -> int:
    value = _number(raw)
    if value < 1024:
        raise ValueError("the largest message must be at least 1024 bytes")
    return value


def _connections(raw: Any) -> int:
    value = _number(raw)
    if value < 2:
        raise ValueError("at least 2 connections")
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


def _one_address(raw: Any) -> str | None:
    text = _text(raw)
    return _addresses(text)[0] if text else None


def _hour(raw: Any) -> int | None:
    if isinstance(raw, str) and _text(raw).lower() in OFF_WORDS:
        return None
    value = _number(raw)
    if value > 23:
        raise ValueError("an hour from 0 to 23 (UTC), or off")
    return value


def _authserv_ids(raw: Any) -> tuple[str, ...]:
    """authserv-ids: host names, comma-separated or a list ("" for none)."""
    items = raw if isinstance(raw, list) else _text(raw).split(",")
    out = tuple(_text(a).lower().rstrip(".") for a in items if _text(a))
    for name in out:
        if any(c.isspace() or c in ";()" for c in name):
            raise ValueError(f"{name!r} is not an authserv-id (a host name like "
                             "mx.example.org)")
    return out


def _at_least_one(raw: Any) -> int:
    value = _number(raw)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _url(raw: Any) -> str | None:
    text = _text(raw).rstrip("/")
    if not text:
        return None
    if not text.startswith(("https://", "http://")) or " " in text:
        raise ValueError("write the address of the web pages, like https://games.example.org")
    return text


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
    "relay": ("relay", "where outgoing mail goes: host:port, submission://user@host:587, "
                        "smtps://user@host:465; off: the Maildir"),
    "maildir": ("maildir", "Maildir for outgoing mail when no relay is set"),
    "max_size": ("max_message_size", "largest message taken, in bytes"),
    "max_reply": ("max_reply_size", "longest reply to one mail, in bytes; the rest is left "
                                    "out, and the reply says so"),
    "purge_days": ("purge_days", "processed mail, in and out, is deleted after this many "
                                 "days by 'serve' itself (0: kept)"),
    "userid_reserve_days": ("userid_reserve_days", "days a signed-off player's userid is "
                                                   "kept from others (0: free at once)"),
    "smtp": ("smtp", "where 'serve' listens for SMTP: host:port, or off"),
    "lmtp": ("lmtp", "where 'serve' listens for LMTP: host:port, a Unix socket's path, or off"),
    "lmtp_socket_mode": ("lmtp_socket_mode", "an LMTP Unix socket's mode, in octal"),
    "lmtp_socket_group": ("lmtp_socket_group", "an LMTP Unix socket's group, one the MTA's "
                                               "user is in (empty: the service's own)"),
    "workers": ("workers", "worker processes of 'serve' (0: a thread)"),
    "log_level": ("log_level", "debug, info, warning or error"),
    "log_file": ("log_file", "a file to log to as well (empty: none)"),
    "syslog": ("syslog", "log to syslog (facility mail) as well: true or false"),
    "secret": ("secret", "the key of move-by-reply addresses (empty: one the server makes "
                         "and keeps in the database)"),
    "relay_password": ("relay_password", "the password of the relay's login (better: "
                                         "relay_password_file)"),
    "relay_password_file": ("relay_password_file", "a file holding the password of the "
                                                   "relay's login"),
    "relay_ca_file": ("relay_ca_file", "certificates to trust for the relay (empty: the "
                                       "system's)"),
    "daily_send_limit": ("daily_send_limit", "the most mails given to the relay in any 24 "
                                             "hours; the rest wait (0: no limit)"),
    "imap": ("imap", "the mailbox 'serve' takes mail from: imaps://user@host/INBOX, or off"),
    "imap_password": ("imap_password", "the mailbox's password (better: imap_password_file)"),
    "imap_password_file": ("imap_password_file", "a file holding the mailbox's password"),
    "imap_ca_file": ("imap_ca_file", "certificates to trust for the IMAP server (empty: the "
                                     "system's)"),
    "imap_verify": ("imap_verify", "check the IMAP server's certificate: true (false only for "
                                   "a test host)"),
    "imap_poll": ("imap_poll", "seconds between looks at a mailbox whose server has no IDLE"),
    "imap_done": ("imap_done", "what is done to a mail on the IMAP server once stored: flag, "
                               "delete or move:FOLDER"),
    "imap_keepalive": ("imap_keepalive", "the longest the IMAP reader stays silent, in "
                                         "seconds: a dead connection is noticed within it"),
    "imap_since": ("imap_since", "which mail of the IMAP folder is answered: now (what comes "
                                 "after the first read), all, or from a day (2026-11-01)"),
    "verp": ("verp", "envelope sender: true, one address per mail (user+bounce-...@); "
                     "false, the relay login's own address; auto: VERP unless the relay "
                     "has a login"),
    "health_mail_age": ("health_mail_age", "seconds after which mail that is not moving "
                                           "makes the server unhealthy (a relay refusing "
                                           "every mail)"),
    "subaddressing": ("subaddressing", "whether mail for user+tag@ reaches the mailbox (false: "
                                       "move-by-reply tags go in the Reply-To's name and the "
                                       "Subject)"),
    "admin_address": ("admin", "who is mailed when something needs a person (empty: "
                               "postmaster@ the game domain)"),
    "daily_report": ("daily_report", "the hour (UTC, 0-23) of a daily report mail to the "
                                     "administrator, or off"),
    "bounce_threshold": ("bounce_threshold", "hard bounces (no such address: 5.1.x, 5.2.1, "
                                             "5.4.4) within bounce_days after which an "
                                             "address is no longer mailed"),
    "soft_bounce_threshold": ("soft_bounce_threshold",
                              "soft bounces (a policy refusal 5.7.x, a full mailbox 5.2.2, "
                              "any other permanent failure) within bounce_days after which "
                              "an address is no longer mailed"),
    "bounce_days": ("bounce_days", "the days over which bounces are counted"),
    "web_url": ("web_url", "where the web pages are seen from outside (https://...), for "
                           "the one-click unsubscribe link and redirects; empty: none"),
    "confirm_hours": ("confirm_hours", "hours a new account, or a new address, may wait for "
                                       "the answer to its confirmation mail before it "
                                       "lapses (the account's userid is free again)"),
    "signups_per_sender_day": ("signups_per_sender_day",
                               "accounts one sender address may open in 24 hours"),
    "challenges_per_sender_day": ("challenges_per_sender_day",
                                  "boards one sender address may start by challenge in "
                                  "24 hours"),
    "challenges_per_player_day": ("challenges_per_player_day",
                                  "boards started by challenge in which one player is named, "
                                  "in 24 hours"),
    "seeks_per_player": ("seeks_per_player", "open challenges (seeks) one player may have"),
    "tournaments_per_creator": ("tournaments_per_creator",
                                "tournaments not yet over that one player may have created"),
    "subscribers_per_board": ("subscribers_per_board", "spectators one board may have"),
    "mails_per_address_hour": ("mails_per_address_hour",
                               "mails to one address in an hour; later ones are held and "
                               "come folded into one mail"),
    "replies_per_sender_hour": ("replies_per_sender_hour",
                                "replies to one sender in an hour; later ones are held and "
                                "come folded into one mail"),
    "sender_quota_mails": ("sender_quota_mails",
                           "mails one sender may have stored in 24 hours; beyond, the "
                           "intake answers 'try again later' (0: no limit)"),
    "sender_quota_bytes": ("sender_quota_bytes",
                           "bytes of mail one sender may have stored in 24 hours (0: no "
                           "limit)"),
    "max_connections": ("max_connections",
                        "connections open at once to the SMTP and LMTP listeners, and to the "
                        "web pages; beyond, the longest idle is closed"),
    "connection_idle_seconds": ("connection_idle_seconds",
                                "seconds a connection may stay silent before it is closed"),
    "connection_max_seconds": ("connection_max_seconds",
                               "the longest a connection may last, in seconds"),
    "mails_to_others_per_mail": ("mails_to_others_per_mail",
                                 "mails to others than its sender (players challenged, reset "
                                 "codes, confirmations) one incoming mail may make"),
    "mails_to_others_per_hour": ("mails_to_others_per_hour",
                                 "mails to others than the sender that one sender's mails may "
                                 "make in an hour"),
    "refusals_per_address_day": ("refusals_per_address_day",
                                 "answers a day to one address whose mails carried nothing out, "
                                 "or which has no account; later such mails get none"),
    "trusted_authserv_id": ("trusted_authserv_ids",
                            "the authserv-id(s) of your own mail server's "
                            "Authentication-Results (OpenDMARC's AuthservID); empty: none "
                            "is read"),
}
PARSERS: dict[str, Any] = {
    "database_url": _database_url, "address": _addresses, "name": _name, "relay": _relay,
    "maildir": _path, "max_size": _size, "max_reply": _reply_size, "purge_days": _number,
    "userid_reserve_days": _number,
    "smtp": parse_listen,
    "lmtp": parse_listen, "lmtp_socket_mode": _mode, "lmtp_socket_group": _group,
    "workers": _number, "log_level": _level, "log_file": _optional_path, "syslog": _flag,
    "secret": _secret, "relay_password": _secret, "relay_password_file": _optional_path,
    "relay_ca_file": _optional_path, "daily_send_limit": _number, "imap": _imap,
    "imap_password": _secret, "imap_password_file": _optional_path,
    "imap_ca_file": _optional_path, "imap_verify": _flag, "imap_poll": _seconds,
    "imap_done": _imap_done, "subaddressing": _flag, "imap_keepalive": _seconds,
    "imap_since": _imap_since, "verp": _flag_or_auto, "health_mail_age": _seconds,
    "admin_address": _one_address, "daily_report": _hour,
    "bounce_threshold": _at_least_one, "soft_bounce_threshold": _at_least_one,
    "bounce_days": _at_least_one, "web_url": _url,
    "sender_quota_mails": _number, "sender_quota_bytes": _number,
    "max_connections": _connections,
    "connection_idle_seconds": _seconds, "connection_max_seconds": _seconds,
    **{key: _limit for key in (
        "confirm_hours", "signups_per_sender_day", "challenges_per_sender_day",
        "challenges_per_player_day", "seeks_per_player", "tournaments_per_creator",
        "subscribers_per_board", "mails_per_address_hour", "replies_per_sender_hour",
        "mails_to_others_per_mail", "mails_to_others_per_hour", "refusals_per_address_day")},
    "trusted_authserv_id": _authserv_ids,
}
#: settings shown as *** by ``config show``
SECRET_KEYS = ("secret", "relay_password", "imap_password")
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
        elif key in SECRET_KEYS and value:
            value = "***"
        elif key == "relay":
            value = relay_url(settings) if value else "off"
        elif key == "imap":
            value = value.url if value else "off"
        elif key == "lmtp_socket_mode":
            value = f"{value:04o}"
        elif value is None:
            value = ("off" if key in ("smtp", "lmtp", "daily_report")
                     else "auto" if key == "verp" else "")
        lines += [f"# {meaning} ({env_name(key)})",
                  f"{key} = {_toml(value)}  # {settings.origin(key)}"]
    return "\n".join(lines) + "\n"


def relay_url(settings: Settings) -> str:
    """The relay as the setting would say it (no password)."""
    relay = settings.relay_target
    if relay is None:
        return "off"
    if relay.scheme == "smtp":
        return f"{relay.host}:{relay.port}"
    user = f"{relay.user}@" if relay.user else ""
    return f"{relay.scheme}://{user}{relay.host}:{relay.port}"


def read_password(inline: str | None, path: Path | None, what: str) -> str | None:
    """A password from its setting, else from its file (read each time: a changed
    file needs no restart); None if neither is set."""
    if path is not None:
        try:
            return path.read_text(encoding="utf-8").strip("\r\n")
        except OSError as exc:
            raise SettingsError(f"{what} password file {path} cannot be read: "
                                f"{exc.strerror or exc}") from None
    return inline
