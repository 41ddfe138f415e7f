"""What the bots know of Amoeba: material, mobility, threats and the Kings.

A position is judged for the side to move by material (pawns worth more the fewer
squares still stand ahead of them: they promote when none do), the number of chess
moves of each side (slides left out), the best capture the side to move has and
the worst its opponent threatens, whether the side to move is in check, and how many
safe cells each King could step to.

A position has about a thousand turns (a chess move times the possible slides), so
the search orders them cheaply: captures of big pieces by small ones first, then
promotions, then plain chess moves, then chess moves with a slide.  At the root,
where it matters most, every turn is played and judged before the search starts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.amoeba import EMPTY, HOLE, Amoeba, Geometry, Position, Turn
from pbmserv.games.base import Outcome

VALUE = {"P": 1.0, "N": 3.0, "B": 3.25, "R": 5.0, "Q": 9.0, "K": 0.0}
PIECE_VALUE = {**VALUE, **{k.lower(): v for k, v in VALUE.items()}, EMPTY: 0.0, HOLE: 0.0}
#: value of a pawn with no square ahead of it (it promotes) is that of a queen; one
#: with n squares ahead is worth this much more than a plain pawn
PAWN_BONUS = (7.0, 1.2, 0.6, 0.3, 0.15, 0.05, 0.0, 0.0, 0.0, 0.0)
NONE = 99.0
#: how many turns the root plays and judges in full before the search
ROOT_EXACT = 60


def side_map(cells: str, geo: Geometry, colour: int) -> tuple[list[float], int, float]:
    """(cheapest attacker per cell, chess mobility, material) of ``colour``."""
    least = [NONE] * len(cells)
    mobility = 0
    material = 0.0
    white = colour == 0
    rays, knights = geo.rays, geo.knight
    for s, piece in enumerate(cells):
        if piece in (EMPTY, HOLE) or piece.isupper() != white:
            continue
        kind = piece.upper()
        value = VALUE[kind]
        if kind == "P":
            ahead = 0
            for x in geo.ahead(s, colour):
                if cells[x] != HOLE:
                    ahead += 1
            material += 1.0 + PAWN_BONUS[ahead]
            for d in ((4, 7) if white else (5, 6)):
                if rays[s][d]:
                    t = rays[s][d][0]
                    if value < least[t]:
                        least[t] = value
            continue
        material += value
        if kind == "N":
            targets: Sequence[int] = knights[s]
            for t in targets:
                if value < least[t]:
                    least[t] = value
                c = cells[t]
                if c != HOLE and (c == EMPTY or c.isupper() != white):
                    mobility += 1
            continue
        dirs = range(8) if kind in "QK" else range(4) if kind == "R" else range(4, 8)
        for d in dirs:
            for t in rays[s][d]:
                c = cells[t]
                if c == HOLE:
                    break
                if value < least[t]:
                    least[t] = value
                if c == EMPTY:
                    if kind != "K":
                        mobility += 1
                    else:
                        break
                else:
                    if c.isupper() != white and kind != "K":
                        mobility += 1
                    break
    return least, mobility, material


def _best_capture(cells: str, by: list[float], guard: list[float], colour: int) -> float:
    """The most ``colour`` can win by one capture on this board (a crude exchange)."""
    best = 0.0
    white = colour == 0
    for t, c in enumerate(cells):
        if c in (EMPTY, HOLE) or c.isupper() == white or by[t] == NONE:
            continue
        victim = PIECE_VALUE[c] if c.upper() != "K" else 0.0
        gain = victim if guard[t] == NONE else victim - by[t]
        best = max(best, gain)
    return best


def _king_room(cells: str, geo: Geometry, colour: int, enemy: list[float]) -> int:
    king = cells.find("K" if colour == 0 else "k")
    if king < 0:
        return 0
    room = 0
    white = colour == 0
    for d in range(8):
        ray = geo.rays[king][d]
        if ray:
            t = ray[0]
            c = cells[t]
            if c != HOLE and (c == EMPTY or c.isupper() != white) and enemy[t] == NONE:
                room += 1
    return room


def score(engine: Amoeba, pos: Position) -> float:
    """The value for the player to move, in [-1, 1]."""
    cells, geo, turn = pos.cells, pos.geo, pos.turn
    mine, mob_m, mat_m = side_map(cells, geo, turn)
    theirs, mob_t, mat_t = side_map(cells, geo, 1 - turn)
    s = mat_m - mat_t + 0.04 * (mob_m - mob_t)
    s += 0.8 * _best_capture(cells, mine, theirs, turn)
    s -= 0.3 * _best_capture(cells, theirs, mine, 1 - turn)
    king = cells.find("K" if turn == 0 else "k")
    if king >= 0 and theirs[king] != NONE:
        s -= 0.5
    s += 0.15 * (_king_room(cells, geo, turn, theirs) - _king_room(cells, geo, 1 - turn, mine))
    return math.tanh(s / 8.0)


def _quick_prior(pos: Position, move: Turn) -> float:
    """A guess of a turn's worth without playing it."""
    cells = pos.cells
    victim = PIECE_VALUE[cells[move.to]]
    s = 0.0
    if victim:
        s += 10.0 * victim - PIECE_VALUE[cells[move.frm]]
    if move.promotion:
        s += 8.0 if move.promotion in "QR" else 2.0
    if move.slide is not None:
        s -= 1.0
    return s


