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
import time
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


# -- turns without a slide, found faster than the engine finds all turns -------------------
def attacked(cells: Sequence[str], geo: Geometry, target: int, white: bool) -> bool:
    """Whether a piece of White (``white``) or Black attacks ``target``."""
    case = str.upper if white else str.lower
    knight, king, pawn = case("N"), case("K"), case("P")
    rook, bishop, queen = case("R"), case("B"), case("Q")
    for t in geo.knight[target]:
        if cells[t] == knight:
            return True
    for d, ray in enumerate(geo.rays[target]):
        straight = d < 4
        for n, t in enumerate(ray):
            c = cells[t]
            if c == EMPTY:
                continue
            if c == HOLE:
                break
            if c == queen or c == (rook if straight else bishop) or (n == 0 and c == king):
                return True
            if n == 0 and c == pawn and not straight and ((t < target) == white):
                return True
            break
    return False


def chess_turns(pos: Position, limit: int = 0) -> list[Turn]:
    """The legal turns that slide nothing, in the order of ``Amoeba.legal_moves``; only
    the first ``limit`` found when ``limit`` is not 0."""
    cells = list(pos.cells)
    geo = pos.geo
    w = geo.width
    colour = pos.turn
    white = colour == 0
    king = "K" if white else "k"
    small = pos.small
    last_rank = "-promote" in pos.options
    choices = "RBN" if small else "QRBN"
    out: list[Turn] = []

    def own(c: str) -> bool:
        return c not in (EMPTY, HOLE) and c.isupper() == white

    def enemy(c: str) -> bool:
        return c not in (EMPTY, HOLE) and c.isupper() != white

    def add(s: int, t: int) -> None:
        piece, taken = cells[s], cells[t]
        cells[t], cells[s] = piece, EMPTY
        at = cells.index(king) if king in cells else -1
        if at < 0 or not attacked(cells, geo, at, not white):
            if piece.upper() == "P" and (
                    t // w == (geo.height - 1 if white else 0) if last_rank
                    else all(cells[x] == HOLE for x in geo.ahead(t, colour))):
                out.extend(Turn(s, t, None, p) for p in choices)
            else:
                out.append(Turn(s, t))
        cells[s], cells[t] = piece, taken

    for s, piece in enumerate(pos.cells):
        if limit and len(out) >= limit:
            return out[:limit]
        if not own(piece):
            continue
        kind = piece.upper()
        if kind == "P":
            fwd = w if white else -w
            t = s + fwd
            if 0 <= t < len(cells):
                if cells[t] == EMPTY:
                    add(s, t)
                    t2 = t + fwd
                    if (not small and s // w == (1 if white else geo.height - 2)
                            and 0 <= t2 < len(cells) and cells[t2] == EMPTY):
                        add(s, t2)
                for df in (-1, 1):
                    f = s % w + df
                    if 0 <= f < w and enemy(cells[t - s % w + f]):
                        add(s, t - s % w + f)
        elif kind == "N":
            for t in geo.knight[s]:
                if cells[t] == EMPTY or enemy(cells[t]):
                    add(s, t)
        else:
            dirs = range(8) if kind in "QK" else range(4) if kind == "R" else range(4, 8)
            for d in dirs:
                for t in geo.rays[s][d]:
                    c = cells[t]
                    if c == HOLE:
                        break
                    if c == EMPTY:
                        add(s, t)
                    else:
                        if enemy(c):
                            add(s, t)
                        break
                    if kind == "K":
                        break
    return out[:limit] if limit else out


def in_check(pos: Position) -> bool:
    """Whether the player to move stands in check."""
    king = pos.cells.find("K" if pos.turn == 0 else "k")
    return king >= 0 and attacked(pos.cells, pos.geo, king, pos.turn == 1)


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

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        if chess_turns(pos, 1):  # a turn without a slide: not over (quicker to find)
            return None, None
        return engine.outcome(pos), None

    #: below the root, consider only the turns without a slide (when there are any)
    quiet_tree = 1.0

    def tree_moves(self, engine: AnyEngine, pos: Position) -> tuple[list[Any], bool]:
        if self.quiet_tree:
            quiet = chess_turns(pos)
            if quiet:
                return list(quiet), False
        return engine.legal_moves(pos), True

    def noisy_moves(self, engine: AnyEngine, pos: Position) -> tuple[list[Any], bool] | None:
        """When in check, every turn without a slide (one must be made; every turn if
        only slides save the King), else the captures and promotions among them."""
        turns = chess_turns(pos)
        if in_check(pos):
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

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[Turn],
                     deadline: float = math.inf) -> Turn | None:
        """A mate: a turn that gives check and leaves no turn (a stalemate is no win)."""
        for move in moves:
            after = engine.apply(pos, move)
            if in_check(after) and not chess_turns(after, 1) and engine.outcome(after):
                return move
            if time.process_time() > deadline:
                break
        return None
