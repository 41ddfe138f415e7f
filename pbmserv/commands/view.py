"""Commands that only look: show, games, preview, moves, and turns (every game)."""

from __future__ import annotations

from functools import partial

from pbmserv.commands.args import board_number, parse_board_ref
from pbmserv.commands.base import Command, Context, Invocation, Result
from pbmserv.db.models import Board, User
from pbmserv.games import AnyEngine
from pbmserv.games.base import RuleError
from pbmserv.i18n import N_
from pbmserv.notifications import Notifier
from pbmserv.notifications.subjects import our_subject
from pbmserv.notifications.views import (
    LISTED_ROUNDS,
    SHOWN_ROUNDS,
    board_view,
    diagram,
    status_line,
    summary_text,
)
from pbmserv.notifications.words import words_text
from pbmserv.reads.boards import PLAYER_FILTERS, boards_of_user
from pbmserv.reads.pages import PAGE_SIZE
from pbmserv.reads.turns import turns_of
from pbmserv.render import render
from pbmserv.service.accounts import accounts_at, existing_user
from pbmserv.service.boards import load_board, position_at, position_of
from pbmserv.service.budget import (
    LISTED_MOVES_PER_UNIT,
    MOVES_LIST_COST,
    TURNS_COST,
    moves_within,
)
from pbmserv.service.errors import PlayerError
from pbmserv.service.games import move_hint

GAME_FILTERS = PLAYER_FILTERS


def user_boards(ctx: Context, inv: Invocation, userid: str, which: str) -> Result:
    engine = inv.engine
    if which not in GAME_FILTERS:
        raise PlayerError(f"choose one of {', '.join(GAME_FILTERS)}", usage=True)
    user = existing_user(ctx.session, userid)
    boards = boards_of_user(ctx.session, engine.name, user.id, which, PAGE_SIZE + 1)
    more = len(boards) > PAGE_SIZE
    rows = [(b, status_line(engine, b)) for b in boards[:PAGE_SIZE]][::-1]
    return Result(
        render("commands/games.txt.j2", engine=engine, user=user, which=which, rows=rows,
               more=more, size=PAGE_SIZE),
        subject=f"{engine.title} boards of {user.userid}",
    )


class Show(Command):
    name = "show"
    per_game = True
    arguments = "board[#n] [all] [-words] | userid [active|all|inactive|next]"
    summary = N_("the board as its board mails show it, with the latest 20 rounds of moves "
               "(all: every move; -words: described in words too, for a screen reader); "
               "with #n, as it was after move n; or a player's boards")
    numbered_args = (0,)
    min_args = 1
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        ref = inv.args[0]
        head = ref.split("#")[0]
        if not head.isascii() or not head.isdigit():
            if len(inv.args) > 2:
                raise PlayerError(f"too many words after {inv.verb!r}: a player's boards "
                                  "take one (active, all, inactive or next)", usage=True)
            which = inv.args[1].lower() if len(inv.args) > 1 else "active"
            return user_boards(ctx, inv, ref, which)
        extra = [w.lower() for w in inv.args[1:]]
        for word in extra:
            if word not in SHOW_WORDS:
                raise PlayerError(render("commands/show_refused.txt.j2", why="extra",
                                         word=word[:20]).strip(), usage=True)
        words, every = "-words" in extra, "all" in extra
        number, at = parse_board_ref(ref)
        board = load_board(ctx.session, engine, number)
        if at is None:
            ctx.budget.charge(listing_cost(engine, board, every),
                              f"listing the moves of board {board.number}")
            view = board_view(ctx.session, engine, board, full=every)
            text = summary_text(view)
            if words:
                ctx.budget.charge(MOVES_LIST_COST, f"the board {board.number} in words")
                text += "\n" + words_text(view)
        elif extra:
            raise PlayerError(render("commands/show_refused.txt.j2", why="words-at",
                                     game=engine.name, number=number,
                                     word=" ".join(extra)).strip(), usage=True)
        else:
            position = position_at(ctx.session, engine, board, at, ctx.budget)
            text = render("commands/show_at.txt.j2", engine=engine, board=board, ply=at,
                          diagram=diagram(engine, position))
        return Result(text, subject=f"{engine.title} Board {board.number}", board=board)


#: what may follow the board number of 'show'
SHOW_WORDS = ("all", "-words")


