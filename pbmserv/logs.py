"""Where the log goes: standard error (as journald wants it under systemd), and
optionally a file and syslog.

pbmserv's own loggers log at the level set (``log_level``); other libraries only
their warnings.  Under systemd (``JOURNAL_STREAM`` set) each line starts with its
syslog priority (``<4>``) and carries no time stamp: journald adds both.  Syslog
uses the facility ``mail``, so pbmserv's lines sit beside Postfix's.  No line ever
holds a password or a mail's Subject: see the places that log.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import pwd
import sys
from pathlib import Path
from typing import Any

from pbmserv.config import SettingsError

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JOURNAL_FORMAT = "%(levelname)s %(name)s: %(message)s"
PLAIN_FORMAT = "pbmserv: %(message)s"
SYSLOG_FORMAT = "pbmserv[%(process)d]: %(levelname)s %(name)s: %(message)s"
SYSLOG_SOCKET = "/dev/log"
#: the logger of the administrator's actions: always at level info, whatever log_level
AUDIT = "pbmserv.audit"
#: the logger of alerts that mail cannot carry (pbmserv.notifications.alert_route):
#: to syslog whenever its socket is there, as well as where the rest goes
ALERT = "pbmserv.alert"
#: set on the handlers set up here, so that a new setup replaces only them
MARK = "_pbmserv_handler"
#: syslog priorities of the levels (journald reads them from a "<N>" prefix)
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3,
             logging.CRITICAL: 2}


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged (a test's capture,
    say), not to the one it was when the log was set up."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class JournalFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{_PRIORITY.get(record.levelno, 6)}>"
        return "\n".join(prefix + line for line in super().format(record).split("\n"))


def plain_stderr() -> None:
    """Standard error without time stamps or logger names, for a command whose output
    the MTA puts in its own log line (``deliver``): ``pbmserv: received #12: ...``."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, StderrHandler):
            handler.setFormatter(logging.Formatter(PLAIN_FORMAT))


def _syslog_handler() -> logging.Handler | None:
    """A handler to the syslog socket (facility mail); None if there is no socket."""
    if not Path(SYSLOG_SOCKET).is_socket():  # the handler would drop every line unseen
        return None
    try:
        handler = logging.handlers.SysLogHandler(
            SYSLOG_SOCKET, facility=logging.handlers.SysLogHandler.LOG_MAIL)
    except OSError:
        return None
    handler.setFormatter(logging.Formatter(SYSLOG_FORMAT))
    return handler


#: the mode of a log file pbmserv makes (it holds players' addresses): the owner's, and
#: readable by its group (adm, or the service's), never by anyone
LOG_FILE_MODE = 0o640


class LogFileHandler(logging.handlers.WatchedFileHandler):
    """A WatchedFileHandler whose file, when it makes one (the first log line of any
    command, or after logrotate moved it away), is LOG_FILE_MODE whatever the umask."""

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, LOG_FILE_MODE)
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)


