"""Boards drawn in HTML, the HTML summary, escaping and the styles of mail (each
mail compared with an inliner's: tests/test_mail_styles.py)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from markupsafe import Markup

from pbmserv.db.session import Database
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.notifications import drawing
from pbmserv.notifications.drawing import HexCells, contents, diagram_html, squares
from pbmserv.notifications.views import board_summary, board_summary_html
from pbmserv.render import html_mail, render_html
from pbmserv.service.boards import load_board
from tests.conftest import Mailer

CELL = re.compile(r'<td colspan="2" class="cell[^"]*"|<td class="sq [^"]*"')
REMOTE = re.compile(r"(https?:)?//|url\(|@import", re.IGNORECASE)


def engine(name: str) -> AnyEngine:
    found = get_engine(name)
    assert found is not None
    return found


def played(e: AnyEngine, plies: int, seed: int = 7) -> tuple[Any, Any]:
    """The position after ``plies`` random legal moves, and the one before it."""
    rng = random.Random(seed)
    before, pos = None, e.new()
    for _ in range(plies):
        if e.outcome(pos) is not None:
            break
        before, pos = pos, e.apply(pos, rng.choice(e.legal_moves(pos)))
    return pos, before


def cell_count(view: dict[str, Any]) -> int:
    return sum(len(row["cells"]) for row in view["rows"])


def check_safe_html(html: str) -> None:
    lowered = html.lower()
    assert "<script" not in lowered and "<svg" not in lowered and "<img" not in lowered
    assert "javascript:" not in lowered and not re.search(r"<[^>]*\son[a-z]+=", lowered)
    assert not REMOTE.search(html), REMOTE.search(html)


@pytest.mark.parametrize("name", list(ENGINES))
@pytest.mark.parametrize("plies", [0, 1, 6])
def test_every_board_is_drawn_as_a_table_of_its_cells(name: str, plies: int) -> None:
    e = engine(name)
    pos, before = played(e, plies)
    html = diagram_html(e, pos, before)
    check_safe_html(html)
    view = e.view(pos)
    assert html.count("<table") == 1
    assert len(CELL.findall(html)) == cell_count(view)
    touched = html.count(" touched")
    if before is None:
        assert touched == 0
    else:
        changed = sum(a != b for row_a, row_b in zip(contents(view), contents(e.view(before)),
                                                       strict=True)
                      for a, b in zip(row_a, row_b, strict=True))
        assert touched == changed > 0


def test_amoeba_start_shows_the_pieces_in_their_colours() -> None:
    e = engine("amoeba")
    html = diagram_html(e, e.new())
    assert html.count('<span class="white" aria-hidden="true">♙</span>') == 8
    assert html.count('<span class="black" aria-hidden="true">♟\ufe0e</span>') == 8
    assert ('<td class="sq dark" title="a1, White rook" aria-label="a1, White rook">'
            '<span class="white" aria-hidden="true">♖</span>') in html
    assert 'aria-label="e9, Black king"><span class="black" aria-hidden="true">♚</span>' in html
    assert 'aria-label="b4, a hole"></td>' in html and 'aria-label="e3, empty"' in html
    assert html.count('class="sq hole') == sum(
        cell == "###" for row in e.view(e.new())["rows"] for cell in row["cells"])


def test_the_last_move_marks_the_cells_it_changed() -> None:
    e = engine("amoeba")
    start = e.new()
    after, _ = e.play(start, "e4")
    html = diagram_html(e, after, start)
    marked = re.findall(r'class="sq [a-z]+ touched" title="([a-z]\d)', html)
    assert sorted(marked) == ["e2", "e4"]
    h = engine("honeydonuts")
    start = h.new()
    after, _ = h.play(start, "a1-b1")
    marked = re.findall(r'class="cell[a-z ]* touched" title="([a-z]\d)', diagram_html(h, after,
                                                                                       start))
    assert sorted(marked) == ["a1", "b1"]


def test_tall_stacks_are_drawn_whole_and_compared_whole() -> None:
    view = {"rows": [{"letter": "a", "cells": ["[1]", "wb"], "numbers": ["1", "2"]}],
            "width": 2, "tall": [{"mark": "[1]", "name": "a1", "stack": "wwbbw"}]}
    assert contents(view) == [["wwbbw", "wb"]]
    before = {"rows": [{"letter": "a", "cells": ["[1]", "wb"]}],
              "tall": [{"mark": "[1]", "name": "a1", "stack": "wwbb"}]}
    marks = squares(view, before)
    assert [s.touched for s in marks[0]] == [True, False]
    html = render_html("boards/exnihilo.html.j2", view=view, squares=marks, cells=HexCells(),
                       links={}, marks={})
    # drawn top piece first: w b b w w
    assert re.findall(r'<span class="pc (wh|bk)" aria-hidden="true">', html)[:5] == [
        "wh", "bk", "bk", "wh", "wh"]
    assert ('aria-label="a1, a stack of 5, bottom first: White, White, Black, Black, '
            'White"') in html


def test_render_html_escapes_and_mail_has_its_styles_in_the_elements() -> None:
    e = engine("amoeba")
    page = html_mail("<b>x</b> & co", diagram_html(e, e.new(), mail=True))
    assert "<title>&lt;b&gt;x&lt;/b&gt; &amp; co</title>" in page
    assert "<style" not in page
    assert re.search(r'<table class="board amoeba" style="[^"]*border-collapse: ?collapse', page)
    assert re.search(r'<td class="label" style="[^"]*color: ?#555555', page)
    assert re.search(r'<td class="sq dark" title="a1, White rook" aria-label="a1, White rook" '
                     r'style="[^"]*'
                     r"background-color: #b58863", page)
    check_safe_html(page)
    # the web's drawing carries no styles: its page has the style sheet
    assert "style=" not in diagram_html(e, e.new())
    with pytest.raises(ValueError):
        render_html("summary.txt.j2")


def test_html_summary_matches_the_text_summary(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("amoeba challenge alice bob")
    mailer.reply("amoeba move 101 alice pw-alice e4", "<i>Take that</i> & more")
    mailer.reply("amoeba move 101 bob pw-bob e6", sender="bob@example.org")
    e = engine("amoeba")
    with db.reading() as session:
        board = load_board(session, e, 101)
        text = board_summary(session, e, board)
        html = board_summary_html(session, e, board)
        assert board_summary(session, e, board) == text  # the text summary is unchanged
    assert isinstance(html, Markup)
    assert "Summary of Amoeba Board 101" in text and "Summary of Amoeba Board 101" in html
    assert "It is alice&#39;s turn (White), move 3." in html
    assert re.search(r'<td class="last" title="#2" style="[^"]*">e8-e6</td>', html)
    assert re.search(r'<td title="#1" style="[^"]*">e2-e4</td>', html)
    assert "&lt;password&gt; &lt;move&gt;#3" in html
    assert "alice@example.org" not in html and "pw-" not in html
    assert sorted(re.findall(r'touched" title="([a-z]\d)', html)) == ["e6", "e8"]
    page = html_mail("Amoeba Board 101", html)
    check_safe_html(page)
    assert "<style" not in page and page.count("style=") > 100


def test_a_new_board_has_no_moves_and_nothing_marked(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    e = engine("honeydonuts")
    with db.reading() as session:
        html = board_summary_html(session, e, load_board(session, e, 101))
    assert "No moves yet." in html and " touched" not in html


@pytest.mark.parametrize("name", ["honeydonuts", "hexamoeba", "exnihilo"])
def test_hex_cells_kept_from_other_boards_draw_the_board_as_drawn_afresh(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    e = engine(name)
    boards = [played(e, plies, seed) for plies in (0, 1, 5, 12) for seed in (1, 2)]
    # drawn with nothing kept: every cell drawn by the template for this board alone
    fresh = []
    for pos, before in boards:
        monkeypatch.setattr(drawing, "_CELLS", HexCells())
        fresh.append(str(diagram_html(e, pos, before)))
    # drawn one after the other (and again), the cells of the earlier boards kept
    monkeypatch.setattr(drawing, "_CELLS", HexCells())
    for _ in range(2):
        assert [str(diagram_html(e, pos, before)) for pos, before in boards] == fresh
    # a few cells kept at most: forgotten as the limit is reached, the same drawing
    monkeypatch.setattr(HexCells, "LIMIT", 7)
    few = HexCells()
    monkeypatch.setattr(drawing, "_CELLS", few)
    assert [str(diagram_html(e, pos, before)) for pos, before in boards] == fresh
    assert 0 < len(few._drawn) <= 7
    # a stack's cell is its own: a touched cell and an untouched one differ
    touched = [html.count(" touched") for html in fresh]
    assert touched[0] == 0 and max(touched) > 0
