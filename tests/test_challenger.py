"""The challenger's own board (issue 38, item 5): a challenge with the challenger's
password (or sent to a reply address of theirs) takes the board up for them at once;
the classic form, with no password, takes it up for nobody, and every reply and
board mail says who has taken it up and what happens if nobody does."""

from __future__ import annotations

from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, BoardPlayer, User
from pbmserv.db.session import Database
from tests.conftest import Mailer
from tests.test_clocks import clock_mails, time_passes


def flat(text: str) -> str:
    return " ".join(text.split())


def taken(db: Database, number: int = 101) -> dict[str, bool]:
    with db.transaction() as s:
        rows = s.execute(select(User.userid, BoardPlayer.accepted_at)
                         .join(BoardPlayer, BoardPlayer.user_id == User.id)
                         .join(Board, Board.id == BoardPlayer.board_id)
                         .where(Board.number == number)).all()
    return {userid: when is not None for userid, when in rows}


def head(text: str) -> str:
    """A reply's text down to the board's summary."""
    return text[:text.index("Summary of")]


def test_a_challenge_with_the_password_takes_the_board_up(mailer: Mailer,
                                                          db: Database) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob pw-alice", sender="alice@example.org")
    [reply] = [m for m in out if m.to_addr == "alice@example.org"]
    assert head(reply.body) == """\
> honeydonuts challenge alice bob *****
Honey Donuts board 101 has been started; every player has been sent the
board.

You (alice) took the board up with your password: it counts for you now (it
is rated, and your clock can run out on it).

bob has not taken the board up yet. A board started by a challenge counts
for a player (it is rated, and can be lost on time) only once they move on
it or accept it ("honeydonuts accept 101 userid password"); until then bob
may decline it, and it ends with no result if the clock runs out on bob (21
days without a move).

"""
    assert "pw-alice" not in reply.body
    [bob_mail] = [m for m in out if m.to_addr == "bob@example.org"]
    assert head(bob_mail.body) == """\
A new board has been started.
This board was started by a challenge, which anyone may send; alice sent it
and took it up at once, so it counts for alice already. It counts for you
(it is rated, and you can lose it on time) only once you move on it or take
it up with "honeydonuts accept 101 bob <password>". If you do not want it,
send "honeydonuts decline 101 bob <password>"; left alone, it ends with no
result after 21 days.

"""
    assert taken(db) == {"alice": True, "bob": False}


def test_the_challenger_who_took_it_up_loses_it_on_time(mailer: Mailer, db: Database,
                                                         settings: Settings) -> None:
    """The board is the challenger's: left alone, it is lost on time, not ended with
    no result as "alice did not take the board up"."""
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob pw-alice", sender="alice@example.org")
    time_passes(db, 21.1)
    out = clock_mails(db, settings)
    text = flat(next(m for m in out if m.to_addr == "alice@example.org").body)
    assert "Game won by bob (Blue): alice did not move for 21 days." in text


def test_the_password_may_be_the_second_players(mailer: Mailer, db: Database) -> None:
    """The challenger need not move first, nor write from their own address: the
    password says whose board it is."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob pw-bob -simple",
                      sender="bob.at.work@example.com")
    [reply] = [m for m in out if m.to_addr == "bob.at.work@example.com"]
    assert flat(head(reply.body)).startswith(
        "> honeydonuts challenge alice bob ***** -simple Honey Donuts board 101 has been "
        "started; every player has been sent the board. You (bob) took the board up with "
        "your password: it counts for you now")
    # his own address gets the board mail, with nothing to take up
    [bob_mail] = [m for m in out if m.to_addr == "bob@example.org"]
    assert head(bob_mail.body) == "A new board has been started.\n\n"
    assert taken(db) == {"alice": False, "bob": True}


def test_a_wrong_password_starts_nothing_and_is_not_quoted(mailer: Mailer,
                                                           db: Database) -> None:
    mailer.signup("alice", "bob")
    text = mailer.reply("honeydonuts challenge alice bob pw-wrong", sender="alice@example.org")
    assert text.startswith("""\
> honeydonuts challenge ...
ERROR: the userid and password do not match (passwords are case-sensitive;
the userid comes first, then the password)
""")
    assert "pw-wrong" not in text
    with db.transaction() as s:
        assert s.scalars(select(Board)).all() == []


def test_the_classic_challenge_from_ones_own_address_says_nobody_took_it_up(
        mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    text = mailer.reply("honeydonuts challenge alice bob", sender="alice@example.org")
    assert head(text) == """\
> honeydonuts challenge alice bob
Honey Donuts board 101 has been started; every player has been sent the
board.

alice and bob have not taken the board up yet (a challenge without your
password proves nobody's account, not even yours). A board started by a
challenge counts for a player (it is rated, and can be lost on time) only
once they move on it or accept it ("honeydonuts accept 101 userid
password"); until then alice, bob may decline it, and it ends with no result
if the clock runs out on them (21 days without a move).

To take a board up as you start it, write your password after the userids:
"honeydonuts challenge alice bob password".

"""
    assert taken(db) == {"alice": False, "bob": False}


def test_a_challenge_sent_to_ones_reply_address_takes_the_board_up(
        mailer: Mailer, db: Database) -> None:
    """The reply-address form: a challenge written to the reply address of one's own
    board mail, which stands for the password."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob pw-alice", sender="alice@example.org")
    [reply] = [m for m in out if m.to_addr == "alice@example.org"]
    assert reply.reply_to is not None and "+" in reply.reply_to
    out = mailer.send(f"Re: {reply.subject}", "honeydonuts challenge bob alice\n",
                      sender="alice@example.org", To=reply.reply_to)
    [answer] = [m for m in out if m.to_addr == "alice@example.org"]
    assert flat(head(answer.body)) == (
        "> honeydonuts challenge bob alice Honey Donuts board 102 has been started; every "
        "player has been sent the board. You (alice) took the board up with your reply "
        "address: it counts for you now (it is rated, and your clock can run out on it). "
        "bob has not taken the board up yet. A board started by a challenge counts for a "
        "player (it is rated, and can be lost on time) only once they move on it or accept "
        "it (\"honeydonuts accept 102 userid password\"); until then bob may decline it, "
        "and it ends with no result if the clock runs out on bob (21 days without a move).")
    assert taken(db, 102) == {"alice": True, "bob": False}
    # the address stands for alice only: a challenge of others sent to it is classic
    mailer.signup("carol")
    out = mailer.send(f"Re: {reply.subject}", "honeydonuts challenge bob carol\n",
                      sender="alice@example.org", To=reply.reply_to)
    assert "bob and carol have not taken the board up yet." in flat(out[0].body)
    assert taken(db, 103) == {"bob": False, "carol": False}


def test_a_password_with_only_bots_is_refused(mailer: Mailer) -> None:
    mailer.signup("alice")
    text = mailer.reply("honeydonuts challenge bot1 bot2 secret-word",
                        sender="alice@example.org")
    assert text.startswith("""\
> honeydonuts challenge ...
ERROR: a password in a challenge is a player's own, and every player named
is a bot; leave the password out
""")
