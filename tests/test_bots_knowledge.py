"""The bots' knowledge of each game: it must agree with the engines where it restates
their rules (faster), and its judgements must point the right way."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pbmserv.bots import amoeba as amoeba_bot
from pbmserv.bots import hexamoeba as hexamoeba_bot
from pbmserv.bots import honeydonuts as honey_bot
from pbmserv.bots.knowledge import Knowledge
from pbmserv.bots.per_game import knowledge_for
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.games.amoeba import Amoeba
from pbmserv.games.amoeba import Position as AmoebaPosition
from pbmserv.games.exnihilo import ExNihilo
from pbmserv.games.hexamoeba import Hexamoeba
from pbmserv.games.honeydonuts import HoneyDonuts


def random_games(engine: AnyEngine, options: tuple[str, ...], games: int, plies: int,
                 seed: int) -> list[Any]:
    """Every position of a few random games (finished ones included)."""
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        pos = engine.new(engine.check_options(options))
        for _ in range(plies):
            out.append(pos)
            moves = engine.legal_moves(pos)
            if not moves:
                break
            pos = engine.apply(pos, rng.choice(moves))
        else:
            out.append(pos)
    return out


@pytest.mark.parametrize(("game", "games", "plies"), [
    ("honeydonuts", 20, 80), ("hexamoeba", 20, 80), ("exnihilo", 20, 60), ("amoeba", 2, 25)])
def test_probe_and_moves_agree_with_the_engine(game: str, games: int, plies: int) -> None:
    engine = get_engine(game)
    assert engine is not None
    knowledge = knowledge_for(engine)
    finished = 0
    for pos in random_games(engine, (), games, plies, seed=4):
        outcome, moves = knowledge.probe(engine, pos)
        assert outcome == engine.outcome(pos)
        if outcome is None:
            expected = engine.legal_moves(pos)
            assert moves is None or moves == expected
            assert knowledge.moves(engine, pos) == expected
            assert -1.0 <= knowledge.evaluate(engine, pos) <= 1.0
        else:
            finished += 1
            assert engine.legal_moves(pos) == []
    assert game == "amoeba" or finished > 0


@pytest.mark.parametrize("options", [(), ("-small",), ("-large",)])
def test_exnihilo_turn_status_agrees_with_the_turns(options: tuple[str, ...]) -> None:
    engine = ExNihilo()
    positions = random_games(engine, options, 25, 80, seed=len(options) + 1)
    chains = forced = 0
    for pos in positions:
        turns = engine.legal_moves(pos)
        alive, must = engine.turn_status(pos)
        assert alive == bool(turns)
        # must capture: every turn is a chain (its first step flanks something)
        assert not (alive and must) or all(len(t) > 1 for t in turns)
        assert must or not turns or any(len(t) == 1 for t in turns)
        chains += sum(1 for t in turns if len(t) > 1)
        forced += must
    assert chains > 0 and forced > 0  # captures were among them


@pytest.mark.parametrize("options", [(), ("-small",), ("-promote",), ("-opponent", "-single")])
def test_amoeba_turns_without_a_slide_are_the_engines(options: tuple[str, ...]) -> None:
    engine = Amoeba()
    checks = 0
    for pos in random_games(engine, options, 2, 60, seed=len(options)):
        moves = engine.legal_moves(pos)
        quiet = [m for m in moves if m.slide is None]
        assert engine.chess_turns(pos) == quiet
        assert engine.chess_turns(pos, 1) == quiet[:1]
        checks += engine.in_check(pos)
    assert checks > 0 or options != ()


def test_honeydonuts_threats_decide_the_score() -> None:
    engine = HoneyDonuts()
    threatened = engine.play_all(engine.new(), ("a1-b1",))  # b1-c2 would push Blue off
    assert honey_bot.score(threatened.cells, 1) < -0.5  # Blue, to move, must parry
    pos = engine.play_all(threatened, ("e1-d1",))  # it did not
    assert honey_bot.score(pos.cells, 0) == 0.95
    gone = engine.apply(pos, next(m for m in engine.legal_moves(pos)
                                  if engine.pushes_king_off(pos, m)))
    assert honey_bot.score(gone.cells, 1) == -1.0 and honey_bot.score(gone.cells, 0) == 1.0


def test_hexamoeba_a_threat_on_the_move_is_nearly_won() -> None:
    engine = Hexamoeba()
    pos = engine.play_all(engine.new(), ("b3-c3", "f3-e4"))
    assert hexamoeba_bot.score(pos.cells, 0) == 0.95
    start = engine.new()
    assert abs(hexamoeba_bot.score(start.cells, 0)) < 0.2  # no threat, even stacks


def test_amoeba_evaluation_counts_material_and_threats() -> None:
    engine = Amoeba()
    start = engine.new()
    assert abs(amoeba_bot.score(engine, start)) < 0.05
    no_queen = AmoebaPosition(start.cells.replace("q", "."), 0, ())
    assert amoeba_bot.score(engine, no_queen) > 0.6
    # a queen en prise to the side to move counts nearly as won
    cells = list(start.cells)
    cells[engine.new().geo.cell("e", "3") or 0] = "q"
    cells[engine.new().geo.cell("d", "9") or 0] = "."
    hanging = AmoebaPosition("".join(cells), 0, ())
    assert amoeba_bot.score(engine, hanging) > amoeba_bot.score(engine, no_queen) - 0.2


def test_the_default_knowledge_plays_out_to_the_end() -> None:
    engine = HoneyDonuts()
    blind = Knowledge()
    values = {blind.leaf_value(engine, engine.new(), random.Random(s)) for s in range(10)}
    assert values <= {-1.0, 0.0, 1.0} and len(values) > 1
    assert blind.evaluate(engine, engine.new()) == 0.0
    ordered = blind.order(engine, engine.new(), engine.legal_moves(engine.new()),
                          random.Random(1), True)
    assert sorted(map(str, (c.move for c in ordered))) == sorted(
        map(str, engine.legal_moves(engine.new())))


def test_every_engine_reports_no_moves_exactly_when_over() -> None:
    # the search relies on it: a position with a legal move is not finished
    for name, engine in ENGINES.items():
        for pos in random_games(engine, (), 3, 40 if name != "amoeba" else 6, seed=1):
            assert (engine.outcome(pos) is None) == bool(engine.legal_moves(pos)), name
