"""A board nobody took up can hurt nobody: a challenge needs no password, so a board
is a player's (rated, and lost on time) only once they move on it or accept it; the
bots think only for a board its person started or took up."""

from __future__ import annotations

from sqlalchemy import select

from pbmserv.db.models import Board, BoardPlayer, PlayerRating, User
from pbmserv.db.session import Database
from pbmserv.service.bot_turns import due_turns
from tests.conftest import Mailer


def flat(text: str) -> str:
    return " ".join(text.split())


def taken(db: Database, number: int = 101) -> dict[str, bool]:
    with db.transaction() as s:
        rows = s.execute(select(User.userid, BoardPlayer.accepted_at)
                         .join(BoardPlayer, BoardPlayer.user_id == User.id)
                         .join(Board, Board.id == BoardPlayer.board_id)
                         .where(Board.number == number)).all()
    return {userid: when is not None for userid, when in rows}


def test_a_strangers_challenge_is_nobodys_until_taken_up(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="mallory@example.net")
    reply = next(m for m in out if m.to_addr == "mallory@example.net")
    assert ("alice and bob have not taken the board up yet. A board started by a "
            "challenge counts for a player (it is rated, and can be lost on time) only once "
            "they move on it or accept it (\"honeydonuts accept 101 userid password\"); "
            "until then alice, bob may decline it, and it ends with no result if the clock "
            "runs out on them (21 days without a move).") in flat(reply.body)
    bob_mail = next(m for m in out if m.to_addr == "bob@example.org")
    assert ("This board was started by a challenge, which anyone may send, and nobody has "
            "taken it up yet. It counts for "
            "you (it is rated, and you can lose it on time) only once you move on it or take "
            "it up with \"honeydonuts accept 101 bob <password>\". If you do not want it, send "
            "\"honeydonuts decline 101 bob <password>\"; left alone, it ends with no result "
            "after 21 days.") in flat(bob_mail.body)
    assert taken(db) == {"alice": False, "bob": False}
    # a move takes it up for the mover
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2", sender="alice@example.org")
    assert taken(db) == {"alice": True, "bob": False}
    # bob accepts; alice is told
    out = mailer.send("honeydonuts accept 101 bob pw-bob", sender="bob@example.org")
    assert flat(out[0].body).startswith(
        "> honeydonuts accept 101 bob ***** You took up Honey Donuts board 101: it counts for "
        "you now (it is rated, and your clock can run out on it). Summary of Honey Donuts "
        "Board 101")
    [alice_mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert "bob took the board up: it counts for them now." in flat(alice_mail.body)
    assert taken(db) == {"alice": True, "bob": True}
    # a resignation now is rated for both
    mailer.reply("honeydonuts resign 101 bob pw-bob", sender="bob@example.org")
    with db.transaction() as s:
        assert len(s.scalars(select(PlayerRating)).all()) == 2


def test_resigning_a_board_the_other_never_took_up_rates_nobody(mailer: Mailer,
                                                                db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob", sender="mallory@example.net")
    text = flat(mailer.reply("honeydonuts resign 101 alice pw-alice",
                             sender="alice@example.org"))
    assert "Game won by bob (Blue): alice resigned." in text
    with db.transaction() as s:
        assert s.scalars(select(PlayerRating)).all() == []


def test_accepting_a_board_answers_no_offer(mailer: Mailer, db: Database) -> None:
    """'accept 101' takes the board up; the move 'accept' answers an offer: the two
    never stand for each other."""
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob", sender="mallory@example.net")
    mailer.reply("honeydonuts move 101 alice pw-alice propose", sender="alice@example.org")
    text = flat(mailer.reply("honeydonuts accept 101 bob pw-bob", sender="bob@example.org"))
    assert ("You took up Honey Donuts board 101: it counts for you now (it is rated, and your "
            "clock can run out on it). Your opponent's offer or request on it is not answered "
            "by this: answer it with the move \"accept\" or \"reject\".") in text
    with db.transaction() as s:
        board = s.scalar(select(Board))
        assert board is not None and not board.finished and board.request_kind == "draw"
    text = flat(mailer.reply("honeydonuts accept 101 bob pw-bob", sender="bob@example.org"))
    assert ("ERROR: you took board 101 up already (" in text
            and "UTC); to answer an offer or request on it, write: honeydonuts move 101 bob "
            "<password> accept" in text)
    assert "ended by agreement" in flat(mailer.reply("honeydonuts move 101 bob pw-bob accept",
                                                     sender="bob@example.org"))


def test_bots_think_only_for_boards_their_person_wants(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "carol")
    # a stranger sets bot3 on alice: the bot waits
    mailer.reply("amoeba challenge bot3 alice -small", sender="mallory@example.net")
    with db.transaction() as s:
        assert due_turns(s) == []
    # alice wants the game after all: she takes it up and the bot moves
    mailer.reply("amoeba accept 101 alice pw-alice", sender="alice@example.org")
    with db.transaction() as s:
        assert [t.bot for t in due_turns(s)] == ["bot3"]
    # carol challenges a bot from her own address: it plays at once
    mailer.reply("honeydonuts challenge bot1 carol", sender="carol@example.org")
    with db.transaction() as s:
        assert sorted(t.bot for t in due_turns(s)) == ["bot1", "bot3"]
