"""The HTML part of mail has the styles of boards/board.css written into its templates
as they load (pbmserv.styles), not inlined mail by mail.  Every mail must be what an
inliner makes of the same mail carrying the style sheet: css_inline (a dev dependency,
the oracle here) is given the same templates rendered for the web (no styles written
in) with board.css in a <style>, and the two documents are compared element by
element: the same tags, attributes and text, and the same style declarations."""

from __future__ import annotations

import random
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import css_inline
import pytest
from jinja2 import Environment, TemplateSyntaxError
from markupsafe import Markup

from pbmserv import notifications, styles
from pbmserv.db.session import Database
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.notifications import drawing, views
from pbmserv.notifications.drawing import HexCells, diagram_html
from pbmserv.render import html_mail, render_html, render_mail_html, templates_dir
from tests.conftest import Mailer
from tests.test_clocks import clock_mails, time_passes

_INLINER = css_inline.CSSInliner(load_remote_stylesheets=False, keep_style_tags=False,
                                 keep_link_tags=False)
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "source", "track", "wbr"}
#: where white space is text, not layout
PRE = {"pre", "blockquote", "textarea"}

#: (tag, attributes but style, style declarations, children)
Node = tuple[str, dict[str, str | None], dict[str, str], list[Any]]


def inlined(title: str, body: Markup) -> str:
    """What the oracle makes of a mail: ``body`` rendered for the web, in
    mail.html.j2 with board.css in a <style>, inlined."""
    page = str(render_html("mail.html.j2", title=title, body=body))
    sheet = (templates_dir() / "boards" / "board.css").read_text(encoding="utf-8")
    assert "<style" not in page and page.count("</head>") == 1
    return str(_INLINER.inline(page.replace("</head>", f"<style>\n{sheet}</style>\n</head>")))


def declarations(style: str) -> dict[str, str]:
    out = {}
    for part in style.split(";"):
        if part.strip():
            name, _, value = part.partition(":")
            out[name.strip().lower()] = " ".join(value.split())
    return out


class Tree(HTMLParser):
    """A document as nested nodes.  A <tbody> is left out (css_inline's parser adds
    one to a table that has none, as a browser does with either document), and so is
    white space between elements (not in <pre> or <blockquote>)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root: Node = ("#document", {}, {}, [])
        self.stack = [self.root]
        self.feed(html)
        self.close()
        assert self.stack == [self.root], [n[0] for n in self.stack]

    def handle_decl(self, decl: str) -> None:
        self.stack[-1][3].append("<!" + decl.lower() + ">")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            return
        others = {k: v for k, v in attrs if k != "style"}
        style = declarations(dict(attrs).get("style") or "")
        node: Node = (tag, others, style, [])
        self.stack[-1][3].append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody" or tag in VOID:
            return
        assert self.stack[-1][0] == tag, (self.stack[-1][0], tag)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        children = self.stack[-1][3]
        if children and isinstance(children[-1], str) and not children[-1].startswith("<!"):
            children[-1] += data
        else:
            children.append(data)

    def nodes(self) -> Node:
        def clean(node: Node) -> Node:
            tag, attrs, style, children = node
            kept = [clean(c) if isinstance(c, tuple) else c for c in children
                    if not isinstance(c, str) or tag in PRE or c.strip()]
            return (tag, attrs, style, kept)
        return clean(self.root)


def elements(node: Node) -> Iterator[Node]:
    yield node
    for child in node[3]:
        if isinstance(child, tuple):
            yield from elements(child)


def same_mail(ours: str, oracle: str) -> int:
    """Assert the two documents are the same; the number of styled elements."""
    a, b = Tree(ours).nodes(), Tree(oracle).nodes()
    if a != b:  # say where
        for x, y in zip(elements(a), elements(b), strict=False):
            assert x[:3] == y[:3], (x[:3], y[:3])
            assert [c for c in x[3] if isinstance(c, str)] == \
                [c for c in y[3] if isinstance(c, str)], (x[:3], x[3], y[3])
        raise AssertionError("the documents differ in their elements")
    return sum(bool(n[2]) for n in elements(a))


class Twins:
    """Each HTML of mail rendered twice: as the server renders it, and its twin, the
    same templates and context rendered for the web (a part rendered earlier, such as
    a summary, replaced by its twin).  Every ``html_mail`` is checked against the
    oracle given its twin."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plain: dict[str, Markup] = {}
        self.checked = 0
        self.styled = 0
        #: what differed (a mail's processing would swallow the assertion)
        self.errors: list[str] = []
        for module in (notifications, views, drawing):
            monkeypatch.setattr(module, "render_mail_html", self.render)
        monkeypatch.setattr(notifications, "html_mail", self.html_mail)

    def render(self, name: str, **context: Any) -> Markup:
        styled = render_mail_html(name, **context)
        self.plain[styled] = render_html(name, **{
            key: HexCells() if isinstance(value, HexCells)
            else self.plain.get(value, value) if isinstance(value, Markup) else value
            for key, value in context.items()})
        return styled

    def html_mail(self, title: str, body: Markup) -> str:
        ours = html_mail(title, body)
        try:
            self.styled += same_mail(ours, inlined(title, self.plain[body]))
        except AssertionError as error:
            self.errors.append(f"{title}: {error}")
        self.checked += 1
        return ours


def engine(name: str) -> AnyEngine:
    found = get_engine(name)
    assert found is not None
    return found


