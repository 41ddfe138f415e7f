"""The wrap filter's greedy line filling (pbmserv.render._fill) gives what textwrap
gives wherever it takes a line, so ``wrap`` gives what it gave with textwrap alone."""

from __future__ import annotations

import random
import textwrap

import pytest

import pbmserv.render as rendering

_PIECES = ("a", "bb", "word", "longer-word", "x" * 12, "y" * 40, "z" * 75, "w" * 76,
           "v" * 80, "é", "http://example.org/" + "p" * 60, "<www.example.org/q>",
           "mailto:someone@example.org", "HTTP://EXAMPLE.ORG/" + "Q" * 70,
           "<WWW.Example.org/" + "r" * 50 + ">", "Mailto:X@EXAMPLE.ORG" + "s" * 60, "b3-b5",
           "-", "--", "a.", "\xa0", "no\xa0break",
           "\u3000", "\t", "tab\tin", "\r", "\x0b", "\x1c")
_SEPARATORS = (" ", " ", " ", " ", "  ", "   ", " " * 10, " " * 80, "\t", " \n ", "\xa0")
_LEADS = ("", "", " ", "  ", "    ", "  - ", "- ", "b3-b5   ", "  term  ", " " * 70)


def _random_text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        plain = rng.random() < 0.6  # mostly what mails hold: words and single spaces
        parts = [rng.choice(_LEADS)]
        for i in range(rng.randint(0, 40)):
            if i:
                parts.append(" " if plain else rng.choice(_SEPARATORS))
            if plain and rng.random() < 0.9:
                parts.append("".join(rng.choice("abcdefghij.,-")
                                     for _ in range(rng.randint(1, 12))))
            else:
                parts.append(rng.choice(_PIECES))
        if rng.random() < 0.2:
            parts.append(rng.choice(_SEPARATORS))
        lines.append("".join(parts))
    return "\n".join(lines)


def test_wrap_is_what_textwrap_alone_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The greedy line filling changes nothing ``wrap`` gives, over many random texts
    (mail's words and spaces, long words, addresses, tabs and other white space)."""
    rng = random.Random(23)
    cases = []
    for _ in range(20_000):
        cases.append((_random_text(rng), rng.choice((76, 76, 72, 40, 20, 10, 5, 2, 1)),
                      rng.choice(("", "", "  ", "    ", " " * 12))))
    fast = [rendering.wrap(*case) for case in cases]
    monkeypatch.setattr(rendering, "_fill", lambda *args: False)  # textwrap alone
    for case, got in zip(cases, fast, strict=True):
        assert got == rendering.wrap(*case), case


def test_fill_is_textwrap() -> None:
    """Where the fast path takes a line, its lines are textwrap's."""
    rng = random.Random(5)
    taken = 0
    for _ in range(20_000):
        words = _random_text(rng).replace("\n", " ").strip()
        if not words:
            continue
        width = rng.choice((76, 60, 30, 12, 3))
        first, rest = rng.choice(("", "  ", "     ")), rng.choice(("", "  ", "        "))
        out: list[str] = []
        if rendering._fill(words, width, first, rest, out):
            taken += 1
            assert out == textwrap.wrap(words, width=width, initial_indent=first,
                                        subsequent_indent=rest, break_on_hyphens=False), (
                words, width, first, rest)
        else:
            assert out == []
    assert taken > 2_000


def test_wide_text_under_an_indent_wider_than_the_line_ends() -> None:
    """East Asian text whose indent takes the whole width gets one character a line,
    as textwrap gives Latin text then (before, the line filling never ended)."""
    assert rendering.wrap("日本 ab", 1, " " * 12) == "\n".join(
        " " * 12 + c for c in "日本ab")
