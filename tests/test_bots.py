"""The bots: legal answers in every game, wins in one taken, seeds, offers, matches, CLI.

Budgets here are tiny (a few search iterations) so that the file runs in seconds;
the bots' strength and speed are measured by bench/bots.py, not asserted here.
"""

from __future__ import annotations

import ast
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pbmserv.bots import (
    BOT_NAMES,
    DRAW_MARGIN,
    DRAW_PLIES,
    LEVELS,
    Bot,
    RandomBot,
    SearchBot,
    get_bot,
    play_game,
    play_match,
)
from pbmserv.bots.per_game import knowledge_for
from pbmserv.cli import main
from pbmserv.games import ENGINES, AnyEngine, get_engine
from pbmserv.games import amoeba as amoeba_rules
from pbmserv.games import exnihilo as exnihilo_rules
from pbmserv.games import honeydonuts as honeydonuts_rules

#: small copies of the three levels: same search and knowledge, a few iterations
TINY: list[Bot] = [SearchBot(replace(level, iterations=n)) for level, n in
                   zip(LEVELS, (12, 25, 40), strict=True)]
ALL_TINY: list[Bot] = [RandomBot(), *TINY]
OPTIONS: dict[str, list[tuple[str, ...]]] = {
    "amoeba": [(), ("-small", "-single"), ("-opponent", "-promote")],
    "hexamoeba": [()],
    "honeydonuts": [(), ("-simple",)],
    "exnihilo": [(), ("-small",), ("-large",)],
}
#: real sequences after which the player to move can win at once (and not with every move)
WIN_IN_ONE: dict[str, tuple[str, ...]] = {
    "honeydonuts": ("a1-b1", "e1-d1"),
    "hexamoeba": ("b3-c3", "f3-e4"),
    "exnihilo": ("b2-b6",),
    # from a bot1 game against the random mover: White mates with f6-g7 and a slide
    "amoeba": (
        "e2-e4,f5-g4", "f8-f6,a4-b6", "d1-f3,e6-f5", "c8-c6,b3-a4", "f3-f6,c5-e6",
        "d8-d7,c4-b4", "f6-f3,e6-c4", "c9-f6,f5-d5", "d2-d4,e7-f5", "e9-f8,h6-g6",
        "f3-f6,d5-c5", "f8-e9,f5-e6", "f2-f4,e6-g5", "h8-h7,d7-e6"),
}


def texts(engine: AnyEngine, pos: Any) -> set[str]:
    return {engine.format_move(pos, m) for m in engine.legal_moves(pos)}


def random_position(engine: AnyEngine, options: tuple[str, ...], plies: int, seed: int) -> Any:
    """A position after up to ``plies`` random moves, stopping short of a finished game."""
    rng = random.Random(seed)
    pos = engine.new(engine.check_options(options))
    for _ in range(plies):
        moves = engine.legal_moves(pos)
        after = engine.apply(pos, rng.choice(moves))
        if engine.outcome(after) is not None:
            break
        pos = after
    return pos


def wins_at_once(engine: AnyEngine, pos: Any, text: str) -> bool:
    after, _ = engine.play(pos, text)
    outcome = engine.outcome(after)
    return outcome is not None and outcome.winner == engine.to_move(pos)


# -- the registry ---------------------------------------------------------------------
def test_registry_names_and_lookup() -> None:
    assert BOT_NAMES == ("random", "bot1", "bot2", "bot3")
    for name in BOT_NAMES:
        bot = get_bot(name)
        assert bot is not None and bot.name == name and bot.summary
    assert get_bot(" BOT2 ") is get_bot("bot2")
    assert get_bot("bot4") is None and get_bot("") is None
    budgets = [(lv.iterations, lv.seconds) for lv in LEVELS]
    assert budgets == sorted(budgets) and LEVELS[-1].seconds <= 3.0


def test_every_game_has_its_own_knowledge() -> None:
    for name, engine in ENGINES.items():
        assert type(knowledge_for(engine)).__module__ == f"pbmserv.bots.{name}"


# -- legal answers ----------------------------------------------------------------------
@pytest.mark.parametrize(("game", "options"),
                         [(g, o) for g, opts in OPTIONS.items() for o in opts])
def test_every_bot_answers_a_legal_move(game: str, options: tuple[str, ...]) -> None:
    engine = get_engine(game)
    assert engine is not None
    for n, plies in enumerate((0, 5, 16)):
        pos = random_position(engine, options, plies, seed=n)
        legal = texts(engine, pos)
        for bot in ALL_TINY:
            assert bot.choose(engine, pos, seed=n) in legal, (bot.name, plies)


