"""Game commands that change a board: challenge, move (and its words), resign,
decline, queue; and a game's help."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.orm import Session

from pbmserv.commands.args import (
    board_number,
    is_board_ref,
    parse_challenge_words,
    split_move_number,
)
from pbmserv.commands.base import Command, Context, Invocation, Result, login
from pbmserv.commands.general import game_help
from pbmserv.db.models import Board, User
from pbmserv.db.status import RequestKind
from pbmserv.games import AnyEngine
from pbmserv.i18n import N_
from pbmserv.notifications.notes import notes_of
from pbmserv.notifications.replies import BoardAnswer
from pbmserv.notifications.views import agreed_ending
from pbmserv.render import render
from pbmserv.service import limits
from pbmserv.service.accounts import check_enabled, existing_user
from pbmserv.service.boards import (
    acting_seat,
    engine_of,
    find_board,
    load_board,
    load_board_by_id,
    open_request_id,
    player_of,
    request_event,
    seats_of,
    tournament_of_board,
)
from pbmserv.service.errors import PlayerError
from pbmserv.service.passwords import check_password
from pbmserv.service.reply_tokens import (
    ReplyToken,
    read_token,
    revoked_token,
    server_secret,
)


def acting(ctx: Context, inv: Invocation) -> tuple[AnyEngine, Board, User]:
    """Game, board (locked) and player of ``<game> verb board uid pw ...``.

    The player logs in first: until the password is known to be where it belongs,
    no other word of the command is quoted back.
    """
    engine = inv.engine
    # the board and its players' accounts in one query; the login uses the account
    # from there when the player is one of them (any error still waits for the login)
    board = None
    if is_board_ref(inv.args[0]) and "#" not in inv.args[0]:
        board = find_board(ctx.session, engine, board_number(inv.args[0]), lock=True)
    user = login(ctx, inv.args[1], inv.args[2],
                 [p.user for p in board.players] if board is not None else ())
    if board is None:
        board = load_board(ctx.session, engine, board_number(inv.args[0]), lock=True)
    return engine, board, user


def board_result(ctx: Context, board: Board, user: User | None, template: str, *,
                 new: bool = False, **context: Any) -> Result:
    """The reply to a command that changed a board: what it did (``template`` and the
    plain values of ``context``), what followed (the notes of its events, worded for
    ``user``) and the board, rendered with the board's view once the mail's commands
    have run."""
    return Result("", board=board, answer=BoardAnswer(
        template, context, notes=notes_of(board, ctx.new_events()), reader=user, new=new))


def started_result(ctx: Context, board: Board, user: User | None, *,
                   by: str = "") -> Result:
    """The reply to a command that started a board: who has taken it up, and who has
    yet to (``by``: how ``user`` took it up with a challenge, "password" or "reply
    address"; "": they did not, or the board came another way)."""
    people = [p.user for p in board.players if p.user.bot is None]
    own = next((u.userid for u in people if u.email == ctx.sender.lower()), None)
    return board_result(ctx, board, user, "commands/challenge.txt.j2", new=True,
                        waiting=[p.user.userid for p in board.players if p.accepted_at is None],
                        challenger=user.userid if by and user is not None else None, by=by,
                        own=own, names=" ".join(u.userid for u in (p.user for p in
                                                                      board.players)))


class GameHelp(Command):
    name = "help"
    per_game = True
    summary = N_("the rules of the game, its options and how to write a move")
    max_args = 0

    def run(self, ctx: Context, inv: Invocation) -> Result:
        return Result(game_help(inv.engine, ctx.commands), subject=f"{inv.engine.title} help")


class Challenge(Command):
    name = "challenge"
    aliases = ("chall",)
    per_game = True
    arguments = ("userid1 userid2 [-option...] [--nagtime=DAYS] [--forfeittime=DAYS] "
                 "[password]")
    summary = N_("start a board between two players at once; userid1 moves first. With "
               "your password (last, or right after the userids), or sent to a reply "
               "address of yours, the board is yours at once; without, it counts for "
               "nobody until they move on it or accept it. The clock nags after 7 days "
               "without a move and forfeits after 21, unless set")
    min_args = 2

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        """The word after the userids is the password (and any word after it)."""
        names = [i for i, word in enumerate(inv.args) if not word.startswith("-")]
        return tuple(names[len(inv.engine.seats):])

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine = inv.engine
        words = parse_challenge_words(inv.args)
        seats = len(engine.seats)
        names, password = words.names, None
        if len(names) == seats + 1:
            *names, password = names
        if len(names) != seats:
            raise PlayerError(f"{engine.name} needs exactly {seats} userids (and, to take "
                              "the board up at once, your password after them)", usage=True)
        if password is not None:
            ctx.passwords.add(password)
        users = [check_enabled(existing_user(ctx.session, n)) for n in names]
        taken_by, by = None, ""
        if password is not None:
            taken_by, by = challenger_login(ctx, users, password), "password"
        elif ctx.reply_tag:
            taken_by = reply_address_player(ctx, ctx.reply_tag, users)
            by = "reply address" if taken_by is not None else ""
        limits.check_challenges(ctx.session, ctx.sender, users, ctx.service.now,
                                per_sender=ctx.settings.challenges_per_sender_day,
                                per_player=ctx.settings.challenges_per_player_day)
        board = ctx.service.challenge(engine, users, words.options, nag_days=words.nag_days,
                                      forfeit_days=words.forfeit_days, sender=ctx.sender,
                                      taken_by=taken_by)
        # its players are mailed the new board, unasked (refused: no board is kept)
        ctx.mail_others(u.email for u in users if u.bot is None)
        return started_result(ctx, board, taken_by, by=by)


def challenger_login(ctx: Context, users: list[User], password: str) -> User:
    """The player of a challenge whose password it holds: the one whose address sent
    it, if one did; else the one the password opens (a wrong one counts against the
    first player named, as a wrong login does)."""
    people = [u for u in users if u.bot is None]
    if not people:
        raise PlayerError(N_("a password in a challenge is a player's own, and every "
                          "player named is a bot; leave the password out"))
    own = [u for u in people if u.email == ctx.sender.lower()]
    candidates = own or [u for u in people if check_password(u.password_hash, password)]
    chosen = (candidates or people)[0]
    return login(ctx, chosen.userid, password, users)


def reply_address_player(ctx: Context, tag: str, users: list[User]) -> User | None:
    """The player of the reply address a challenge was sent to, if it is still good
    and they are one of ``users``: the address stands for their password."""
    token = read_token(server_secret(ctx.session, ctx.settings.secret), tag,
                       lambda user_id: changes_of(ctx.session, user_id))
    user = next((u for u in users if token is not None and u.id == token.user_id), None)
    if user is not None:
        ctx.logged_in(user)
    return user


#: words written in place of a move, and what they do
MOVE_WORDS = ("resign", "propose", "draw", "accept", "reject", "undo", "decline")


class MoveCommand(Command):
    name = "move"
    aliases = ("board",)
    per_game = True
    arguments = "board userid password move[#n]"
    summary = N_("play a move; '#n' (the move's number) guards against repeated mail. In "
               "place of a move: 'resign'; 'propose' (offer to end the game by "
               "agreement); 'undo' (ask to take back your last move, with the answer "
               "to it if one came); 'accept' or 'reject' (answer your opponent's offer "
               "or request); 'decline' (end a board you have not moved on, with no "
               "result). The body is your comment")
    secret_args = (2,)
    numbered_args = (3,)
    min_args = 4
    max_args = 4

    def check_arity(self, inv: Invocation) -> None:
        if len(inv.args) > self.max_args and is_board_ref(inv.args[0]):
            # the words are not quoted: any of them may be a password
            raise PlayerError(N_(
                "a move is one word, and nothing may follow it on the command line; a "
                "comment for your opponent goes in the body of the mail, under the "
                "command"), usage=True)
        super().check_arity(inv)

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine, board, user = acting(ctx, inv)
        text, at = split_move_number(inv.args[3])
        service = ctx.service
        word = text.lower()
        if word in MOVE_WORDS:
            service.seat_of(board, user)
            service.check_ply(board, at)
            return act(ctx, engine, board, user, word)
        notation = service.play(board, user, text, comment=ctx.comment, expected_ply=at)
        return moved(ctx, board, user, notation)


def moved(ctx: Context, board: Board, user: User, notation: str) -> Result:
    """The reply to a move: what was played, and whose turn it is now."""
    nxt = None if board.finished else player_of(board, board.to_move)
    return board_result(ctx, board, user, "commands/move.txt.j2", notation=notation,
                        next_up=nxt.userid if nxt is not None and nxt.id != user.id else None,
                        next_bot=nxt is not None and nxt.bot is not None)


def act(ctx: Context, engine: AnyEngine, board: Board, user: User, word: str) -> Result:
    """A move word: resign, a request (propose/draw, undo), an answer, decline."""
    service = ctx.service
    answer_too = False
    if word == "resign":
        service.resign(board, user, comment=ctx.comment)
    elif word in ("propose", "draw", "undo"):
        kind = RequestKind.UNDO if word == "undo" else RequestKind.DRAW
        # an undo on one's own turn takes back the opponent's answer too
        answer_too = kind is RequestKind.UNDO and board.to_move in seats_of(board, user)
        service.request(board, user, kind, comment=ctx.comment)
    elif word in ("accept", "reject"):
        service.answer(board, user, word == "accept", comment=ctx.comment)
    else:
        service.decline(board, user, comment=ctx.comment)
    agreed = agreed_ending(engine, board) if word in ("propose", "draw") else None
    # (a bot answers an undo at once: the notes say how, nothing is left to answer)
    return board_result(ctx, board, user, "commands/act.txt.j2", word=word, agreed=agreed,
                        answered=board.request_kind is None, answer_too=answer_too,
                        tournament=tournament_of_board(ctx.session, board)
                        if word == "decline" else None)


def changes_of(session: Session, user_id: int) -> int:
    """How often the user's password or address changed (0: no such user)."""
    user = session.get(User, user_id)
    return 0 if user is None else user.credential_changes


def reply_move(ctx: Context, tag: str, text: str) -> Result:
    """The move of a reply to a move-by-reply address: the address names the board,
    the player and the move; the reply's first line is the move (or a move word)."""
    secret = server_secret(ctx.session, ctx.settings.secret)
    token = read_token(secret, tag, lambda user_id: changes_of(ctx.session, user_id))
    if token is None:
        revoked_reply(ctx, secret, tag)
        raise PlayerError(N_("this mail went to a reply address the server did not give "
                          "out (or one that was changed); write the whole command instead, "
                          "as the \"To move:\" line of the board mail shows it"))
    board = load_board_by_id(ctx.session, token.board_id, lock=True)
    user = ctx.session.get(User, token.user_id)
    if board is None or user is None or user.closed_at is not None:
        raise PlayerError(N_("the board or the player of this reply address is gone"))
    check_enabled(user)  # the address stands for the password: not for a disabled account
    engine = engine_of(board)
    move, at = split_move_number(text)
    service = ctx.service
    service.seat_of(board, user)
    if token.request:
        return answer_by_reply(ctx, engine, board, user, token, move, at)
    service.check_ply(board, token.ply)  # a late or repeated reply is refused
    if token.takebacks != board.takebacks:
        raise PlayerError(f"a move was taken back on board {board.number} since this reply "
                          "address was made, so it no longer stands for a move; reply to "
                          "the newest board mail instead", board=board)
    if at is not None:
        service.check_ply(board, at)
    ctx.logged_in(user)  # the address stood for the password
    if move.lower() in MOVE_WORDS:
        return act(ctx, engine, board, user, move.lower())
    notation = service.play(board, user, move, comment=ctx.comment, expected_ply=token.ply)
    return moved(ctx, board, user, notation)


def revoked_reply(ctx: Context, secret: bytes, tag: str) -> None:
    """A reply from a player's own address to a reply address of theirs that a new
    password (or address) made void: a PlayerError that says so and shows the board as
    it stands, with a fresh reply address; None if ``tag`` is no such address."""
    found = _TAG_USER.match(tag.strip().lower())
    user = ctx.session.get(User, int(found.group(1))) if found else None
    token = None if user is None else revoked_token(secret, tag, user.credential_changes)
    if token is None or user is None or user.email != ctx.sender.lower():
        return  # to another address than the player's, no word of their account
    board = load_board_by_id(ctx.session, token.board_id)
    if board is None or all(p.user_id != user.id for p in board.players):
        return
    raise PlayerError(
        f"this reply address of {board.game} board {board.number} no longer stands for a "
        f"move: {user.userid}'s password (or address) changed since the board mail was "
        "sent, which voids the reply addresses made before. Nothing was played; the board "
        "as it stands is below, with a fresh reply address if it waits for you",
        board=board)


#: the player's id in a reply address's tag (checked by its signature afterwards)
_TAG_USER = re.compile(r"b[0-9]{1,10}u([0-9]{1,10})m")


#: what may be written to an address that answers a request ("decline": the offer)
ANSWER_WORDS = {"accept": "accept", "reject": "reject", "decline": "reject"}


def answer_by_reply(ctx: Context, engine: AnyEngine, board: Board, user: User,
                    token: ReplyToken, move: str, at: int | None) -> Result:
    """A reply to the address that asked ``user`` to answer the board's open request
    (a draw offer, an undo request) while it was not their move: ``accept``, or
    ``reject`` (``decline`` too: the offer).  The address is void once the request is
    answered or lapses, and once the board moves on (the newest board mail has the
    address to use then)."""
    service = ctx.service
    asked = request_event(ctx.session, board, token.request) or {}
    asker = player_of(board, int(asked.get("seat", 1 - acting_seat(board, user)))).userid
    what = (f"{asker}'s offer to end the game by agreement" if asked.get("request") == "draw"
            else f"{asker}'s request to take back a move")
    if open_request_id(ctx.session, board) != token.request:
        raise PlayerError(f"this reply address was for your answer to {what} on "
                          f"{engine.title} board {board.number}, and that is no longer "
                          "open: it was answered, or it lapsed when a move was played. "
                          "Nothing was changed; the board as it stands is below",
                          board=board)
    if token.takebacks != board.takebacks or token.ply != board.ply + 1:
        raise PlayerError(f"the board has moved on since this reply address was made; "
                          f"{what} is still open: answer it through the reply address of "
                          "the newest board mail, or with the whole command", board=board)
    if at is not None:
        service.check_ply(board, at)
    ctx.logged_in(user)  # the address stood for the password
    word = move.lower()
    if word in ANSWER_WORDS:
        return act(ctx, engine, board, user, ANSWER_WORDS[word])
    if word in MOVE_WORDS:
        raise PlayerError(f"this reply address answers {what}: reply with accept or "
                          f"reject; to {word}, write the whole command", board=board)
    # the board stands as when the address was made, when it was not their move: a
    # move of theirs (which would decline the request) must wait for their turn
    mover = player_of(board, board.to_move).userid
    raise PlayerError(f"it is {mover}'s turn, not yours, so {move[:40]} cannot be played "
                      f"now; {what} waits for your answer: reply with accept or reject (a "
                      "move of yours, when your turn comes, declines it)", board=board)


class BoardWordCommand(Command):
    """``<game> <word> board userid password``: a move word as a command of its own."""

    per_game = True
    arguments = "board userid password"
    secret_args = (2,)
    min_args = 3
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine, board, user = acting(ctx, inv)
        return act(ctx, engine, board, user, self.name)


class Resign(BoardWordCommand):
    name = "resign"
    summary = N_("give up the game (also accepted as the move 'resign'); the body is your comment")


class Decline(BoardWordCommand):
    name = "decline"
    summary = N_("end a board you have not moved on yet, with no result (also the move "
               "'decline')")


class Queue(Command):
    name = "queue"
    per_game = True
    arguments = "board userid password [OPP MINE ...|clear]"
    summary = N_("conditional moves: when your opponent plays OPP, MINE is played for you at "
               "once; the next pair waits for the next turn, and any other move clears the "
               "queue. Each move is checked now. Without pairs, shows your queue")
    secret_args = (2,)
    min_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        engine, board, user = acting(ctx, inv)
        service = ctx.service
        seat = service.seat_of(board, user)
        words = inv.args[3:]
        if [w.lower() for w in words] == ["clear"]:
            service.set_queue(board, user, [])
        elif words:
            ctx.budget.moves(engine.name, len(words),
                             f"checking a queue of {len(words):,} {engine.title} moves")
            service.set_queue(board, user, words)
        pairs = [(q.opponent_move, q.reply) for q in service.queue_of(board, seat)]
        return Result(render("commands/queue.txt.j2", engine=engine, board=board, user=user,
                             pairs=pairs, changed=bool(words)),
                      subject=f"{engine.title} Board {board.number} queue")
