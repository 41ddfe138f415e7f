"""Settings: one TOML file, overridden key by key by the environment (PBMSERV_*).

Every setting has one name: ``relay`` in the file is ``PBMSERV_RELAY`` in the
environment and ``settings.relay`` in the code.  The file is the one given with
``--config``, else the one named by ``PBMSERV_CONFIG``, else
``/etc/pbmserv/pbmserv.toml`` if it exists; with none, the defaults below.
``PBMSERV_CONFIG=""`` reads no file at all.

To add a setting, declare one field of ``Settings``: ``name: type = setting(default,
parser, "help")``, and give it a row in docs/admin.md's table and a line in
deploy/pbmserv.toml.example (tests check both).  To rename one, give the field its new
name and ``formerly="old_key"``: the old key (and PBMSERV_OLD_KEY) is still read, with
a warning in the log, in ``config show`` and in ``config check``.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast
from urllib.parse import unquote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_SMTP = "127.0.0.1:2525"
#: read when neither --config nor PBMSERV_CONFIG names a file
DEFAULT_CONFIG = Path("/etc/pbmserv/pbmserv.toml")
CONFIG_ENV = "PBMSERV_CONFIG"
LOG_LEVELS = ("debug", "info", "warning", "error")
#: where a value came from, as ``config show`` says it
DEFAULT, FILE, ENVIRONMENT, COMMAND_LINE = "default", "file", "environment", "command line"
#: what "off" is written as, for the listeners
OFF_WORDS = ("", "off", "no", "none", "false")

T = TypeVar("T")


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


def _command(raw: Any) -> str | None:
    """A command line, split as a shell would (no shell runs it); "" for none."""
    text = _text(raw)
    if not text:
        return None
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} cannot be read as a command line: {exc}") from None
    if not words:
        raise ValueError("give a command, like /usr/local/bin/page-me")
    return text


def _days_as_hours(raw: Any) -> int:
    """confirm_days (before confirm_hours): a number of days, as hours."""
    return _limit(raw) * 24


# -- showing a value as ``config show`` writes it ------------------------------------
def masked_url(url: str) -> str:
    """A database URL with its password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(not a URL)"


def relay_url(settings: Settings) -> str:
    """The relay as the setting would say it (no password)."""
    relay = settings.relay_target
    if relay is None:
        return "off"
    if relay.scheme == "smtp":
        return f"{relay.host}:{relay.port}"
    user = f"{relay.user}@" if relay.user else ""
    return f"{relay.scheme}://{user}{relay.host}:{relay.port}"


def _shown_database_url(settings: Settings) -> str:
    return masked_url(settings.database_url)


def _shown_imap(settings: Settings) -> str:
    return settings.imap.url if settings.imap else "off"


def _shown_mode(settings: Settings) -> str:
    return f"{settings.lmtp_socket_mode:04o}"


# -- declaring a setting -------------------------------------------------------------
#: the key of a setting's declaration in its field's metadata
SETTING = "pbmserv.setting"


@dataclass(frozen=True)
class Setting:
    """How one setting is read and shown: the metadata of its field of ``Settings``,
    whose name is the setting's key (and, upper case after PBMSERV_, its variable)."""

    #: the value as written (TOML's, or the text of a PBMSERV_ variable) -> the field's;
    #: ValueError or TypeError saying what is wrong and how to write it
    parse: Callable[[Any], Any]
    #: what it is, for ``config show``
    help: str
    #: the key it had before ("": none): still read, with a warning
    formerly: str = ""
    #: an old key's value -> a value of this key (None: the same)
    convert: Callable[[Any], Any] | None = None
    #: shown as *** by ``config show``
    secret: bool = False
    #: how ``config show`` writes the value, when not as it is
    show: Callable[[Settings], object] | None = None
    #: how ``config show`` writes None
    none: str = ""


def setting(default: object, parse: Callable[[Any], T], help: str, *, formerly: str = "",
            convert: Callable[[Any], Any] | None = None, secret: bool = False,
            show: Callable[[Settings], object] | None = None, none: str = "") -> T:
    """A field of ``Settings`` that is a setting: its default, how its value is read
    (``parse``: its type is the field's), and its meaning (``help``); see ``Setting``
    for the rest.  (A default that ``parse`` would not give back fails a test.)"""
    return cast(T, field(default=default, metadata={SETTING: Setting(
        parse, help, formerly, convert, secret, show, none)}))


