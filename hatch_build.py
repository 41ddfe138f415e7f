"""Build hook: records the git revision of the checkout a wheel is built from in the
package (``pbmserv/REVISION``), for ``pbmserv --version``.  Nothing is recorded for an
editable install (it reads its checkout live) or a build outside a git checkout."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class RevisionHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable" or not (Path(self.root) / ".git").exists():
            return
        try:
            found = subprocess.run(["git", "-C", self.root, "rev-parse", "--short=12", "HEAD"],
                                   capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return
        if found.returncode != 0 or not found.stdout.strip():
            return
        out = Path(tempfile.mkdtemp(prefix="pbmserv-build-")) / "REVISION"
        out.write_text(found.stdout.strip() + "\n", encoding="utf-8")
        build_data["force_include"][str(out)] = "pbmserv/REVISION"
