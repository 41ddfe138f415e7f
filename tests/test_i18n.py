"""The catalogues: messages.pot holds every string the templates mark, each language's
catalogue is well formed (its plural rule, the same placeholders as English), and
rendering speaks the language asked for, falling back to English."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from pbmserv import i18n
from pbmserv.render import columns, render, wrap

ROOT = Path(__file__).resolve().parent.parent
POT = i18n.locale_dir() / "messages.pot"
TRANSLATED = sorted(set(i18n.LANGUAGES) - {i18n.ENGLISH})
#: each language's plural rule, as msginit writes it
PLURALS = {"de": "nplurals=2; plural=(n != 1);", "fr": "nplurals=2; plural=(n > 1);",
           "ja": "nplurals=1; plural=0;"}
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")


def catalogue(path: Path, language: str | None = None) -> Catalog:
    with path.open("rb") as po:
        return read_po(po, locale=language)


def keywords() -> dict[str, Any]:
    """Babel's keywords and those of the Makefile's BABEL_KEYWORDS (``-k name:arg``)."""
    line = next(line for line in (ROOT / "Makefile").read_text().splitlines()
                if line.startswith("BABEL_KEYWORDS"))
    found: dict[str, Any] = dict(DEFAULT_KEYWORDS)
    for spec in re.findall(r"-k (\S+)", line):
        name, _, arg = spec.partition(":")
        found[name] = (int(arg),) if arg else None
    return found


def extracted() -> set[tuple[str | None, str | tuple[str, ...]]]:
    """The strings the templates and the code mark now, extracted as ``make messages``
    does."""
    with (ROOT / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)  # type: ignore[no-untyped-call]
    found: set[tuple[str | None, str | tuple[str, ...]]] = set()
    for _file, _line, message, _comments, context in extract_from_dir(
            str(ROOT), method_map, options_map, keywords=keywords()):
        found.add((context, message))
    return found


def test_messages_pot_is_up_to_date_with_the_templates() -> None:
    """messages.pot holds exactly what the templates and the code mark: run ``make
    messages`` after changing a template's words (or an error's)."""
    pot = {(m.context, m.id) for m in catalogue(POT) if m.id}
    now = extracted()
    assert now, "no template marks a string"
    missing = sorted(map(str, now - pot))
    stale = sorted(map(str, pot - now))
    assert not missing and not stale, (
        f"messages.pot is out of date (make messages): missing {missing[:5]}, "
        f"stale {stale[:5]}")


@pytest.mark.parametrize("language", TRANSLATED)
def test_catalogue_is_well_formed(language: str) -> None:
    """Each catalogue has its language's plural rule, follows messages.pot, and says
    with the same named values as English (a translation may leave one out, never
    invent one)."""
    po = catalogue(i18n.catalogue_path(language), language)
    assert str(po.locale) == language
    assert po.plural_forms == PLURALS[language]
    pot = {(m.context, m.id) for m in catalogue(POT) if m.id}
    assert {(m.context, m.id) for m in po if m.id} == pot, "make messages"
    for message in po:
        if not message.id or not message.string or message.fuzzy:
            continue  # (a fuzzy one is not used: English is)
        ids = tuple(message.id) if isinstance(message.id, tuple | list) else (message.id,)
        strings = (tuple(message.string) if isinstance(message.string, tuple | list)
                   else (message.string,))
        known = {name for text in ids for name in PLACEHOLDER.findall(text)}
        for text in strings:
            assert set(PLACEHOLDER.findall(text)) <= known, (language, message.id, text)
        if isinstance(message.id, tuple):
            assert len(strings) == po.num_plurals, (language, message.id)


def test_a_string_a_catalogue_lacks_falls_back_to_english() -> None:
    with i18n.speaking("ja"):
        assert i18n.gettext("a string no catalogue holds") == "a string no catalogue holds"
        assert i18n.gettext("") == ""
    with i18n.speaking("xx"):  # not shipped: English
        assert i18n.spoken() == i18n.ENGLISH


def test_rendering_speaks_the_language_asked_for_and_english_is_the_templates() -> None:
    said = {"message": "no such board", "hint": None, "usage": "amoeba show <board>",
            "summary": None}
    english = render("error.txt.j2", **said)
    assert english == "ERROR: no such board\n\nWrite it as: amoeba show <board>\n"
    for language in TRANSLATED:
        with i18n.speaking(language):
            spoken = render("error.txt.j2", **said)
        assert spoken != english, language
        assert "amoeba show <board>" in spoken  # commands stay as they are written
    assert render("error.txt.j2", **said) == english  # the block's end restores English


def test_plural_forms_follow_each_language() -> None:
    """French counts 0 and 1 as singular, German 1 alone, Japanese has one form."""
    rules = {"de": [(0, 1), (1, 0), (2, 1)], "fr": [(0, 0), (1, 0), (2, 1)],
             "ja": [(0, 0), (1, 0), (2, 0)]}
    for language, cases in rules.items():
        translations = i18n.translations(language)
        for n, form in cases:
            assert translations.plural(n) == form, (language, n)  # type: ignore[attr-defined]


def test_content_language_names_a_shipped_language() -> None:
    assert i18n.language_tag("ja-JP") == "ja"
    assert i18n.language_tag("de-CH, en;q=0.5") == "de"
    assert i18n.language_tag("pt-BR, fr") == "fr"
    assert i18n.language_tag("pt-BR") is None
    assert i18n.language_tag(None) is None


def test_a_wide_character_takes_two_columns() -> None:
    assert columns("abc") == 3
    assert columns("日本語") == 6
    assert columns("ｱ") == 1  # half-width katakana
    assert columns("\uff21") == 2  # a full-width Latin A
    assert columns("e\u0301") == 1  # a combining accent takes none


def test_wrap_counts_east_asian_text_in_columns() -> None:
    """Japanese has no spaces: a line breaks between characters, never before closing
    punctuation, and no line is wider than 76 columns; Latin words and moves inside
    stay whole, a long address stays whole on a line of its own."""
    text = ("あなたの手番です。アメーバの盤101で、alice さんが e3-d3#12 を指しました。"
            "次は bob さんの番です。盤面のメールが届いたら、そのメールに返信して、"
            "最初の行に手だけを書いてください。 https://example.org/move/" + "x" * 70)
    lines = wrap(text).split("\n")
    assert all(columns(line) <= 76 for line in lines[:-1]), lines
    assert lines[-1] == "https://example.org/move/" + "x" * 70
    assert "".join(lines[:-1]).replace(" ", "") == text.split(" https")[0].replace(" ", "")
    assert not any(line[0] in "、。」\uff09" for line in lines), lines
    assert any("e3-d3#12" in line for line in lines)
    assert len(lines) >= 3 and columns(lines[0]) > 70  # lines are filled, not cut short
    # a bullet's continuation hangs under its text
    bullet = wrap("  - " + "盤面" * 40)
    assert all(line.startswith("    ") for line in bullet.split("\n")[1:])
    assert all(columns(line) <= 76 for line in bullet.split("\n"))
    # English is wrapped as it always was (textwrap's lines)
    english = "word " * 40
    assert wrap(english) == "\n".join(textwrap.wrap(english, 76, break_on_hyphens=False))