@dataclass(frozen=True)
class Settings:
    """The settings, one field each (in the order ``config show`` lists them), then
    what they say together and where they came from."""

    database_url: str = setting(
        "sqlite:///pbmserv.sqlite3", _database_url, "SQLAlchemy URL of the database",
        show=_shown_database_url)
    #: the first is ``address``, the From of the server's own mail
    addresses: tuple[str, ...] = setting(
        ("pbmserv@localhost",), _addresses,
        "the game addresses, comma-separated or a list; the first is the From of the "
        "server's mail", formerly="address")
    server_name: str = setting("pbmserv", _name, "display name on outgoing mail",
                               formerly="name")
    #: (host, port), or None for the Maildir; the URL's scheme and login are
    #: ``relay_scheme`` and ``relay_user`` (see ``relay_target``): ``from_values``
    #: spreads the parser's Relay over the three (hence the ignore)
    relay: tuple[str, int] | None = setting(  # type: ignore[assignment]
        None, _relay, "where outgoing mail goes: host:port, submission://user@host:587, "
        "smtps://user@host:465; off: the Maildir", show=relay_url)
    maildir: Path = setting(Path("var/mail"), _path,
                            "Maildir for outgoing mail when no relay is set")
    #: Postfix's own default message_size_limit: what passed Postfix passes here
    max_message_size: int = setting(
        10_240_000, _size, "largest message taken, in bytes (attachments are taken, not "
        "stored)", formerly="max_size")
    max_reply_size: int = setting(
        64 * 1024, _reply_size, "longest reply to one mail, in bytes; the rest is left out, "
        "and the reply says so", formerly="max_reply")
    purge_days: int = setting(
        30, _number, "processed mail, in and out, is deleted after this many days by "
        "'serve' itself (0: kept)")
    userid_reserve_days: int = setting(
        365, _number, "days a signed-off player's userid is kept from others (0: free at "
        "once)")
    #: host:port, or None for no SMTP listener
    smtp: str | None = setting(DEFAULT_SMTP, parse_listen,
                               "where 'serve' listens for SMTP: host:port, or off", none="off")
    #: host:port or the path of a Unix socket, or None
    lmtp: str | None = setting(
        None, parse_listen, "where 'serve' listens for LMTP: host:port, a Unix socket's "
        "path, or off", none="off")
    lmtp_socket_mode: int = setting(0o660, _mode, "an LMTP Unix socket's mode, in octal",
                                    show=_shown_mode)
    #: None: this process's group
    lmtp_socket_group: str | None = setting(
        None, _group, "an LMTP Unix socket's group, one the MTA's user is in (empty: the "
        "service's own)")
    workers: int = setting(1, _number, "worker processes of 'serve' (0: a thread)")
    log_level: str = setting("info", _level, "debug, info, warning or error")
    log_file: Path | None = setting(None, _optional_path,
                                    "a file to log to as well (empty: none)")
    syslog: bool = setting(False, _flag,
                           "log to syslog (facility mail) as well: true or false")
    #: None: one the server makes and keeps
    secret: str | None = setting(
        None, _secret, "the key of move-by-reply addresses (empty: one the server makes "
        "and keeps in the database)", secret=True)
    relay_password: str | None = setting(
        None, _secret, "the password of the relay's login (better: relay_password_file)",
        secret=True)
    relay_password_file: Path | None = setting(
        None, _optional_path, "a file holding the password of the relay's login")
    #: None: the system's
    relay_ca_file: Path | None = setting(
        None, _optional_path, "certificates to trust for the relay (empty: the system's)")
    daily_send_limit: int = setting(
        0, _number, "the most mails given to the relay in any 24 hours; the rest wait "
        "(0: no limit)")
    imap: Mailbox | None = setting(
        None, _imap, "the mailbox 'serve' takes mail from: imaps://user@host/INBOX, or off",
        show=_shown_imap)
    imap_password: str | None = setting(
        None, _secret, "the mailbox's password (better: imap_password_file)", secret=True)
    imap_password_file: Path | None = setting(
        None, _optional_path, "a file holding the mailbox's password")
    imap_ca_file: Path | None = setting(
        None, _optional_path, "certificates to trust for the IMAP server (empty: the "
        "system's)")
    imap_verify: bool = setting(
        True, _flag, "check the IMAP server's certificate: true (false only for a test "
        "host)")
    imap_poll: int = setting(
        60, _seconds, "seconds between looks at a mailbox whose server has no IDLE")
    #: "flag", "delete" or "move:FOLDER"
    imap_done: str = setting(
        "flag", _imap_done, "what is done to a mail on the IMAP server once stored: flag, "
        "delete or move:FOLDER")
    #: a connection gone silent is noticed within this and a minute
    imap_keepalive: int = setting(
        60, _seconds, "the longest the IMAP reader stays silent, in seconds: a dead "
        "connection is noticed within it")
    #: "now", "all" or a day (2026-11-01)
    imap_since: str = setting(
        "now", _imap_since, "which mail of the IMAP folder is answered: now (what comes "
        "after the first read), all, or from a day (2026-11-01)")
    #: True: one address per mail (VERP, user+bounce-...@); False: the relay login's own
    #: address (else the game address); None (auto): VERP unless the relay has a login (a
    #: provider's submission server wants its own address); see ``uses_verp``
    verp: bool | None = setting(
        None, _flag_or_auto, "envelope sender: true, one address per mail "
        "(user+bounce-...@); false, the relay login's own address; auto: VERP unless the "
        "relay has a login", none="auto")
    #: pbmserv.service.health
    health_mail_age: int = setting(
        300, _seconds, "seconds after which mail that is not moving makes the server "
        "unhealthy (a relay refusing every mail)")
    #: without, move-by-reply tags travel in the Reply-To's name and the Subject
    subaddressing: bool = setting(
        True, _flag, "whether mail for user+tag@ reaches the mailbox (false: move-by-reply "
        "tags go in the Reply-To's name and the Subject)")
    #: None: ``alert_address`` is postmaster@ the game domain
    admin_address: str | None = setting(
        None, _one_address, "who is mailed when something needs a person (empty: "
        "postmaster@ the game domain)")
    #: pbmserv.notifications.alert_route
    alert_command: str | None = setting(
        None, _command, "a command run with an alert's text on its standard input when "
        "mail cannot carry it (the relay down, the admin address refused): a pager, a "
        "chat webhook; empty: none")
    #: None: no report
    daily_report: int | None = setting(
        None, _hour, "the hour (UTC, 0-23) of a daily report mail to the administrator, "
        "or off", none="off")
    bounce_threshold: int = setting(
        3, _at_least_one, "hard bounces (no such address: 5.1.x, 5.2.1, 5.4.4) within "
        "bounce_days after which an address is no longer mailed")
    soft_bounce_threshold: int = setting(
        5, _at_least_one, "soft bounces (a policy refusal 5.7.x, a full mailbox 5.2.2, any "
        "other permanent failure) within bounce_days after which an address is no longer "
        "mailed")
    bounce_days: int = setting(7, _at_least_one, "the days over which bounces are counted")
    #: pbmserv.bounces.probes
    bounce_probe_days: int = setting(
        3, _number, "days after which an address no longer mailed is sent a probe, and "
        "again after as many (at most 3 probes); no bounce of it within a day: mailed "
        "again (0: never probed)")
    #: None: links and redirects give the path alone
    web_url: str | None = setting(
        None, _url, "where the web pages are seen from outside (https://...), for the "
        "one-click unsubscribe link, the board mails' links to move pages and redirects; "
        "empty: none")
    confirm_hours: int = setting(
        24, _limit, "hours a new account, or a new address, may wait for the answer to its "
        "confirmation mail before it lapses (the account's userid is free again)",
        formerly="confirm_days", convert=_days_as_hours)
    # the limits that keep one mail, or one sender, from making many mails
    signups_per_sender_day: int = setting(
        5, _limit, "accounts one sender address may open in 24 hours")
    challenges_per_sender_day: int = setting(
        20, _limit, "boards one sender address may start by challenge in 24 hours")
    challenges_per_player_day: int = setting(
        10, _limit, "boards started by challenge in which one player is named, in 24 hours")
    seeks_per_player: int = setting(
        10, _limit, "open challenges (seeks) one player may have")
    tournaments_per_creator: int = setting(
        3, _limit, "tournaments not yet over that one player may have created")
    subscribers_per_board: int = setting(20, _limit, "spectators one board may have")
    mails_per_address_hour: int = setting(
        60, _limit, "mails to one address in an hour; later ones are held and come folded "
        "into one mail")
    replies_per_sender_hour: int = setting(
        30, _limit, "replies to one sender in an hour; later ones are held and come folded "
        "into one mail (never the replies to a player's own commands that proved their "
        "account)")
    #: enforced by the intake (pbmserv.intake.store)
    sender_quota_mails: int = setting(
        300, _number, "mails one sender may have stored in 24 hours; beyond, the intake "
        "answers 'try again later' (0: no limit)")
    sender_quota_bytes: int = setting(
        20 * 1024 * 1024, _number, "bytes of mail one sender may have stored in 24 hours "
        "(0: no limit)")
    #: SMTP and LMTP together, and the web apart (pbmserv.connections)
    max_connections: int = setting(
        500, _connections, "connections open at once to the SMTP and LMTP listeners, and "
        "to the web pages; beyond, the longest idle is closed")
    connection_idle_seconds: int = setting(
        60, _seconds, "seconds a connection may stay silent before it is closed")
    connection_max_seconds: int = setting(
        600, _seconds, "the longest a connection may last, in seconds")
    mails_to_others_per_mail: int = setting(
        3, _limit, "mails to others than its sender (players challenged, reset codes, "
        "confirmations) one incoming mail may make")
    mails_to_others_per_hour: int = setting(
        10, _limit, "mails to others than the sender that one sender's mails may make in "
        "an hour")
    refusals_per_address_day: int = setting(
        10, _limit, "answers a day to one address whose mails carried nothing out, or "
        "which has no account; later such mails get none")
    #: lower case; a stranger's mail that fails SPF, DKIM or DMARC there is not answered
    trusted_authserv_ids: tuple[str, ...] = setting(
        (), _authserv_ids, "the authserv-id(s) of your own mail server's "
        "Authentication-Results (OpenDMARC's AuthservID); empty: none is read",
        formerly="trusted_authserv_id")
    #: pbmserv.service.budget
    work_per_mail: int = setting(
        2000, _limit, "the work one mail may make the server do, in units (one: about one "
        "Amoeba move checked); what does not fit is refused")

    # -- not settings: what the relay URL says besides where, and where values came from
    #: how outgoing mail reaches the relay: "smtp", "submission" (STARTTLS) or "smtps"
    relay_scheme: str = "smtp"
    #: the login at the relay ("": none)
    relay_user: str = ""
    #: the settings file these settings were read from, if any
    source: Path | None = None
    #: where each key's value came from, when not the default: (key, FILE or ENVIRONMENT
    #: or COMMAND_LINE), as ``config show`` marks them
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    #: what the administrator should change (an old key still read), for the log,
    #: ``config show`` and ``config check``
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"

    @property
    def alert_address(self) -> str:
        """Where alerts and reports go: admin_address, else the game domain's
        postmaster."""
        return self.admin_address or f"postmaster@{self.domain}"

    @classmethod
    def load(cls, config: Path | str | None = None,
             env: Mapping[str, str] | None = None) -> Settings:
        """The settings of the file ``config`` (see the module's docstring for which
        file is read without one), each overridden by its PBMSERV_ variable."""
        env = os.environ if env is None else env
        path = _config_path(config, env)
        values: dict[str, Any] = {}
        warnings: list[str] = []
        if path is not None:
            values, warnings = _current_names(read_file(path), str)
        origins = dict.fromkeys(values, FILE)
        from_env, env_warnings = _current_names(
            {key: env[env_name(key)] for key in (*SETTINGS, *FORMERLY)
             if env_name(key) in env}, env_name)
        values.update(from_env)
        origins.update(dict.fromkeys(from_env, ENVIRONMENT))
        settings = replace(cls.from_values(values), origins=tuple(origins.items()),
                           warnings=(*warnings, *env_warnings))
        return settings if path is None else replace(settings, source=path)

    def origin(self, key: str) -> str:
        """Where the value of ``key`` came from: DEFAULT, FILE, ENVIRONMENT or
        COMMAND_LINE."""
        return dict(self.origins).get(key, DEFAULT)

    def overridden(self, key: str, value: Any) -> Settings:
        """These settings with ``key`` set on the command line."""
        return replace(self, **{key: value},
                       origins=(*((k, o) for k, o in self.origins if k != key),
                                (key, COMMAND_LINE)))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Settings:
        """Settings from raw values (as in the file, or strings from the environment);
        an old key is read as its new one, with a warning."""
        values, warnings = _current_names(values, str)
        unknown = sorted(set(values) - set(SETTINGS))
        if unknown:
            raise SettingsError(f"unknown setting {unknown[0]!r}; the settings are: "
                                + ", ".join(SETTINGS))
        kwargs: dict[str, Any] = {}
        for key, raw in values.items():
            try:
                kwargs[key] = SETTINGS[key].parse(raw)
            except (ValueError, TypeError) as exc:
                raise SettingsError(f"{key} ({env_name(key)}): {exc}") from None
        relay = kwargs.get("relay")
        if isinstance(relay, Relay):  # one URL, three fields: where, how, who
            kwargs.update(relay=(relay.host, relay.port), relay_scheme=relay.scheme,
                          relay_user=relay.user)
        return cls(**kwargs, warnings=tuple(warnings))

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


