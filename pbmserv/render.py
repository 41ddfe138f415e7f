"""The Jinja environments: everything a player reads comes from templates/.

Text (``*.txt.j2``, for mail) goes through ``render``: no escaping, lines trimmed.
HTML (``*.html.j2``) for web pages goes through ``render_html``: a second environment
with autoescape on, so every value a template prints is escaped unless it is already
``Markup``.  The HTML part of mail goes through ``render_mail_html`` (and
``html_mail``): a third environment, the same but that its templates get the rules of
``boards/board.css`` written into their elements' ``style`` attributes as they load
(``pbmserv.styles``), for mail readers that ignore style sheets; no mail is rewritten.

All three speak the language of ``pbmserv.i18n.speaking``: their words are marked with
``{% trans %}`` blocks (Jinja's i18n extension, new-style gettext: a block's variables
are named, ``{% trans name=user.userid %}...{{ name }}...{% endtrans %}``, and plurals
go through ``{% pluralize %}``), looked up in that language's catalogue.  A value the
code made in English (an error's message, a command's summary) is looked up with the
``translated`` filter, and stays English where the catalogue lacks it.  Widths are
counted in columns (``width``): an East Asian wide character takes two.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Iterable, MutableMapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from pbmserv import i18n
from pbmserv.mail.quotes import mask_addresses
from pbmserv.styles import StyledLoader

LINE_WIDTH = 76


def templates_dir() -> Path:
    """The templates folder: inside the installed package, or the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("pbmserv's templates folder is missing")


_HANGING = re.compile(r"^(\s*(?:- |\S+\s{2,}))")


#: a word that is a web or mail address: never cut when wrapping
_URL = re.compile(r"<?(https?://|ftp://|www\.|mailto:)\S+$", re.I)
#: the white space that textwrap turns into spaces (a line holding none, and short
#: enough, it leaves as it is)
_FITS = frozenset("\t\n\x0b\x0c\r")


_SPACE_RUN = re.compile(" {2,}")


