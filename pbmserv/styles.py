"""The rules of boards/board.css written into the HTML templates of mail as they load.

Mail readers drop ``<style>``: the HTML part of a mail carries each element's styles in
its ``style`` attribute.  Rather than rewriting every mail, ``StyledLoader`` rewrites
each ``.html.j2`` template once, as the mail environment loads it: every start tag gets
the declarations of the rules that match it, in the order of the cascade (specificity,
then the order of the style sheet; the tag's own ``style`` attribute wins), as an
inliner would give them.

A start tag is known by what the template writes:

- its name and its classes.  A class attribute that holds expressions
  (``class="sq {{ colour }}"``) is styled as the template renders: the expressions'
  values are joined to the words around them and the style of that set of classes is
  looked up (worked out once per set);
- its ancestors in the same template (and the same macro): a rule with a descendant
  selector (``table.moves td``) reaches an element only if its ancestors are written
  around it there, and of an ancestor's classes only the words written out count, not
  an expression's.  An element that is printed from elsewhere (a board's cells come
  from a macro, a summary is printed into a mail's body) is styled by its own classes.

The style sheet is plain CSS: rules of type and class selectors joined by descendant
combinators (``table.hex td.cell``), comma-separated, and ``property: value``
declarations; anything else (ids, pseudo-classes, ``>``, ``@media``, ``!important``,
``url()``) is refused when it is read, as is a start tag whose classes or style cannot
be known (a class attribute inside ``{% if %}``, single-quoted values) or an element
that is not closed where it is opened.  tests/test_mail_styles.py compares mails with
what an inliner makes of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, TemplateSyntaxError
from markupsafe import Markup

#: elements that have no end tag
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                  "meta", "source", "track", "wbr"})

#: an element as a selector sees it: its name and its classes
Element = tuple[str, frozenset[str]]


@dataclass(frozen=True)
class Compound:
    """``td.cell.touched``: a name (None for any) and classes, all on one element."""

    tag: str | None
    classes: frozenset[str]

    def matches(self, tag: str, classes: frozenset[str]) -> bool:
        return (self.tag is None or self.tag == tag) and self.classes <= classes


@dataclass(frozen=True)
class Rule:
    """One selector of a rule and the rule's declarations."""

    subject: Compound
    #: the compounds the subject must be inside, outermost first
    ancestors: tuple[Compound, ...]
    #: (classes, names) of all its compounds; there are no ids
    specificity: tuple[int, int]
    declarations: tuple[tuple[str, str], ...]

    def within(self, stack: Sequence[Element]) -> bool:
        """Whether ``stack`` (outermost first) holds the ancestors, in order."""
        i = len(stack)
        for compound in reversed(self.ancestors):
            while i and not compound.matches(*stack[i - 1]):
                i -= 1
            if not i:
                return False
            i -= 1
        return True


_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CSS_RULE = re.compile(r"\s*([^{}]+?)\s*\{([^{}]*)\}\s*")
_COMPOUND = re.compile(r"(?P<tag>[a-z][a-z0-9]*)?(?P<classes>(?:\.[A-Za-z_][\w-]*)*)")
_DECLARATION = re.compile(r"\s*([a-z-]+)\s*:\s*(.+?)\s*")


def declarations(text: str) -> tuple[tuple[str, str], ...]:
    """``color: red; margin: 0`` as ((property, value), ...).  A string keeps its
    quotes, made single (they go into a double-quoted attribute)."""
    out = []
    for part in text.split(";"):
        if not part.strip():
            continue
        match = _DECLARATION.fullmatch(part)
        if match is None or "!" in part or "url(" in part.lower() or "\\" in part:
            raise ValueError(f"not a plain declaration (nothing remote, no !important): "
                             f"{part.strip()!r}")
        value = " ".join(match.group(2).split())
        out.append((match.group(1), value if "'" in value else value.replace('"', "'")))
    return tuple(out)


