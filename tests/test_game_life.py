"""Life on the server by mail: undo, conditional moves, spectators, notices, chat,
consent to challenges, seeks, decline, comments on every act, and the board mail."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.models import Board, BoardEvent, BoardPlayer, Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from tests.conftest import Mailer


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer, *users: str, game: str = "honeydonuts") -> None:
    mailer.signup(*(users or ("alice", "bob")))
    a, b = (users or ("alice", "bob"))[:2]
    mailer.reply(f"{game} challenge {a} {b}")


def move(mailer: Mailer, uid: str, text: str, board: int = 101, body: str = "",
         game: str = "honeydonuts") -> list[OutboxMessage]:
    return mailer.send(f"{game} move {board} {uid} pw-{uid} {text}", body,
                       sender=f"{uid}@example.org")


def to(out: list[OutboxMessage], uid: str) -> OutboxMessage:
    [mail] = [m for m in out if m.to_addr == f"{uid}@example.org"]
    return mail


def board_row(db: Database, number: int = 101, game: str = "honeydonuts") -> Board:
    with db.transaction() as s:
        board = s.scalar(select(Board).where(Board.game == game, Board.number == number))
        assert board is not None
        return board


# -- undo --------------------------------------------------------------------------------
def test_undo_by_consent_restores_the_exact_position(mailer: Mailer, db: Database) -> None:
    start(mailer)
    move(mailer, "alice", "a1-a2#1")
    assert "you may take back your own last move only" in move(mailer, "bob", "undo")[0].body
    before = board_row(db)
    with db.transaction() as s:
        time_before = {p.seat: p.time_used for p in s.scalars(select(BoardPlayer))}
    move(mailer, "bob", "e1-e2#2")
    out = move(mailer, "bob", "undo", body="Oops, misclick.")
    asked = flat(to(out, "alice").body)
    assert "bob asks to take back their last move." in asked
    assert ("Open request: bob asks to take back bob's last move. alice answers with the "
            'move "accept" or "reject".') in asked
    assert "bob writes: Oops, misclick." in asked
    out = move(mailer, "alice", "accept#3")
    told = flat(to(out, "bob").body)
    assert "alice accepted your request to take back a move." in told
    assert "Move 2 (e1-e2) was taken back; it is your turn again." in told
    after = board_row(db)
    assert (after.ply, after.to_move, after.position) == (1, 1, before.position)
    assert after.turn_started_at >= before.turn_started_at  # bob's turn resumes, not restarts
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == ["a1-a2"]
        assert {p.seat: p.time_used for p in s.scalars(select(BoardPlayer))} == time_before
    assert "1. a1-a2\n" in to(out, "bob").body.replace("                  ", "")
    # a second undo in a row: the position before is found by replaying the moves
    move(mailer, "alice", "undo")
    move(mailer, "bob", "accept")
    start_pos = board_row(db)
    assert (start_pos.ply, start_pos.to_move) == (0, 0)
    engine = get_engine("honeydonuts")
    assert engine is not None and start_pos.position == engine.serialize(engine.new())
    assert "has been played" in move(mailer, "alice", "a1-b1#1")[0].body


def test_undo_after_the_answer_takes_back_both(mailer: Mailer, db: Database) -> None:
    """Asked once the opponent has answered, an undo takes back the asker's move and the
    answer to it; no further."""
    start(mailer)
    move(mailer, "alice", "a1-a2#1")
    move(mailer, "bob", "e1-e2#2")
    move(mailer, "alice", "a3-a2#3")
    move(mailer, "bob", "e2-d3#4")
    move(mailer, "bob", "undo")  # his own last move: that one only
    move(mailer, "alice", "accept")
    assert board_row(db).ply == 3
    move(mailer, "bob", "e2-d2#4")
    out = move(mailer, "alice", "undo")  # her a3-a2 and bob's answer e2-d2
    assert "you may take back" not in out[0].body
    out = move(mailer, "bob", "accept")
    told = flat(to(out, "alice").body)
    assert "Moves 3 (a3-a2) and 4 (e2-d2) were taken back; it is your turn again." in told
    after = board_row(db)
    assert (after.ply, after.to_move) == (2, 0)
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation).order_by(Move.ply))) == ["a1-a2", "e1-e2"]
    engine = get_engine("honeydonuts")
    assert engine is not None
    assert after.position == engine.serialize(engine.play_all(engine.new(), ["a1-a2", "e1-e2"]))
    # asked, then the asker moves after all: the request lapses (it stood for the moves
    # before), and a late accept takes back nothing
    move(mailer, "alice", "undo")  # takes back bob's e1-e2 and her a1-a2, if accepted
    out = move(mailer, "alice", "a3-a2#3")
    assert "Your request to take back a move lapsed: you played a move instead." in flat(
        to(out, "alice").body)
    assert "alice's request to take back a move lapsed" in flat(to(out, "bob").body)
    assert "nobody has asked you anything" in move(mailer, "bob", "accept")[0].body
    assert board_row(db).ply == 3


def test_the_last_move_time_is_the_last_moves(mailer: Mailer, db: Database) -> None:
    """Not the time of an undo or an offer that changed the board after it."""
    start(mailer)
    move(mailer, "alice", "a1-a2#1")
    with db.transaction() as s:
        s.execute(update(Move).values(created_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC)))
    move(mailer, "bob", "e1-e2#2")
    move(mailer, "bob", "undo")
    out = move(mailer, "alice", "accept")
    assert "last move 2026-01-02 03:04 UTC." in flat(to(out, "bob").body)
    out = move(mailer, "bob", "propose")
    assert "last move 2026-01-02 03:04 UTC." in flat(to(out, "alice").body)


def test_undo_keeps_repetition_state(mailer: Mailer, db: Database) -> None:
    engine = get_engine("hexamoeba")
    assert engine is not None
    start(mailer, game="hexamoeba")
    move(mailer, "alice", "c2-d2", game="hexamoeba")
    after_one = board_row(db, game="hexamoeba").position
    move(mailer, "bob", "e2-d2", game="hexamoeba")
    move(mailer, "bob", "undo", game="hexamoeba")
    move(mailer, "alice", "accept", game="hexamoeba")
    board = board_row(db, game="hexamoeba")
    assert board.position == after_one  # the serialised position holds the repetition counts
    assert engine.serialize(engine.play_all(engine.new(), ["c2-d2"])) == after_one


def test_undo_rejected_or_lapsed(mailer: Mailer, db: Database) -> None:
    start(mailer)
    assert "there is no move to take back" in move(mailer, "alice", "undo")[0].body
    move(mailer, "alice", "a1-a2")
    move(mailer, "alice", "undo")
    out = move(mailer, "bob", "reject")
    assert "bob rejected your request to take back a move; play goes on." in flat(
        to(out, "alice").body)
    move(mailer, "alice", "undo")
    out = move(mailer, "bob", "e1-e2")
    assert "Your request to take back a move lapsed: bob played a move" in flat(
        to(out, "alice").body)
    assert board_row(db).ply == 2


# -- conditional moves ---------------------------------------------------------------------
def test_conditional_moves_fire_on_the_right_reply_and_clear_on_another(
        mailer: Mailer, db: Database) -> None:
    start(mailer)
    move(mailer, "alice", "a1-a2#1")
    text = flat(mailer.reply("honeydonuts queue 101 alice pw-alice e1-e2 a1-b1 e3-e2 b1-b2"))
    assert "Your queue is set." in text
    assert "1. if your opponent plays e1-e2, you play a1-b1" in text
    assert "2. if your opponent plays e3-e2, you play b1-b2" in text
    out = move(mailer, "bob", "e1-e2#2")
    bob = flat(to(out, "bob").body)
    assert "alice's queued move a1-b1 was played at once." in bob
    assert "It is bob's turn (Blue), move 4." in bob
    alice = flat(to(out, "alice").body)
    assert "Your queued move a1-b1 was played for you at once." in alice
    with db.transaction() as s:
        rows = list(s.execute(select(Move.ply, Move.notation, Move.automatic)
                              .order_by(Move.ply)).tuples())
    assert rows == [(1, "a1-a2", False), (2, "e1-e2", False), (3, "a1-b1", True)]
    out = move(mailer, "bob", "b1-c2#4")  # not the queued e3-e2: the queue is cleared
    assert "Your queued moves were cleared: your opponent played b1-c2, not e3-e2." in flat(
        to(out, "alice").body)
    assert "cleared" not in to(out, "bob").body  # only the owner of the queue is told
    assert "no conditional moves queued" in mailer.reply(
        "honeydonuts queue 101 alice pw-alice")


def test_queued_moves_are_checked_when_queued(mailer: Mailer) -> None:
    start(mailer)
    assert "it is your turn: play your move first" in mailer.reply(
        "honeydonuts queue 101 alice pw-alice e1-e2 a1-b1")
    move(mailer, "alice", "a1-a2")
    bad = flat(mailer.reply("honeydonuts queue 101 alice pw-alice e1-e2 a1-a9"))
    assert "pair 1: your answer a1-a9 to e1-e2 would not be possible" in bad
    bad = flat(mailer.reply("honeydonuts queue 101 alice pw-alice e1-e2 a1-b1 a1-a2 a3-a2"))
    assert "pair 2: your opponent's move a1-a2 would not be possible" in bad
    assert "come in pairs" in mailer.reply("honeydonuts queue 101 alice pw-alice e1-e2")
    mailer.reply("honeydonuts queue 101 alice pw-alice e1-e2 a1-b1")
    assert "no longer any conditional moves" in flat(
        mailer.reply("honeydonuts queue 101 alice pw-alice clear"))


def test_an_undo_clears_the_queues(mailer: Mailer) -> None:
    start(mailer)
    move(mailer, "alice", "a1-a2")
    move(mailer, "bob", "e1-e2")
    mailer.reply("honeydonuts queue 101 bob pw-bob a1-b1 e3-d3")
    move(mailer, "bob", "undo")
    out = move(mailer, "alice", "accept")
    assert "Your queued moves were cleared: a move was taken back." in flat(
        to(out, "bob").body)


# -- watching, notices, chat ----------------------------------------------------------------
def test_spectators_get_every_board_mail(mailer: Mailer) -> None:
    start(mailer)
    mailer.signup("carol")
    assert "carol now watches" in flat(mailer.reply(
        "honeydonuts subscribe 101 carol pw-carol", sender="carol@example.org"))
    assert "plays board 101 and gets its board mails anyway" in mailer.reply(
        "honeydonuts subscribe 101 bob pw-bob")
    out = move(mailer, "alice", "a1-a2", body="Hello, audience")
    watching = to(out, "carol")
    assert watching.subject == "Honey Donuts Board 101 bob **"
    assert "Watching: carol" in watching.body and "alice writes:" in watching.body
    assert "Watching: carol" in to(out, "bob").body
    mailer.reply("honeydonuts unsubscribe 101 carol pw-carol")
    out = move(mailer, "bob", "e1-e2")
    assert [m.to_addr for m in out] == ["bob@example.org", "alice@example.org"]


def test_a_subscriber_who_signs_off_watches_no_more(mailer: Mailer, db: Database) -> None:
    start(mailer)
    mailer.signup("carol")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol")
    assert board_row(db).watchers == 1
    assert "is closed" in mailer.reply("signoff carol pw-carol")
    assert board_row(db).watchers == 0
    out = move(mailer, "alice", "a1-a2")
    assert "Watching" not in to(out, "bob").body and len(out) == 2


def test_notify_tells_of_every_finished_board(mailer: Mailer) -> None:
    start(mailer)
    mailer.signup("dave")
    assert "will be told the result" in mailer.reply("honeydonuts notify dave pw-dave on")
    out = move(mailer, "alice", "a1-a2")
    assert all(m.to_addr != "dave@example.org" for m in out)
    out = mailer.send("honeydonuts resign 101 bob pw-bob", "Well played.",
                      sender="bob@example.org")
    told = to(out, "dave")
    assert told.subject == "Honey Donuts Board 101 Game over **"
    assert "Game won by alice (Red): bob resigned." in flat(told.body)
    assert "bob writes: Well played." in flat(told.body)
    assert "bob writes: Well played." in flat(to(out, "alice").body)
    assert "will not be told" in mailer.reply("honeydonuts notify dave pw-dave")  # toggles


def test_chat_reaches_players_and_subscribers(mailer: Mailer) -> None:
    start(mailer)
    mailer.signup("carol", "eve")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol")
    out = mailer.send("honeydonuts chat 101 alice pw-alice",
                      "Good luck to us both!\n-- \nSIGNATURE")
    assert "has been sent" in out[0].body
    for uid in ("bob", "carol"):
        chat = to(out, uid)
        assert chat.subject == "Honey Donuts Board 101 chat from alice"
        assert "alice writes on Honey Donuts board 101:" in chat.body
        assert "Good luck to us both!" in chat.body and "SIGNATURE" not in chat.body
    assert "only the players and subscribers" in mailer.reply(
        "honeydonuts chat 101 eve pw-eve", "hi")
    assert "write your message in the body" in mailer.reply("honeydonuts chat 101 bob pw-bob")


# -- consent, seeks, decline ------------------------------------------------------------------
def test_players_say_whose_challenges_they_take(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "carol")
    assert "cannot play against themselves" in mailer.reply(
        "honeydonuts challenge alice alice")
    text = flat(mailer.reply("honeydonuts reject bob pw-bob all"))
    assert "bob takes Honey Donuts challenges from no one." in text
    assert "bob does not take honeydonuts challenges from alice" in mailer.reply(
        "honeydonuts challenge alice bob")
    text = flat(mailer.reply("honeydonuts accept bob pw-bob alice"))
    assert "bob takes Honey Donuts challenges from alice." in text
    assert "New Honey Donuts Board 101" in mailer.send("honeydonuts challenge alice bob")[0].subject
    assert "does not take honeydonuts challenges from carol" in mailer.reply(
        "honeydonuts challenge bob carol")
    mailer.reply("honeydonuts accept bob pw-bob all")
    text = flat(mailer.reply("honeydonuts limit bob pw-bob 1"))
    assert "bob plays at most 1 Honey Donuts board at once (now 1)." in text
    assert "bob plays 1 honeydonuts board(s) already" in mailer.reply(
        "honeydonuts challenge carol bob")
    assert "write it as a move: honeydonuts move 101 userid password reject" in flat(
        mailer.reply("honeydonuts reject 101 bob pw-bob"))
    # 'accept' with a board takes the board up; a second time it says how to answer
    # an offer instead
    assert "You took up Honey Donuts board 101: it counts for you now" in flat(
        mailer.reply("honeydonuts accept 101 bob pw-bob"))
    assert ("you took board 101 up already (" in flat(mailer.reply(
        "honeydonuts accept 101 bob pw-bob")))


@pytest.mark.postgres
def test_seek_join_on_postgres(pg_url: str, tmp_path: Path) -> None:
    db = Database(pg_url)
    try:
        test_seek_join_and_list(Mailer(db, Settings(database_url=pg_url,
                                                    maildir=tmp_path / "mail")))
    finally:
        db.dispose()


def test_seek_join_and_list(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "carol")
    text = flat(mailer.reply("honeydonuts seek alice pw-alice -simple --nagtime=3"))
    assert "Your open challenge is honeydonuts seek 1 (options -simple)." in text
    assert "1 open challenge" in mailer.reply("list")
    listing = flat(mailer.reply("list honeydonuts"))
    assert ("1 by alice, options -simple, nag after 3 days, lost on time after 21, since"
            in listing)
    assert "cannot play against themselves" in mailer.reply("honeydonuts join 1 alice pw-alice")
    out = mailer.send("honeydonuts join 1 bob pw-bob", sender="bob@example.org")
    assert out[0].subject == "New Honey Donuts Board 101 alice"
    started = flat(to(out, "alice").body)
    assert "The board was started from open challenge (seek) 1." in started
    assert "Options: -simple" in started and "a reminder after 3 days" in started
    assert "there is no open honeydonuts seek 1" in mailer.reply(
        "honeydonuts join 1 carol pw-carol")
    mailer.reply("honeydonuts seek carol pw-carol")
    assert "is withdrawn" in mailer.reply("honeydonuts unseek 2 carol pw-carol")
    assert "0 open challenges" not in mailer.reply("list")


def test_decline_a_board_not_yet_moved_on(mailer: Mailer, db: Database) -> None:
    start(mailer)
    move(mailer, "alice", "a1-a2")
    assert "you have moved on this board already" in move(mailer, "alice", "decline")[0].body
    out = mailer.send("honeydonuts decline 101 bob pw-bob", "Not this week, sorry.",
                      sender="bob@example.org")
    told = flat(to(out, "alice").body)
    assert "Game declined, no result: bob declined the game." in told
    assert "bob writes: Not this week, sorry." in told
    board = board_row(db)
    assert board.finished and board.winner is None and board.termination == "declined"


# -- the board mail and replies ---------------------------------------------------------------
def test_board_mail_says_which_move_is_next(mailer: Mailer) -> None:
    start(mailer)
    out = move(mailer, "alice", "a1-a2#1")
    body = flat(to(out, "bob").body)
    assert "To move: honeydonuts move 101 bob <password> <move>#2" in body
    assert "The next move is #2" in body
    assert "one row per round (#n counts single moves: row 2 holds #3 and #4)" in body


def test_reply_to_a_board_mail_with_its_subject_unchanged(mailer: Mailer) -> None:
    start(mailer)
    text = flat(mailer.reply("Re: New Honey Donuts Board 101 alice", "thanks!"))
    assert "This looks like a reply to a board mail of Honey Donuts board 101" in text
    assert "honeydonuts move 101 <userid> <password> <move>#n" in text
    assert "Summary of Honey Donuts Board 101" in text
    out = mailer.send("Re: Honey Donuts Board 101 alice",
                      "honeydonuts move 101 alice pw-alice a1-a2#1\nYour turn!\n\n"
                      "On Monday, pbmserv wrote:\n> Summary of Honey Donuts Board 101")
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body
    assert "alice writes:\n  Your turn!" in to(out, "bob").body
    assert "Summary" not in to(out, "bob").body.split("alice writes:")[1]


def test_help_topics(mailer: Mailer) -> None:
    assert "Several commands in one mail" in mailer.reply("help multiple")
    assert "vacation <userid> <password> DAYS" in flat(mailer.reply("help clocks"))
    assert "Answering a board mail" in mailer.reply("help reply")
    overview = mailer.reply("help")
    for verb in ("queue", "subscribe", "unsubscribe", "notify", "chat", "seek", "join",
                 "unseek", "accept", "reject", "limit", "decline", "vacation"):
        assert f" {verb} " in overview, verb


def test_signoff_lists_each_board_once(mailer: Mailer) -> None:
    start(mailer)
    mailer.reply("honeydonuts challenge bob alice")
    assert "alice still plays honeydonuts 101, honeydonuts 102;" in flat(
        mailer.reply("signoff alice pw-alice"))


def test_every_change_is_recorded_as_an_event(mailer: Mailer, db: Database) -> None:
    start(mailer)
    move(mailer, "alice", "a1-a2", body="hi")
    move(mailer, "bob", "resign")
    with db.transaction() as s:
        kinds = list(s.scalars(select(BoardEvent.kind).order_by(BoardEvent.id)))
    assert kinds == ["board-created", "move-played", "game-finished"]
