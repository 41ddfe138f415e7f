"""The one interface every game engine implements.

Engines are pure: they know positions and moves, nothing of databases, mail or
templates.  A position is an immutable value; ``apply`` returns a new one, so a
stored board is advanced by one move without replaying the game.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Generic, TypeVar


class RuleError(ValueError):
    """A move or option that the rules refuse; the message says why, for a player."""


class MoveSyntaxError(RuleError):
    """Move text that cannot be read at all."""


class IllegalMoveError(RuleError):
    """A well-formed move that the rules do not allow in this position."""


class OptionError(RuleError):
    """An unknown or conflicting challenge option."""


class Termination(StrEnum):
    """How a game ended, as a kind; ``Outcome.reason`` says it in words."""

    CHECKMATE = "checkmate"
    STALEMATE = "stalemate"
    KERNEL = "kernel"
    KING_OFF = "king-off"
    NO_MOVES = "no-moves"
    REPETITION = "repetition"
    AGREEMENT = "agreement"
    RESIGNATION = "resignation"
    TIME = "time"
    DECLINED = "declined"
    ABANDONED = "abandoned"
    ADJUDICATION = "adjudication"


#: endings that, without a winner, are no result at all (not a draw): never rated,
#: written "*" in a game record
NO_RESULT = frozenset({Termination.DECLINED, Termination.ABANDONED})


def is_no_result(termination: Termination | None, winner: int | None) -> bool:
    """Whether a game that ended so has no result: declined, or abandoned with no
    winner."""
    return termination in NO_RESULT and winner is None


@dataclass(frozen=True)
class Outcome:
    """How a game ended: ``winner`` is a seat (0 first player) or None for a draw."""

    winner: int | None
    termination: Termination
    reason: str


@dataclass(frozen=True)
class GameOption:
    flag: str
    summary: str


class PickKind(StrEnum):
    """What one choice on the way to a move names (``Engine.move_path``); a template
    words it.  The kinds marked "a cell" name a cell of the board by its name."""

    #: a cell: the piece or stack to move (Ex nihilo: an empty cell grows a new stack)
    PIECE = "piece"
    #: a cell: where it goes (Hexamoeba: where the top piece lands)
    TARGET = "target"
    #: how many pieces of the stack move: "all" or a number
    COUNT = "count"
    #: "whole" or "split": the stack moves whole, or is dealt out a piece a cell
    SPLIT = "split"
    #: a cell whose square slides, or "none"
    SLIDE = "slide"
    #: a cell: the hole the square slides into
    HOLE = "hole"
    #: a piece letter: what the moved pawn becomes
    PROMOTION = "promotion"
    #: a cell: the flanked stack that a hostage step moves
    HOSTAGE = "hostage"
    #: a cell: the end of the line that is pushed
    LINE_END = "line-end"
    #: a cell: the one next to the line's end, the way the line moves
    TOWARD = "toward"


CELL_PICKS = frozenset({PickKind.PIECE, PickKind.TARGET, PickKind.SLIDE, PickKind.HOLE,
                        PickKind.HOSTAGE, PickKind.LINE_END, PickKind.TOWARD})


@dataclass(frozen=True)
class Pick:
    """One choice on the way to a move: its kind, and what is chosen (a cell's name, a
    word or a number, lower case but a piece letter)."""

    kind: PickKind
    value: str

    @property
    def cell(self) -> str | None:
        """The cell it names, if it names one."""
        return self.value if self.kind in CELL_PICKS and self.value != "none" else None


M_co = TypeVar("M_co", covariant=True)


@dataclass(frozen=True)
class Choosing(Generic[M_co]):
    """Where a player stands in choosing a move a pick at a time (``Engine.choose``)."""

    #: the picks made, in order; ``forced[i]``: pick i was the only one possible, and
    #: was made for the player
    picked: tuple[Pick, ...]
    forced: tuple[bool, ...]
    #: the picks possible next, each with how many legal moves follow from it (none
    #: once a move is chosen)
    options: tuple[tuple[Pick, int], ...]
    #: the move the picks chose, and its notation (None until they choose one)
    move: M_co | None
    notation: str | None

    def chosen(self) -> tuple[str, ...]:
        """The values of the picks the player made (not those made for them): what
        ``Engine.choose`` is given to come back here."""
        return tuple(p.value for p, auto in zip(self.picked, self.forced, strict=True)
                     if not auto)

    def back(self) -> tuple[str, ...]:
        """The same for the step before the player's last pick."""
        return self.chosen()[:-1]


