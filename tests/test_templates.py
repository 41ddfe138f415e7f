"""Every template compiles where it is rendered and is reached from the code, and the
renderer keeps mail lines clean."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from jinja2 import DictLoader, Environment, meta, nodes

from pbmserv.render import (
    FlatEnvironment,
    environment,
    html_environment,
    mail_html_environment,
    render,
    wrap,
)
from pbmserv.styles import StyledLoader

NAMES = environment().list_templates()
#: the environments a template is rendered in (pbmserv.render), by their names
ENVIRONMENTS: dict[str, Callable[[], Environment]] = {
    "text": environment, "html": html_environment, "mail html": mail_html_environment}


def references(name: str) -> set[str]:
    """The templates ``name`` includes, imports or extends (by a name written out)."""
    source = environment().loader.get_source(environment(), name)[0]  # type: ignore[union-attr]
    return {r for r in meta.find_referenced_templates(environment().parse(source)) if r}


def rendered_in() -> dict[str, set[str]]:
    """Each template and the environments it is rendered in: its own kind's (text for
    mail text; HTML for web pages; HTML and HTML for mail for the rest, boards among
    them), and those of every template that includes it (the web pages include a text
    template and the style sheets)."""
    out = {name: ({"html"} if name.startswith("web/") else {"html", "mail html"})
           if name.endswith(".html.j2") else {"text"} if name.endswith(".txt.j2") else set()
           for name in NAMES}
    grown = True
    while grown:
        grown = False
        for name in NAMES:
            for included in references(name) & set(NAMES):
                if not out[name] <= out[included]:
                    out[included] |= out[name]
                    grown = True
    return out


RENDERED_IN = rendered_in()


@pytest.mark.parametrize("name", NAMES)
def test_template_compiles_where_it_is_rendered(name: str) -> None:
    """Compiled in each environment that renders it (a text template included in a web
    page is compiled for HTML too, where the text filters are missing), with every
    filter and test it uses known there (Jinja checks those inside an ``if`` only when
    the branch runs), and every template it names there to be found."""
    assert RENDERED_IN[name], f"{name}: no environment renders it"
    assert references(name) <= set(NAMES), f"{name} names a template that is not there"
    for kind in sorted(RENDERED_IN[name]):
        env = ENVIRONMENTS[kind]()
        source = env.loader.get_source(env, name)[0]  # type: ignore[union-attr]
        tree = env.parse(source)
        used = {f.name for f in tree.find_all(nodes.Filter)}
        assert used <= set(env.filters), f"{name} ({kind}): no filter {used - set(env.filters)}"
        tests = {t.name for t in tree.find_all(nodes.Test)}
        assert tests <= set(env.tests), f"{name} ({kind}): no test {tests - set(env.tests)}"
        assert env.get_template(name).name == name


def named_in_the_code() -> tuple[set[str], set[str]]:
    """The template names the code writes out (``"reply.txt.j2"``; a web page's with
    no ``web/``), and those it builds (``f"boards/{self.name}.txt.j2"``) as patterns."""
    names: set[str] = set()
    patterns: set[str] = set()
    package = Path(__file__).resolve().parent.parent / "pbmserv"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"\w[\w/.-]*\.(txt|html)\.j2", node.value):
                names.add(node.value)
            elif isinstance(node, ast.JoinedStr):
                pattern = "".join(re.escape(str(part.value)) if isinstance(part, ast.Constant)
                                  else "[^/]+" for part in node.values)
                if pattern.endswith(r"\.j2"):
                    patterns.add(pattern)
    return names, patterns


def test_every_template_is_rendered_by_the_code_or_another_template() -> None:
    """No template is left behind when the code stops rendering it, and no name the
    code renders is missing."""
    names, patterns = named_in_the_code()
    included = set().union(*map(references, NAMES))

    def by_name(template: str, name: str) -> bool:
        return template == name or template.endswith("/" + name)

    unused = [t for t in NAMES if t not in included and not any(by_name(t, n) for n in names)
              and not any(re.fullmatch(p, t) for p in patterns)]
    assert unused == []
    assert [n for n in sorted(names) if not any(by_name(t, n) for t in NAMES)] == []
    assert [p for p in sorted(patterns) if not any(re.fullmatch(p, t) for t in NAMES)] == []
    assert len(names) > 80 and len(patterns) >= 3  # the scan finds what the code names


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
