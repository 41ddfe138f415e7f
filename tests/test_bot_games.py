"""Playing the house: the bot accounts take challenges by mail, move in their own
loop (never inside mail processing), answer offers by their rule, never time out, are
never mailed, and a bot killed while it thinks loses no move and plays none twice."""

from __future__ import annotations

import os
import random
import signal
import smtplib
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.bot_loop import BotLoop, take_turn
from pbmserv.bots import DRAW_MARGIN, get_bot
from pbmserv.config import Settings
from pbmserv.db.models import Board, BoardPlayer, BoardRating, Move, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.server import Server
from pbmserv.service.bot_turns import due_turns
from pbmserv.service.consent import BOT_BOARDS_PER_PLAYER
from tests.conftest import (
    Mailer,
    free_port,
    make_mail,
    read_maildir,
    text_of,
    wait_until_settled,
)
from tests.test_clocks import clock_mails, time_passes

#: the move limit of these games: far above what any of them took when written
MAX_PLIES = 400


def flat(text: str) -> str:
    return " ".join(text.split())


def board_row(db: Database, game: str, number: int = 101) -> Board:
    with db.transaction() as s:
        board = s.scalar(select(Board).where(Board.game == game, Board.number == number))
        assert board is not None
        return board


def bot_mail_count(db: Database) -> int:
    with db.transaction() as s:
        return s.scalar(select(func.count()).select_from(OutboxMessage)
                        .where(OutboxMessage.to_addr.like("%@bots.invalid"))) or 0


def alice_moves(mailer: Mailer, db: Database, game: str, rng: random.Random) -> None:
    """alice plays a random legal move by mail."""
    engine = get_engine(game)
    assert engine is not None
    board = board_row(db, game)
    pos = engine.load(board.position, board.position_version)
    text = engine.format_move(pos, rng.choice(engine.legal_moves(pos)))
    out = mailer.send(f"{game} move 101 alice pw-alice {text}#{board.ply + 1}")
    assert "has been played" in out[0].body, out[0].body
    if board_row(db, game).to_move == 1 and not board_row(db, game).finished:
        # the bot's turn: no "To move" line with a password for alice to fill in
        body = flat(out[0].body)
        assert "bot1 is one of the server's bots: its move comes by mail" in body, body
        assert "move 101 bot1" not in body


@pytest.mark.parametrize(("game", "flags"), [
    ("amoeba", "-small"), ("hexamoeba", ""), ("honeydonuts", ""), ("exnihilo", ""),
])
def test_challenge_the_house_and_play_to_the_end(mailer: Mailer, db: Database,
                                                 settings: Settings, game: str,
                                                 flags: str) -> None:
    mailer.signup("alice")
    out = mailer.send(f"{game} challenge alice bot1 {flags}".strip())
    assert [m.to_addr for m in out if m.subject.startswith("New ")] == ["alice@example.org"]
    loop = BotLoop(db, settings)
    rng = random.Random(7)
    bot_moves = 0
    for _ in range(MAX_PLIES):
        board = board_row(db, game)
        if board.finished:
            break
        if board.to_move == 0:
            alice_moves(mailer, db, game, rng)
        else:
            assert loop.once() == 1
            bot_moves += 1
            assert loop.once() == 0  # alice's turn now: the bot owes nothing
    board = board_row(db, game)
    assert board.finished and board.ply <= MAX_PLIES
    assert bot_moves > 0
    with db.transaction() as s:
        movers = [seat for seat, in s.execute(select(Move.seat).order_by(Move.ply))]
        bot = s.scalar(select(User).where(User.key == "bot1"))
        assert bot is not None and bot.bot == "bot1"
    assert len(movers) == board.ply and movers.count(1) == bot_moves
    with db.transaction() as s:
        last = s.scalar(select(OutboxMessage).where(OutboxMessage.to_addr == "alice@example.org")
                        .order_by(OutboxMessage.id.desc()).limit(1))
        assert last is not None
    assert "Game over" in last.subject
    assert "Game won by" in last.body or "Game drawn" in last.body, last.body
    assert bot_mail_count(db) == 0


