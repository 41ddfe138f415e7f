"""Every template compiles, and the renderer keeps mail lines clean."""

from __future__ import annotations

import pytest
from jinja2 import DictLoader

from pbmserv.render import FlatEnvironment, environment, mail_html_environment, render, wrap
from pbmserv.styles import StyledLoader


@pytest.mark.parametrize("name", environment().list_templates())
def test_template_compiles(name: str) -> None:
    environment().get_template(name)


def test_templates_hold_their_globals_in_a_plain_dict() -> None:
    """A template's globals are the environment's, copied as it loads (no ChainMap to
    walk at every render), with its own on top; the mail environment's style global
    is among them."""
    env = FlatEnvironment(loader=DictLoader({"t": "{{ range(2)|list }} {{ who }} {{ what }}"}))
    env.globals["who"] = "env"
    template = env.get_template("t", globals={"what": "own"})
    assert type(template.globals) is dict
    assert template.render() == "[0, 1] env own"
    assert template.render(who="given") == "[0, 1] given own"
    mail = mail_html_environment().get_template("mail.html.j2")
    assert type(mail.globals) is dict and StyledLoader.STYLE in mail.globals


def test_wrap_keeps_paragraphs_and_width() -> None:
    text = wrap("word " * 40 + "\n\nnext", 30, "  ")
    lines = text.split("\n")
    assert all(len(line) <= 30 for line in lines)
    assert "" in lines and lines[-1] == "  next"


def test_render_strips_trailing_spaces() -> None:
    out = render("commands/address_confirmed.txt.j2", userid="a", email="e", old="o")
    assert out == ("Mail for a now goes to e; o has been told.\n"
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
