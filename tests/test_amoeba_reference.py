"""Amoeba's turn generator against a slow, separately written reference.

The reference works on a dict of named cells, builds every chess move, every slide and
every promotion from the rules text alone, and judges check by asking each enemy piece
whether it attacks the king. Random games on every option set must agree turn by turn.
"""

from __future__ import annotations

import random

import pytest

from pbmserv.games.amoeba import Amoeba, Position

E = Amoeba()
Board = dict[tuple[int, int], str]  # (file, rank) -> "#", "." or a piece letter


def to_board(pos: Position) -> tuple[Board, int, int]:
    w, h = pos.geo.width, pos.geo.height
    return {(i % w, i // w): c for i, c in enumerate(pos.cells)}, w, h


def name(sq: tuple[int, int]) -> str:
    return f"{chr(97 + sq[0])}{sq[1] + 1}"


def mine(piece: str, white: bool) -> bool:
    return piece not in "#." and piece.isupper() == white


def theirs(piece: str, white: bool) -> bool:
    return piece not in "#." and piece.isupper() != white


def targets(b: Board, sq: tuple[int, int], white: bool, small: bool, h: int,
            attacks_only: bool = False) -> list[tuple[int, int]]:
    piece = b[sq].upper()
    f, r = sq
    out = []
    if piece == "P":
        d = 1 if white else -1
        for df in (-1, 1):
            t = (f + df, r + d)
            if t in b and (attacks_only or theirs(b[t], white)):
                out.append(t)
        if not attacks_only:
            one = (f, r + d)
            if b.get(one) == ".":
                out.append(one)
                two = (f, r + 2 * d)
                if not small and r == (1 if white else h - 2) and b.get(two) == ".":
                    out.append(two)
        return out
    if piece == "N":
        steps = [(1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1)]
        return [t for t in ((f + a, r + c) for a, c in steps)
                if t in b and b[t] != "#" and not mine(b[t], white)]
    lines = {"R": [(0, 1), (0, -1), (1, 0), (-1, 0)], "B": [(1, 1), (1, -1), (-1, 1), (-1, -1)]}
    dirs = lines.get(piece, lines["R"] + lines["B"])
    for a, c in dirs:
        t = (f + a, r + c)
        while t in b and b[t] != "#":
            if mine(b[t], white):
                break
            out.append(t)
            if b[t] != "." or piece == "K":
                break
            t = (t[0] + a, t[1] + c)
    return out


def king_attacked(b: Board, white: bool, small: bool, h: int) -> bool:
    king = "K" if white else "k"
    where = [sq for sq, p in b.items() if p == king]
    if not where:
        return False
    return any(where[0] in targets(b, sq, not white, small, h, attacks_only=True)
               for sq, p in b.items() if theirs(p, white))


def promotable(b: Board, sq: tuple[int, int], white: bool, h: int, last_rank_only: bool
               ) -> bool:
    if last_rank_only:
        return sq[1] == (h - 1 if white else 0)
    ahead = range(sq[1] + 1, h) if white else range(sq[1] - 1, -1, -1)
    return all(b[(sq[0], r)] == "#" for r in ahead)


def reference_turns(pos: Position) -> set[str]:
    b0, w, h = to_board(pos)
    white = pos.turn == 0
    small = "-small" in pos.options
    ko = None
    if pos.ko:
        ko = ((pos.ko[1] % w, pos.ko[1] // w), (pos.ko[0] % w, pos.ko[0] // w))
    out = set()
    for sq, p in b0.items():
        if not mine(p, white):
            continue
        for t in targets(b0, sq, white, small, h):
            b1 = dict(b0)
            b1[t], b1[sq] = p, "."
            finals: list[tuple[Board, str, tuple[int, int]]] = [(b1, "", t)]
            for a, pa in b1.items():
                if pa == "#" or (theirs(pa, white) and "-opponent" not in pos.options):
                    continue
                # holes reachable from a through holes only
                seen: set[tuple[int, int]] = set()
                todo = [(a[0] + x, a[1] + y) for x, y in ((0, 1), (0, -1), (1, 0), (-1, 0))]
                todo = [c for c in todo if b1.get(c) == "#"]
                if "-single" in pos.options:
                    seen = set(todo)
                else:
                    while todo:
                        c = todo.pop()
                        if c in seen:
                            continue
                        seen.add(c)
                        todo += [n for n in ((c[0] + x, c[1] + y)
                                             for x, y in ((0, 1), (0, -1), (1, 0), (-1, 0)))
                                 if b1.get(n) == "#" and n not in seen]
                for dest in seen:
                    if ko == (a, dest):
                        continue
                    b2 = dict(b1)
                    b2[dest], b2[a] = pa, "#"
                    finals.append((b2, f",{name(a)}-{name(dest)}", dest if a == t else t))
            for b, slide, end in finals:
                if king_attacked(b, white, small, h):
                    continue
                chess = f"{name(sq)}-{name(t)}"
                if p.upper() == "P" and promotable(b, end, white, h,
                                                   "-promote" in pos.options):
                    out |= {f"{chess}={c}{slide}" for c in ("RBN" if small else "QRBN")}
                else:
                    out.add(chess + slide)
    return out


OPTION_SETS = [(), ("-small",), ("-single",), ("-promote",), ("-opponent",),
               ("-small", "-single", "-promote", "-opponent"), ("-opponent", "-single")]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_random_games_agree_with_the_reference(options: tuple[str, ...]) -> None:
    rng = random.Random(sum(map(ord, "".join(options))))
    checked = 0
    for _game in range(3):
        pos = E.new(options)
        for _ply in range(14):
            engine = {E.format_move(pos, m) for m in E.legal_moves(pos)}
            assert engine == reference_turns(pos), E.serialize(pos)
            checked += 1
            if not engine:
                break
            pos = E.apply(pos, rng.choice(E.legal_moves(pos)))
    assert checked >= 20


def random_position(rng: random.Random, options: tuple[str, ...]) -> Position:
    small = "-small" in options
    w, h = (7, 7) if small else (8, 9)
    cells = ["."] * (w * h)
    for i in rng.sample(range(w * h), rng.randint(4, 14)):
        cells[i] = "#"
    free = [i for i, c in enumerate(cells) if c == "."]
    rng.shuffle(free)
    for piece in ["K", "k"] + [rng.choice("PPPPppppNnBbRrQq") for _ in range(rng.randint(3, 10))]:
        cells[free.pop()] = piece
    turn = rng.randint(0, 1)
    holes = [i for i, c in enumerate(cells) if c == "#"]
    squares = [i for i, c in enumerate(cells) if c != "#"]
    ko = (rng.choice(holes), rng.choice(squares)) if rng.random() < 0.5 else None
    return Position("".join(cells), turn, tuple(sorted(options)), ko)


@pytest.mark.parametrize("options", OPTION_SETS)
def test_random_positions_agree_with_the_reference(options: tuple[str, ...]) -> None:
    rng = random.Random(len(options) * 7919 + sum(map(len, options)))
    for _ in range(60):
        pos = random_position(rng, options)
        engine = {E.format_move(pos, m) for m in E.legal_moves(pos)}
        assert engine == reference_turns(pos), E.serialize(pos)