def test_a_bot_that_moves_first_starts_at_once(mailer: Mailer, db: Database,
                                               settings: Settings) -> None:
    mailer.signup("alice")
    mailer.send("honeydonuts challenge bot2 alice")
    with db.transaction() as s:
        [turn] = due_turns(s)
    assert (turn.seat, turn.ply, turn.bot, turn.request) == (0, 0, "bot2", None)
    assert BotLoop(db, settings).once() == 1
    board = board_row(db, "honeydonuts")
    assert (board.ply, board.to_move) == (1, 1)
    with db.transaction() as s:
        mail = s.scalar(select(OutboxMessage).where(OutboxMessage.to_addr == "alice@example.org")
                        .order_by(OutboxMessage.id.desc()).limit(1))
        assert mail is not None
    assert mail.subject == "Honey Donuts Board 101 alice"
    assert "It is alice's turn (Blue), move 2." in flat(mail.body), mail.body


def test_a_turn_played_once_only(mailer: Mailer, db: Database, settings: Settings) -> None:
    """Two bot workers that saw the same turn (or one that restarted after playing it
    and before it knew): the second finds the board moved on and plays nothing."""
    mailer.signup("alice")
    mailer.send("exnihilo challenge bot1 alice")
    with db.transaction() as s:
        [turn] = due_turns(s)
    assert take_turn(db, settings, turn) is True
    assert take_turn(db, settings, turn) is False
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Move)) == 1
    assert board_row(db, "exnihilo").to_move == 1


def test_bots_grant_undo_and_answer_draws_by_their_rule(mailer: Mailer, db: Database,
                                                       settings: Settings) -> None:
    mailer.signup("alice")
    mailer.send("honeydonuts challenge alice bot1")
    loop = BotLoop(db, settings)
    rng = random.Random(3)
    alice_moves(mailer, db, "honeydonuts", rng)
    assert loop.once() == 1
    alice_moves(mailer, db, "honeydonuts", rng)
    before = board_row(db, "honeydonuts")
    assert (before.ply, before.to_move) == (3, 1)
    # alice asks to take back the move she just made, before the bot replied to it:
    # the bot answers first, and grants it (as it grants every undo)
    # the bot's answer needs no thought: it is given at once, and alice gets one mail,
    # the board as the undo left it, with the reply address for the move asked now
    # (not one for the move taken back, then a second mail)
    [told] = mailer.send("honeydonuts move 101 alice pw-alice undo")
    assert loop.once() == 0  # alice's turn again
    after = board_row(db, "honeydonuts")
    assert (after.ply, after.to_move, after.request_kind) == (2, 0, None)
    assert told.to_addr == "alice@example.org"
    assert told.reply_to is not None and told.reply_to.startswith(
        f"pbmserv+b{after.id}u") and f"m3t{after.takebacks}-" in told.reply_to
    assert told.body.startswith(
        "> honeydonuts move 101 alice ***** undo\n"
        "You have asked to take back your last move on Honey Donuts board 101.\n"
        "bot1 accepted your request to take back a move.\n"
        "Move 3 (")
    assert "it is your turn again.\n\nSummary of Honey Donuts Board 101\n" in told.body
    alice_moves(mailer, db, "honeydonuts", rng)
    assert loop.once() == 1
    # the usual case: the bot replied within seconds, then alice has second thoughts;
    # her move and the bot's reply go back together
    replied = board_row(db, "honeydonuts")
    assert (replied.ply, replied.to_move) == (4, 0)
    [told] = mailer.send("honeydonuts move 101 alice pw-alice undo")
    assert loop.once() == 0
    back = board_row(db, "honeydonuts")
    assert (back.ply, back.to_move, back.request_kind) == (2, 0, None)
    assert back.position == after.position
    alice_moves(mailer, db, "honeydonuts", rng)
    assert loop.once() == 1
    # a draw offer: the bot agrees exactly when its rule says so
    board = board_row(db, "honeydonuts")
    engine = get_engine("honeydonuts")
    bot = get_bot("bot1")
    assert engine is not None and bot is not None
    pos = engine.load(board.position, board.position_version)
    expected = bot.accepts_draw(engine, pos, 1, plies=board.ply)
    mailer.send("honeydonuts move 101 alice pw-alice draw")
    assert loop.once() == 1
    board = board_row(db, "honeydonuts")
    assert board.finished is expected and board.request_kind is None
    with db.transaction() as s:
        answer = s.scalar(select(OutboxMessage)
                          .where(OutboxMessage.to_addr == "alice@example.org")
                          .order_by(OutboxMessage.id.desc()).limit(1))
        assert answer is not None
    assert ("accepted" if expected else "rejected") in flat(answer.body), answer.body
    assert bot_mail_count(db) == 0


