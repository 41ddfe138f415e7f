"""Strength and speed of the bots, per game: the figures of docs/bots.md.

For every game (default options) it plays bot1 against the random mover and bot3
against bot1, colours alternating, and times every bot move (CPU seconds).  Then it
times each level on positions taken from those games, so that bot2 is measured too.

    nice -n 10 .venv/bin/python bench/bots.py --games 20
    nice -n 10 .venv/bin/python bench/bots.py --game honeydonuts --games 4

The machine it runs on should be otherwise idle enough for the bots' CPU time caps
to be the limit that matters; the caps count process CPU time, not wall time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from pbmserv.bots import LEVELS, Bot, MatchResult, MoveTimes, get_bot, play_match
from pbmserv.games import ENGINES, AnyEngine


@dataclass
class GameFigures:
    game: str
    versus_random: MatchResult
    versus_bot1: MatchResult
    #: level name -> CPU seconds of its moves: in the matches, and on sampled positions
    times: dict[str, MoveTimes]
    wall: float


def rate(result: MatchResult) -> str:
    games = len(result.games)
    return (f"{result.wins_a}-{result.draws}-{result.wins_b} "
            f"({100 * result.wins_a / games:.0f} %)")


def sample_positions(engine: AnyEngine, result: MatchResult, count: int, seed: int
                     ) -> list[Any]:
    """Up to ``count`` unfinished positions from the games of ``result``."""
    rng = random.Random(seed)
    found = []
    for record in result.games:
        pos = engine.new()
        positions = []
        for text in record.moves:
            positions.append(pos)
            pos, _ = engine.play(pos, text)
        found.extend(positions)
    rng.shuffle(found)
    return found[:count]


def bot(name: str) -> Bot:
    found = get_bot(name)
    assert found is not None
    return found


def measure(game: str, games: int, timed: int, seed: int) -> GameFigures:
    engine = ENGINES[game]
    start = time.time()

    def progress(label: str) -> Any:
        def hear(number: int, record: Any) -> None:
            print(f"  {game} {label} game {number + 1}: first {record.first}, "
                  f"winner {record.winner}, {record.plies} plies, {record.reason}",
                  file=sys.stderr, flush=True)
        return hear

    versus_random = play_match(engine, bot("bot1"), bot("random"), games, seed=seed,
                               on_game=progress("bot1-random"))
    versus_bot1 = play_match(engine, bot("bot3"), bot("bot1"), games, seed=seed,
                             on_game=progress("bot3-bot1"))
    times = {level.name: MoveTimes() for level in LEVELS}
    for name, recorded in (("bot1", versus_random.times["a"]), ("bot1", versus_bot1.times["b"]),
                           ("bot3", versus_bot1.times["a"])):
        times[name].count += recorded.count
        times[name].total += recorded.total
        times[name].longest = max(times[name].longest, recorded.longest)
    for level in LEVELS:
        player = bot(level.name)
        for n, pos in enumerate(sample_positions(engine, versus_bot1, timed, seed)):
            times[level.name].add(player.decide(engine, pos, seed=n).seconds)
    return GameFigures(game, versus_random, versus_bot1, times, time.time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", action="append", choices=sorted(ENGINES),
                        help="only this game (repeatable); default: all four")
    parser.add_argument("--games", type=int, default=20, help="games per match")
    parser.add_argument("--timed", type=int, default=20,
                        help="positions on which each level is timed")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    figures = [measure(game, args.games, args.timed, args.seed)
               for game in (args.game or sorted(ENGINES))]
    print("| game | bot1 vs random (W-D-L) | bot3 vs bot1 (W-D-L) | plies a game "
          "(bot3-bot1) | wall time |")
    print("|---|---|---|---|---|")
    for f in figures:
        plies = [g.plies for g in f.versus_bot1.games]
        print(f"| {f.game} | {rate(f.versus_random)} | {rate(f.versus_bot1)} | "
              f"{statistics.mean(plies):.0f} | {f.wall / 60:.0f} min |")
    print()
    print("| game | level | cap | moves timed | CPU s a move: mean | max |")
    print("|---|---|---|---|---|---|")
    for f in figures:
        for level in LEVELS:
            t = f.times[level.name]
            print(f"| {f.game} | {level.name} | {level.seconds:g} s | {t.count} | "
                  f"{t.mean:.3f} | {t.longest:.3f} |")
    print()
    slowest = max(f.times[lv.name].longest / lv.seconds for f in figures for lv in LEVELS)
    print(f"slowest move as a share of its level's cap: {100 * slowest:.0f} %")


if __name__ == "__main__":
    main()
