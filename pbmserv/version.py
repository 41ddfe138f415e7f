"""Which pbmserv this is: the package's version, and the git revision it was built
from when there is one (``pbmserv --version``: ``pbmserv 0.1.0 (git 1a2b3c4d5e6f)``).

Run from a git checkout (``make run``, an editable install) the revision is the
checkout's own, with ``-modified`` if files differ from it; an installed build carries
the revision its checkout had when it was built, in the package's ``REVISION`` file
(written by ``hatch_build.py``).  A build from a tarball has none.
"""

from __future__ import annotations

import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: the file in the package that holds the revision it was built from
REVISION_FILE = "REVISION"
PACKAGE = Path(__file__).resolve().parent


def git_revision(source: Path) -> str | None:
    """The revision of the git checkout at ``source`` (``-modified`` if its tracked
    files differ from it); None if it is not one, or git is missing."""
    if not (source / ".git").exists():
        return None
    try:
        found = subprocess.run(["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"],
                               capture_output=True, text=True, timeout=10)
        if found.returncode != 0 or not found.stdout.strip():
            return None
        changed = subprocess.run(["git", "-C", str(source), "diff", "--quiet", "HEAD", "--"],
                                 capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() + ("-modified" if changed.returncode == 1 else "")


def revision(package: Path = PACKAGE) -> str | None:
    """The git revision of this pbmserv: its checkout's, else the one it was built from."""
    live = git_revision(package.parent)
    if live is not None:
        return live
    try:
        recorded = (package / REVISION_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return recorded or None


def version_text(package: Path = PACKAGE) -> str:
    try:
        number = version("pbmserv")
    except PackageNotFoundError:
        number = "(not installed)"
    found = revision(package)
    return f"pbmserv {number}" + (f" (git {found})" if found else "")
