"""The bots' search on fixed positions with fixed node budgets: which move each
chooses, and how much CPU the search takes.

For every game (default options, and Amoeba's -small board) it takes unfinished
positions from random games (seeded), and lets the search of each budget in
``--iterations`` choose a move in each with that many iterations (positions visited,
for alpha-beta) and no time limit, so that the choice does not depend on the
machine's speed.  It prints the CPU seconds per game and budget and a digest of the
moves chosen; ``--record FILE`` writes the moves (JSON), ``--compare FILE`` says
which differ from a file written before.

    nice -n 5 .venv/bin/python bench/bot_search.py --record /tmp/before.json
    nice -n 5 .venv/bin/python bench/bot_search.py --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbmserv.bots.alphabeta import AlphaBeta  # noqa: E402
from pbmserv.bots.mcts import Search  # noqa: E402
from pbmserv.bots.per_game import knowledge_for  # noqa: E402
from pbmserv.bots.search import Budget  # noqa: E402
from pbmserv.games import AnyEngine, get_engine  # noqa: E402

#: (game, options, positions, the plies of random play before the first one)
GAMES: tuple[tuple[str, tuple[str, ...], int, int], ...] = (
    ("amoeba", (), 6, 6),
    ("amoeba", ("-small",), 6, 6),
    ("exnihilo", (), 10, 4),
    ("hexamoeba", (), 10, 4),
    ("honeydonuts", (), 10, 4),
)


def positions(engine: AnyEngine, options: tuple[str, ...], count: int, skip: int,
              seed: int) -> list[Any]:
    """``count`` positions that make the search think, each from its own random game,
    ``skip`` to ``skip + 30`` plies in (fewer where the game ends sooner): the game is
    not over, and the player to move has more than one move and none that wins at
    once."""
    rng = random.Random(seed)
    out: list[Any] = []
    while len(out) < count:
        pos = engine.new(engine.check_options(options))
        for _ in range(skip + rng.randrange(31)):
            after = engine.apply(pos, rng.choice(engine.legal_moves(pos)))
            if engine.outcome(after) is not None:
                break
            pos = after
        if thinking(engine, pos):
            out.append(pos)
    return out


def thinking(engine: AnyEngine, pos: Any) -> bool:
    """Whether the search must think in ``pos``: more than one move, none that wins."""
    moves = engine.legal_moves(pos)
    mover = engine.to_move(pos)
    return len(moves) > 1 and not any(
        (end := engine.outcome(engine.apply(pos, m))) is not None and end.winner == mover
        for m in moves)


def choose(engine: AnyEngine, pos: Any, iterations: int, seed: int) -> tuple[str, int]:
    """The move the game's search chooses with ``iterations`` and no time limit, and
    the iterations it used."""
    k = knowledge_for(engine)
    searcher = AlphaBeta if k.search == "alphabeta" else Search
    found = searcher(engine, k, random.Random(seed)).run(pos, Budget(iterations, 1e9))
    return engine.format_move(pos, found.move), found.iterations


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, action="append",
                    help="a node budget (repeatable); default 100 and 800")
    ap.add_argument("--game", action="append", help="only this game (repeatable)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="search each position this many times; the least CPU counts")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--record", type=Path, help="write the moves chosen to this file")
    ap.add_argument("--compare", type=Path, help="compare the moves with this file")
    args = ap.parse_args()
    budgets = args.iterations or [100, 800]
    chosen: dict[str, list[str]] = {}
    print("| game | iterations | positions | iterations used | CPU s | CPU ms a "
          "position | moves digest |")
    print("|---|---|---|---|---|---|---|")
    total = 0.0
    for game, options, count, skip in GAMES:
        if args.game and game not in args.game:
            continue
        engine = get_engine(game)
        assert engine is not None
        label = " ".join((game, *options))
        found = positions(engine, options, count, skip, args.seed)
        for budget in budgets:
            moves: list[str] = []
            used = 0
            cpu = 0.0
            for n, pos in enumerate(found):
                least = float("inf")
                for _ in range(args.repeat):
                    start = time.process_time()
                    text, spent = choose(engine, pos, budget, n)
                    least = min(least, time.process_time() - start)
                moves.append(text)
                used += spent
                cpu += least
            total += cpu
            chosen[f"{label} {budget}"] = moves
            digest = hashlib.sha256("\n".join(moves).encode()).hexdigest()[:12]
            print(f"| {label} | {budget} | {len(found)} | {used} | {cpu:.2f} | "
                  f"{1000 * cpu / len(found):.0f} | {digest} |", flush=True)
    print(f"\nCPU seconds in all: {total:.2f}")
    if args.record:
        args.record.write_text(json.dumps(chosen, indent=1) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [(key, i, old, new) for key, moves in chosen.items()
                  for i, (old, new) in enumerate(zip(before.get(key, []), moves, strict=False))
                  if old != new]
        missing = sorted(set(before) ^ set(chosen))
        for key, i, old, new in differ:
            print(f"differs: {key} position {i}: {old} before, {new} now")
        print(f"moves compared: {sum(len(m) for m in chosen.values())}, "
              f"differing: {len(differ)}, budgets not in both: {len(missing)}")


if __name__ == "__main__":
    main()