def parse_stylesheet(text: str) -> list[Rule]:
    """The rules of a style sheet, one a selector, in the order the cascade applies
    them (by specificity, then as written)."""
    text = _CSS_COMMENT.sub(" ", text)
    rules = []
    end = 0
    for match in _CSS_RULE.finditer(text):
        if match.start() != end:
            break
        end = match.end()
        decls = declarations(match.group(2))
        for selector in match.group(1).split(","):
            compounds = []
            for word in selector.split():
                part = _COMPOUND.fullmatch(word)
                if part is None or not word:
                    raise ValueError(f"not a plain selector: {selector.strip()!r}")
                compounds.append(Compound(part["tag"], frozenset(part["classes"].split(".")[1:])))
            if not compounds:
                raise ValueError(f"an empty selector in {match.group(1)!r}")
            specificity = (sum(len(c.classes) for c in compounds),
                           sum(c.tag is not None for c in compounds))
            rules.append(Rule(compounds[-1], tuple(compounds[:-1]), specificity, decls))
    if end != len(text):
        raise ValueError(f"not a plain rule: {text[end:end + 60].strip()!r}")
    return sorted(rules, key=lambda rule: rule.specificity)  # stable: as written


def cascade(rules: Sequence[Rule], tag: str, classes: frozenset[str],
            own: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The declarations ``rules`` (in cascade order, their ancestors already found)
    give an element, then its ``own`` (its style attribute)."""
    found: dict[str, str] = {}
    for rule in rules:
        if rule.subject.matches(tag, classes):
            found.update(rule.declarations)
    found.update(own)
    return found


def style_attribute(found: dict[str, str]) -> str:
    """`` style="..."`` (nothing for no declarations), written as inliners write it:
    ``name: value;`` each, no space between."""
    if not found:
        return ""
    text = "".join(f"{name}: {value};" for name, value in found.items())
    return ' style="{}"'.format(text.replace("&", "&amp;").replace('"', "&quot;")
                                .replace("<", "&lt;").replace(">", "&gt;"))


_JINJA = r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}"
#: Jinja's own syntax (stepped over), HTML comments and declarations, end tags and
#: start tags (whose attributes may hold Jinja syntax, even a ``>`` in an expression)
_MARKUP = re.compile(
    "(?P<jinja>" + _JINJA + ")|<!--.*?-->|<!.*?>"
    r"|</(?P<end>[a-zA-Z][a-zA-Z0-9]*)\s*>"
    r"|<(?P<tag>[a-zA-Z][a-zA-Z0-9]*)(?P<attrs>(?:" + _JINJA + r"|[^<>{]|\{(?![{%#]))*)>",
    re.S)
_JINJA_SYNTAX = re.compile(_JINJA, re.S)
#: an attribute, its value double-quoted, in a tag whose Jinja syntax is masked
_ATTRIBUTE = re.compile(r'\s+([a-zA-Z][\w:.-]*)(?:="([^"]*)")?')
_MASK = re.compile("\x00([0-9]+)\x00")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


class StyledLoader(FileSystemLoader):
    """Templates with the rules of a style sheet written into their start tags
    (``.html.j2`` templates; any other is loaded as it is).  ``style`` is the
    global the templates' class attributes with expressions call as they render:
    give it to the environment as ``STYLE``."""

    STYLE = "_style"

    def __init__(self, searchpath: str | Path, stylesheet: Path) -> None:
        super().__init__(str(searchpath))
        self.rules = parse_stylesheet(stylesheet.read_text(encoding="utf-8"))
        #: per start tag styled as it renders: the rules its ancestors allow, its own
        #: declarations
        self._tags: list[tuple[list[Rule], tuple[tuple[str, str], ...], str]] = []
        self._styles: dict[tuple[int, str], Markup] = {}

    def get_source(self, environment: Environment,
                   template: str) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        if template.endswith(".html.j2"):
            source = self.styled(source, template)
        return source, filename, uptodate

    def style(self, index: int, *parts: object) -> Markup:
        """`` style="..."`` for start tag ``index`` with the class attribute that
        ``parts`` (its words and its expressions' values) make."""
        key = (index, "".join(map(str, parts)))
        found = self._styles.get(key)
        if found is None:
            rules, own, tag = self._tags[index]
            found = self._styles[key] = Markup(style_attribute(
                cascade(rules, tag, frozenset(key[1].split()), own)))
        return found

    def styled(self, source: str, name: str) -> str:
        """The template ``source`` with every start tag's style written in."""
        out: list[str] = []
        stack: list[Element] = []
        done = 0
        for match in _MARKUP.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            if match["end"]:
                tag = match["end"].lower()
                if not stack or stack[-1][0] != tag:
                    raise TemplateSyntaxError(f"</{tag}> closes no <{tag}> (the styles of "
                                              "mail follow the elements' nesting)", line, name)
                stack.pop()
            elif match["tag"]:
                tag = match["tag"].lower()
                try:
                    written, known = self._start_tag(tag, match["attrs"], stack)
                except ValueError as error:
                    raise TemplateSyntaxError(str(error), line, name) from None
                out.append(source[done:match.start()])
                out.append(written)
                done = match.end()
                if tag not in VOID:
                    stack.append((tag, known))
        if stack:
            raise TemplateSyntaxError(f"<{stack[-1][0]}> is not closed",
                                      source.count("\n") + 1, name)
        out.append(source[done:])
        return "".join(out)

    def _start_tag(self, tag: str, attrs: str,
                   stack: list[Element]) -> tuple[str, frozenset[str]]:
        """The start tag with its style written in, and the classes it is known by."""
        jinja: list[str] = []

        def mask(match: re.Match[str]) -> str:
            jinja.append(match.group())
            return f"\x00{len(jinja) - 1}\x00"

        body = _JINJA_SYNTAX.sub(mask, attrs).rstrip()
        closing = "/" if body.endswith("/") else ""
        body = body.removesuffix("/")
        found_at: dict[str, re.Match[str]] = {}
        at = 0
        while at < len(body):
            attribute = _ATTRIBUTE.match(body, at)
            if attribute is None:
                raise ValueError(f"<{tag}>: only attributes (with double-quoted values) can "
                                 f"be styled, not {body[at:].strip()!r}")
            found_at[attribute[1].lower()] = attribute
            at = attribute.end()
        style = found_at["style"][2] if "style" in found_at else None
        if style is not None and "\x00" in style:
            raise ValueError(f"<{tag}>: a style attribute with Jinja syntax")
        own = declarations(style) if style else ()
        written = (found_at["class"][2] or "") if "class" in found_at else ""
        known = frozenset(_MASK.sub(" ", written).split())
        rules = [rule for rule in self.rules
                 if rule.subject.tag in (None, tag) and rule.within(stack)]
        if "\x00" not in written:
            found = cascade(rules, tag, known, own)
            if found == dict(own):
                return f"<{tag}{attrs}>", known
            added = style_attribute(found)
        elif own:
            raise ValueError(f"<{tag}>: a style attribute beside a class with Jinja syntax")
        elif not rules:
            return f"<{tag}{attrs}>", known
        else:
            self._tags.append((rules, own, tag))
            parts = ", ".join(self._parts(tag, written, jinja))
            added = f"{{{{ {self.STYLE}({len(self._tags) - 1}, {parts}) }}}}"
        if style is not None:  # replaced by the declarations it is part of
            body = body[:found_at["style"].start()] + body[found_at["style"].end():]
        body = _MASK.sub(lambda m: jinja[int(m[1])], body)
        return f"<{tag}{body}{added}{closing}>", known

    @staticmethod
    def _parts(tag: str, written: str, jinja: list[str]) -> list[str]:
        """A class attribute with expressions as the arguments that make it: its words
        as strings, its expressions in parentheses."""
        parts = []
        for piece in re.split("(\x00[0-9]+\x00)", written):
            mark = _MASK.fullmatch(piece)
            if mark is None:
                if piece:
                    parts.append(repr(piece))
                continue
            expression = _EXPRESSION.fullmatch(jinja[int(mark[1])])
            if expression is None or expression[1].startswith(("-", "+")) \
                    or expression[1].endswith(("-", "+")):
                raise ValueError(f"<{tag}>: a class attribute may hold {{{{ expressions }}}} "
                                 f"only, not {jinja[int(mark[1])]!r}")
            parts.append(f"({expression[1].strip()})")
        return parts
