"""What the bots know of Amoeba: material, mobility, threats and the Kings.

A position is judged for the side to move by material (pawns worth more the fewer
squares still stand ahead of them: they promote when none do), the number of chess
moves of each side (slides left out), the best capture the side to move has and
the worst its opponent threatens, whether the side to move is in check, and how many
safe cells each King could step to.  The engine says which cells each piece attacks
(``Amoeba.attacks``); this module weighs them.

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

VALUE = {"P": 1.0, "N": 3.0, "B": 3.25, "R": 5.0, "Q": 9.0, "K": 0.0}
PIECE_VALUE = {**VALUE, **{k.lower(): v for k, v in VALUE.items()}, EMPTY: 0.0, HOLE: 0.0}
#: value of a pawn with no square ahead of it (it promotes) is that of a queen; one
#: with n squares ahead is worth this much more than a plain pawn
PAWN_BONUS = (7.0, 1.2, 0.6, 0.3, 0.15, 0.05, 0.0, 0.0, 0.0, 0.0)
NONE = 99.0
#: how many turns the root plays and judges in full before the search
ROOT_EXACT = 60


RULES = Amoeba


def side_map(cells: str, geo: Geometry, colour: int
             ) -> tuple[list[float], int, float, list[int], list[int]]:
    """(cheapest attacker per cell, chess mobility, material, the cells next to the
    King, the cells of the pieces) of ``colour``: the mobility counts the moves of its
    pieces but pawns and King (``Amoeba.attacks``); the King's cells are those it
    attacks."""
    least = [NONE] * len(cells)
    mobility = 0
    material = 0.0
    white = colour == 0
    w = geo.width
    king: list[int] = []
    pieces: list[int] = []
    for s, piece, targets in RULES.attacks(cells, geo, colour):
        pieces.append(s)
        kind = piece.upper()
        value = VALUE[kind]
        if kind in "PK":  # they count for no mobility
            for t in targets:
                if value < least[t]:
                    least[t] = value
            if kind == "K":
                king = targets
            else:
                ahead = cells[s + w::w] if white else cells[s - w::-w] if s >= w else ""
                material += 1.0 + PAWN_BONUS[len(ahead) - ahead.count(HOLE)]
            continue
        material += value
        for t in targets:
            if value < least[t]:
                least[t] = value
            c = cells[t]
            if c == EMPTY or c.isupper() != white:
                mobility += 1
    return least, mobility, material, king, pieces


def _best_capture(cells: str, by: list[float], guard: list[float], victims: list[int]
                  ) -> float:
    """The most a side that attacks cells as ``by`` says can win by one capture of a
    piece on ``victims`` guarded as ``guard`` says (a crude exchange)."""
    best = 0.0
    for t in victims:
        if by[t] == NONE:
            continue
        victim = PIECE_VALUE[cells[t]]  # a King is worth nothing here
        gain = victim if guard[t] == NONE else victim - by[t]
        best = max(best, gain)
    return best


def _king_room(cells: str, colour: int, steps: list[int], enemy: list[float]) -> int:
    """How many of the King's ``steps`` lead to a cell it could take or step to
    unattacked."""
    white = colour == 0
    return sum(1 for t in steps
               if enemy[t] == NONE and (cells[t] == EMPTY or cells[t].isupper() != white))


def score(engine: Amoeba, pos: Position) -> float:
    """The value for the player to move, in [-1, 1]."""
    cells, geo, turn = pos.cells, pos.geo, pos.turn
    mine, mob_m, mat_m, king_m, pieces_m = side_map(cells, geo, turn)
    theirs, mob_t, mat_t, king_t, pieces_t = side_map(cells, geo, 1 - turn)
    s = mat_m - mat_t + 0.04 * (mob_m - mob_t)
    s += 0.8 * _best_capture(cells, mine, theirs, pieces_t)
    s -= 0.3 * _best_capture(cells, theirs, mine, pieces_m)
    king = cells.find("K" if turn == 0 else "k")
    if king >= 0 and theirs[king] != NONE:
        s -= 0.5
    s += 0.15 * (_king_room(cells, turn, king_m, theirs)
                 - _king_room(cells, 1 - turn, king_t, mine))
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
    # the static evaluation is sharp (material, threats, King safety): the search does
    # best trusting it, exploring little and deep (measured: docs/benchmarks.md)
    exploration = 0.15
    widen_base = 2.0
    widen_power = 0.5
    playout_plies = 0
    iteration_scale = 2.0
    search = "alphabeta"
    root_width = ROOT_EXACT
    reply_width = ROOT_EXACT

    #: below the root, consider only the turns without a slide (when there are any)
    quiet_tree = 1.0

    def tree_moves(self, engine: AnyEngine, pos: Position) -> tuple[list[Any], bool]:
        assert isinstance(engine, Amoeba)
        if self.quiet_tree:
            quiet = engine.chess_turns(pos)
            if quiet:
                return list(quiet), False
        return engine.legal_moves(pos), True

    def noisy_moves(self, engine: AnyEngine, pos: Position) -> tuple[list[Any], bool] | None:
        """When in check, every turn without a slide (one must be made; every turn if
        only slides save the King), else the captures and promotions among them."""
        assert isinstance(engine, Amoeba)
        turns = engine.chess_turns(pos)
        if engine.in_check(pos):
            return (list(turns) or engine.legal_moves(pos)), True
        cells = pos.cells
        noisy = [t for t in turns if cells[t.to] != EMPTY or t.promotion]
        return (noisy, False) if noisy else None

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
        plain = sign * self.evaluate(engine, engine.slid(pos, None))
        slides: dict[tuple[int, int], float] = {}
        for move in moves:
            if move.slide is not None and move.slide not in slides:
                slid = engine.slid(pos, move.slide)
                slides[move.slide] = sign * self.evaluate(engine, slid) - plain - 0.001
        guessed = sorted(
            ((chess[(m.frm, m.to, m.promotion)] + (slides[m.slide] if m.slide else 0.0),
              rng.random(), m) for m in moves),
            key=lambda t: (t[0], t[1]), reverse=True)
        exact = self.order_by_evaluation(
            engine, pos, [m for *_, m in guessed[:ROOT_EXACT]], rng)
        return exact + [Candidate(m) for *_, m in guessed[ROOT_EXACT:]]

    def wins_at_once(self, engine: AnyEngine, pos: Position, move: Turn) -> bool:
        """A mate: a turn that gives check and leaves no turn (a stalemate is no win)."""
        assert isinstance(engine, Amoeba)
        after = engine.apply(pos, move)
        return engine.in_check(after) and engine.outcome(after) is not None
