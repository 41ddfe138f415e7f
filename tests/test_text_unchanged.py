"""The text a player reads does not change when its rendering is made cheaper.

``tests/text_before/`` holds the text templates (board diagrams, summary, board mail,
move reply, status and subject lines) as they were before they were reworked for
speed, and ``_old_wrap`` the ``wrap`` filter as it was (textwrap for every line that
does not fit).  Random games of every game and option set are rendered with both, and
every text must be the same byte for byte: the diagrams of many positions directly,
and every text template the mail flow renders while boards are played by mail
(moves with comments, draw offers, take-back requests, answers, resignations).
"""

from __future__ import annotations

import dataclasses
import random
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined

import pbmserv.render as rendering
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.session import Database
from pbmserv.games import AnyEngine, get_engine
from pbmserv.intake.store import store_message
from pbmserv.notifications.views import diagram
from pbmserv.processing import process_pending
from pbmserv.service.accounts import open_account
from pbmserv.service.games import GameService
from tests.conftest import make_mail

BEFORE = Path(__file__).resolve().parent / "text_before"

#: every game with the option sets that change its board or its rules
GAMES: list[tuple[str, tuple[str, ...]]] = [
    ("amoeba", ()), ("amoeba", ("-small",)), ("amoeba", ("-single", "-promote")),
    ("amoeba", ("-small", "-single", "-promote", "-opponent")), ("amoeba", ("-opponent",)),
    ("honeydonuts", ()), ("honeydonuts", ("-simple",)),
    ("hexamoeba", ()),
    ("exnihilo", ()), ("exnihilo", ("-small",)), ("exnihilo", ("-large",)),
]

# -- the rendering as it was ---------------------------------------------------------
_HANGING = re.compile(r"^(\s*(?:- |\S+\s{2,}))")
_URL = re.compile(r"<?(https?://|ftp://|www\.|mailto:)\S+$", re.I)
_FITS = frozenset("\t\n\x0b\x0c\r")


def _old_wrap(text: str, width: int = 76, indent: str = "") -> str:
    out: list[str] = []
    for line in str(text).split("\n"):
        if not line.strip():
            out.append(indent.rstrip())
            continue
        body = line.rstrip()
        hang = _HANGING.match(body)
        lead = len(body) - len(body.lstrip())
        rest = indent + " " * (len(hang.group(1)) if hang else lead)
        room = max(1, width - len(rest))
        words = body.lstrip()
        has_url = any(len(w) > room and _URL.match(w) for w in words.split())
        first = indent + " " * lead
        if not has_url and len(first) + len(words) <= width and _FITS.isdisjoint(words):
            out.append(first + words)
            continue
        if has_url:
            words = " ".join(w if len(w) <= room or _URL.match(w) else
                             " ".join(w[i:i + room] for i in range(0, len(w), room))
                             for w in words.split(" "))
        out.extend(
            textwrap.wrap(words, width=width, initial_indent=first,
                          subsequent_indent=rest, break_long_words=not has_url,
                          break_on_hyphens=False)
        )
    return "\n".join(out)


def _old_center_each(items: Iterable[str], width: int) -> list[str]:
    return [str(item).center(width) for item in items]


@cache
def _old_environment() -> Environment:
    env = Environment(
        # the frozen templates first; any other template (included ones) as it is now
        loader=ChoiceLoader([FileSystemLoader(str(BEFORE)),
                             FileSystemLoader(str(rendering.templates_dir()))]),
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False,
    )
    env.filters["wrap"] = _old_wrap
    env.filters["duration"] = rendering.duration
    env.filters["time_taken"] = rendering.time_taken
    env.filters["center_each"] = _old_center_each
    return env


def _old_render(name: str, **context: Any) -> str:
    text = _old_environment().get_template(name).render(**context)
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")) + "\n"


def _frozen() -> set[str]:
    return {p.relative_to(BEFORE).as_posix() for p in BEFORE.rglob("*.j2")}


# -- random games ----------------------------------------------------------------------
def _positions(engine: AnyEngine, options: tuple[str, ...], rng: random.Random,
               count: int) -> Iterator[Any]:
    """``count`` positions of random games (a new game when one ends)."""
    pos = engine.new(options)
    yield pos
    for _ in range(count - 1):
        moves = engine.legal_moves(pos) if engine.outcome(pos) is None else []
        if not moves:
            pos = engine.new(options)
        else:
            pos, _ = engine.play(pos, engine.format_move(pos, rng.choice(moves)))
        yield pos


@pytest.mark.parametrize(("game", "options"), GAMES)
def test_diagrams_unchanged(game: str, options: tuple[str, ...]) -> None:
    engine = get_engine(game)
    assert engine is not None
    rng = random.Random(f"{game}{options}")
    seen = set()
    for pos in _positions(engine, options, rng, 60):
        new = diagram(engine, pos)
        old = _old_render(engine.board_template(), view=engine.view(pos))
        assert new == old, f"{game} {options}:\n{old}\n----\n{new}"
        seen.add(new)
    assert len(seen) > 30  # the games went somewhere



