"""The error every layer raises when a player's request cannot be carried out."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pbmserv.db.models import Board


class PlayerError(Exception):
    """The request cannot be carried out; the message tells the player why."""

    def __init__(self, message: str, *, usage: bool = False, board: Board | None = None,
                 hint: str | None = None, failed_keys: tuple[str, ...] = (),
                 verb_only: bool = False, owner: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: show the command's usage line with the error
        self.usage = usage
        #: the board the request named: its summary comes with the error
        self.board = board
        self.hint = hint
        #: throttle keys to charge with a wrong password (see pbmserv.service.throttle)
        self.failed_keys = failed_keys
        #: the words after the verb were not understood (too many, too few, or not of
        #: the kind asked for): any of them may be a password, so quote only the verb
        self.verb_only = verb_only
        #: (userid, address) of the account the message names: to its own address the
        #: userid is quoted even where every other word of the line is hidden
        self.owner = owner