class AmoebaKnowledge(Knowledge):
    exploration = 0.5
    widen_base = 2.0
    widen_power = 0.5
    playout_plies = 0
    iteration_scale = 0.1

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        return engine.outcome(pos), None

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        assert isinstance(engine, Amoeba)
        return seat_sign(pos.turn) * score(engine, pos)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        if root:
            return self._root_order(engine, pos, moves, rng)
        guessed = [(_quick_prior(pos, m), rng.random(), m) for m in moves]
        guessed.sort(key=lambda t: (t[0], t[1]), reverse=True)
        return [Candidate(m) for *_, m in guessed]

    def _root_order(self, engine: AnyEngine, pos: Position, moves: Sequence[Turn],
                    rng: random.Random) -> list[Candidate]:
        """Every turn judged as its chess move's value plus its slide's: each chess move
        is played and judged once (without a slide where it may go without), each slide
        is judged once on the board as it is; the best ``ROOT_EXACT`` turns by that
        sum are then played and judged in full."""
        assert isinstance(engine, Amoeba)
        sign = seat_sign(pos.turn)
        chess: dict[tuple[int, int, str | None], float] = {}
        for move in moves:
            key = (move.frm, move.to, move.promotion)
            if move.slide is None or key not in chess:
                chess[key] = sign * self.evaluate(engine, engine.apply(pos, move))
        base = Position(pos.cells, 1 - pos.turn, pos.options, pos.ko)
        plain = sign * self.evaluate(engine, base)
        slides: dict[tuple[int, int], float] = {}
        for move in moves:
            if move.slide is not None and move.slide not in slides:
                a, b = move.slide
                cells = list(pos.cells)
                cells[b], cells[a] = cells[a], HOLE
                slid = Position("".join(cells), 1 - pos.turn, pos.options, pos.ko)
                slides[move.slide] = sign * self.evaluate(engine, slid) - plain - 0.001
        guessed = sorted(
            ((chess[(m.frm, m.to, m.promotion)] + (slides[m.slide] if m.slide else 0.0),
              rng.random(), m) for m in moves),
            key=lambda t: (t[0], t[1]), reverse=True)
        exact = self.order_by_evaluation(
            engine, pos, [m for *_, m in guessed[:ROOT_EXACT]], rng)
        return exact + [Candidate(m) for *_, m in guessed[ROOT_EXACT:]]

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[Turn]
                     ) -> Turn | None:
        assert isinstance(engine, Amoeba)
        for move in moves:
            after = engine.apply(pos, move)
            if engine.in_check(after) and engine.outcome(after) is not None:
                return move
        return None