def columns(text: str) -> int:
    """How many columns ``text`` takes on a terminal or in a mail reader's fixed-width
    font: an East Asian wide or full-width character (``W``, ``F``) takes two, a
    combining mark none, any other one."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


#: where a line of East Asian text may not begin: closing brackets and punctuation
#: (kinsoku), which stay at the end of the line before
_NO_LINE_START = frozenset(
    "、。，．・：；？！）」』】〕〉》"  # noqa: RUF001 (the full-width marks themselves)
    "ー〜ぁぃぅぇぉっゃゅょァィゥェォッャュョ,.:;!?)]}")
#: a word that is a web or mail address in East Asian text too
_UNITS = re.compile(r"<?(?:https?://|ftp://|www\.|mailto:)\S+| +|[^\s]")


def _fill_wide(words: str, width: int, first: str, rest: str, out: list[str]) -> None:
    """Greedy line filling counted in columns (``columns``), for a line that holds
    East Asian wide characters: a line may break at a space (dropped) and between two
    characters of which one is wide (no spaces there in Chinese or Japanese), never
    before closing punctuation; Latin words and addresses stay whole (a word wider
    than a line is cut)."""
    # units: a run of spaces, an address, a Latin word, or a single wide character
    units: list[str] = []
    for unit in _UNITS.findall(words):
        wide = len(unit) == 1 and columns(unit) == 2
        if (units and not wide and unit != " " * len(unit) and units[-1][-1:] != " "
                and columns(units[-1][-1]) == 1 and len(unit) == 1):
            units[-1] += unit  # a Latin word, letter by letter
        else:
            units.append(unit)
    indent, line, used = first, "", 0
    # at least one column a line, as textwrap gives when an indent takes the width
    room = max(width - columns(first), 1)
    for unit in units:
        size = columns(unit)
        if unit.startswith(" "):
            if line:
                line, used = line + unit, used + size
            continue
        if used + size > room and line.strip():
            keep = ""
            if unit[0] in _NO_LINE_START and len(line.rstrip()) > 1 \
                    and columns(line.rstrip()[-1]) == 2:
                keep, line = line.rstrip()[-1], line.rstrip()[:-1]  # it goes down too
            out.append(indent + line.rstrip(" "))
            indent, room = rest, max(width - columns(rest), 1)
            line, used = keep, columns(keep)
        while unit and size > room and not _URL.match(unit):  # wider than a line: cut
            cut, taken = 0, 0
            while cut < len(unit) and taken + columns(unit[cut]) <= room - used:
                taken += columns(unit[cut])
                cut += 1
            cut = max(cut, 1)
            out.append(indent + line + unit[:cut])
            indent, room = rest, max(width - columns(rest), 1)
            line, used, unit = "", 0, unit[cut:]
            size = columns(unit)
        line, used = line + unit, used + size
    if line.strip() or not out:
        out.append(indent + line.rstrip(" "))


def _fill(words: str, width: int, first: str, rest: str, out: list[str]) -> bool:
    """Greedy line filling, the same as ``textwrap.wrap(words, width, initial_indent=first,
    subsequent_indent=rest, break_on_hyphens=False)`` of a line without leading or
    trailing white space, where it can be sure of that: the only white space is plain
    spaces and no word or run of spaces is wider than a line, so textwrap never cuts
    one.  Then its chunks (words and runs of spaces) on a line are the longest prefix
    that fits ending where a word or a run ends, a run at the end of a line is dropped
    and so is one at the start of the next.  Appends the lines to ``out``; False (and
    nothing appended) where textwrap has to do it."""
    room = width - len(first)
    later = width - len(rest)
    widest = max(map(len, words.split(" ")))
    if "  " in words:
        widest = max(widest, max(map(len, _SPACE_RUN.findall(words))))
    if widest > min(room, later) or not words.isprintable():
        return False
    indent = first
    while len(words) > room:
        if words[room] == " ":  # the line ends with a word or a run of spaces
            out.append(indent + words[:room].rstrip(" "))
            words = words[room:].lstrip(" ")
        else:  # the line ends before the word that does not fit (it starts after a space)
            cut = words.rfind(" ", 0, room) + 1
            out.append(indent + words[:cut].rstrip(" "))
            words = words[cut:]
        indent, room = rest, later
    out.append(indent + words)
    return True


def wrap(text: str, width: int = LINE_WIDTH, indent: str = "") -> str:
    """Wrap each line to ``width`` columns, keeping blank lines.

    A line is one paragraph; its continuation lines keep its indentation, and hang
    under the text of a bullet (``  - item``) or of a term (``  b3-b5   text``).  An
    East Asian wide character takes two columns (``columns``).
    """
    out: list[str] = []
    for line in str(text).split("\n"):
        body = line.rstrip()
        if not body:
            out.append(indent.rstrip())
            continue
        words = body.lstrip()
        lead = len(body) - len(words)
        first = indent + " " * lead
        if not words.isascii() and columns(words) != len(words):
            if columns(first) + columns(words) <= width:
                out.append(first + words)
            else:
                hang = _HANGING.match(body)
                _fill_wide(words, width, first,
                           indent + " " * (columns(hang.group(1)) if hang else lead), out)
            continue
        # an address holds "://", "www." or "mailto:" (in any case)
        maybe_url = ("://" in words or "w." in words or "o:" in words or "W." in words
                     or "O:" in words)
        if not maybe_url and len(first) + len(words) <= width and _FITS.isdisjoint(words):
            # a line that fits is what textwrap would give (the most lines of a mail)
            out.append(first + words)
            continue
        hang = _HANGING.match(body)
        rest = indent + " " * (len(hang.group(1)) if hang else lead)
        room = max(1, width - len(rest))
        # (no word is wider than the room if the whole line is not)
        has_url = maybe_url and len(words) > room and any(len(w) > room and _URL.match(w)
                                                          for w in words.split())
        if not has_url and len(first) + len(words) <= width and _FITS.isdisjoint(words):
            out.append(first + words)
            continue
        if not has_url and _fill(words, width, first, rest, out):
            continue
        if has_url:
            # a long URL stays whole on a line of its own (a broken one cannot be
            # followed); any other long word is cut to fit, as it would be anyway
            words = " ".join(w if len(w) <= room or _URL.match(w) else
                             " ".join(w[i:i + room] for i in range(0, len(w), room))
                             for w in words.split(" "))
        out.extend(
            textwrap.wrap(words, width=width, initial_indent=first,
                          subsequent_indent=rest, break_long_words=not has_url,
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


def day(when: datetime) -> str:
    """``3 December 2026``: a date as people write it, the month in words (no reader
    takes 03/12 for the wrong month)."""
    return f"{when.day} {when:%B %Y}"


def instant(when: datetime) -> str:
    """``3 December 2026, 14:05 UTC``: a deadline's date and time."""
    return f"{day(when)}, {when:%H:%M} UTC"


