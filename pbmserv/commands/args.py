"""Reading the words of a command: numbers, board references, challenge flags."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pbmserv.i18n import N_
from pbmserv.service.errors import PlayerError

#: the largest number a player may write (board and move numbers fit any SQL integer)
MAX_NUMBER = 2**31 - 1
_DIGITS = re.compile(r"[0-9]{1,10}")
_CLOCK = re.compile(r"--(nagtime|forfeittime)=([0-9]{1,4})", re.I)


def small_number(text: str) -> int | None:
    """``text`` as a number if it is 1 to 10 ASCII digits worth at most MAX_NUMBER."""
    if _DIGITS.fullmatch(text) is None:
        return None
    value = int(text)
    return value if value <= MAX_NUMBER else None


def shown(text: str, limit: int = 20) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_board_ref(text: str) -> tuple[int, int | None]:
    """``101`` or ``101#7`` -> (101, None) or (101, 7)."""
    number, _, at = text.partition("#")
    board, ply = small_number(number), small_number(at) if at else None
    if board is None or (at and ply is None):
        raise PlayerError(f"{shown(text)!r} is not a board number (like 101, or 101#7 for "
                          "move 7)")
    return board, ply


def board_number(text: str) -> int:
    number, at = parse_board_ref(text)
    if at is not None:
        raise PlayerError(N_("a move number goes on the move (like a1-a2#3), not on the board"))
    return number


def is_board_ref(text: str) -> bool:
    number = text.partition("#")[0]
    return small_number(number) is not None


#: what a sentence leaves after a move ("B4-C4."): never part of one in any game
SENTENCE_END = ".!?;,:"


def split_move_number(text: str) -> tuple[str, int | None]:
    """``a1-a2#3`` -> ("a1-a2", 3); a full stop or the like after it ("B4-C4.",
    "a1-a2#3!") is left out."""
    text = text.rstrip(SENTENCE_END) or text
    move, sep, at = text.partition("#")
    if not sep:
        return move, None
    number = small_number(at)
    if number is None:
        raise PlayerError(f"#{shown(at)} is not a move number")
    return move, number


def attach_numbers(words: list[str], positions: Sequence[int]) -> list[str]:
    """``words`` with a ``#n`` written apart ("a3-a4 #11", "a3-a4 # 11") joined to the
    word at each of ``positions`` that takes one ("a3-a4#11")."""
    out = list(words)
    for at in sorted(positions, reverse=True):  # a join moves the words after it
        if at + 1 >= len(out) or "#" in out[at] or not out[at + 1].startswith("#"):
            continue
        out[at] += out.pop(at + 1)
        if out[at].endswith("#") and at + 1 < len(out) and small_number(out[at + 1]) is not None:
            out[at] += out.pop(at + 1)
    return out


@dataclass
class ChallengeFlags:
    """The words after the userids of a challenge or seek."""

    names: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    nag_days: int = 7
    forfeit_days: int = 21


def parse_challenge_words(words: Sequence[str]) -> ChallengeFlags:
    flags = ChallengeFlags()
    for word in words:
        clock = _CLOCK.fullmatch(word)
        if clock is not None:
            days = int(clock.group(2))
            if clock.group(1).lower() == "nagtime":
                flags.nag_days = days
            else:
                flags.forfeit_days = days
        elif word.startswith("--"):
            raise PlayerError(f"{shown(word)!r} is not an option; the clock options are "
                              "--nagtime=DAYS and --forfeittime=DAYS")
        elif word.startswith("-"):
            flags.options.append(word)
        else:
            flags.names.append(word)
    return flags
