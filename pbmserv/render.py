"""The Jinja environment: everything a player reads comes from templates/."""

from __future__ import annotations

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


def wrap(text: str, width: int = LINE_WIDTH, indent: str = "") -> str:
    """Wrap each paragraph line to ``width`` columns, keeping blank lines."""
    out: list[str] = []
    for line in str(text).split("\n"):
        if not line.strip():
            out.append(indent.rstrip())
            continue
        out.extend(
            textwrap.wrap(line, width=width, initial_indent=indent, subsequent_indent=indent,
                          break_long_words=True, break_on_hyphens=False)
        )
    return "\n".join(out)


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["wrap"] = wrap
    return env


def render(name: str, **context: Any) -> str:
    text = environment().get_template(name).render(**context)
    # no trailing spaces (mail clients strip them) and one final newline
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")) + "\n"
