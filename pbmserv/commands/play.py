"""Game commands that change a board: challenge, move, resign; and a game's help."""

from __future__ import annotations

from pbmserv.accounts import existing_user
from pbmserv.boards import (
    acting_seat,
    create_board,
    finish,
    load_board,
    parse_board_ref,
    player_of,
    position_of,
    record_move,
    seats_of,
    small_number,
)
from pbmserv.commands.base import (
    BoardMail,
    Command,
    Context,
    Invocation,
    Result,
    command,
    login,
)
from pbmserv.commands.general import game_help
from pbmserv.db.models import Board, User
from pbmserv.errors import PlayerError
from pbmserv.games import AnyEngine
from pbmserv.games.base import Outcome, RuleError, Termination
from pbmserv.render import render
from pbmserv.summary import board_subject, board_summary


def mail_players(ctx: Context, engine: AnyEngine, board: Board, summary: str, *,
                 skip: User | None, new: bool = False,
                 comment: tuple[str, str] | None = None) -> None:
    """Queue the board mail (``summary``, and the mover's comment) for every player of
    the board but ``skip``."""
    body = render("board_mail.txt.j2", new=new, summary=summary, comment=comment)
    subject = board_subject(engine, board, new=new, commented=comment is not None)
    sent: set[str] = set()
    for player in board.players:
        user = player.user
        if user.id == (skip.id if skip else None) or user.email in sent:
            continue
        sent.add(user.email)
        ctx.board_mails.append(BoardMail(user.email, subject, body))


def move_hint(engine: AnyEngine, board: Board) -> str:
    forms = " or ".join(engine.move_forms)
    return (f"{engine.title} moves are written like {forms}; "
            f'"{engine.name} moves {board.number}" lists every legal move.')


def game_of(inv: Invocation) -> AnyEngine:
    assert inv.game is not None
    return inv.game


def acting_player(ctx: Context, engine: AnyEngine, inv: Invocation) -> tuple[Board, User]:
    """Board (locked) and authenticated player for ``<game> verb board uid pw ...``."""
    # log in first: until the password is known to be where it belongs, no other
    # word of the command is quoted back
    user = login(ctx, inv.args[1], inv.args[2])
    number, at = parse_board_ref(inv.args[0])
    if at is not None:
        raise PlayerError("a move number goes on the move (like a1-a2#3), not on the board")
    board = load_board(ctx.session, engine, number, lock=True)
    if not seats_of(board, user):
        raise PlayerError(f"{user.userid} does not play {engine.name} board {number}",
                           board=board)
    if board.finished:
        raise PlayerError(f"{engine.title} board {number} is over", board=board)
    return board, user


@command
class GameHelp(Command):
    name = "help"
    per_game = True
    summary = "the rules of the game, its options and how to write a move"
    max_args = 0

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = game_of(inv)
        return Result(game_help(engine), subject=f"{engine.title} help")


@command
class Challenge(Command):
    name = "challenge"
    aliases = ("chall",)
    per_game = True
    arguments = "userid1 userid2 [-option...]"
    summary = "start a board between two players at once; userid1 moves first"
    min_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = game_of(inv)
        names = [a for a in inv.args if not a.startswith("-")]
        flags = [a for a in inv.args if a.startswith("-")]
        if len(names) != len(engine.seats):
            raise PlayerError(f"{engine.name} needs exactly {len(engine.seats)} userids",
                               usage=True)
        users = [existing_user(ctx.session, n) for n in names]
        try:
            options = engine.check_options(flags)
        except RuleError as exc:
            raise PlayerError(str(exc)) from None
        board = create_board(ctx.session, engine, users, options)
        summary = board_summary(ctx.session, engine, board)
        mail_players(ctx, engine, board, summary, skip=None, new=True)
        return Result(
            render("commands/challenge.txt.j2", engine=engine, board=board, summary=summary),
            subject=board_subject(engine, board, new=True),
        )


def resign(ctx: Context, engine: AnyEngine, board: Board, user: User) -> Result:
    finish(board, Outcome(1 - acting_seat(board, user), Termination.RESIGNATION,
                          f"{user.userid} resigned"))
    summary = board_summary(ctx.session, engine, board)
    mail_players(ctx, engine, board, summary, skip=user)
    return Result(
        render("commands/resign.txt.j2", engine=engine, board=board, summary=summary),
        subject=board_subject(engine, board),
    )


OFFER_WORDS = ("propose", "accept", "reject")


def answer_offer(ctx: Context, engine: AnyEngine, board: Board, user: User,
                 word: str) -> Result:
    """``propose`` an agreed end; the opponent may ``accept`` or ``reject`` it."""
    if word == "propose":
        if board.offer_by is not None:
            raise PlayerError(f"{player_of(board, board.offer_by).userid} has already "
                               "offered to end this game", board=board)
        board.offer_by = acting_seat(board, user)
        what = "offer"
    else:
        if board.offer_by is None:
            raise PlayerError("nobody has offered to end this game", board=board)
        if seats_of(board, user) == [board.offer_by]:
            raise PlayerError("you made the offer; your opponent must answer it", board=board)
        if word == "accept":
            finish(board, engine.agreed_outcome(position_of(engine, board)))
        board.offer_by = None
        what = word
    summary = board_summary(ctx.session, engine, board)
    mail_players(ctx, engine, board, summary, skip=user)
    return Result(
        render("commands/offer.txt.j2", engine=engine, board=board, what=what, user=user,
               summary=summary),
        subject=board_subject(engine, board),
    )


@command
class MoveCommand(Command):
    name = "move"
    aliases = ("board",)
    per_game = True
    arguments = "board userid password move[#n]"
    summary = ("play a move; '#n' (the move's number) guards against repeated mail; the "
               "moves 'resign', 'propose' (offer to end the game by agreement), 'accept' "
               "and 'reject' answer for the game as a whole")
    secret_args = (2,)
    min_args = 4
    max_args = 4

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = game_of(inv)
        board, user = acting_player(ctx, engine, inv)
        text, _, at = inv.args[3].partition("#")
        if at:
            if small_number(at) is None:
                raise PlayerError(f"#{at[:20]} is not a move number", board=board)
            if int(at) != board.ply + 1:
                raise PlayerError(
                    f"this would be move {board.ply + 1} of board {board.number}, "
                    f"not move {at}; your mail may be old or sent twice",
                    board=board,
                )
        word = text.lower()
        if word == "resign":
            return resign(ctx, engine, board, user)
        if word in OFFER_WORDS:
            return answer_offer(ctx, engine, board, user, word)
        if board.to_move not in seats_of(board, user):
            mover = player_of(board, board.to_move)
            raise PlayerError(f"it is {mover.userid}'s turn, not yours", board=board)
        try:
            position, notation = engine.play(position_of(engine, board), text)
        except RuleError as exc:
            raise PlayerError(f"{text} is not possible here: {exc}", board=board,
                               hint=move_hint(engine, board)) from None
        record_move(ctx.session, engine, board, position, notation, ctx.comment)
        comment = (user.userid, ctx.comment) if ctx.comment else None
        summary = board_summary(ctx.session, engine, board)
        mail_players(ctx, engine, board, summary, skip=user, comment=comment)
        return Result(
            render("commands/move.txt.j2", engine=engine, board=board, notation=notation,
                   summary=summary),
            subject=board_subject(engine, board),
        )


@command
class Resign(Command):
    name = "resign"
    per_game = True
    arguments = "board userid password"
    summary = "give up the game (also accepted as the move 'resign')"
    secret_args = (2,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = game_of(inv)
        board, user = acting_player(ctx, engine, inv)
        return resign(ctx, engine, board, user)