@pytest.mark.parametrize(("game", "options", "pieces"), [
    ("hexamoeba", (), "wbWB"), ("exnihilo", (), "wb"), ("exnihilo", ("-small",), "wb"),
    ("exnihilo", ("-large",), "wb"), ("honeydonuts", (), "rRbBo."),
])
def test_made_up_diagrams_unchanged(game: str, options: tuple[str, ...], pieces: str) -> None:
    """Boards no short game reaches: stacks too tall to draw in place, many of them
    (Honeydonuts: one piece a cell, empty cells)."""
    engine = get_engine(game)
    assert engine is not None
    rng = random.Random(game + "".join(options))
    start = engine.new(options)
    for _ in range(40):
        tallest = rng.choice((1, 3, 5, 6, 9))
        if isinstance(start.cells, str):  # Honeydonuts: a string of one-letter cells
            cells: Any = "".join(c if c == "#" else rng.choice(pieces) for c in start.cells)
        else:
            cells = tuple("".join(rng.choice(pieces) for _ in range(rng.randint(0, tallest)))
                          for _ in start.cells)
        pos = dataclasses.replace(start, cells=cells)
        new = diagram(engine, pos)
        assert new == _old_render(engine.board_template(), view=engine.view(pos)), new


# -- the mail flow ---------------------------------------------------------------------
_WORDS = ("a", "move", "of", "mine", "well-played!", "x" * 30, "y" * 90,
          "http://example.org/" + "p" * 70, "see", "  two  spaces", "tab\there", "é")


def _comment(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 3)):
        lines.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 30))))
    return "\n".join(lines)


def _play_by_mail(db: Database, settings: Settings, game: str, options: tuple[str, ...],
                  rng: random.Random, boards: int, plies: int) -> None:
    engine = get_engine(game)
    assert engine is not None
    with db.transaction() as session:
        users = [open_account(session, f"u{i}", f"pw{i}-secret", f"u{i}@example.org")
                 for i in range(2 * boards)]
        for user in users:
            user.confirmed_at = utcnow()
        session.flush()
        service = GameService(session)
        numbers = [service.challenge(engine, users[2 * b:2 * b + 2], list(options)).number
                   for b in range(boards)]
    positions = {n: engine.new(options) for n in numbers}
    for ply in range(plies):
        for b, number in enumerate(numbers):
            pos = positions[number]
            if pos is None or engine.outcome(pos) is not None:
                continue
            mover = 2 * b + ply % 2
            roll = rng.random()
            if roll < 0.04 and ply > 2:
                word = rng.choice(["draw", "undo", "resign"])
                words = [word]
                if word != "resign":
                    # the other player answers at once
                    words.append(rng.choice(["accept", "reject"]))
                for i, w in enumerate(words):
                    u = mover if i == 0 else 2 * b + 1 - ply % 2
                    store_message(db, make_mail(f"{game} move {number} u{u} pw{u}-secret {w}",
                                                _comment(rng) if rng.random() < 0.5 else ""),
                                  "pbmserv@localhost")
                    process_pending(db, settings)
                positions[number] = None  # no longer followed: its moves are unknown
                continue
            move = engine.format_move(pos, rng.choice(engine.legal_moves(pos)))
            positions[number], _ = engine.play(pos, move)
            body = _comment(rng) if rng.random() < 0.3 else ""
            store_message(db, make_mail(f"{game} move {number} u{mover} pw{mover}-secret "
                                        f"{move}#{ply + 1}", body), "pbmserv@localhost")
        process_pending(db, settings)


@pytest.mark.parametrize(("game", "options"), GAMES)
def test_mail_texts_unchanged(db: Database, settings: Settings, game: str,
                              options: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every frozen template the mail flow renders gives what it gave before."""
    compared: dict[str, int] = {}
    real = rendering.render

    def checked(name: str, **context: Any) -> str:
        new = real(name, **context)
        if name in _frozen():
            old = _old_render(name, **context)
            assert new == old, f"{name}:\n{old}\n----\n{new}"
            compared[name] = compared.get(name, 0) + 1
        return new

    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "render", None) is real:
            monkeypatch.setattr(module, "render", checked)
    _play_by_mail(db, settings, game, options, random.Random(f"{game}{options}"), 4, 14)
    for name in ("summary.txt.j2", "board_mail.txt.j2", "commands/move.txt.j2",
                 "status.txt.j2", "subjects/board.txt.j2", "by_reply.txt.j2"):
        if name in _frozen() and name != "by_reply.txt.j2":  # included, not rendered alone
            assert compared.get(name, 0) >= 20, (name, compared)


# -- the wrap filter -------------------------------------------------------------------
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


def test_wrap_is_what_it_was() -> None:
    """The greedy line filling gives what textwrap gives, over many random texts."""
    rng = random.Random(23)
    for _ in range(20_000):
        text = _random_text(rng)
        width = rng.choice((76, 76, 72, 40, 20, 10, 5, 2, 1))
        indent = rng.choice(("", "", "  ", "    ", " " * 12))
        assert rendering.wrap(text, width, indent) == _old_wrap(text, width, indent), (
            text, width, indent)


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
