"""Game commands that only look: show, games, preview, moves."""

from __future__ import annotations

from pbmserv.commands.args import board_number, parse_board_ref
from pbmserv.commands.base import Command, Context, Invocation, Result
from pbmserv.games.base import RuleError
from pbmserv.i18n import N_
from pbmserv.notifications.views import (
    LISTED_ROUNDS,
    board_view,
    diagram,
    status_line,
    summary_text,
)
from pbmserv.notifications.words import words_text
from pbmserv.reads.boards import PLAYER_FILTERS, boards_of_user
from pbmserv.reads.pages import PAGE_SIZE
from pbmserv.render import render
from pbmserv.service.accounts import existing_user
from pbmserv.service.boards import load_board, position_at, position_of
from pbmserv.service.budget import LISTED_MOVES_PER_UNIT, MOVES_LIST_COST, moves_within
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
    arguments = "board[#n] [-words] | userid [active|all|inactive|next]"
    summary = N_("the board (as it was after move n if given; -words: described in words "
               "too, for a screen reader), or a player's boards")
    numbered_args = (0,)
    min_args = 1
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        ref = inv.args[0]
        head = ref.split("#")[0]
        if not head.isascii() or not head.isdigit():
            which = inv.args[1].lower() if len(inv.args) > 1 else "active"
            return user_boards(ctx, inv, ref, which)
        words = len(inv.args) > 1
        if words and inv.args[1].lower() != "-words":
            raise PlayerError(render("commands/show_refused.txt.j2", why="extra",
                                     word=inv.args[1][:20]).strip(), usage=True)
        number, at = parse_board_ref(ref)
        board = load_board(ctx.session, engine, number)
        if at is None:
            listed = min(board.ply, LISTED_ROUNDS * len(engine.seats))
            ctx.budget.charge(1 + listed // LISTED_MOVES_PER_UNIT,
                              f"listing the {listed:,} moves of board {board.number}")
            view = board_view(ctx.session, engine, board, full=True)
            text = summary_text(view)
            if words:
                ctx.budget.charge(MOVES_LIST_COST, f"the board {board.number} in words")
                text += "\n" + words_text(view)
        elif words:
            raise PlayerError(render("commands/show_refused.txt.j2", why="words-at",
                                     game=engine.name, number=number).strip(), usage=True)
        else:
            position = position_at(ctx.session, engine, board, at, ctx.budget)
            text = render("commands/show_at.txt.j2", engine=engine, board=board, ply=at,
                          diagram=diagram(engine, position))
        return Result(text, subject=f"{engine.title} Board {board.number}", board=board)


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
    arguments = "board"
    summary = N_("the legal moves of the player to move")
    min_args = 1
    max_args = 1

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        board = load_board(ctx.session, engine, board_number(inv.args[0]))
        if not board.finished:
            ctx.budget.charge(MOVES_LIST_COST, f"listing the legal moves of board {board.number}")
        pos = position_of(engine, board)
        moves = [] if board.finished else [engine.format_move(pos, m)
                                            for m in engine.legal_moves(pos)]
        return Result(
            render("commands/moves.txt.j2", engine=engine, board=board, moves=moves,
                   status=status_line(engine, board)),
            subject=f"{engine.title} Board {board.number} moves",
        )