P = TypeVar("P")
M = TypeVar("M")


def N_(message: str) -> str:
    """Mark ``message`` for the catalogues (``make messages`` extracts every ``N_``) and
    return it as it is: ``pbmserv.i18n.N_``, which the engines may not import (they stay
    pure); a game's ``title`` is marked so, and templates print it ``|translated``."""
    return message


class Engine(ABC, Generic[P, M]):
    """Rules of one game.  ``P`` is its position type, ``M`` its move type."""

    name: ClassVar[str]
    #: the game's name in prose and page headings (marked ``N_``); never in commands
    title: ClassVar[str]
    seats: ClassVar[tuple[str, ...]] = ("first", "second")
    options: ClassVar[tuple[GameOption, ...]] = ()
    #: groups of flags of which at most one may be given
    exclusive_options: ClassVar[tuple[frozenset[str], ...]] = ()
    #: examples of move notation, shown when a move is refused
    move_forms: ClassVar[tuple[str, ...]] = ()
    #: the version of ``serialize``'s format; stored with every position
    position_version: ClassVar[int] = 1

    def forms_for(self, flags: Sequence[str]) -> tuple[str, ...]:
        """``move_forms`` that are legal first moves on a board of these options (a
        game whose options change the board says so by overriding this)."""
        return self.move_forms

    # -- options ------------------------------------------------------------------
    def check_options(self, flags: Iterable[str]) -> tuple[str, ...]:
        """Validate challenge flags; returns them canonical (lower case, sorted, unique)."""
        known = {opt.flag for opt in self.options}
        chosen: set[str] = set()
        for raw in flags:
            flag = raw.strip().lower()
            if not flag.startswith("-"):
                flag = "-" + flag
            if flag not in known:
                valid = ", ".join(sorted(known)) or "none"
                raise OptionError(f"unknown option {raw!r} for {self.name}; valid options: {valid}")
            chosen.add(flag)
        for group in self.exclusive_options:
            both = sorted(chosen & group)
            if len(both) > 1:
                raise OptionError(f"options {' and '.join(both)} cannot be combined")
        return tuple(sorted(chosen))

    # -- positions ----------------------------------------------------------------
    @abstractmethod
    def new(self, options: Sequence[str] = ()) -> P:
        """The start position for already-checked options."""

    @abstractmethod
    def to_move(self, pos: P) -> int:
        """The seat whose turn it is."""

    @abstractmethod
    def legal_moves(self, pos: P) -> list[M]:
        """Every legal move of the player to move (empty when the game is over)."""

    @abstractmethod
    def parse_move(self, pos: P, text: str) -> M:
        """Read a move and check it is legal here; raises a RuleError saying why not."""

    @abstractmethod
    def format_move(self, pos: P, move: M) -> str:
        """Canonical notation of a legal move in ``pos``."""

    @abstractmethod
    def apply(self, pos: P, move: M) -> P:
        """The position after a legal move."""

    @abstractmethod
    def outcome(self, pos: P) -> Outcome | None:
        """The result if the game is over in ``pos``, else None."""

    @abstractmethod
    def serialize(self, pos: P) -> str:
        """Compact text that ``deserialize`` turns back into the same position."""

    @abstractmethod
    def deserialize(self, text: str) -> P:
        """Inverse of ``serialize``."""

    def load(self, text: str, version: int) -> P:
        """A stored position, written by format ``version`` of ``serialize``."""
        if version != self.position_version:
            return self.deserialize(self.upgrade_position(text, version))
        return self.deserialize(text)

    def upgrade_position(self, text: str, version: int) -> str:
        """Rewrite a position stored by an older format into the current one.

        An engine that changes its format raises ``position_version`` and converts
        here; a stored position is never read with the wrong format.
        """
        raise ValueError(f"{self.name} cannot read positions of format {version} "
                         f"(this version writes format {self.position_version})")

    @abstractmethod
    def view(self, pos: P) -> dict[str, Any]:
        """Plain data for the board template (``boards/<name>.txt.j2``)."""

    @abstractmethod
    def describe(self, pos: P) -> dict[str, Any]:
        """The position in plain data for a description in words (templates/words/):

        ``to_move`` (a seat), ``cells``: every cell, in the order of ``view``'s rows,
        as {"name", "pieces": [[owner seat or "", kind], ...] bottom first, "hole":
        bool, "owner": the seat controlling what stands there or ""}; a piece's kind
        is a lower-case word ("pawn", "king", "piece", "kernel").  A game adds what it
        needs to be read well (Amoeba: ``check``, ``slid``; Honey Donuts: ``rings``).
        """

    @abstractmethod
    def move_path(self, pos: P, move: M) -> tuple[Pick, ...]:
        """The picks by which a player chooses the legal ``move`` a step at a time
        (its piece, its target, then what else the game asks): the same picks for the
        same move every time, and no move's picks begin another's."""

    def choose(self, pos: P, picks: Sequence[str]) -> Choosing[M]:
        """Where the picks ``picks`` (the values of the picks, in order) stand among
        the legal moves: the picks they make, what may be picked next, or the move
        they chose.  A step with only one possible pick is picked for the player, and
        takes none of ``picks``.  Raises IllegalMoveError if no legal move is chosen
        so, or picks are left over."""
        paths = [(self.move_path(pos, m), m) for m in self.legal_moves(pos)]
        picked: list[Pick] = []
        forced: list[bool] = []
        wanted = list(picks)
        while True:
            depth = len(picked)
            # the moves still chosen by the picks so far
            counts: dict[Pick, int] = {}
            for path, _ in paths:
                if len(path) > depth:
                    counts[path[depth]] = counts.get(path[depth], 0) + 1
            done = [(path, m) for path, m in paths if len(path) == depth]
            if done:
                if wanted:
                    raise IllegalMoveError("the move is chosen before the last pick")
                path, move = done[0]
                return Choosing(tuple(picked), tuple(forced), (), move,
                                self.format_move(pos, move))
            if not counts:
                raise IllegalMoveError("there is no legal move to choose")
            if len(counts) == 1:  # the only pick possible: made for the player
                pick, auto = next(iter(counts)), True
            elif wanted:
                value = wanted.pop(0).strip().lower()
                found = [p for p in counts if p.value.lower() == value]
                if not found:
                    raise IllegalMoveError(f"{value[:20]} is not a choice here")
                pick, auto = found[0], False
            else:
                return Choosing(tuple(picked), tuple(forced), tuple(counts.items()), None,
                                None)
            picked.append(pick)
            forced.append(auto)
            paths = [(path, m) for path, m in paths if path[depth] == pick]

    def move_groups(self, pos: P) -> list[tuple[Pick, list[tuple[Pick, int]]]]:
        """The legal moves by their first pick (the piece, stack or line end), each
        with its second picks (the targets) and how many legal moves go on from each
        (a slide, a split, a promotion to choose, ...); in the order of the moves."""
        groups: dict[Pick, dict[Pick, int]] = {}
        for move in self.legal_moves(pos):
            path = self.move_path(pos, move)
            seconds = groups.setdefault(path[0], {})
            if len(path) > 1:
                seconds[path[1]] = seconds.get(path[1], 0) + 1
        return [(first, list(seconds.items())) for first, seconds in groups.items()]

    def agreed_outcome(self, pos: P) -> Outcome:
        """The result when both players agree to end the game here (default: a draw)."""
        return Outcome(None, Termination.AGREEMENT, "ended by agreement")

    # -- helpers built on the interface --------------------------------------------
    def play(self, pos: P, text: str, *, live: bool = False) -> tuple[P, str]:
        """Parse, check and apply one move; returns the new position and the canonical text.

        ``live``: the caller knows the game is not over in ``pos`` (working that out
        may cost as much as the move).
        """
        if not live and self.outcome(pos) is not None:
            raise IllegalMoveError("the game is already over")
        move = self.parse_move(pos, text)
        return self.apply(pos, move), self.format_move(pos, move)

    def play_all(self, pos: P, texts: Iterable[str]) -> P:
        for text in texts:
            pos, _ = self.play(pos, text)
        return pos

    def perft(self, pos: P, depth: int) -> int:
        """Number of move sequences of ``depth`` moves (a finished game has none)."""
        if depth == 0:
            return 1
        if self.outcome(pos) is not None:
            return 0
        moves = self.legal_moves(pos)
        if depth == 1:
            return len(moves)
        return sum(self.perft(self.apply(pos, m), depth - 1) for m in moves)

    def board_template(self) -> str:
        return f"boards/{self.name}.txt.j2"
