"""The bots choose the moves they chose before they asked the engines for their rules.

The moves below were recorded with ``bench/bot_search.py --iterations 100`` at commit
729a63e, when the bots still generated Amoeba's and Ex nihilo's moves and judged
threats with copies of the rules of their own: the same positions (unfinished, from
seeded random games), the same search with 100 iterations and no time limit, and
the same seeds must give the same moves, move for move.
"""

from __future__ import annotations

import pytest

from bench.bot_search import GAMES, choose, positions
from pbmserv.games import get_engine

RECORDED: dict[str, list[str]] = {
    "amoeba": ["d8-f7,a7-b6", "e8-e6,f5-f6", "e6-f4,f5-g6", "f6-g8,c4-c5", "a3-b1,e4-c4",
               "d2-d4,f7-f6"],
    "amoeba -small": ["d5-e3,f3-g1", "c5-b4,f2-g3", "c5-b4,b4-d5", "e4-e5,a4-c3",
                      "b3-a5,d5-b4", "b3-a3,c2-c3"],
    "exnihilo": ["e5-e4,e3-d2", "e7:1-g5,h4-h1", "g4-h4", "e6-e3,g3-a5", "c3-c2", "d5-c5",
                 "e3-i3", "e6-e3,f2-f1", "g3-h2,h4-i4", "e4-c2"],
    "hexamoeba": ["d6-c6", "f5-e6", "e3>e6", "e2>c1", "e4>e2", "b5-d5", "e6>a3", "e4-e5",
                  "c5>e4", "c2-b2"],
    "honeydonuts": ["d4-c4", "a1-b2", "a2-b3", "d1-d2", "c1-c2", "a3-b3", "a3-b3", "e3-d4",
                    "e2-d3", "a3-b3"],
}


@pytest.mark.parametrize(("game", "options", "count", "skip"), GAMES,
                         ids=[" ".join((g, *o)) for g, o, *_ in GAMES])
def test_the_same_moves_as_before(game: str, options: tuple[str, ...], count: int,
                                  skip: int) -> None:
    engine = get_engine(game)
    assert engine is not None
    found = positions(engine, options, count, skip, seed=35)
    chosen = [choose(engine, pos, 100, n)[0] for n, pos in enumerate(found)]
    assert chosen == RECORDED[" ".join((game, *options))]