def time_left(seconds: float) -> str:
    """How long until a deadline, rounded: ``in 20 days``, ``in 5 hours``, ``within the
    hour``; ``now`` once it has passed (the clock acts on it within minutes)."""
    if seconds <= 0:
        return "now"
    for unit, size in (("day", 86400), ("hour", 3600)):
        if seconds >= size:
            n = round(seconds / size)
            return f"in {n} {unit}{'s' if n != 1 else ''}"
    return "within the hour"


def center_join(items: Iterable[str], width: int, sep: str = " ") -> str:
    """Each item centred in ``width`` columns, joined by ``sep``: a row of cells in one
    filter call (not one a cell as ``map("center")`` makes, nor a join after it)."""
    return sep.join([str(item).center(width) for item in items])


class FlatEnvironment(Environment):
    """An Environment whose templates hold their globals in one plain dict, copied
    when a template loads, not a ChainMap over the environment's: every render makes
    its context from the template's globals, and copying a ChainMap walks it in Python
    (a mail renders a dozen templates).  As Jinja asks, the globals are all set before
    any template loads (here, where each environment is made)."""

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


#: the i18n extension's settings, the same in every environment and in the extractor
#: (babel.cfg): a block's text is kept as written, so English is the template's own
I18N = "jinja2.ext.i18n"


def _speaks(env: Environment) -> None:
    """Give ``env`` the catalogues of ``pbmserv.i18n`` (all set before a template loads)."""
    env.install_gettext_callables(  # type: ignore[attr-defined]
        i18n.gettext, i18n.ngettext, newstyle=True, pgettext=i18n.pgettext,
        npgettext=i18n.npgettext)
    env.policies["ext.i18n.trimmed"] = False
    env.filters["translated"] = i18n.gettext
    env.globals["spoken"] = i18n.spoken  # the language spoken: <html lang="{{ spoken() }}">


@cache
def environment() -> Environment:
    env = FlatEnvironment(
        loader=FileSystemLoader(str(templates_dir())),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        auto_reload=False,  # templates do not change while the server runs
        extensions=[I18N],
    )
    _speaks(env)
    env.filters["wrap"] = wrap
    env.filters["duration"] = duration
    env.filters["time_taken"] = time_taken
    env.filters["center_join"] = center_join
    env.filters.update(day=day, instant=instant, time_left=time_left)
    return env


def render(name: str, **context: Any) -> str:
    text = environment().get_template(name).render(**context)
    # no trailing spaces (mail clients strip them) and one final newline
    return "\n".join([line.rstrip() for line in text.strip("\n").split("\n")]) + "\n"


def _html_environment(loader: BaseLoader) -> Environment:
    env = FlatEnvironment(
        loader=loader,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=True,
        auto_reload=False,
        extensions=[I18N],
    )
    _speaks(env)
    env.filters["duration"] = duration
    env.filters["time_taken"] = time_taken
    env.filters["mask_addresses"] = mask_addresses
    env.filters.update(day=day, instant=instant, time_left=time_left)
    return env


@cache
def html_environment() -> Environment:
    """Like ``environment`` but for HTML: every ``{{ value }}`` is escaped."""
    return _html_environment(FileSystemLoader(str(templates_dir())))


@cache
def mail_html_environment() -> Environment:
    """Like ``html_environment`` but for the HTML part of mail: each ``.html.j2``
    template, as it loads, gets what ``boards/board.css`` gives each of its elements
    written into the element's ``style`` attribute (the style sheet is read once)."""
    loader = StyledLoader(templates_dir(), templates_dir() / "boards" / "board.css")
    env = _html_environment(loader)
    env.globals[loader.STYLE] = loader.style
    return env


def _checked(name: str) -> str:
    if not name.endswith(".html.j2"):
        raise ValueError(f"{name}: HTML is rendered from .html.j2 templates only")
    return name


def render_html(name: str, **context: Any) -> Markup:
    """An ``.html.j2`` template rendered with escaping; the result is ``Markup``, so it
    can be handed to another HTML template without being escaped twice."""
    return Markup(html_environment().get_template(_checked(name)).render(**context))


def render_mail_html(name: str, **context: Any) -> Markup:
    """The same for mail: every element carries its styles in its ``style`` attribute
    (so does any HTML handed in that was rendered so, e.g. ``board_summary_html``)."""
    return Markup(mail_html_environment().get_template(_checked(name)).render(**context))


def html_mail(title: str, body: Markup) -> str:
    """A complete HTML document for the HTML part of a mail: ``body`` (from
    ``render_mail_html``; a plain ``str`` would be escaped) in ``mail.html.j2``."""
    return mail_html_environment().get_template("mail.html.j2").render(title=title, body=body)