@pytest.mark.parametrize("game", sorted(ENGINES))
def test_bot1_itself_answers_a_legal_move(game: str) -> None:
    engine = get_engine(game)
    assert engine is not None
    bot = get_bot("bot1")
    assert bot is not None
    pos = random_position(engine, (), 6, seed=3)
    decision = bot.decide(engine, pos, seed=1)
    assert decision.text in texts(engine, pos)
    assert decision.text == engine.format_move(pos, decision.move)
    assert -1.0 <= decision.value <= 1.0 and decision.seconds >= 0.0


def one_move_positions() -> dict[str, Any]:
    """Hand-built positions where the player to move has exactly one legal move.  (A
    Hexamoeba position always offers at least two: a single piece has three or more
    neighbours, a taller stack moves whole or split.)"""
    cells = [amoeba_rules.EMPTY] * 72  # no holes, so no slides
    geo = amoeba_rules.geometry(False)
    for name, piece in (("a1", "K"), ("b2", "R"), ("a9", "k")):
        cells[geo.cell(name[0], name[1:]) or 0] = piece
    # the Black King may only step to a8: the rook holds the b file
    amoeba_pos = amoeba_rules.Position("".join(cells), 1, ())
    board = exnihilo_rules.board_of(4)
    centre = board.grid.index[board.grid.centre]
    beside = board.grid.index[board.grid.neighbours(board.grid.centre)[0]]
    stacks = tuple("" if i in (centre, beside) else "wb" for i in range(37))
    # only a 0-stack from the centre to its empty neighbour: every other cell is taken
    ex_pos = exnihilo_rules.Position(4, stacks, 0)
    honey = honeydonuts_rules.HoneyDonuts()
    start = honey.new()
    moves = honey.legal_moves(start)
    # forbid all but one first move by repetition: their positions "occurred" already
    seen = start.seen | {f"{honey.apply(start, m).cells}1" for m in moves[1:]}
    honey_pos = replace(start, seen=seen)
    return {"amoeba": amoeba_pos, "exnihilo": ex_pos, "honeydonuts": honey_pos}


@pytest.mark.parametrize("game", ["amoeba", "exnihilo", "honeydonuts"])
def test_the_only_move_is_played(game: str) -> None:
    engine = get_engine(game)
    assert engine is not None
    pos = one_move_positions()[game]
    [only] = texts(engine, pos)
    for bot in ALL_TINY:
        assert bot.choose(engine, pos, seed=5) == only
    assert TINY[2].decide(engine, pos).reason == "only move"


@pytest.mark.parametrize("game", sorted(WIN_IN_ONE))
def test_a_win_in_one_is_taken(game: str) -> None:
    engine = get_engine(game)
    assert engine is not None
    pos = engine.play_all(engine.new(), WIN_IN_ONE[game])
    legal = texts(engine, pos)
    winning = {t for t in legal if wins_at_once(engine, pos, t)}
    assert winning and winning != legal
    for bot in TINY:
        decision = bot.decide(engine, pos, seed=9)
        assert decision.text in winning and decision.reason == "wins at once"
    # with no time at all it still answers, legally
    hurried = SearchBot(replace(LEVELS[0], seconds=0.0))
    assert hurried.choose(engine, pos, seed=1) in legal


def test_the_bots_own_level_takes_the_win_too() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    pos = engine.play_all(engine.new(), WIN_IN_ONE["honeydonuts"])
    for name in ("bot1", "bot2", "bot3"):
        bot = get_bot(name)
        assert bot is not None and bot.choose(engine, pos) == "b1-c2"


def test_a_bot_avoids_a_loss_in_one_when_it_can() -> None:
    # Honey Donuts: after a1-b1 Blue must not leave Red the push b1-c2 of its King...
    engine = get_engine("honeydonuts")
    assert engine is not None
    pos = engine.play_all(engine.new(), ("a1-b1",))
    for seed in range(3):
        text = TINY[2].choose(engine, pos, seed=seed)
        after, _ = engine.play(pos, text)
        assert not any(wins_at_once(engine, after, t) for t in texts(engine, after)), text


def test_finished_games_are_refused() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    over = engine.play_all(engine.new(), (*WIN_IN_ONE["honeydonuts"], "b1-c2"))
    assert engine.outcome(over) is not None
    for bot in ALL_TINY:
        with pytest.raises(ValueError, match="over"):
            bot.choose(engine, over)
        with pytest.raises(ValueError, match="over"):
            bot.accepts_draw(engine, over, 0, plies=3)