def open_log_file(log_file: Path) -> logging.Handler:
    """A handler appending to ``log_file``.  Run by root, a file that does not exist yet
    is made for the owner of its folder (the service's user, whose LogsDirectory it
    is), never left to root: a service that cannot write its log file fails to start,
    and would restart for ever.  SettingsError if it cannot be used."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        folder = log_file.parent.stat()
        made = not log_file.exists()
        handler = LogFileHandler(log_file)
        # root's file in the service's folder: the service's
        if os.geteuid() == 0 and folder.st_uid != 0 and (made or log_file.stat().st_uid == 0):
            os.chown(log_file, folder.st_uid, folder.st_gid)
    except OSError as exc:
        user = _user_name(os.geteuid())
        try:
            owner = f" (it belongs to {_user_name(log_file.stat().st_uid)})"
        except OSError:
            owner = ""
        raise SettingsError(f"log_file: user {user} cannot write {log_file}{owner}: "
                            f"{exc.strerror}; run pbmserv as the service's user "
                            "(runuser -u pbmserv -- pbmserv ...), give that user the file, "
                            "or set another log_file") from None
    handler.setFormatter(logging.Formatter(FORMAT))
    return handler


#: libraries whose own log is kept below this level: flufl.bounce logs each of its
#: detectors that raises, with its traceback, as an error, and a malformed bounce is
#: no error of ours (pbmserv.bounces.reading catches it and reads the bounce itself)
QUIET = {"flufl.bounce": logging.CRITICAL}


def setup_logging(level: str, log_file: Path | None = None, syslog: bool = False) -> None:
    """Send the log where the settings say (replacing any earlier setup); raises
    SettingsError if the file cannot be opened.  A syslog with no socket to reach is a
    warning (on standard error), never a failure: a mail must not wait for a log.

    The administrator's actions (``audit``) go to the log file and to syslog, the
    latter even without ``syslog = true`` when the socket is there (the journal on
    Debian), not to standard error: the command says itself what it did."""
    handlers: list[logging.Handler] = []
    stderr = StderrHandler()
    stderr.setFormatter(JournalFormatter(JOURNAL_FORMAT) if os.environ.get("JOURNAL_STREAM")
                        else logging.Formatter(FORMAT))
    handlers.append(stderr)
    audit_handlers: list[logging.Handler] = []
    if log_file is not None:
        handler = open_log_file(log_file)
        handlers.append(handler)
        audit_handlers.append(handler)
    to_syslog = _syslog_handler()
    if to_syslog is not None:
        audit_handlers.append(to_syslog)
        if syslog:
            handlers.append(to_syslog)
    root = logging.getLogger()
    audit_log = logging.getLogger(AUDIT)
    alert_log = logging.getLogger(ALERT)
    for logger in (root, audit_log, alert_log):
        for old in list(logger.handlers):  # only our own: a test's capture stays
            if getattr(old, MARK, False):
                logger.removeHandler(old)
                old.close()
    for handler in handlers:
        setattr(handler, MARK, True)
        root.addHandler(handler)
    for handler in audit_handlers:
        setattr(handler, MARK, True)
        audit_log.addHandler(handler)
    if to_syslog is not None and not syslog:  # (with syslog on, the root's has it)
        alert_log.addHandler(to_syslog)
    audit_log.propagate = False
    root.setLevel(logging.WARNING)
    logging.getLogger("pbmserv").setLevel(level.upper())
    for name, quiet in QUIET.items():
        logging.getLogger(name).setLevel(quiet)
    audit_log.setLevel(logging.INFO)
    if syslog and to_syslog is None:
        logging.getLogger("pbmserv.logs").warning(
            "syslog: there is no syslog socket at %s (is a syslog daemon or journald "
            "running?): logging without syslog", SYSLOG_SOCKET)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


#: the kernel's record of who logged in (pam_loginuid), kept across sudo, su, runuser
LOGINUID = Path("/proc/self/loginuid")
#: what it holds when nobody logged in (a service, a cron job of the system)
NO_LOGIN = 4294967295


def _login_user() -> str | None:
    """The user who logged in to the session this runs in, if the kernel knows."""
    try:
        uid = int(LOGINUID.read_text().strip())
    except (OSError, ValueError):
        return None
    return None if uid == NO_LOGIN else _user_name(uid)


def operator() -> str:
    """Who runs this command: the user behind sudo (``SUDO_USER``), else behind
    runuser or su (the session's login user, else ``LOGNAME`` when it differs), else
    this process's user."""
    name = _user_name(os.getuid())
    behind = (os.environ.get("SUDO_USER") or _login_user()
              or os.environ.get("LOGNAME") or name)
    return f"{behind} (as {name})" if behind != name else name


def audit(action: str, target: str, outcome: str) -> None:
    """One line for an administrator's action that changed something, in the log
    wherever it goes (the journal, log_file, syslog): who, what, on what, and what
    came of it.  Logged at info whatever log_level says."""
    logging.getLogger(AUDIT).info("admin %s: %s %s: %s", operator(), action, target, outcome)
