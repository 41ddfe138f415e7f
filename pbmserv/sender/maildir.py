"""Writing mail into a Maildir: each file complete and on disk before it is counted.

A file's name comes from its outbox row, so writing a row's mail again (after a
crash, or by a second sender after a lease ran out) replaces the same file: a
Maildir never gets a second copy.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from pbmserv.db.models import OutboxMessage

_HOST = socket.gethostname().replace("/", "_").replace(":", "_")


def file_name(row: OutboxMessage) -> str:
    digest = hashlib.sha1(row.message_id.encode()).hexdigest()[:16]
    return f"{int(row.created_at.timestamp())}.{row.id}_{digest}.{_HOST}"


def deliver_all(maildir: Path, mails: list[tuple[OutboxMessage, bytes]]) -> list[str | None]:
    """Write each mail into ``maildir/new``; for each, None or the error that stopped it.

    Every file is written in tmp/ and flushed to disk before any is moved into new/;
    the folder is flushed last, so a mail counted as sent is there after a crash.
    """
    for sub in ("tmp", "new", "cur"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    # plain strings, not Path objects: joined for every mail, a Path costs more than
    # the write
    tmp_dir = os.path.join(maildir, "tmp")
    new_dir = os.path.join(maildir, "new")
    errors: list[str | None] = []
    written: list[tuple[str, str]] = []
    for row, data in mails:
        name = file_name(row)
        tmp = os.path.join(tmp_dir, name)
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fdatasync(fh.fileno())
            written.append((tmp, os.path.join(new_dir, name)))
            errors.append(None)
        except OSError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    for tmp, final in written:
        os.replace(tmp, final)
    if written:
        fd = os.open(new_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return errors