def listing_cost(engine: AnyEngine, board: Board, every: bool) -> int:
    """The work of listing a board's moves: the latest rounds, or (``every``) all."""
    rounds = LISTED_ROUNDS if every else SHOWN_ROUNDS
    return 1 + min(board.ply, rounds * len(engine.seats)) // LISTED_MOVES_PER_UNIT


class Games(Command):
    name = "games"
    per_game = True
    arguments = "userid [active|all|inactive|next]"
    summary = N_("a player's boards of this game; 'next': those waiting for their move")
    min_args = 1
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        which = inv.args[1].lower() if len(inv.args) > 1 else "active"
        return user_boards(ctx, inv, inv.args[0], which)


class Preview(Command):
    name = "preview"
    per_game = True
    arguments = "board move..."
    summary = N_("the board as it would be after these moves; nothing is stored")
    min_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        number = board_number(inv.args[0])
        asked = len(inv.args) - 1
        most = moves_within(engine.name, ctx.budget.limit)
        ctx.budget.moves(engine.name, asked, f"a preview of {asked:,} {engine.title} moves",
                         less=f"A mail may preview {most:,} {engine.title} moves at most.")
        board = load_board(ctx.session, engine, number)
        pos = position_of(engine, board)
        played: list[str] = []
        for text in inv.args[1:]:
            try:
                pos, notation = engine.play(pos, text)
            except RuleError as exc:
                done = f" after {' '.join(played)}" if played else ""
                raise PlayerError(f"{text} is not possible{done}: {exc}", board=board,
                                  hint=move_hint(engine, board)) from None
            played.append(notation)
        outcome = engine.outcome(pos)
        return Result(
            render("commands/preview.txt.j2", engine=engine, board=board, played=played,
                   outcome=outcome, to_move=engine.seats[engine.to_move(pos)],
                   diagram=diagram(engine, pos)),
            subject=f"{engine.title} Board {board.number} preview",
        )


class Moves(Command):
    name = "moves"
    per_game = True
    arguments = "board [all]"
    summary = N_("the legal moves of the player to move (all: and every move played, as "
               "'show ... all' lists them)")
    min_args = 1
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        every = len(inv.args) > 1
        if every and inv.args[1].lower() != "all":
            raise PlayerError(render("commands/moves_refused.txt.j2").strip(), usage=True,
                              verb_only=True)
        board = load_board(ctx.session, engine, board_number(inv.args[0]))
        if not board.finished:
            ctx.budget.charge(MOVES_LIST_COST, f"listing the legal moves of board {board.number}")
        view = None
        if every:
            ctx.budget.charge(listing_cost(engine, board, True),
                              f"listing the moves of board {board.number}")
            view = board_view(ctx.session, engine, board, full=True)
        pos = position_of(engine, board)
        moves = [] if board.finished else [engine.format_move(pos, m)
                                            for m in engine.legal_moves(pos)]
        return Result(
            render("commands/moves.txt.j2", engine=engine, board=board, moves=moves,
                   status=status_line(engine, board), view=view),
            subject=f"{engine.title} Board {board.number} moves",
        )


def reply_address(notifier: Notifier, user: User, board: Board) -> str | None:
    return notifier.reply_address(board, user)


class TurnsCommand(Command):
    name = "turns"
    aliases = ("games",)
    arguments = "[userid]"
    summary = N_("every board, of every game and tournament, that waits for your move (or "
               "userid's), the longest waiting first: when its clock runs out, the "
               "opponent's last move, and the address that takes your move by reply")
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if inv.args:
            users = [existing_user(ctx.session, inv.args[0])]
        else:
            users = accounts_at(ctx.session, ctx.sender)
            if not users:
                raise PlayerError(render("commands/turns_refused.txt.j2").strip(),
                                  usage=True)
        notifier = Notifier(ctx.session, ctx.settings)
        lists = []
        for user in users:
            ctx.budget.charge(TURNS_COST, f"the boards waiting for {user.userid}")
            # a move's reply address goes only where the player's own mail goes
            private = ctx.replies_to(user.email)
            lists.append(turns_of(ctx.session, user, ctx.service.now,
                                  address=partial(reply_address, notifier, user)
                                  if private else None))
        private = all(ctx.replies_to(u.email) for u in users)
        return Result(render("commands/turns.txt.j2", lists=lists, private=private),
                      subject=our_subject(ctx.settings, "your turns" if not inv.args
                                          else f"{users[0].userid}'s turns", colon=False))
