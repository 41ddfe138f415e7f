"""Choosing a move a pick at a time (Engine.move_path, Engine.choose) and the
position in plain data for words (Engine.describe), for every game: the picks lead
to every legal move and to nothing else, each move by one path only."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from pbmserv.games import ENGINES, AnyEngine
from pbmserv.games.base import IllegalMoveError, PickKind

GAMES = sorted(ENGINES)


def positions(engine: AnyEngine, plies: int = 12, seed: int = 7) -> list[Any]:
    """The start and the positions of a random game's first ``plies`` moves."""
    rng = random.Random(seed)
    pos = engine.new()
    out = [pos]
    for _ in range(plies):
        if engine.outcome(pos) is not None:
            break
        pos = engine.apply(pos, rng.choice(engine.legal_moves(pos)))
        out.append(pos)
    return out


def walk(engine: AnyEngine, pos: Any, chosen: tuple[str, ...], found: list[str],
         width: int) -> None:
    """Every move reached by following the options from ``chosen`` (the first
    ``width`` of each step's), into ``found``."""
    choosing = engine.choose(pos, chosen)
    assert choosing.chosen() == chosen
    if choosing.notation is not None:
        assert choosing.options == ()
        found.append(choosing.notation)
        return
    assert len(choosing.options) >= 2  # a step of one option is made for the player
    for pick, count in choosing.options[:width]:
        assert count >= 1
        walk(engine, pos, (*chosen, pick.value), found, width)


@pytest.mark.parametrize("game", GAMES)
def test_every_legal_move_has_one_path_and_none_begins_another(game: str) -> None:
    engine = ENGINES[game]
    for pos in positions(engine):
        paths = {engine.move_path(pos, m): engine.format_move(pos, m)
                 for m in engine.legal_moves(pos)}
        assert len(paths) == len(engine.legal_moves(pos))  # one path a move
        for path in paths:
            for end in range(1, len(path)):
                assert path[:end] not in paths, (path, engine.format_move)
            assert path[0].cell is not None  # every move starts on the board


@pytest.mark.parametrize("game", GAMES)
def test_the_options_lead_to_the_legal_moves(game: str) -> None:
    engine = ENGINES[game]
    for pos in positions(engine, plies=6):
        legal = sorted(engine.format_move(pos, m) for m in engine.legal_moves(pos))
        root = engine.choose(pos, ())
        assert sum(n for _, n in root.options) == len(legal)
        found: list[str] = []
        whole = len(legal) <= 150  # else (Amoeba, Ex nihilo) two options a step
        walk(engine, pos, (), found, width=len(legal) if whole else 2)
        assert len(found) == len(set(found))
        assert set(found) <= set(legal)
        if whole:
            assert sorted(found) == legal


def test_amoeba_picks_a_piece_a_target_a_slide_and_a_promotion() -> None:
    engine = ENGINES["amoeba"]
    pos = engine.new()
    assert [(p.kind, p.value, n) for p, n in engine.choose(pos, ("e2",)).options] == [
        (PickKind.TARGET, "e3", 61), (PickKind.TARGET, "e4", 61)]
    slides = engine.choose(pos, ("e2", "e4")).options
    assert slides[0][0].kind is PickKind.SLIDE and slides[0][0].value == "none"
    assert slides[0][0].cell is None and slides[1][0].cell == slides[1][0].value
    done = engine.choose(pos, ("E2", "e4", "b3", "b4"))
    assert done.notation == "e2-e4,b3-b4" and done.back() == ("e2", "e4", "b3")
    # a pawn that promotes: its choice comes last
    cells = ["."] * 72
    for hole in ("b4", "b5", "b6", "d5", "e5", "g4", "g5", "g6"):
        cells[(int(hole[1]) - 1) * 8 + ord(hole[0]) - ord("a")] = "#"
    cells[0], cells[71], cells[7 * 8 + 4] = "K", "k", "P"  # a1, h9, and a pawn on e8
    pos = engine.deserialize(json.dumps({"cells": "".join(cells), "turn": 0,
                                         "options": []}))
    last = engine.choose(pos, ("e8", "none"))
    assert [(p.kind, p.value) for p, _ in last.options] == [
        (PickKind.PROMOTION, q) for q in "QRBN"]
    assert last.picked[1].value == "e9" and last.forced == (False, True, False)
    assert engine.choose(pos, ("e8", "none", "N")).notation == "e8-e9=N"


def test_a_step_with_one_option_is_picked_for_the_player() -> None:
    engine = ENGINES["hexamoeba"]
    pos = engine.new()
    # a single piece: whole or split is no question; its target is the player's pick
    choosing = engine.choose(pos, ("a1", "b2"))
    assert choosing.notation == "a1-b2" and choosing.forced == (False, False)
    # a stack of two moves whole or split: two options
    pos = engine.play(engine.play(pos, "a1-a2")[0], "g1-g2")[0]
    split = engine.choose(pos, ("a2",))
    assert split.notation is None
    targets = [p.value for p, _ in split.options]
    both = engine.choose(pos, ("a2", targets[0]))
    assert [p.value for p, _ in both.options] == ["whole", "split"]
    assert engine.choose(pos, ("a2", targets[0], "split")).notation == f"a2>{targets[0]}"


def test_picks_that_choose_no_move_are_refused() -> None:
    engine = ENGINES["honeydonuts"]
    pos = engine.new()
    with pytest.raises(IllegalMoveError, match="e1 is not a choice here"):
        engine.choose(pos, ("e1",))
    with pytest.raises(IllegalMoveError, match="before the last pick"):
        engine.choose(pos, ("a1", "a2", "a3"))


@pytest.mark.parametrize("game", GAMES)
def test_describe_names_every_cell_of_the_view_once(game: str) -> None:
    engine = ENGINES[game]
    for pos in positions(engine, plies=4):
        described = engine.describe(pos)
        assert described["to_move"] == engine.seats[engine.to_move(pos)]
        names = [c["name"] for c in described["cells"]]
        assert len(names) == len(set(names))
        view = engine.view(pos)
        assert len(names) == sum(len(r["cells"]) for r in view["rows"])
        for cell in described["cells"]:
            owners = {owner for owner, _ in cell["pieces"]}
            assert owners <= {*engine.seats, ""}
            assert cell["owner"] == (cell["pieces"][-1][0] if cell["pieces"] else "")
            assert not (cell["hole"] and cell["pieces"])


def test_honeydonuts_rings_go_round_the_hole() -> None:
    engine = ENGINES["honeydonuts"]
    rings = engine.describe(engine.new())["rings"]
    assert [len(r) for r in rings] == [6, 12]
    assert rings[1][:3] == ["a1", "b1", "c1"]  # up the west side: clockwise
