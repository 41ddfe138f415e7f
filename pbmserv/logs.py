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
import sys
from pathlib import Path
from typing import Any

from pbmserv.config import SettingsError

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JOURNAL_FORMAT = "%(levelname)s %(name)s: %(message)s"
PLAIN_FORMAT = "pbmserv: %(message)s"
SYSLOG_FORMAT = "pbmserv[%(process)d]: %(levelname)s %(name)s: %(message)s"
SYSLOG_SOCKET = "/dev/log"
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


def setup_logging(level: str, log_file: Path | None = None, syslog: bool = False) -> None:
    """Send the log where the settings say (replacing any earlier setup); raises
    SettingsError if the file or syslog cannot be opened."""
    handlers: list[logging.Handler] = []
    stderr = StderrHandler()
    stderr.setFormatter(JournalFormatter(JOURNAL_FORMAT) if os.environ.get("JOURNAL_STREAM")
                        else logging.Formatter(FORMAT))
    handlers.append(stderr)
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            handler: logging.Handler = logging.handlers.WatchedFileHandler(log_file)
        except OSError as exc:
            raise SettingsError(f"log_file: cannot write {log_file}: {exc.strerror}") from None
        handler.setFormatter(logging.Formatter(FORMAT))
        handlers.append(handler)
    if syslog:
        if not Path(SYSLOG_SOCKET).is_socket():  # the handler would drop every line unseen
            raise SettingsError(f"syslog: cannot reach {SYSLOG_SOCKET}: there is no syslog "
                                "socket (is a syslog daemon or journald running?)")
        try:
            handler = logging.handlers.SysLogHandler(
                SYSLOG_SOCKET, facility=logging.handlers.SysLogHandler.LOG_MAIL)
        except OSError as exc:
            raise SettingsError(f"syslog: cannot reach {SYSLOG_SOCKET}: {exc.strerror}"
                                ) from None
        handler.setFormatter(logging.Formatter(SYSLOG_FORMAT))
        handlers.append(handler)
    root = logging.getLogger()
    for old in list(root.handlers):  # only our own: a test's capture stays
        if getattr(old, MARK, False):
            root.removeHandler(old)
            old.close()
    for handler in handlers:
        setattr(handler, MARK, True)
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("pbmserv").setLevel(level.upper())
