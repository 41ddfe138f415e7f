"""Alpha-beta: the value of plain minimax, forced wins found, exchanges seen through,
and budgets kept.  Amoeba's bots play with it (``AmoebaKnowledge.search``)."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

import pytest

from pbmserv.bots import LEVELS, SearchBot, alphabeta
from pbmserv.bots.alphabeta import MAX_PLY, WIN, WIN_DECAY, AlphaBeta
from pbmserv.bots.amoeba import AmoebaKnowledge
from pbmserv.bots.honeydonuts import HoneyDonutsKnowledge
from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.bots.per_game import knowledge_for
from pbmserv.bots.search import Budget
from pbmserv.games import AnyEngine, get_engine
from pbmserv.games.amoeba import Amoeba

UNLIMITED = Budget(10**9, 10**6)


def minimax(engine: AnyEngine, k: Knowledge, pos: Any, depth: int, ply: int = 0) -> float:
    """Plain negamax over every legal move, valued for the player to move."""
    outcome = engine.outcome(pos)
    if outcome is not None:
        if outcome.winner is None:
            return 0.0
        won = WIN - ply * WIN_DECAY
        return won if outcome.winner == engine.to_move(pos) else -won
    if depth == 0:
        return seat_sign(engine.to_move(pos)) * k.evaluate(engine, pos)
    return max(-minimax(engine, k, engine.apply(pos, m), depth - 1, ply + 1)
               for m in engine.legal_moves(pos))


def honeydonuts_positions(count: int, seed: int) -> list[Any]:
    engine = get_engine("honeydonuts")
    assert engine is not None
    rng = random.Random(seed)
    out: list[Any] = []
    while len(out) < count:
        pos = engine.new()
        for _ in range(rng.randrange(2, 30)):
            after = engine.apply(pos, rng.choice(engine.legal_moves(pos)))
            if engine.outcome(after) is not None:
                break
            pos = after
        out.append(pos)
    return out


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_value_is_that_of_plain_minimax(depth: int) -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    k = HoneyDonutsKnowledge()
    for n, pos in enumerate(honeydonuts_positions(6, seed=depth)):
        if len(engine.legal_moves(pos)) == 1 or k.winning_move(engine, pos,
                                                               engine.legal_moves(pos)):
            continue  # answered before any search
        search = AlphaBeta(engine, k, random.Random(n), table_size=0)
        found = search.run(pos, UNLIMITED, max_depth=depth)
        assert search.depth == depth
        expected = minimax(engine, k, pos, depth)
        assert math.isclose(search.score, expected, abs_tol=1e-9)
        mover = seat_sign(engine.to_move(pos))
        assert math.isclose(mover * found.value, max(-1.0, min(1.0, expected)), abs_tol=1e-9)
        after = engine.apply(pos, found.move)
        assert math.isclose(-minimax(engine, k, after, depth - 1, 1), expected, abs_tol=1e-9)


def forced_win(engine: AnyEngine, pos: Any, plies: int) -> bool:
    """Whether the player to move wins by force within ``plies`` plies (odd)."""
    me = engine.to_move(pos)
    for move in engine.legal_moves(pos):
        after = engine.apply(pos, move)
        outcome = engine.outcome(after)
        if outcome is not None:
            if outcome.winner == me:
                return True
            continue
        if plies > 1 and all(still_wins(engine, engine.apply(after, reply), me, plies - 2)
                             for reply in engine.legal_moves(after)):
            return True
    return False


def still_wins(engine: AnyEngine, pos: Any, me: int, plies: int) -> bool:
    """Whether ``me`` has won in ``pos`` or, to move, wins within ``plies`` plies."""
    outcome = engine.outcome(pos)
    if outcome is not None:
        return outcome.winner == me
    return forced_win(engine, pos, plies)


def test_a_win_in_two_is_found_and_played() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    k = HoneyDonutsKnowledge()
    found = 0
    for n, pos in enumerate(honeydonuts_positions(400, seed=7)):
        if forced_win(engine, pos, 1) or not forced_win(engine, pos, 3):
            continue
        search = AlphaBeta(engine, k, random.Random(n))
        result = search.run(pos, UNLIMITED, max_depth=5)
        assert result.reason == "proven win" and search.depth == 3
        # the mate comes on the third ply, the table of positions notwithstanding
        assert math.isclose(search.score, WIN - 3 * WIN_DECAY)
        assert result.value == seat_sign(engine.to_move(pos))
        after = engine.apply(pos, result.move)
        assert engine.outcome(after) is None
        # every reply leaves a win in one
        for reply in engine.legal_moves(after):
            assert forced_win(engine, engine.apply(after, reply), 1)
        found += 1
    assert found >= 3


# -- Amoeba: captures played out ------------------------------------------------------
def quiesce(engine: AnyEngine, k: Knowledge, pos: Any, ply: int,
            known: dict[tuple[Any, int], float]) -> float:
    """Plain negamax over the noisy moves, each side free to stop unless forced
    (``known`` remembers the values found)."""
    if (pos, ply) in known:
        return known[pos, ply]
    outcome = engine.outcome(pos)
    if outcome is not None:
        if outcome.winner is None:
            return 0.0
        won = WIN - ply * WIN_DECAY
        return won if outcome.winner == engine.to_move(pos) else -won
    stand = seat_sign(engine.to_move(pos)) * k.evaluate(engine, pos)
    noisy = k.noisy_moves(engine, pos)
    if noisy is None or ply >= MAX_PLY:
        return stand
    moves, forced = noisy
    values = [-quiesce(engine, k, engine.apply(pos, m), ply + 1, known) for m in moves]
    if not forced:
        values.append(stand)
    known[pos, ply] = value = max(values) if values else stand
    return value


def test_amoeba_depth_one_is_the_best_root_turns_then_the_captures_played_out() -> None:
    engine = get_engine("amoeba")
    assert engine is not None
    k = knowledge_for(engine)
    rng = random.Random(12)
    checked = exchanges = 0
    while checked < 3:
        pos = engine.new(engine.check_options(("-small",)))
        for _ in range(rng.randrange(10, 30)):
            after = engine.apply(pos, rng.choice(engine.legal_moves(pos)))
            if engine.outcome(after) is not None:
                break
            pos = after
        moves = engine.legal_moves(pos)
        if len(moves) == 1 or k.winning_move(engine, pos, moves):
            continue
        roots = k.order(engine, pos, moves, random.Random(checked), True)[:k.root_width]
        known: dict[tuple[Any, int], float] = {}
        values = [-quiesce(engine, k, engine.apply(pos, c.move), 1, known) for c in roots]
        expected = max(values)
        search = AlphaBeta(engine, k, random.Random(checked), table_size=0)
        found = search.run(pos, UNLIMITED, max_depth=1)
        assert math.isclose(search.score, expected, abs_tol=1e-9)
        assert math.isclose(-quiesce(engine, k, engine.apply(pos, found.move), 1, known),
                            expected, abs_tol=1e-9)
        afters = [engine.apply(pos, c.move) for c in roots]
        static = [-seat_sign(engine.to_move(a)) * k.evaluate(engine, a) for a in afters]
        exchanges += sum(1 for v, w in zip(values, static, strict=True)
                         if not math.isclose(v, w))
        checked += 1
    assert exchanges  # the captures played out changed some values


def test_budgets_are_kept() -> None:
    engine = get_engine("amoeba")
    assert engine is not None
    pos = engine.new()
    search = AlphaBeta(engine, knowledge_for(engine), random.Random(3))
    result = search.run(pos, Budget(150, 10.0))
    assert result.iterations == 150 and result.reason == "search"
    legal = {engine.format_move(pos, m) for m in engine.legal_moves(pos)}
    assert engine.format_move(pos, result.move) in legal
    hurried = SearchBot(replace(LEVELS[0], iterations=10**6, seconds=0.0))
    decision = hurried.decide(engine, pos, seed=4)
    assert decision.text in legal and decision.iterations == 0


#: a bot3 game against bot1 (before the answers to the root's moves were chosen from
#: every turn): Black's queen went to d6, and White's only good answer f3-f5, taking a
#: bishop, is legal only with the slide c5-b5 that shuts a line to its King
BLIND_SPOT = (
    "e2-e4,g7-g4", "e8-e6,f5-g6", "d2-d4,d6-g5", "f8-f6,f4-d6", "d1-g4,d4-f5",
    "e6-f5,f5-e5", "e1-d2,f7-g7", "d8-d6,d6-d4", "d2-d3,d7-d6", "h8-h6,g7-f7",
    "b2-b3,g4-f5", "b8-b7,d6-d7", "d3-d4,d4-d5", "f9-d7,c6-d6", "d5-d6,f5-g4",
    "c8-c7,f3-f5", "g4-g3,d6-b4", "f6-f5,a5-d6", "e4-f5,f7-g7", "d7-f5,g4-f3",
    "g3-f3,e4-f4")


class LosingMovesFirst(HoneyDonutsKnowledge):
    """Looks at one root move only, and at the worst first."""

    root_width = 1

    def order(self, engine: AnyEngine, pos: Any, moves: Any, rng: random.Random,
              root: bool) -> list[Candidate]:
        return list(reversed(super().order(engine, pos, moves, rng, root)))


def test_when_every_move_considered_loses_all_are_considered() -> None:
    # Honey Donuts: after a1-b1 some of Blue's moves let Red push Blue's King off
    engine = get_engine("honeydonuts")
    assert engine is not None
    pos = engine.play_all(engine.new(), ("a1-b1",))
    k = LosingMovesFirst()
    [first] = k.order(engine, pos, engine.legal_moves(pos), random.Random(0), True)[:1]
    assert forced_win(engine, engine.apply(pos, first.move), 1)
    search = AlphaBeta(engine, k, random.Random(0))
    result = search.run(pos, UNLIMITED, max_depth=2)
    assert not forced_win(engine, engine.apply(pos, result.move), 1)
    assert search.depth == 2 and result.reason == "search"


class AnswersWithoutSlides(AmoebaKnowledge):
    reply_width = 0


def test_answers_that_need_a_slide_are_seen() -> None:
    engine = get_engine("amoeba")
    assert isinstance(engine, Amoeba)
    pos = engine.play_all(engine.new(), BLIND_SPOT)
    after, _ = engine.play(pos, "d9-d6,e5-e4")
    assert not any(engine.format_move(after, t).startswith("f3-f5")
                   for t in engine.chess_turns(after))
    blind = AlphaBeta(engine, AnswersWithoutSlides(), random.Random(0))
    found = blind.run(pos, UNLIMITED, max_depth=2)
    assert engine.format_move(pos, found.move) == "d9-d6,e5-e4"
    seeing = AlphaBeta(engine, knowledge_for(engine), random.Random(0))
    found = seeing.run(pos, UNLIMITED, max_depth=2)
    assert engine.format_move(pos, found.move) != "d9-d6,e5-e4"
    assert seat_sign(1) * found.value < 0.5


def test_the_table_keeps_wins_as_seen_from_the_position() -> None:
    # a mate on ply 5 found from a position on ply 2 is 3 plies below it: met again
    # on ply 4, the same position mates on ply 7
    stored = alphabeta._to_table(WIN - 5 * WIN_DECAY, 2)
    assert math.isclose(alphabeta._from_table(stored, 4), WIN - 7 * WIN_DECAY)
    stored = alphabeta._to_table(-(WIN - 5 * WIN_DECAY), 2)
    assert math.isclose(alphabeta._from_table(stored, 4), -(WIN - 7 * WIN_DECAY))
    assert alphabeta._from_table(alphabeta._to_table(0.5, 2), 4) == 0.5