def test_no_draw_at_once_with_a_bot(mailer: Mailer, db: Database, settings: Settings) -> None:
    # a draw agreed before the game has run is refused (else a draw at once would be a
    # cheap way to take rating from a stronger bot)
    mailer.signup("alice")
    mailer.send("honeydonuts challenge alice bot1")
    engine = get_engine("honeydonuts")
    bot = get_bot("bot1")
    assert engine is not None and bot is not None
    board = board_row(db, "honeydonuts")
    pos = engine.load(board.position, board.position_version)
    assert abs(bot.estimate(engine, pos, 1)) < DRAW_MARGIN  # an even start
    mailer.send("honeydonuts move 101 alice pw-alice propose")
    assert BotLoop(db, settings).once() == 1
    board = board_row(db, "honeydonuts")
    assert not board.finished and board.request_kind is None
    with db.transaction() as s:
        told = s.scalar(select(OutboxMessage).where(OutboxMessage.to_addr == "alice@example.org")
                        .order_by(OutboxMessage.id.desc()).limit(1))
        assert told is not None
        assert s.scalar(select(func.count()).select_from(BoardRating)) == 0
    assert "rejected" in flat(told.body), told.body


def test_bots_never_time_out_but_their_opponents_do(mailer: Mailer, db: Database,
                                                    settings: Settings) -> None:
    mailer.signup("alice")
    mailer.send("honeydonuts challenge bot1 alice")  # the bot to move, and no bot loop
    time_passes(db, 60)
    out = clock_mails(db, settings)
    assert out == []  # no nag to a bot, no loss on time
    board = board_row(db, "honeydonuts")
    assert not board.finished and board.clock_due_at is not None
    BotLoop(db, settings).once()
    time_passes(db, 60)
    out = clock_mails(db, settings)
    assert board_row(db, "honeydonuts").finished
    assert [m.to_addr for m in out] == ["alice@example.org"]


def test_bot_accounts_are_nobody_elses(mailer: Mailer, db: Database) -> None:
    reply = mailer.reply("signup bot3 secret-pw", sender="mallory@example.org")
    # to a stranger the userid is not quoted back
    assert "ERROR: the userid '...' is taken; choose another" in reply, reply
    mailer.signup("alice")
    mailer.send("honeydonuts challenge alice bot1")
    out = mailer.send("honeydonuts move 101 bot1 !bot resign", sender="mallory@example.org")
    assert not board_row(db, "honeydonuts").finished
    assert "password" in flat(out[0].body).lower()
    with db.transaction() as s:
        bots = {u.key: u.bot for u in s.scalars(select(User).where(User.bot.is_not(None)))}
        assert all(p.user_id for p in s.scalars(select(BoardPlayer)))
    assert bots == {"bot1": "bot1", "bot2": "bot2", "bot3": "bot3"}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigkill_while_a_bot_thinks_loses_no_move(mailer: Mailer, db: Database,
                                                  settings: Settings, tmp_path: Path) -> None:
    mailer.signup("alice")
    mailer.send("exnihilo challenge bot3 alice")  # bot3 thinks nearly 3 s on this move
    env = {**os.environ, "PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_MAILDIR": str(tmp_path / "mail")}
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv", "bots", "--loop"], env=env)
    try:
        # starting takes well under a CPU second; at 1.5 s the bot is deep in thought
        deadline = time.monotonic() + 60
        while _cpu_seconds(proc.pid) < 1.5:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert board_row(db, "exnihilo").ply == 0  # killed before it played
    assert BotLoop(db, settings).once() == 1  # the restart plays the move
    assert BotLoop(db, settings).once() == 0  # and only once
    board = board_row(db, "exnihilo")
    assert (board.ply, board.to_move) == (1, 1)


def test_help_bots(mailer: Mailer) -> None:
    text = flat(mailer.reply("help bots"))
    assert '"amoeba challenge alice bot2 -small"' in text
    assert "bot1 quick: at most 0.25 s of thought a move" in text
    assert "bot3 strong: at most 3 s of thought a move" in text
    assert "a bot always lets you take back your last move" in text
    assert "It agrees to a draw when it rates its own position clearly worse, or, after 20 " \
        "moves each, when it does not rate it clearly better" in text
    assert (f"at most {BOT_BOARDS_PER_PLAYER} boards against the bots at once"
            in text)
    assert "bots" in flat(mailer.reply("help")).split("the topics")[1]


