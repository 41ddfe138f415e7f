"""The Jinja environment: everything a player reads comes from templates/."""

from __future__ import annotations

import re
import textwrap
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

LINE_WIDTH = 76


def templates_dir() -> Path:
    """The templates folder: inside the installed package, or the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("pbmserv's templates folder is missing")


_HANGING = re.compile(r"^(\s*(?:- |\S+\s{2,}))")


def wrap(text: str, width: int = LINE_WIDTH, indent: str = "") -> str:
    """Wrap each line to ``width`` columns, keeping blank lines.

    A line is one paragraph; its continuation lines keep its indentation, and hang
    under the text of a bullet (``  - item``) or of a term (``  b3-b5   text``).
    """
    out: list[str] = []
    for line in str(text).split("\n"):
        if not line.strip():
            out.append(indent.rstrip())
            continue
        body = line.rstrip()
        hang = _HANGING.match(body)
        lead = len(body) - len(body.lstrip())
        rest = indent + " " * (len(hang.group(1)) if hang else lead)
        out.extend(
            textwrap.wrap(body.lstrip(), width=width, initial_indent=indent + " " * lead,
                          subsequent_indent=rest, break_long_words=True,
                          break_on_hyphens=False)
        )
    return "\n".join(out)


def duration(seconds: int) -> str:
    """``3 days 4 hours``, ``5 hours 12 minutes``, ``40 minutes``, ``under a minute``."""
    minutes = seconds // 60
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [(days, "day"), (hours, "hour")] if days else [(hours, "hour"), (minutes, "minute")]
    words = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n]
    return " ".join(words) or "under a minute"


def time_taken(player: tuple[str, str, int]) -> str:
    """A summary's (seat, userid, seconds) as ``alice 2 days 3 hours``."""
    return f"{player[1]} {duration(player[2])}"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        auto_reload=False,  # templates do not change while the server runs
    )
    env.filters["wrap"] = wrap
    env.filters["duration"] = duration
    env.filters["time_taken"] = time_taken
    return env


def render(name: str, **context: Any) -> str:
    text = environment().get_template(name).render(**context)
    # no trailing spaces (mail clients strip them) and one final newline
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")) + "\n"