#: the settings: key (its field's name) -> how it is read and shown, in the order
#: ``config show`` lists them
SETTINGS: dict[str, Setting] = {f.name: cast(Setting, f.metadata[SETTING])
                                for f in fields(Settings) if SETTING in f.metadata}
#: an old key -> the key that replaced it
FORMERLY: dict[str, str] = {s.formerly: key for key, s in SETTINGS.items() if s.formerly}
assert not FORMERLY.keys() & SETTINGS.keys(), "an old key is a setting's name again"


def env_name(key: str) -> str:
    return f"PBMSERV_{key.upper()}"


def _current_names(values: Mapping[str, Any], written: Callable[[str], str]
                   ) -> tuple[dict[str, Any], list[str]]:
    """``values`` with each old key read as the key that replaced it, and what to tell
    the administrator about each; ``written(key)`` is how the key is written where
    the values come from (the key itself in the file, PBMSERV_KEY in the environment)."""
    out = {key: raw for key, raw in values.items() if key not in FORMERLY}
    warnings = []
    for old, raw in values.items():
        key = FORMERLY.get(old)
        if key is None:
            continue
        if key in values:
            warnings.append(f"{written(old)} is the old name of {written(key)}, which is "
                            f"set too: {written(old)} is ignored; remove it")
            continue
        convert = SETTINGS[key].convert
        try:
            out[key] = raw if convert is None else convert(raw)
            SETTINGS[key].parse(out[key])  # a wrong value is told by the name written
        except (ValueError, TypeError) as exc:
            raise SettingsError(f"{old} ({env_name(old)}): {exc}") from None
        if convert is None:
            warnings.append(f"{written(old)} is the old name of {written(key)}: rename it "
                            "(the old name is still read, for now)")
        else:
            warnings.append(f"{written(old)} is the old name of {written(key)}, in other "
                            f"units: it is read as {key} = {_toml(out[key])}; write that "
                            "instead")
    return out, warnings


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
    file, environment or command line) in a comment after it; then an old key
    still read, if any, as a comment at the top."""
    lines = [f"# read from: {settings.source or 'no file'}; "
             "PBMSERV_* variables override the file",
             *(f"# warning: {warning}" for warning in settings.warnings), ""]
    for key, how in SETTINGS.items():
        value: Any = getattr(settings, key)
        if how.show is not None:
            value = how.show(settings)
        elif how.secret and value:
            value = "***"
        elif value is None:
            value = how.none
        lines += [f"# {how.help} ({env_name(key)})",
                  f"{key} = {_toml(value)}  # {settings.origin(key)}"]
    return "\n".join(lines) + "\n"


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
