"""Amoeba (Jim Aikin, 1997): chess on a board whose squares slide into its holes.

A turn is a chess move, then optionally one slide of a square through holes, then
the promotion of every pawn of the mover with no square ahead of it.  Check is
judged at the end of the turn only.  Cells are numbered ``rank * width + file``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from string import ascii_lowercase
from typing import Any

from pbmserv.games.base import (
    N_,
    Engine,
    GameOption,
    IllegalMoveError,
    MoveSyntaxError,
    Outcome,
    Pick,
    PickKind,
    Termination,
)

HOLE = "#"
EMPTY = "."
NAMES = {"K": "king", "Q": "queen", "R": "rook", "B": "bishop", "N": "knight", "P": "pawn"}
ORTHO = ((0, 1), (1, 0), (0, -1), (-1, 0))
DIAG = ((1, 1), (1, -1), (-1, -1), (-1, 1))
KNIGHT = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_LONG = re.compile(r"^([a-h])([1-9])[-x:]?([a-h])([1-9])(?:=?([qrbn]))?$")
_SHORT = re.compile(r"^([KQRBN])?([a-h])?([1-9])?x?([a-h])([1-9])(?:=?([QRBN]))?$")
_EXTRA = re.compile(r"^([a-h])([1-9])=?([qrbn])$")
_SLIDE = re.compile(r"^([a-h])([1-9])-?([a-h])([1-9])$")


@dataclass(frozen=True)
class Geometry:
    width: int
    height: int
    holes: tuple[str, ...]
    white_back: str
    #: rays[cell][d]: cells along direction d (0-3 orthogonal, 4-7 diagonal)
    rays: tuple[tuple[tuple[int, ...], ...], ...] = field(repr=False)
    knight: tuple[tuple[int, ...], ...] = field(repr=False)
    ortho: tuple[tuple[int, ...], ...] = field(repr=False)
    #: every cell whose contents can decide whether a piece on ``cell`` is attacked
    reach: tuple[frozenset[int], ...] = field(repr=False)
    #: lines[piece][cell]: the lines a piece (a letter, upper case White) on ``cell``
    #: attacks along, nearest cell first; it stops at a hole, or after the first piece
    lines: dict[str, tuple[tuple[tuple[int, ...], ...], ...]] = field(repr=False)

    def name(self, cell: int) -> str:
        return f"{chr(ord('a') + cell % self.width)}{cell // self.width + 1}"

    def cell(self, file: str, rank: str) -> int | None:
        f, r = ord(file) - ord("a"), int(rank) - 1
        if not (0 <= f < self.width and 0 <= r < self.height):
            return None
        return r * self.width + f

    def ahead(self, cell: int, colour: int) -> range:
        """The cells in front of a pawn of ``colour`` on ``cell``, nearest first."""
        step = self.width if colour == 0 else -self.width
        end = self.width * self.height if colour == 0 else -1
        return range(cell + step, end, step)


@cache
def geometry(small: bool) -> Geometry:
    width, height = (7, 7) if small else (8, 9)
    holes = (("a1", "a2", "a6", "a7", "c4", "d4", "e4", "g1", "g2", "g6", "g7") if small
             else ("b4", "b5", "b6", "d5", "e5", "g4", "g5", "g6"))
    back = ".RNKNR." if small else "RNBQKBNR"

    def along(cell: int, deltas: Sequence[tuple[int, int]], repeat: bool) -> list[list[int]]:
        f0, r0 = cell % width, cell // width
        out = []
        for df, dr in deltas:
            ray, f, r = [], f0 + df, r0 + dr
            while 0 <= f < width and 0 <= r < height:
                ray.append(r * width + f)
                if not repeat:
                    break
                f, r = f + df, r + dr
            out.append(ray)
        return out

    cells = range(width * height)
    rays = tuple(tuple(tuple(r) for r in along(c, ORTHO + DIAG, True)) for c in cells)
    knight = tuple(tuple(r[0] for r in along(c, KNIGHT, False) if r) for c in cells)

    def lines(piece: str, c: int) -> tuple[tuple[int, ...], ...]:
        kind = piece.upper()
        if kind == "N":
            return tuple((t,) for t in knight[c])
        # a pawn attacks along its forward diagonals (left first), a King one cell
        dirs = {"P": (7, 4) if piece == "P" else (6, 5), "K": range(8), "Q": range(8),
                "R": range(4), "B": range(4, 8)}[kind]
        long = kind in "QRB"
        return tuple(rays[c][d] if long else rays[c][d][:1] for d in dirs if rays[c][d])

    return Geometry(
        width, height, holes, back, rays=rays, knight=knight,
        ortho=tuple(tuple(r[0] for r in along(c, ORTHO, False) if r) for c in cells),
        reach=tuple(frozenset({c, *knight[c]}.union(*rays[c])) for c in cells),
        lines={p: tuple(lines(p, c) for c in cells) for p in "KQRBNPkqrbnp"},
    )


@dataclass(frozen=True)
class Turn:
    frm: int
    to: int
    slide: tuple[int, int] | None = None
    #: the moved pawn's promotion choice (upper case), when it promotes
    promotion: str | None = None
    #: choices for other promoting pawns, by their cell at the end of the turn
    extra: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Position:
    cells: str
    turn: int
    options: tuple[str, ...]
    #: the slide of the previous turn (from, to): the square may not go straight back
    ko: tuple[int, int] | None = None

    @property
    def small(self) -> bool:
        return "-small" in self.options

    @property
    def geo(self) -> Geometry:
        return geometry(self.small)


def _is_white(piece: str) -> bool:
    return piece.isupper()


def _drawn(cell: str, dark: bool) -> str:
    """A square's three columns in the text diagram."""
    if cell == HOLE:
        return "###"
    if cell == EMPTY:
        return ":::" if dark else "   "
    if _is_white(cell):
        return f":{cell}:" if dark else f" {cell} "
    return f"*{cell.upper()}*"