@pytest.mark.parametrize("name", list(ENGINES))
def test_boards_in_random_positions_are_styled_as_inlined(name: str) -> None:
    e = engine(name)
    rng = random.Random(name)
    for _ in range(36):
        before, pos = None, e.new()
        for _ply in range(rng.randrange(0, 70)):
            if e.outcome(pos) is not None:
                break
            before, pos = pos, e.apply(pos, rng.choice(e.legal_moves(pos)))
        ours = diagram_html(e, pos, before, mail=True)
        oracle = inlined("a board", diagram_html(e, pos, before))
        assert same_mail(html_mail("a board", ours), oracle) > 50


COMMENT = "Look <b>here</b> & there\n   indented, and a long-long-long-word\n\nthe end"


@pytest.mark.parametrize(("name", "flags"), [
    ("amoeba", ""), ("amoeba", " -small -single -promote -opponent"), ("hexamoeba", ""),
    ("honeydonuts", ""), ("exnihilo", "")])
def test_every_html_mail_is_styled_as_inlined(name: str, flags: str, mailer: Mailer,
                                              db: Database, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    """Board mails of a whole game (new board, moves with comments, an offer and a
    request answered, a watcher and a reader of finished games, a nag, the end; bob's
    with the board in words)."""
    twins = Twins(monkeypatch)
    e = engine(name)
    mailer.signup("alice", "bob", "carol", "dave")
    mailer.reply(f"{name} notify dave pw-dave on", sender="dave@example.org")
    mailer.reply("notify bob pw-bob words on", sender="bob@example.org")
    mailer.reply(f"{name} challenge alice bob{flags}")
    mailer.reply(f"{name} subscribe 101 carol pw-carol", sender="carol@example.org")
    rng = random.Random(name + flags)
    pos = e.new(tuple(flags.split()))
    for ply in range(12):
        if e.outcome(pos) is not None:
            break
        who = ("alice", "bob")[ply % 2]
        if ply in (4, 6):  # an offer, a request: each answered by the other
            other = ("alice", "bob")[1 - ply % 2]
            for player, word in ((who, "propose" if ply == 4 else "undo"), (other, "reject")):
                mailer.send(f"{name} move 101 {player} pw-{player} {word}",
                            sender=f"{player}@example.org")
        if ply == 7:
            time_passes(db, 8)
            assert [m for m in clock_mails(db, mailer.settings) if m.html_body]  # a nag
        move = e.format_move(pos, rng.choice(e.legal_moves(pos)))
        pos = e.play(pos, move)[0]
        mailer.send(f"{name} move 101 {who} pw-{who} {move}#{ply + 1}",
                    COMMENT if ply % 3 == 1 else "", sender=f"{who}@example.org")
    mailer.send(f"{name} resign 101 alice pw-alice")
    assert twins.errors == []
    assert twins.checked >= 20 and twins.styled > 50 * twins.checked


@pytest.mark.parametrize("sheet", [
    '@import url("https://example.org/x.css");', "a:hover { color: red; }",
    "p > b { color: red; }", "#top { color: red; }", "p { color: red !important; }",
    "p { background: url(https://example.org/x.png); }", "p { color: red; } }"])
def test_only_plain_css_is_read(sheet: str) -> None:
    with pytest.raises(ValueError):
        styles.parse_stylesheet(sheet)


def test_the_cascade_is_specificity_then_order_and_the_own_style_wins(tmp_path: Path) -> None:
    (tmp_path / "s.css").write_text(
        "div.a p { color: red; margin: 0; } p.x { color: blue; } p { color: green; }\n"
        "p.x.y { color: black; } b { font-weight: bold; }", encoding="utf-8")
    (tmp_path / "t.html.j2").write_text(
        '<div class="a"><p class="x">1</p><p class="{{ c }}" title="{{ c|length > 1 }}">2</p>'
        '<p style="color: white">3</p></div><p class="x">4</p>'
        '{% macro m() %}<p>5</p>{% endmacro %}{{ m() }}<i>6</i>', encoding="utf-8")
    loader = styles.StyledLoader(tmp_path, tmp_path / "s.css")
    env = Environment(loader=loader, autoescape=True)
    env.globals[loader.STYLE] = loader.style
    out = env.get_template("t.html.j2").render(c="x y")
    assert out == (
        '<div class="a"><p class="x" style="color: red;margin: 0;">1</p>'
        '<p class="x y" title="True" style="color: black;margin: 0;">2</p>'
        '<p style="color: white;margin: 0;">3</p></div>'
        '<p class="x" style="color: blue;">4</p><p style="color: green;">5</p><i>6</i>')


@pytest.mark.parametrize("template", [
    "<div><p>unclosed</div>", "<p>", '<td{% if x %} class="last"{% endif %}>x</td>',
    '<p class="{% if x %}a{% endif %}">x</p>', '<p class="{{ c }}" style="color: red">x</p>',
    "<p class='x'>x</p>"])
def test_a_template_whose_styles_cannot_be_known_is_refused(template: str,
                                                             tmp_path: Path) -> None:
    (tmp_path / "s.css").write_text("p { color: red; } p.x { color: blue; }", encoding="utf-8")
    (tmp_path / "t.html.j2").write_text(template, encoding="utf-8")
    env = Environment(loader=styles.StyledLoader(tmp_path, tmp_path / "s.css"))
    with pytest.raises(TemplateSyntaxError):
        env.get_template("t.html.j2")
