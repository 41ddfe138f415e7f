"""What went wrong with the database, the settings or the system, in one line that
says how to fix it.

The command line shows these instead of a traceback (``-v`` shows the traceback
too), ``deliver`` writes them where the MTA logs them, the workers log them, and
``config check`` and ``status`` report them.  An error not known here is shown by its
type and message.
"""

from __future__ import annotations

import errno
import os
import re

from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    NoSuchModuleError,
    OperationalError,
    ProgrammingError,
)

from pbmserv.config import SettingsError, masked_url
from pbmserv.db.migrate import SchemaError

#: the causes this module recognises in a database's message, and what to say
_DATABASE = [
    (re.compile(r'role "([^"]+)" does not exist'),
     "PostgreSQL has no role {0}: create it (sudo -u postgres createuser {0}), or fix "
     "database_url"),
    (re.compile(r'database "([^"]+)" does not exist'),
     "PostgreSQL has no database {0}: create it (sudo -u postgres createdb -O <role> {0}), "
     "or fix database_url"),
    (re.compile(r"password authentication failed for user \"([^\"]+)\""),
     "PostgreSQL refused the password of role {0}: fix the password in database_url"),
    (re.compile(r"(?:Peer|Ident) authentication failed for user \"([^\"]+)\""),
     "PostgreSQL lets role {0} in only from the system user of the same name: run "
     "pbmserv as user {0}, or give a password and a host in database_url"),
    (re.compile(r"no pg_hba.conf entry for host \"([^\"]+)\", user \"([^\"]+)\""),
     "PostgreSQL does not let role {1} in from {0}: add a line to pg_hba.conf"),
    (re.compile(r"(?:Connection refused|No such file or directory\s+Is the server running"
                r"|could not translate host name|timeout expired|Is the server running)"),
     "cannot reach the database server: is PostgreSQL running (systemctl status "
     "postgresql), and are host and port in database_url right?"),
    (re.compile(r"permission denied for (?:table|schema|sequence|relation) (\S+)"),
     "the database role may not use {0}: grant it, or make the role own the database"),
    (re.compile(r'relation "([^"]+)" does not exist|no such table: (\S+)'),
     "the database has no pbmserv tables yet: run 'pbmserv db upgrade'"),
    (re.compile(r"database or disk is full|No space left on device|could not extend file"),
     "the disk that holds the database is full: free some space (the mail waits)"),
    (re.compile(r"attempt to write a readonly database"),
     "the SQLite database cannot be written by this user (uid {uid}): check the owner "
     "of the file and of its folder"),
    (re.compile(r"unable to open database file"),
     "cannot open the SQLite database {sqlite}: its folder must exist and be writable "
     "by this user (uid {uid}); a relative path depends on the working directory"),
    (re.compile(r"database is locked"),
     "the SQLite database stayed locked by another process for too long: try again"),
]


def _sqlite_path(url: str | None) -> str:
    if url is None or not url.startswith("sqlite"):
        return "(its file)"
    path = url.split("///", 1)[-1]
    return os.path.abspath(path) if path else "(in memory)"


def explain(exc: BaseException, database_url: str | None = None) -> str | None:
    """One line saying what is wrong and how to fix it; None if not recognised."""
    if isinstance(exc, SettingsError | SchemaError):
        return str(exc)
    if isinstance(exc, ArgumentError | NoSuchModuleError):
        return f"database_url: cannot use {masked_url(database_url or '')}: {exc}"
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("psycopg", "psycopg2"):
        return ("PostgreSQL support is not installed: pip install 'pbmserv[postgres]', and "
                "write the URL as postgresql+psycopg://...")
    if isinstance(exc, ModuleNotFoundError):
        return f"database_url names a driver that is not installed ({exc.name})"
    if isinstance(exc, DBAPIError):
        message = str(exc.orig) if exc.orig is not None else str(exc)
        for pattern, advice in _DATABASE:
            found = pattern.search(message)
            if found:
                groups = [g for g in found.groups() if g is not None]
                return advice.format(*groups, uid=os.getuid(),
                                     sqlite=_sqlite_path(database_url))
        first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
        if isinstance(exc, OperationalError | ProgrammingError):
            return f"the database said: {first[:300]}"
        return None
    if isinstance(exc, OSError):
        return _os_error(exc)
    return None


def _os_error(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return f"the disk is full{where}: free some space"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"permission denied{where} for this user (uid {os.getuid()}): check owners "
                "and modes")
    if exc.errno == errno.EROFS:
        return f"read-only file system{where}"
    if exc.errno == errno.EADDRINUSE:
        return "the address is in use: another program (or another pbmserv) listens there"
    return f"{exc.strerror or exc}:{where}" if where else str(exc.strerror or exc)


def describe(exc: BaseException, database_url: str | None = None) -> str:
    """``explain``, or the error's type and first line."""
    known = explain(exc, database_url)
    if known is not None:
        return known
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


_NOT_THE_CAUSE = re.compile(r"^\s|^\(Background on this error at|^\[(?:SQL|parameters):|"
                            r"^During handling|^The above exception|^Traceback|^\^+$")


def reason_line(error: str | None) -> str:
    """The cause of a stored failure in one line: the first line of what pbmserv keeps
    now (the cause, then the traceback); for a bare traceback (kept by an older
    pbmserv), its last line that says what was raised, not SQLAlchemy's link to its
    web page."""
    text = (error or "").strip()
    if not text:
        return ""
    lines = text.splitlines()
    if not lines[0].startswith("Traceback"):
        return lines[0].strip()
    for line in reversed(lines):
        if line.strip() and not _NOT_THE_CAUSE.match(line):
            return line.strip()
    return lines[-1].strip()
