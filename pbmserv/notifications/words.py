"""The board in words: a description of a position that a screen reader reads well
(the anchor: lichess's blind mode).

Whose turn it is, each player's pieces by kind and square (stacks with their
heights and pieces, bottom first), the pieces of no one, the holes, what the last
move changed, what a game adds (Amoeba's check and last slide, Honey Donuts' rings
round the hole), and the legal moves grouped by piece.  The engines give the data
(``Engine.describe``, ``Engine.move_groups``), grouped here into plain data, worded
by templates/words/.  It is worked out from a board's view (views.BoardView) only
for a reader who asks for it (``notify ... words on``, ``show -words``, the web
pages), once per state of the board.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from pbmserv.games import get_engine
from pbmserv.notifications.views import BoardView, drawn_once
from pbmserv.render import render, render_html, render_mail_html

#: the order in which a side's kinds of piece are listed (others after, as found)
KINDS = ("king", "kernel", "queen", "rook", "bishop", "knight", "pawn", "piece")


def words_of(view: BoardView, *, moves: bool = True) -> dict[str, Any]:
    """The board of ``view`` in plain data, for templates/words/ (worked out once);
    without ``moves``, the legal moves are left out (the engine lists none)."""
    return drawn_once(view, ("words", moves), lambda: _words(view, moves))


def words_text(view: BoardView) -> str:
    """The board in words, for text mail (words/board.txt.j2)."""
    return drawn_once(view, "words-text", lambda: render(
        "words/board.txt.j2", board=view, words=words_of(view)))


def words_html(view: BoardView, *, mail: bool = False, moves: bool = True) -> Markup:
    """The board in words in HTML (words/board.html.j2): for mail, its elements carry
    their styles (render.render_mail_html); without ``moves``, the legal moves are
    left out (a board's public page: its player's move page lists them)."""
    draw = render_mail_html if mail else render_html
    return drawn_once(view, ("words-html", mail, moves), lambda: draw(
        "words/board.html.j2", board=view, words=words_of(view, moves=moves)))


def _side(cells: list[dict[str, Any]], seat: str) -> dict[str, Any]:
    owned = [c for c in cells if c["owner"] == seat]
    by_kind: dict[str, list[str]] = {}
    for cell in owned:
        if len(cell["pieces"]) == 1:
            by_kind.setdefault(cell["pieces"][0][1], []).append(cell["name"])
    order = {kind: n for n, kind in enumerate(KINDS)}
    singles = sorted(by_kind.items(), key=lambda item: order.get(item[0], len(KINDS)))
    return {"seat": seat, "singles": [(kind, _sorted(names)) for kind, names in singles],
            "stacks": sorted((c for c in owned if len(c["pieces"]) > 1),
                             key=lambda c: _key(c["name"])),
            "count": sum(len(c["pieces"]) for c in owned)}


def _key(name: str) -> tuple[str, int]:
    """A cell's name in reading order: its letter, then its number."""
    return name[:1], int(name[1:] or 0)


def _sorted(names: list[str]) -> list[str]:
    return sorted(names, key=_key)


def _words(view: BoardView, listed: bool) -> dict[str, Any]:
    engine = get_engine(view.game)
    if engine is None or view.state is None:
        raise LookupError(f"the game {view.game!r} is not installed")
    now = engine.describe(view.state)
    cells: list[dict[str, Any]] = now["cells"]
    userids = dict((seat, userid) for seat, userid, _ in view.players)
    changes = []
    if view.state_before is not None:
        before = {c["name"]: c for c in engine.describe(view.state_before)["cells"]}
        changes = [(before[c["name"]], c) for c in sorted(cells, key=lambda c: _key(c["name"]))
                   if before.get(c["name"]) != c]
    last = None
    if view.ply and view.rows and not view.later:
        seat = engine.seats[(view.ply - 1) % len(engine.seats)]
        last = {"ply": view.ply, "notation": view.rows[-1][1][-1], "seat": seat,
                "userid": userids.get(seat, "")}
    by_name = {c["name"]: c for c in cells}
    groups = [] if view.finished or not listed else sorted(engine.move_groups(view.state),
                                             key=lambda group: _key(group[0].value))
    moves = [{"from": first, "cell": by_name.get(first.cell or ""),
              "to": sorted(seconds, key=lambda s: _key(s[0].cell) if s[0].cell else ("", 0))}
             for first, seconds in groups]
    return {
        "to_move": None if view.finished else now["to_move"],
        "userids": userids,
        "sides": [_side(cells, seat) for seat in engine.seats],
        "neutral": _sorted([c["name"] for c in cells if c["pieces"] and not c["owner"]]),
        "holes": _sorted([c["name"] for c in cells if c["hole"]]),
        "changes": changes, "last": last, "moves": moves,
        "move_count": sum(n for _, seconds in groups for _, n in seconds),
        "check": now.get("check", False), "slid": now.get("slid"),
        "rings": [[by_name[name] for name in ring] for ring in now.get("rings", ())],
    }
