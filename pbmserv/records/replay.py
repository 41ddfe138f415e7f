"""Replaying a record through its game's engine: every move legal, the result true.

Moves are numbered as the server numbers them (1 for the first move of the game, 2
for the reply, ...), with the chess-style number after it ("move 12 (6... e7-e5)").

The stored end is checked against the engine:

- if the position after the last move is over by the rules, the record must say that
  end (same termination kind, same winner) — a game that ended by the rules cannot
  have gone on being played, nor been resigned or agreed afterwards;
- an end the rules decide (checkmate, stalemate, kernel, king-off, no-moves,
  repetition) needs a position the rules call over;
- agreement: the winner must be the engine's ``agreed_outcome`` (a draw, except in
  Hexamoeba, where the stacks are counted);
- resignation and time: someone must have won;
- declined: no moves and no winner;
- abandoned and adjudication: any winner.

The words of ``reason`` are not compared (engines may word them differently over
time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pbmserv.games.base import Outcome, RuleError, Termination
from pbmserv.records.model import RULE_TERMINATIONS, GameRecord, RecordError, engine_of


class ReplayError(RecordError):
    """A record whose moves or result the engine refuses.

    ``ply`` is the number of the refused move (1 the first), None when the fault is
    not one move's (options, players, result).
    """

    def __init__(self, message: str, ply: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.ply = ply
        self.reason = reason


@dataclass(frozen=True)
class Replayed:
    """What replaying gave: the final position, the engine's canonical notation of
    every move (store these), and the engine's outcome of the final position."""

    position: Any
    notations: tuple[str, ...]
    outcome: Outcome | None


def move_label(ply: int, notation: str, seats: int = 2) -> str:
    """ "12 (6... e7-e5)" for the 12th move of a two-seat game."""
    number, seat = divmod(ply - 1, seats)
    return f"{ply} ({number + 1}{'.' if seat == 0 else '...'} {notation})"


def replay(record: GameRecord) -> Replayed:
    """Play the record's moves from the start; raises ReplayError at the first fault."""
    engine = engine_of(record.game)
    seats = len(engine.seats)
    if len(record.players) != seats:
        raise ReplayError(f"{engine.title} has {seats} seats, not {len(record.players)}")
    try:
        options = engine.check_options(record.options)
    except RuleError as exc:
        raise ReplayError(f"options: {exc}", reason=str(exc)) from None
    pos = engine.new(options)
    notations = []
    for ply, move in enumerate(record.moves, start=1):
        try:
            pos, canonical = engine.play(pos, move.notation)
        except RuleError as exc:
            raise ReplayError(f"move {move_label(ply, move.notation, seats)} is illegal: {exc}",
                              ply, str(exc)) from None
        notations.append(canonical)
    outcome = engine.outcome(pos)
    _check_end(record, outcome, engine.agreed_outcome(pos) if outcome is None else outcome,
               engine.seats)
    return Replayed(pos, tuple(notations), outcome)


def check(record: GameRecord) -> ReplayError | None:
    """The record's first fault, or None when it replays cleanly."""
    try:
        replay(record)
    except ReplayError as exc:
        return exc
    return None


def _says(winner: int | None, termination: Termination | None, seats: tuple[str, ...]) -> str:
    if termination is None:
        return "the game still running"
    who = "a draw" if winner is None else f"a win for {seats[winner]}"
    return f"{termination.value}, {who}"


def _check_end(record: GameRecord, outcome: Outcome | None, agreed: Outcome,
               seats: tuple[str, ...]) -> None:
    said = _says(record.winner, record.termination, seats)
    kind = record.termination
    if outcome is not None:
        if (kind, record.winner) != (outcome.termination, outcome.winner):
            raise ReplayError(f"after move {len(record.moves)} the game is over by the rules "
                              f"({outcome.reason}: "
                              f"{_says(outcome.winner, outcome.termination, seats)}), but the "
                              f"record says {said}")
        return
    if kind is None:
        return
    if kind in RULE_TERMINATIONS:
        raise ReplayError(f"the record says {said}, but after its moves the game is not over "
                          "by the rules")
    if kind is Termination.AGREEMENT and record.winner != agreed.winner:
        raise ReplayError(f"the record says {said}, but ended by agreement here the game is "
                          f"{_says(agreed.winner, kind, seats)} ({agreed.reason})")
    if kind in (Termination.RESIGNATION, Termination.TIME) and record.winner is None:
        raise ReplayError(f"the record says {said}, but a game lost by {kind.value} has a "
                          "winner")
    if kind is Termination.DECLINED and (record.moves or record.winner is not None):
        raise ReplayError(f"the record says {said}, but a declined game has no moves and no "
                          "winner")
