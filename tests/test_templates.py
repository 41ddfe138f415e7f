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
    assert out == ("Mail for a now goes to e; the old address has been told.\n"
                   "Reply addresses of board mails sent before, and any reset code not yet used,\n"
                   "no longer work: use the newest board mail.\n")


@pytest.mark.parametrize("line", [
    "x" * 76, "a  b   c", "  - item  with  gaps", "b3-b5   the move", "tab\there", "cr\rhere",
    "no\xa0break\u3000space", "é" * 76, "é" * 77, "  " + "w" * 74, "  " + "w" * 75,
    "see http://example.org/" + "p" * 80 + " now",
])
@pytest.mark.parametrize("indent", ["", "  "])
def test_wrap_of_a_line_that_fits_is_textwraps(line: str, indent: str) -> None:
    import textwrap

    out = wrap(line, 76, indent)
    lead = len(line) - len(line.lstrip())
    expected = textwrap.wrap(line.lstrip(), width=76, initial_indent=indent + " " * lead,
                             break_on_hyphens=False)
    if len(indent) + len(line) <= 76 and "http" not in line:
        assert out == expected[0] and len(expected) == 1
    assert all(len(x) <= 76 for x in out.split("\n") if "http" not in x)