# -- seeds and budgets ------------------------------------------------------------------
@pytest.mark.parametrize("game", sorted(ENGINES))
def test_the_same_seed_gives_the_same_move(game: str) -> None:
    engine = get_engine(game)
    assert engine is not None
    pos = random_position(engine, (), 4, seed=11)
    for bot in ALL_TINY:
        first = bot.decide(engine, pos, seed=123)
        again = bot.decide(engine, pos, seed=123)
        assert (first.text, first.iterations, first.value) == (
            again.text, again.iterations, again.value)


def test_iterations_stay_within_the_budget() -> None:
    engine = get_engine("hexamoeba")
    assert engine is not None
    pos = engine.new()
    bot = TINY[0]
    assert isinstance(bot, SearchBot)
    decision = bot.decide(engine, pos, seed=2)
    assert 0 < decision.iterations <= bot.budget(engine).iterations
    no_time = SearchBot(replace(LEVELS[0], seconds=0.0)).decide(engine, pos, seed=2)
    assert no_time.iterations <= 1 and no_time.text in texts(engine, pos)


def test_random_bot_is_uniform_enough_and_repeatable() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    pos = engine.new()
    bot = RandomBot()
    chosen = {bot.choose(engine, pos, seed=s) for s in range(60)}
    assert chosen == texts(engine, pos)
    assert bot.choose(engine, pos, seed=4) == bot.choose(engine, pos, seed=4)


# -- draw offers and undo requests --------------------------------------------------------
def test_undo_requests_are_always_granted() -> None:
    for name, engine in ENGINES.items():
        pos = engine.new()
        for bot_name in BOT_NAMES:
            bot = get_bot(bot_name)
            assert bot is not None
            assert bot.accepts_undo(engine, pos, 0) and bot.accepts_undo(engine, pos, 1), name


def test_a_draw_is_refused_when_winning_and_accepted_when_losing() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    pos = engine.play_all(engine.new(), WIN_IN_ONE["honeydonuts"])  # Red wins at once
    bot = TINY[0]
    assert bot.estimate(engine, pos, 0) == 1.0 > DRAW_MARGIN
    assert not bot.accepts_draw(engine, pos, 0, plies=2)
    assert not bot.accepts_draw(engine, pos, 0, plies=1000)
    assert bot.estimate(engine, pos, 1) == -1.0
    assert bot.accepts_draw(engine, pos, 1, plies=2)
    # the random mover has no opinion (0): it agrees once the game has run long enough
    assert not RandomBot().accepts_draw(engine, pos, 0, plies=2)
    assert RandomBot().accepts_draw(engine, pos, 0, plies=DRAW_PLIES)


def test_the_draw_rule_follows_the_estimate_and_its_margin() -> None:
    engine = get_engine("amoeba")
    assert engine is not None
    pos = engine.new()

    class Opinionated(SearchBot):
        def __init__(self, opinion: float) -> None:
            super().__init__(LEVELS[0])
            self.opinion = opinion

        def estimate(self, engine: AnyEngine, pos: Any, seat: int) -> float:
            return self.opinion

    # early on, only a bot that stands clearly worse agrees: nobody gains rating from
    # a stronger bot by a draw at once
    assert Opinionated(-DRAW_MARGIN).accepts_draw(engine, pos, 0, plies=0)
    assert not Opinionated(-DRAW_MARGIN + 0.01).accepts_draw(engine, pos, 0, plies=0)
    assert not Opinionated(0.0).accepts_draw(engine, pos, 0, plies=DRAW_PLIES - 1)
    # later, any bot that does not stand clearly better
    assert Opinionated(DRAW_MARGIN).accepts_draw(engine, pos, 0, plies=DRAW_PLIES)
    assert not Opinionated(DRAW_MARGIN + 0.01).accepts_draw(engine, pos, 0, plies=10**6)
    assert Opinionated(-0.9).accepts_draw(engine, pos, 1, plies=1)


def test_hexamoeba_agreement_counts_stacks_and_is_never_a_loss() -> None:
    engine = get_engine("hexamoeba")
    assert engine is not None
    # White's Kernel climbs onto c3: White controls 10 stacks, Black 11
    pos = engine.play_all(engine.new(), ("b3-c3",))
    assert engine.agreed_outcome(pos).winner == 1
    bot = TINY[0]
    assert bot.accepts_draw(engine, pos, 1, plies=1)  # Black wins by agreement
    assert not bot.accepts_draw(engine, pos, 0, plies=1)  # White would lose by agreement
    assert not RandomBot().accepts_draw(engine, pos, 0, plies=DRAW_PLIES)


