"""What the bots know of Ex nihilo: mobility and hostages.

The player to move who has no legal turn loses, so a position is judged by how many
steps each side's own stacks could make (steps of 0-stacks from empty cells are
open to both sides alike and cancel out), by the stacks each side controls, and by
hostages: enemy stacks that a step could flank right now.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from typing import Any

from pbmserv.bots.knowledge import Candidate, Knowledge, seat_sign
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome
from pbmserv.games.exnihilo import COLOURS, MAX_CHAIN, Board, Position, Step, Turn

# -- the rules again, faster ----------------------------------------------------------
# The engine plays every step on the board to see whether it flanks.  Here a table of
# the first stack along every line from every cell answers that in a few look-ups:
# a step changes only its start and end cells, so only the line from the end cell
# back through the start cell needs a fresh look.  These functions give exactly the
# engine's turns, in the same order (tests/test_bots_knowledge.py compares them).


class _Lines:
    """What a step needs to know to see whether it flanks, worked out on demand for
    the board as it is before the step."""

    def __init__(self, cells: Sequence[str], board: Board, colour: str) -> None:
        self.cells = cells
        self.rays = board.rays
        self.colour = colour
        self._around: dict[int, list[tuple[int, int, int]]] = {}
        self._first: dict[tuple[int, int], int] = {}

    def first(self, cell: int, d: int) -> int:
        """The position along ray ``d`` from ``cell`` of the first stack, or -1."""
        key = (cell, d)
        at = self._first.get(key)
        if at is None:
            at = -1
            cells = self.cells
            for n, b in enumerate(self.rays[cell][d]):
                if cells[b]:
                    at = n
                    break
            self._first[key] = at
        return at

    def flanked_at(self, ray: Sequence[int], at: int, enemy: str, height: int) -> bool:
        """Whether a stack of ``height`` at the start of ``ray`` flanks ``enemy``, the
        first stack along it (position ``at``)."""
        colour = self.colour
        m = at + 1
        if enemy[-1] == colour or len(enemy) != height or len(ray) < 2 * m:
            return False
        cells = self.cells
        if any(cells[c] for c in ray[m: 2 * m - 1]):
            return False
        partner = cells[ray[2 * m - 1]]
        return bool(partner) and partner[-1] == colour and len(partner) == height

    def around(self, cell: int) -> list[tuple[int, int, int]]:
        """(direction, enemy cell, height) of every enemy stack that a stack of that
        height arriving on the empty ``cell`` would flank along that direction."""
        found = self._around.get(cell)
        if found is None:
            found = []
            for d, ray in enumerate(self.rays[cell]):
                at = self.first(cell, d)
                if at >= 0:
                    enemy = self.cells[ray[at]]
                    if self.flanked_at(ray, at, enemy, len(enemy)):
                        found.append((d, ray[at], len(enemy)))
            self._around[cell] = found
        return found

    def flanks(self, src: int, dst: int, back: int, dist: int, rest: str, height: int
               ) -> list[int]:
        """The enemy stacks that a stack of ``height`` (topped by the mover) moved from
        ``src`` to ``dst``, ``dist`` cells along ray ``back`` from ``dst``, flanks;
        ``rest`` is what stays on ``src``."""
        out = []
        for d, enemy_cell, h in self.around(dst):
            if d < back and h == height:
                out.append(enemy_cell)
        ray = self.rays[dst][back]
        if rest:
            if self.flanked_at(ray, dist - 1, rest, height):
                out.append(src)
        else:
            beyond = self.first(src, back)
            if beyond >= 0:
                at = dist + beyond
                if self.flanked_at(ray, at, self.cells[ray[at]], height):
                    out.append(ray[at])
        for d, enemy_cell, h in self.around(dst):
            if d > back and h == height:
                out.append(enemy_cell)
        return out


def _options(cells: list[str], board: Board, colour: str, hostages: Sequence[int] | None
             ) -> list[tuple[Step, list[int]]]:
    """The steps allowed here with the stacks each flanks (capture is compulsory)."""
    hostage = hostages is not None
    lines = _Lines(cells, board, colour)
    ring = board.ring
    land = landings(cells, board, colour)
    scored: list[tuple[Step, list[int]]] = []
    any_flank = False
    for a in range(len(cells)) if hostages is None else hostages:
        stack = cells[a]
        if not hostage and stack and stack[-1] != colour:
            continue
        ring_a = ring[a]
        h = len(stack)
        for d, ray in enumerate(board.rays[a]):
            back = (d + 3) % 6
            for dist, b in enumerate(ray, start=1):
                if cells[b]:
                    break
                gain = ring[b] - ring_a
                tall = land.get(b)
                if not stack:
                    if gain > 0:
                        flanked = (lines.flanks(a, b, back, dist, "", gain)
                                   if tall and gain in tall else [])
                        any_flank = any_flank or bool(flanked)
                        scored.append((Step(a, b, 0), flanked))
                    continue
                if gain > 0:
                    height = h + gain
                    flanked = (lines.flanks(a, b, back, dist, "", height)
                               if tall and height in tall else [])
                    any_flank = any_flank or bool(flanked)
                    scored.append((Step(a, b, h), flanked))
                for k in range(1, h):
                    rest = stack[: h - k]
                    height = k + max(gain, 0)
                    top = colour if gain > 0 else stack[-1]
                    if top == colour and tall and height in tall:
                        flanked = lines.flanks(a, b, back, dist, rest, height)
                        any_flank = any_flank or bool(flanked)
                    else:
                        flanked = []
                    scored.append((Step(a, b, k), flanked))
    if any_flank:
        scored = [(s, f) for s, f in scored if f]
    return scored


def _play(cells: list[str], board: Board, colour: str, step: Step) -> None:
    gain = max(0, board.ring[step.dst] - board.ring[step.src])
    stack = cells[step.src]
    if step.count == 0:
        moving = ""
    else:
        moving = stack[len(stack) - step.count:]
        cells[step.src] = stack[: len(stack) - step.count]
    cells[step.dst] = moving + colour * gain


def _extend(cells: list[str], board: Board, colour: str, hostages: Sequence[int] | None,
            done: Turn, out: list[Turn], first: bool) -> bool:
    """Add the turns that go on from ``done``; with ``first``, stop at the first one
    found (returns whether one was)."""
    if len(done) > MAX_CHAIN:
        return False
    for step, flanked in _options(cells, board, colour, hostages):
        turn = (*done, step)
        if not flanked:
            out.append(turn)
        else:
            after = list(cells)
            _play(after, board, colour, step)
            _extend(after, board, colour, flanked, turn, out, first)
        if first and out:
            return True
    return bool(out)


def turns(pos: Position) -> list[Turn]:
    """The legal turns of ``pos``, as ``ExNihilo.legal_moves`` gives them."""
    out: list[Turn] = []
    _extend(list(pos.cells), pos.board, COLOURS[pos.turn], None, (), out, False)
    return out


def _any_step(cells: Sequence[str], board: Board, colour: str) -> bool:
    """Whether ``colour`` has any step at all (captures left aside)."""
    ring = board.ring
    for a, stack in enumerate(cells):
        if stack and (stack[-1] != colour):
            continue
        if len(stack) >= 2:
            if any(not cells[ray[0]] for ray in board.rays[a] if ray):
                return True
            continue
        for ray in board.rays[a]:
            for b in ray:
                if cells[b]:
                    break
                if ring[b] > ring[a]:
                    return True
    return False


def landings(cells: Sequence[str], board: Board, colour: str) -> dict[int, set[int]]:
    """Where a stack of ``colour`` must arrive, and how tall it must be, to flank.

    A flanked stack E, topped by the enemy, stands on the board already or is what a
    step leaves of a stack of ``colour``; the first stack beyond it on some line is a
    partner of ``colour`` as tall as E, m cells away; and the flanking stack arrives m
    cells away on the other side, on a cell that is empty before the step.  No step
    that arrives elsewhere, or with another height, flanks anything.
    """
    rays = board.rays
    out: dict[int, set[int]] = {}
    for e, stack in enumerate(cells):
        if not stack:
            continue
        if stack[-1] != colour:
            heights = [len(stack)]
        else:
            heights = [k for k in range(len(stack) - 1, 0, -1) if stack[k - 1] != colour]
            if not heights:
                continue
        around = rays[e]
        for d in range(6):
            for m, p in enumerate(around[d], start=1):
                partner = cells[p]
                if not partner:
                    continue
                if partner[-1] == colour and len(partner) in heights:
                    other = around[(d + 3) % 6]
                    if len(other) >= m and not cells[other[m - 1]]:
                        out.setdefault(other[m - 1], set()).add(len(partner))
                break
    return out


def _flanking_steps(cells: list[str], board: Board, colour: str,
                    land: dict[int, set[int]]) -> list[tuple[Step, list[int]]]:
    """The steps that flank something, with what they flank (found from the cells
    where they must arrive, looking back along each line for what could come)."""
    lines = _Lines(cells, board, colour)
    ring = board.ring
    out = []
    for b, tall in land.items():
        for back, ray in enumerate(board.rays[b]):
            for dist, a in enumerate(ray, start=1):
                stack = cells[a]
                gain = ring[b] - ring[a]
                if not stack:
                    if gain > 0 and gain in tall:
                        flanked = lines.flanks(a, b, back, dist, "", gain)
                        if flanked:
                            out.append((Step(a, b, 0), flanked))
                    continue
                if stack[-1] == colour:
                    h = len(stack)
                    if gain > 0 and h + gain in tall:
                        flanked = lines.flanks(a, b, back, dist, "", h + gain)
                        if flanked:
                            out.append((Step(a, b, h), flanked))
                    for k in range(1, h):
                        if k + max(gain, 0) in tall:
                            flanked = lines.flanks(a, b, back, dist, stack[: h - k],
                                                   k + max(gain, 0))
                            if flanked:
                                out.append((Step(a, b, k), flanked))
                break
    return out


def turn_status(pos: Position) -> tuple[bool, bool]:
    """(whether the player to move has a legal turn, whether it must capture)."""
    colour = COLOURS[pos.turn]
    cells = list(pos.cells)
    land = landings(cells, pos.board, colour)
    if land:
        flanking = _flanking_steps(cells, pos.board, colour, land)
        if flanking:  # capture is compulsory: one of these must be completed
            for step, flanked in flanking:
                after = list(cells)
                _play(after, pos.board, colour, step)
                if _extend(after, pos.board, colour, flanked, (step,), [], True):
                    return True, True
            return False, True
    return _any_step(cells, pos.board, colour), False


def has_turn(pos: Position) -> bool:
    """Whether the player to move has a legal turn."""
    return turn_status(pos)[0]


def stack_figures(cells: Sequence[str], board: Board, colour: str) -> tuple[int, int]:
    """(stacks topped by ``colour``, steps those stacks could make)."""
    stacks = steps = 0
    ring = board.ring
    for a, stack in enumerate(cells):
        if not stack or stack[-1] != colour:
            continue
        stacks += 1
        h = len(stack)
        ring_a = ring[a]
        for ray in board.rays[a]:
            for b in ray:
                if cells[b]:
                    break
                steps += h - 1 + (ring[b] > ring_a)
    return stacks, steps


def score(pos: Position) -> float:
    """The value for the player to move, in [-1, 1]."""
    board = pos.board
    mine = stack_figures(pos.cells, board, COLOURS[pos.turn])
    theirs = stack_figures(pos.cells, board, COLOURS[1 - pos.turn])
    s = 0.25 * (mine[0] - theirs[0]) + 0.02 * (mine[1] - theirs[1])
    return math.tanh(s)


class ExNihiloKnowledge(Knowledge):
    exploration = 0.6
    widen_base = 2.0
    playout_plies = 0
    iteration_scale = 0.3

    def probe(self, engine: AnyEngine, pos: Position) -> tuple[Outcome | None, list[Any] | None]:
        if has_turn(pos):
            return None, None
        return engine.outcome(pos), None

    def moves(self, engine: AnyEngine, pos: Position) -> list[Any]:
        return turns(pos)

    #: how much the static judgement counts against the wins and losses the search finds
    value_scale = 1.0

    def evaluate(self, engine: AnyEngine, pos: Position) -> float:
        return self.value_scale * seat_sign(pos.turn) * score(pos)

    def order(self, engine: AnyEngine, pos: Position, moves: Sequence[Any], rng: random.Random,
              root: bool) -> list[Candidate]:
        """Wins first (the opponent is left without a turn), then the moves that force
        the opponent to capture, then the rest; each group by the static value."""
        sign = seat_sign(pos.turn)
        judged = []
        for move in moves:
            after = engine.apply(pos, move)
            alive, forced = turn_status(after)
            if alive:
                value = self.evaluate(engine, after)
                rank = 1 if forced else 0
            else:
                value, rank = sign, 2
            judged.append((rank, sign * value, rng.random(), Candidate(move, after, value)))
        judged.sort(key=lambda t: t[:3], reverse=True)
        return [c for *_, c in judged]

    def winning_move(self, engine: AnyEngine, pos: Position, moves: Sequence[Turn],
                     deadline: float = math.inf) -> Turn | None:
        for move in moves:
            if not has_turn(engine.apply(pos, move)):
                return move
            if time.process_time() > deadline:
                break
        return None
