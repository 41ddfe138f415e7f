"""What the address of a move page stands for: the move-by-reply token of a board mail
(pbmserv.service.reply_tokens), read for a page that helps its player write that
reply.  The page never changes a board: the reply it makes plays the move, checked
as any reply is.  A page whose board has moved on, or whose token the player's new
password or address revoked, says so rather than offering a move.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.orm import Session

from pbmserv.db.models import Board, User
from pbmserv.service.boards import load_board_by_id, player_of
from pbmserv.service.reply_tokens import ReplyToken, read_token, revoked_token


class AskState(StrEnum):
    #: the board waits for this move of this player
    OPEN = "open"
    #: the board moved on (a move played, taken back, the game over)
    MOVED_ON = "moved-on"
    #: the player's password or address changed since the board mail was sent
    REVOKED = "revoked"
    #: the token answers a draw offer or an undo request, not a move
    ANSWER = "answer"


@dataclass(frozen=True)
class MoveAsk:
    """A move page's token, read: the board and player it names, and how it stands."""

    state: AskState
    token: ReplyToken
    board: Board
    user: User


def move_ask(session: Session, secret: bytes, tag: str) -> MoveAsk | None:
    """What the token ``tag`` stands for now; None if it is not one the server made
    (or its board or player is gone).  Two rows read: the player, the board."""
    user_of: dict[int, User | None] = {}

    def changes_of(user_id: int) -> int:
        user = user_of[user_id] = session.get(User, user_id)
        return 0 if user is None else user.credential_changes

    state = AskState.OPEN
    token = read_token(secret, tag, changes_of)
    if token is None:
        user = next(iter(user_of.values()), None)
        if user is None:
            return None
        token = revoked_token(secret, tag, user.credential_changes)
        state = AskState.REVOKED
        if token is None:
            return None
    user = user_of.get(token.user_id)
    board = load_board_by_id(session, token.board_id)
    if user is None or board is None or user.closed_at is not None \
            or all(p.user_id != user.id for p in board.players):
        return None
    if state is AskState.OPEN:
        if token.request:
            state = AskState.ANSWER
        if (board.finished or token.ply != board.ply + 1 or token.takebacks != board.takebacks
                or (not token.request and player_of(board, board.to_move).id != user.id)):
            state = AskState.MOVED_ON
    return MoveAsk(state, token, board, user)