def test_the_server_runs_the_bots(db: Database, settings: Settings) -> None:
    """By SMTP to the real listener: the bot's answer comes by mail, unasked."""
    server = Server(db, settings, "127.0.0.1", free_port(), interval=0.1)
    server.start()
    try:
        def send(subject: str) -> None:
            with smtplib.SMTP("127.0.0.1", server.controller.port) as client:
                client.sendmail("alice@example.org", ["pbmserv@localhost"],
                                make_mail(subject))

        send("signup alice pw-alice")
        deadline = time.monotonic() + 60
        while not read_maildir(settings.maildir):  # the reply: "confirm alice CODE"
            assert time.monotonic() < deadline
            time.sleep(0.1)
        send(f"Re: {read_maildir(settings.maildir)[0]['Subject']}")
        send("honeydonuts challenge bot1 alice")
        deadline = time.monotonic() + 60
        while True:
            texts = [text_of(m) for m in read_maildir(settings.maildir)]
            if any("It is alice's turn (Blue), move 2." in flat(t) for t in texts):
                break
            assert time.monotonic() < deadline, texts
            time.sleep(0.1)
        wait_until_settled(db)  # and nothing more comes, to anyone
    finally:
        server.stop()
    assert {m["To"] for m in read_maildir(settings.maildir)} == {"alice@example.org"}


def test_bots_play_people_only_and_not_without_end(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    assert "the bots play people, not each other" in flat(
        mailer.reply("amoeba challenge bot1 bot3", sender="mallory@example.org"))
    for _ in range(BOT_BOARDS_PER_PLAYER):
        assert "Board" in mailer.send("honeydonuts challenge alice bot1")[0].subject
    refused = flat(mailer.reply("exnihilo challenge bot2 alice", sender="mallory@example.org"))
    assert f"alice plays {BOT_BOARDS_PER_PLAYER} boards against the bots already" in refused
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Board)) == BOT_BOARDS_PER_PLAYER


def test_a_board_the_bot_cannot_play_keeps_no_other_waiting(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge bot1 alice")
    mailer.send("honeydonuts challenge bot1 bob", sender="bob@example.org")
    with db.transaction() as s:  # board 101 is broken: its position cannot be read
        broken = s.scalar(select(Board).where(Board.number == 101))
        assert broken is not None
        broken.position = "not a position"
    loop = BotLoop(db, settings)
    assert loop.once() == 1  # board 102 is played
    assert board_row(db, "honeydonuts", 102).ply == 1
    assert list(loop.failing) == [board_row(db, "honeydonuts", 101).id]
    assert loop.once() == 0  # the broken board waits before it is tried again
    assert loop.failing[board_row(db, "honeydonuts", 101).id][0] == 1


@pytest.mark.parametrize("workers", [0, 1])
def test_a_bot_is_woken_when_a_board_turns_to_it(mailer: Mailer, db: Database,
                                                 settings: Settings, workers: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """No loop looks for work by itself here (once an hour): the bots' loop is woken by
    the commit that made the board the bot's (a doorbell), and the worker by the bot's
    move, whose board mail goes out at once; in threads and in processes of their own."""
    monkeypatch.setenv("PBMSERV_DATABASE_URL", settings.database_url)  # for the processes
    monkeypatch.setenv("PBMSERV_MAILDIR", str(settings.maildir))
    mailer.signup("alice")
    server = Server(db, settings, "127.0.0.1", free_port(), workers=workers, interval=3600)
    server.start()
    try:
        with smtplib.SMTP("127.0.0.1", server.controller.port) as client:
            client.sendmail("alice@example.org", ["pbmserv@localhost"],
                            make_mail("honeydonuts challenge bot1 alice"))
        deadline = time.monotonic() + 60
        while not any("It is alice's turn (Blue), move 2." in flat(text_of(m))
                      for m in read_maildir(settings.maildir)):
            assert time.monotonic() < deadline, "the bot was not woken, or its mail not sent"
            time.sleep(0.1)
    finally:
        server.stop()
