"""Writing mail into a Maildir: each file complete and on disk before it is counted.

A file's name comes from its outbox row, so writing a row's mail again (after a
crash, or by a second sender after a lease ran out) replaces the same file: a
Maildir never gets a second copy.

A batch is written in tmp/, flushed to disk, moved into new/, and new/ flushed: a
mail found in new/ after a crash is whole, and one counted as sent is there.  On
Linux the files of a batch are flushed by one syncfs(2) of their file system rather
than an fdatasync(2) each: a sender round writes a few mails, and a sync each cost
it more CPU than building them.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pbmserv.sender.message import OutboxMail

_HOST = socket.gethostname().replace("/", "_").replace(":", "_")
#: a mail file as open(path, "wb") makes it (the umask decides the rest)
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def file_name(row: OutboxMail) -> str:
    digest = hashlib.sha1(row.message_id.encode()).hexdigest()[:16]
    return f"{int(row.created_at.timestamp())}.{row.id}_{digest}.{_HOST}"


def _load_syncfs() -> Callable[[int], None] | None:
    """syncfs(2) of the C library, if it reports write errors: Linux 5.8 and later
    (before, it returned 0 whatever became of the data).  None elsewhere."""
    if sys.platform != "linux":
        return None
    try:
        major, minor = (int(n) for n in platform.release().split(".")[:2])
        if (major, minor) < (5, 8):
            return None
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.syncfs
    except (ValueError, OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int]
    call.restype = ctypes.c_int

    def syncfs(fd: int) -> None:
        if call(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"syncfs: {os.strerror(errno)}")
    return syncfs


#: flushes the whole file system of a file descriptor; None: one fdatasync a file
SYNCFS = _load_syncfs()


def _make_dirs(maildir: Path) -> None:
    for sub in ("tmp", "new", "cur"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)


def _write(path: str, data: bytes) -> int:
    """``data`` in a new file at ``path``; returns its descriptor, still open."""
    fd = os.open(path, _FLAGS, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    return fd


def deliver_all(maildir: Path, mails: Sequence[tuple[OutboxMail, bytes]]) -> list[str | None]:
    """Write each mail into ``maildir/new``; for each, None or the error that stopped it
    (an error is never raised: a mail that failed is tried again later).

    Every file is written in tmp/ and flushed to disk before any is moved into new/;
    the folder is flushed last, so a mail counted as sent is there after a crash.
    """
    # plain strings, not Path objects: joined for every mail, a Path costs more than
    # the write
    tmp_dir = os.path.join(maildir, "tmp")
    new_dir = os.path.join(maildir, "new")
    errors: list[str | None] = []
    written: list[tuple[str, str, int]] = []  # tmp, final, index in errors
    opened: list[int] = []
    try:
        for row, data in mails:
            name = file_name(row)
            tmp = os.path.join(tmp_dir, name)
            try:
                try:
                    fd = _write(tmp, data)
                except FileNotFoundError:  # the first mail: no Maildir yet
                    _make_dirs(maildir)
                    fd = _write(tmp, data)
                opened.append(fd)
                if SYNCFS is None:
                    os.fdatasync(fd)
                written.append((tmp, os.path.join(new_dir, name), len(errors)))
                errors.append(None)
            except OSError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        if written and SYNCFS is not None:
            try:
                SYNCFS(opened[-1])  # every file is in tmp/: one file system
            except OSError as exc:  # which file it was is not known: none counts
                for *_, at in written:
                    errors[at] = f"{type(exc).__name__}: {exc}"
                written = []
    finally:
        for fd in opened:
            os.close(fd)
    moved = []
    for tmp, final, at in written:
        try:
            try:
                os.replace(tmp, final)
            except FileNotFoundError:  # new/ was removed since the last batch
                _make_dirs(maildir)
                os.replace(tmp, final)
            moved.append(at)
        except OSError as exc:
            errors[at] = f"{type(exc).__name__}: {exc}"
    if moved:
        try:
            fd = os.open(new_dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:  # in new/, but not known to stay there: not counted
            for at in moved:
                errors[at] = f"{type(exc).__name__}: {exc}"
    return errors
