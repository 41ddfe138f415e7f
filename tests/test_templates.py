"""Every template compiles, and the renderer keeps mail lines clean."""

from __future__ import annotations

import pytest

from pbmserv.render import environment, render, wrap


@pytest.mark.parametrize("name", environment().list_templates())
def test_template_compiles(name: str) -> None:
    environment().get_template(name)


def test_wrap_keeps_paragraphs_and_width() -> None:
    text = wrap("word " * 40 + "\n\nnext", 30, "  ")
    lines = text.split("\n")
    assert all(len(line) <= 30 for line in lines)
    assert "" in lines and lines[-1] == "  next"


def test_render_strips_trailing_spaces() -> None:
    out = render("commands/change.txt.j2", user=type("U", (), {"userid": "a", "email": "e"}),
                 what="address")
    assert out == "Mail for a now goes to e.\n"