# -- matches -------------------------------------------------------------------------------
def test_a_match_alternates_colours_and_counts_everything() -> None:
    engine = get_engine("honeydonuts")
    assert engine is not None
    heard: list[int] = []
    result = play_match(engine, RandomBot(), TINY[0], 4, seed=3,
                        on_game=lambda n, record: heard.append(n))
    assert heard == [0, 1, 2, 3]
    assert [g.first for g in result.games] == ["a", "b", "a", "b"]
    assert result.wins_a + result.wins_b + result.draws == 4
    assert result.wins_b >= 3  # a searching bot against the random mover
    plies = sum(g.plies for g in result.games)
    assert result.times["a"].count + result.times["b"].count == plies
    assert result.times["b"].longest >= result.times["b"].mean > 0.0
    assert result.score_line() == (f"random {result.wins_a} - bot1 {result.wins_b} "
                                   f"({result.draws} draws)")
    for record in result.games:
        replayed = engine.play_all(engine.new(), record.moves)
        outcome = engine.outcome(replayed)
        assert outcome is not None and outcome.reason == record.reason
        winner_seat = None if record.winner is None else (record.winner != record.first)
        assert outcome.winner == (None if winner_seat is None else int(winner_seat))


def test_a_match_is_repeatable_and_the_move_limit_draws() -> None:
    engine = get_engine("exnihilo")
    assert engine is not None
    one = play_match(engine, RandomBot(), RandomBot(), 3, ("-small",), seed=8)
    two = play_match(engine, RandomBot(), RandomBot(), 3, ("-small",), seed=8)
    assert one.games == two.games
    capped = play_match(engine, RandomBot(), RandomBot(), 2, seed=1, max_plies=2)
    assert capped.draws == 2
    assert all(g.plies == 2 and g.reason == "move limit of 2 plies" for g in capped.games)


def test_play_game_reports_every_move() -> None:
    engine = get_engine("hexamoeba")
    assert engine is not None
    seats: list[int] = []
    winner, plies, reason, moves = play_game(
        engine, RandomBot(), RandomBot(), seed=5, max_plies=400,
        on_move=lambda seat, seconds: seats.append(seat))
    assert len(moves) == plies == len(seats) and seats[:4] == [0, 1, 0, 1]
    assert winner in (0, 1, None) and reason


# -- the command line -------------------------------------------------------------------------
def test_rules_play_prints_games_and_score() -> None:
    result = CliRunner().invoke(main, ["rules", "play", "honeydonuts", "random", "bot1",
                                       "-n", "2", "--seed", "4", "-o", "-simple"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("game 1: random (Red) vs bot1 (Blue): ")
    assert lines[1].startswith("game 2: bot1 (Red) vs random (Blue): ")
    assert lines[2].startswith("random ") and lines[2].endswith(" draws)")
    assert lines[3].startswith("random: ") and "CPU time a move: mean" in lines[3]
    assert lines[4].startswith("bot1: ") and len(lines) == 5


def test_rules_play_same_bot_twice_and_move_limit() -> None:
    result = CliRunner().invoke(main, ["rules", "play", "amoeba", "random", "RANDOM",
                                       "--max-plies", "3"])
    assert result.exit_code == 0, result.output
    assert "draw after 3 plies, move limit of 3 plies" in result.output
    assert "random(A) 0 - random(B) 0 (2 draws)" in result.output


def test_rules_play_refuses_unknown_bots_and_games() -> None:
    bad = CliRunner().invoke(main, ["rules", "play", "honeydonuts", "random", "deep-blue"])
    assert bad.exit_code == 2 and "unknown bot 'deep-blue'" in bad.output
    assert CliRunner().invoke(main, ["rules", "play", "chess", "random", "bot1"]).exit_code == 2
    opt = CliRunner().invoke(main, ["rules", "play", "honeydonuts", "random", "bot1",
                                    "-o", "-x"])
    assert opt.exit_code == 1 and "unknown option" in opt.output


# -- purity ------------------------------------------------------------------------------------
def test_the_bots_package_imports_only_the_standard_library_and_the_games() -> None:
    root = Path(__file__).resolve().parent.parent / "pbmserv" / "bots"
    files = sorted(root.glob("*.py"))
    assert len(files) >= 8
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                ok = (top in sys.stdlib_module_names or top == "__future__"
                      or name.startswith(("pbmserv.games", "pbmserv.bots")))
                assert ok, f"{path.name} imports {name}"