class _Drawings(dict[str, str]):
    """The drawing of each piece (or hole, or empty) on dark or light squares, each
    worked out once."""

    def __init__(self, dark: bool) -> None:
        super().__init__()
        self.dark = dark

    def __missing__(self, cell: str) -> str:
        self[cell] = text = _drawn(cell, self.dark)
        return text


_DARK = _Drawings(True)
_LIGHT = _Drawings(False)


def _own(piece: str, colour: int) -> bool:
    return piece not in (HOLE, EMPTY) and piece.isupper() == (colour == 0)


def _enemy(piece: str, colour: int) -> bool:
    return piece not in (HOLE, EMPTY) and piece.isupper() != (colour == 0)


class Amoeba(Engine[Position, Turn]):
    name = "amoeba"
    title = N_("Amoeba")
    seats = ("White", "Black")
    options = (
        GameOption("-small", "the 7x7 board with 38 squares and 11 holes"),
        GameOption("-single", "a square slides only into a hole next to it"),
        GameOption("-promote", "pawns promote only on the last rank of the board"),
        GameOption("-opponent", "squares holding the opponent's pieces may slide too"),
    )
    move_forms = ("e2-e4", "e2-e4,b3-b4", "e7-e8=N", "Nf3")
    #: on the 7x7 board pawns step one square and no e2-e4 exists
    small_forms = ("d2-d3", "c1-d3,b1-a1")

    def forms_for(self, flags: Sequence[str]) -> tuple[str, ...]:
        return self.small_forms if "-small" in flags else self.move_forms

    def new(self, options: Sequence[str] = ()) -> Position:
        geo = geometry("-small" in options)
        cells = [EMPTY] * (geo.width * geo.height)
        for name in geo.holes:
            cells[geo.cell(name[0], name[1:]) or 0] = HOLE
        for f, piece in enumerate(geo.white_back):
            if piece == EMPTY:
                continue
            cells[f] = piece
            cells[(geo.height - 1) * geo.width + f] = piece.lower()
            cells[geo.width + f] = "P"
            cells[(geo.height - 2) * geo.width + f] = "p"
        return Position("".join(cells), 0, tuple(sorted(options)))

    def to_move(self, pos: Position) -> int:
        return pos.turn

    # -- chess moves ----------------------------------------------------------------------
    @staticmethod
    def attacks(cells: Sequence[str], geo: Geometry, colour: int
                ) -> Iterator[tuple[int, str, list[int]]]:
        """Every piece of ``colour`` (cell, piece) with the cells it attacks: those it
        could capture on were an enemy piece there (its own side's cells included, holes
        never).  A pawn's are its forward diagonals, left first."""
        white = colour == 0
        lines = geo.lines
        for s, piece in enumerate(cells):
            if piece in (EMPTY, HOLE) or piece.isupper() != white:
                continue
            targets: list[int] = []
            add = targets.append
            for line in lines[piece][s]:
                for t in line:
                    c = cells[t]
                    if c == HOLE:
                        break
                    add(t)
                    if c != EMPTY:
                        break
            yield s, piece, targets

    def _chess_moves(self, cells: Sequence[str], pos: Position, colour: int
                     ) -> Iterator[tuple[int, int]]:
        geo = pos.geo
        w = geo.width
        white = colour == 0
        for s, piece, targets in self.attacks(cells, geo, colour):
            if piece.upper() == "P":
                fwd = w if white else -w
                t = s + fwd
                if 0 <= t < len(cells) and cells[t] == EMPTY:
                    yield s, t
                    start = 1 if white else geo.height - 2
                    t2 = t + fwd
                    if (not pos.small and s // w == start and 0 <= t2 < len(cells)
                            and cells[t2] == EMPTY):
                        yield s, t2
                for t in targets:
                    c = cells[t]
                    if c != EMPTY and c.isupper() != white:
                        yield s, t
                continue
            for t in targets:
                c = cells[t]
                if c == EMPTY or c.isupper() != white:
                    yield s, t

    @staticmethod
    def attacked(cells: Sequence[str], geo: Geometry, target: int, by: int) -> bool:
        """Whether ``target`` is attacked by a piece of colour ``by``."""
        up = str.upper if by == 0 else str.lower
        knight, king, pawn = up("N"), up("K"), up("P")
        rook, bishop, queen = up("R"), up("B"), up("Q")
        for t in geo.knight[target]:
            if cells[t] == knight:
                return True
        rays = geo.rays[target]
        for d in range(8):
            straight = d < 4
            for n, t in enumerate(rays[d]):
                c = cells[t]
                if c == EMPTY:
                    continue
                if c == HOLE:
                    break
                if c == queen or c == (rook if straight else bishop) or (n == 0 and c == king):
                    return True
                if n == 0 and c == pawn and not straight:
                    # a pawn of colour ``by`` attacks forward: it stands behind the target
                    behind = (t < target) if by == 0 else (t > target)
                    if behind:
                        return True
                break
        return False

    def _king_safe(self, cells: Sequence[str], geo: Geometry, colour: int) -> bool:
        king = "K" if colour == 0 else "k"
        try:
            at = cells.index(king)
        except ValueError:
            return True  # no king on the board (hand-built positions)
        return not self.attacked(cells, geo, at, 1 - colour)

    # -- slides ---------------------------------------------------------------------------
    def _hole_groups(self, cells: Sequence[str], geo: Geometry) -> dict[int, frozenset[int]]:
        """For every square next to a hole: the holes it can slide to (before the move)."""
        group_of: dict[int, frozenset[int]] = {}
        for h, c in enumerate(cells):
            if c != HOLE or h in group_of:
                continue
            todo, seen = [h], {h}
            while todo:
                x = todo.pop()
                for y in geo.ortho[x]:
                    if cells[y] == HOLE and y not in seen:
                        seen.add(y)
                        todo.append(y)
            group = frozenset(seen)
            for x in group:
                group_of[x] = group
        return group_of

    def _slides(self, cells: Sequence[str], pos: Position, colour: int,
                groups: dict[int, frozenset[int]]) -> list[tuple[int, int]]:
        geo = pos.geo
        single = "-single" in pos.options
        opponent = "-opponent" in pos.options
        banned = (pos.ko[1], pos.ko[0]) if pos.ko else None
        out = []
        for a, c in enumerate(cells):
            if c == HOLE or (c != EMPTY and not opponent and not _own(c, colour)):
                continue
            near = [x for x in geo.ortho[a] if cells[x] == HOLE]
            if not near:
                continue
            if single:
                targets: set[int] | frozenset[int] = set(near)
            else:
                targets = set()
                for x in near:
                    targets |= groups[x]
            for b in sorted(targets):
                if (a, b) != banned:
                    out.append((a, b))
        return out

    # -- whole turns ----------------------------------------------------------------------
    def _promotes(self, cells: Sequence[str], pos: Position, cell: int, colour: int) -> bool:
        geo = pos.geo
        if "-promote" in pos.options:
            return cell // geo.width == (geo.height - 1 if colour == 0 else 0)
        return all(cells[x] == HOLE for x in geo.ahead(cell, colour))

    def _choices(self, pos: Position) -> str:
        return "RBN" if pos.small else "QRBN"

    def _completions(self, pos: Position) -> Iterator[tuple[int, int, tuple[int, int] | None,
                                                           bool]]:
        """Every legal (from, to, slide), and whether the moved piece then promotes.

        The board is changed in place and restored.  A slide that touches no cell from
        which the king could be attacked keeps the verdict on the king of the chess move
        alone, so most slides need no new check.
        """
        geo = pos.geo
        colour = pos.turn
        cells = list(pos.cells)
        groups = self._hole_groups(cells, geo)
        king = "K" if colour == 0 else "k"
        pawn = "P" if colour == 0 else "p"
        for s, t in list(self._chess_moves(cells, pos, colour)):
            piece, taken = cells[s], cells[t]
            cells[t], cells[s] = piece, EMPTY
            safe = self._king_safe(cells, geo, colour)
            at = cells.index(king) if king in cells else -1
            reach = geo.reach[at] if at >= 0 else frozenset()
            if safe:
                yield s, t, None, piece == pawn and self._promotes(cells, pos, t, colour)
            for a, b in self._slides(cells, pos, colour, groups):
                cells[b], cells[a] = cells[a], HOLE
                if (safe if a != at and a not in reach and b not in reach
                        else self._king_safe(cells, geo, colour)):
                    end = b if a == t else t
                    yield s, t, (a, b), piece == pawn and self._promotes(cells, pos, end, colour)
                cells[a], cells[b] = cells[b], HOLE
            cells[s], cells[t] = piece, taken

    def _final_cells(self, pos: Position, s: int, t: int,
                     slide: tuple[int, int] | None) -> list[str]:
        cells = list(pos.cells)
        cells[t], cells[s] = cells[s], EMPTY
        if slide:
            a, b = slide
            cells[b], cells[a] = cells[a], HOLE
        return cells

    def chess_turns(self, pos: Position, limit: int = 0) -> list[Turn]:
        """The legal turns that slide nothing, in the order of ``legal_moves``; only the
        first ``limit`` of them when it is not 0 (one is enough to know the game goes
        on).  Far quicker than every turn: no slide is tried."""
        geo = pos.geo
        colour = pos.turn
        cells = list(pos.cells)
        pawn = "P" if colour == 0 else "p"
        choices = self._choices(pos)
        out: list[Turn] = []
        for s, t in self._chess_moves(pos.cells, pos, colour):
            piece, taken = cells[s], cells[t]
            cells[t], cells[s] = piece, EMPTY
            if self._king_safe(cells, geo, colour):
                if piece == pawn and self._promotes(cells, pos, t, colour):
                    out.extend(Turn(s, t, None, p) for p in choices)
                else:
                    out.append(Turn(s, t))
            cells[s], cells[t] = piece, taken
            if limit and len(out) >= limit:
                return out[:limit]
        return out

    def legal_moves(self, pos: Position) -> list[Turn]:
        out: list[Turn] = []
        choices = self._choices(pos)
        for s, t, slide, promotes in self._completions(pos):
            if promotes:
                out.extend(Turn(s, t, slide, p) for p in choices)
            else:
                out.append(Turn(s, t, slide))
        return out

    def perft(self, pos: Position, depth: int) -> int:
        if depth != 1:
            return super().perft(pos, depth)
        choices = len(self._choices(pos))  # count the last ply without building turns
        return sum(choices if promotes else 1 for *_, promotes in self._completions(pos))

    def apply(self, pos: Position, move: Turn) -> Position:
        colour = pos.turn
        cells = self._final_cells(pos, move.frm, move.to, move.slide)
        moved_to = move.to
        if move.slide and move.slide[0] == move.to:
            moved_to = move.slide[1]
        extra = dict(move.extra)
        default = self._choices(pos)[0]
        pawn = "P" if colour == 0 else "p"
        for c, piece in enumerate(cells):
            if piece == pawn and self._promotes(cells, pos, c, colour):
                choice = move.promotion if c == moved_to and move.promotion else extra.get(
                    c, default)
                cells[c] = choice if colour == 0 else choice.lower()
        return Position("".join(cells), 1 - colour, pos.options, move.slide)

    def in_check(self, pos: Position) -> bool:
        return not self._king_safe(pos.cells, pos.geo, pos.turn)

    def slid(self, pos: Position, slide: tuple[int, int] | None) -> Position:
        """The board after a slide alone (none with None), the other side to move: no
        turn the rules allow, but a way to judge what a slide does by itself."""
        cells = list(pos.cells)
        if slide is not None:
            a, b = slide
            cells[b], cells[a] = cells[a], HOLE
        return Position("".join(cells), 1 - pos.turn, pos.options, pos.ko)

    def outcome(self, pos: Position) -> Outcome | None:
        if self.chess_turns(pos, 1):  # quicker to find than a turn with a slide
            return None
        for _ in self._completions(pos):
            return None
        if self.in_check(pos):
            return Outcome(1 - pos.turn, Termination.CHECKMATE,
                           f"{self.seats[pos.turn]} is checkmated")
        return Outcome(None, Termination.STALEMATE,
                       f"stalemate: {self.seats[pos.turn]} has no legal turn")

    # -- notation -------------------------------------------------------------------------
    def format_move(self, pos: Position, move: Turn) -> str:
        geo = pos.geo
        text = f"{geo.name(move.frm)}-{geo.name(move.to)}"
        if move.promotion:
            text += f"={move.promotion}"
        if move.slide:
            text += f",{geo.name(move.slide[0])}-{geo.name(move.slide[1])}"
        for cell, piece in move.extra:
            text += f",{geo.name(cell)}={piece}"
        return text

    def _square(self, pos: Position, file: str, rank: str) -> int:
        cell = pos.geo.cell(file, rank)
        if cell is None:
            raise MoveSyntaxError(f"there is no cell {file}{rank} on this board")
        return cell

    def _explain_chess(self, pos: Position, s: int, t: int) -> str:
        """Why from-to is not a chess move here."""
        geo = pos.geo
        cells = pos.cells
        fn, tn = geo.name(s), geo.name(t)
        if cells[s] == HOLE:
            return f"{fn} is a hole"
        if not _own(cells[s], pos.turn):
            return f"there is no piece of yours on {fn}"
        if cells[t] == HOLE:
            return f"{tn} is a hole"
        if _own(cells[t], pos.turn):
            return f"your own piece stands on {tn}"
        kind = NAMES[cells[s].upper()]
        df, dr = t % geo.width - s % geo.width, t // geo.width - s // geo.width
        if cells[s].upper() in "QRB" and (df == 0 or dr == 0 or abs(df) == abs(dr)):
            step = (df > 0) - (df < 0), (dr > 0) - (dr < 0)
            x = s + step[1] * geo.width + step[0]
            while x != t:
                if cells[x] == HOLE:
                    return f"a {kind} cannot pass the hole at {geo.name(x)}"
                if cells[x] != EMPTY:
                    return f"the way from {fn} to {tn} is blocked at {geo.name(x)}"
                x += step[1] * geo.width + step[0]
        if cells[s].upper() == "P" and df == 0 and abs(dr) == 2 and pos.small:
            return "pawns have no double step on the small board"
        return f"a {kind} cannot move from {fn} to {tn}"

    def _read_chess(self, pos: Position, text: str) -> tuple[int, int, str | None]:
        raw = text.lower().rstrip("+#!?")
        m = _LONG.match(raw)
        if m:
            s = self._square(pos, m.group(1), m.group(2))
            t = self._square(pos, m.group(3), m.group(4))
            promo = m.group(5).upper() if m.group(5) else None
            if (s, t) not in set(self._chess_moves(pos.cells, pos, pos.turn)):
                raise IllegalMoveError(self._explain_chess(pos, s, t))
            return s, t, promo
        # short algebraic: piece letters upper case ("b" is a file, "B" a bishop); k q r n
        # cannot be files, so they are read as pieces in either case
        short = text.rstrip("+#!?")
        if short[:1] in ("k", "q", "r", "n"):
            short = short[0].upper() + short[1:]
        short = short[:-1] + short[-1].upper() if "=" in short else short
        m = _SHORT.match(short)
        if not m:
            raise MoveSyntaxError(
                f"{text!r} is not a chess move; write it from-to (e2-e4), with =Q etc. to "
                "promote, or in short algebraic (Nf3, exd5)"
            )
        kind = m.group(1) or "P"
        t = self._square(pos, m.group(4), m.group(5))
        promo = m.group(6)
        found = []
        for s, to in self._chess_moves(pos.cells, pos, pos.turn):
            if to != t or pos.cells[s].upper() != kind:
                continue
            name = pos.geo.name(s)
            if m.group(2) and name[0] != m.group(2).lower():
                continue
            if m.group(3) and name[1:] != m.group(3):
                continue
            found.append(s)
        if not found:
            raise IllegalMoveError(
                f"no {NAMES[kind]} of yours can move to {pos.geo.name(t)}")
        if len(found) > 1:
            options = " or ".join(f"{pos.geo.name(s)}-{pos.geo.name(t)}" for s in found)
            raise IllegalMoveError(f"{text} is ambiguous: write {options}")
        return found[0], t, promo

    def parse_move(self, pos: Position, text: str) -> Turn:
        geo = pos.geo
        parts = [p for p in text.strip().split(",") if p]
        if not parts:
            raise MoveSyntaxError("empty move")
        s, t, promo = self._read_chess(pos, parts[0])
        slide: tuple[int, int] | None = None
        extra: list[tuple[int, str]] = []
        for part in parts[1:]:
            low = part.lower()
            if "=" in low or _EXTRA.match(low):
                m = _EXTRA.match(low)
                if not m:
                    raise MoveSyntaxError(f"{part!r} is not a promotion part (like c6=N)")
                extra.append((self._square(pos, m.group(1), m.group(2)), m.group(3).upper()))
                continue
            m = _SLIDE.match(low)
            if not m:
                raise MoveSyntaxError(
                    f"{part!r} is neither a slide (like b3-b4) nor a promotion (like c6=N)")
            if slide is not None:
                raise IllegalMoveError("a turn has at most one slide")
            slide = (self._square(pos, m.group(1), m.group(2)),
                     self._square(pos, m.group(3), m.group(4)))
        cells = self._final_cells(pos, s, t, None)
        if slide is not None:
            self._check_slide(pos, cells, slide)
            a, b = slide
            cells[b], cells[a] = cells[a], HOLE
        if not self._king_safe(cells, geo, pos.turn):
            raise IllegalMoveError("your king would be in check at the end of this turn")
        moved_to = slide[1] if slide and slide[0] == t else t
        choices = self._choices(pos)
        pawn = "P" if pos.turn == 0 else "p"
        moved_promotes = cells[moved_to] == pawn and self._promotes(cells, pos, moved_to,
                                                                     pos.turn)
        if promo is not None:
            if not moved_promotes:
                raise IllegalMoveError("the moved piece does not promote at the end of this turn")
            if promo not in choices:
                raise IllegalMoveError(
                    f"a pawn promotes to {', '.join(choices)} here, not {promo}")
        elif moved_promotes:
            promo = choices[0]
        for cell, piece in extra:
            if cell == moved_to:
                raise IllegalMoveError(
                    "write the moved pawn's promotion on its move (like e7-e8=N)")
            if not (cells[cell] == pawn and self._promotes(cells, pos, cell, pos.turn)):
                raise IllegalMoveError(
                    f"no pawn of yours promotes on {geo.name(cell)} at the end of this turn")
            if piece not in choices:
                raise IllegalMoveError(
                    f"a pawn promotes to {', '.join(choices)} here, not {piece}")
        return Turn(s, t, slide, promo, tuple(sorted(extra)))

    def _check_slide(self, pos: Position, cells: list[str], slide: tuple[int, int]) -> None:
        geo = pos.geo
        a, b = slide
        an, bn = geo.name(a), geo.name(b)
        if cells[a] == HOLE:
            raise IllegalMoveError(f"{an} is a hole: there is no square there to slide")
        if cells[b] != HOLE:
            raise IllegalMoveError(f"{bn} is not a hole: a square slides only into holes")
        if _enemy(cells[a], pos.turn) and "-opponent" not in pos.options:
            raise IllegalMoveError(
                f"the square at {an} holds an opponent's piece and may not slide "
                "(the -opponent option allows it)")
        if pos.ko and (b, a) == pos.ko:
            raise IllegalMoveError(
                f"the square at {an} may not slide back to {bn} this turn (ko)")
        if (a, b) not in self._slides(cells, pos, pos.turn, self._hole_groups(pos.cells, geo)):
            if "-single" in pos.options:
                raise IllegalMoveError(
                    f"with -single a square slides only into a hole next to it; {bn} is not "
                    f"next to {an}")
            raise IllegalMoveError(f"the square at {an} cannot reach {bn} through holes")

    # -- storage and drawing --------------------------------------------------------------
    def serialize(self, pos: Position) -> str:
        data: dict[str, Any] = {"cells": pos.cells, "turn": pos.turn,
                                "options": list(pos.options)}
        if pos.ko:
            data["ko"] = list(pos.ko)
        return json.dumps(data, separators=(",", ":"))

    def deserialize(self, text: str) -> Position:
        data = json.loads(text)
        ko = tuple(data["ko"]) if "ko" in data else None
        return Position(data["cells"], int(data["turn"]), tuple(data["options"]),
                        (ko[0], ko[1]) if ko else None)

    def move_path(self, pos: Position, move: Turn) -> tuple[Pick, ...]:
        """The piece, its target, the square that slides (or none) and its hole, and
        what a promoting pawn becomes."""
        name = pos.geo.name
        picks = [Pick(PickKind.PIECE, name(move.frm)), Pick(PickKind.TARGET, name(move.to))]
        if move.slide is None:
            picks.append(Pick(PickKind.SLIDE, "none"))
        else:
            picks += [Pick(PickKind.SLIDE, name(move.slide[0])),
                      Pick(PickKind.HOLE, name(move.slide[1]))]
        if move.promotion:
            picks.append(Pick(PickKind.PROMOTION, move.promotion))
        return tuple(picks)

    def describe(self, pos: Position) -> dict[str, Any]:
        geo = pos.geo
        cells = []
        for r in reversed(range(geo.height)):
            for f in range(geo.width):
                c = r * geo.width + f
                piece = pos.cells[c]
                owner = "" if piece in (HOLE, EMPTY) else self.seats[0 if piece.isupper() else 1]
                cells.append({"name": geo.name(c), "hole": piece == HOLE, "owner": owner,
                              "pieces": [[owner, NAMES[piece.upper()]]] if owner else []})
        return {"to_move": self.seats[pos.turn], "cells": cells,
                "check": self.in_check(pos),
                "slid": [geo.name(pos.ko[0]), geo.name(pos.ko[1])] if pos.ko else None}

    def view(self, pos: Position) -> dict[str, Any]:
        geo = pos.geo
        width = geo.width
        rows = []
        for r in reversed(range(geo.height)):
            row = pos.cells[r * width:(r + 1) * width]
            # the squares of a row alternate: dark where file + rank is even
            shown = [""] * width
            shown[r % 2::2] = map(_DARK.__getitem__, row[r % 2::2])
            shown[1 - r % 2::2] = map(_LIGHT.__getitem__, row[1 - r % 2::2])
            rows.append({"rank": r + 1, "cells": shown})
        return {"rows": rows, "files": list(ascii_lowercase[:width]),
                "check": self.in_check(pos), "to_move": self.seats[pos.turn]}
