"""What a new player tripped over (issue 38, "What a new player tripped over"), each
with the reply as it reads."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select

from pbmserv.bot_loop import BotLoop
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.games import get_engine
from pbmserv.notifications.outbox import fold_held
from tests.conftest import Mailer, check_mail_shape
from tests.test_bot_games import alice_moves, board_row


def flat(text: str) -> str:
    return " ".join(text.split())


def outbox(db: Database, to: str) -> list[OutboxMessage]:
    with db.transaction() as s:
        return list(s.scalars(select(OutboxMessage).where(OutboxMessage.to_addr == to)
                              .order_by(OutboxMessage.id)))


def play(mailer: Mailer, db: Database, userid: str, game: str = "honeydonuts") -> str:
    """``userid`` plays the first legal move on board 101 by mail; the reply."""
    engine = get_engine(game)
    assert engine is not None
    board = board_row(db, game)
    pos = engine.load(board.position, board.position_version)
    text = engine.format_move(pos, engine.legal_moves(pos)[0])
    return mailer.reply(f"{game} move 101 {userid} pw-{userid} {text}",
                        sender=f"{userid}@example.org")


# -- 1. replies held without a word ---------------------------------------------------

def test_a_players_own_moves_against_a_bot_are_never_held(db: Database,
                                                           settings: Settings) -> None:
    """Moving fast against a bot: every reply to alice's own moves, and every board
    mail of the bot's answers, goes out at once, over both hourly limits."""
    limited = replace(settings, mails_per_address_hour=4, replies_per_sender_hour=2)
    mailer = Mailer(db, limited)
    mailer.signup("alice")
    mailer.send("honeydonuts challenge alice bot1 pw-alice")
    loop = BotLoop(db, limited)
    rng = random.Random(3)
    for _ in range(4):
        alice_moves(mailer, db, "honeydonuts", rng)
        if board_row(db, "honeydonuts").finished:
            break
        assert loop.once() == 1
    mails = outbox(db, "alice@example.org")
    assert len(mails) > 8
    assert {m.status for m in mails} == {OutboxStatus.PENDING}


def test_a_held_reply_is_announced(db: Database, settings: Settings) -> None:
    """Replies beyond the limit to mail that proved no account (or to another
    address) are held; the first held one is announced at once: until when, and why."""
    Mailer(db, settings).signup("alice")
    so_far = len(outbox(db, "alice@example.org"))  # the replies of the signup count
    limited = replace(settings, replies_per_sender_hour=so_far + 2)
    mailer = Mailer(db, limited)
    for _ in range(4):
        mailer.send("help", sender="alice@example.org")
    mails = outbox(db, "alice@example.org")[-5:]
    assert [m.status for m in mails] == [OutboxStatus.PENDING] * 3 + [OutboxStatus.HELD] * 2
    notice = mails[2]
    held_until = mails[3].next_attempt_at
    assert notice.subject == f"pbmserv: mail held until {held_until:%H:%M} UTC"
    assert flat(notice.body) == flat(f"""\
More mail is due to you this hour than this server sends to one address: 4
replies to your own mails an hour at the most. So that no mailbox is
flooded, the mail due to you from now until {held_until:%H:%M} UTC ({held_until:%Y-%m-%d}) is
held, and comes then, folded into one mail, oldest first. Nothing is lost,
and your commands are carried out as they come: only the mails wait.

The answers to your own commands from your account's address (with your
password or a reply address) are never held; nor are the board mails of a
bot's moves on your boards.
""")
    assert notice.body.split("\n\n")[1] == """\
The answers to your own commands from your account's address (with your
password or a reply address) are never held; nor are the board mails of a
bot's moves on your boards.
"""
    check_mail_shape([notice])
    # announced once: the next held mail is not
    mailer.send("help", sender="alice@example.org")
    assert [m.status for m in outbox(db, "alice@example.org")[-1:]] == [OutboxStatus.HELD]


def test_a_held_bundle_says_which_boards_moved_on(db: Database, settings: Settings) -> None:
    """Issue 40 item 4: a board mail held for an hour whose board moved on meanwhile is
    marked out of date in the bundle, with the board as it stands when it is sent."""
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    play(mailer, db, "alice")
    play(mailer, db, "bob")
    # bob's address has had as many mails this hour as it may: the next is held
    limited = replace(settings, mails_per_address_hour=len(outbox(db, "bob@example.org")))
    mailer = Mailer(db, limited)
    play(mailer, db, "alice")  # bob to move: held
    [held] = [m for m in outbox(db, "bob@example.org") if m.status is OutboxStatus.HELD]
    assert "It is bob's turn (Blue), move 4." in flat(held.body)
    assert [m.subject for m in outbox(db, "bob@example.org")][-2:] == [
        f"pbmserv: mail held until {held.next_attempt_at:%H:%M} UTC",
        held.subject]
    # bob resigns meanwhile: the held mail's board is out of date
    mailer.send("honeydonuts resign 101 bob pw-bob", sender="bob@example.org")
    with db.transaction() as s:
        # (alice's address is over the limit too: the resignation's mail to her is held)
        assert fold_held(s, limited, utcnow() + timedelta(hours=1, minutes=1)) == 2
    fold = outbox(db, "bob@example.org")[-1]
    check_mail_shape([fold])
    text = flat(fold.body)
    assert ("1 of them shows a board that moved on since: it is marked out of date, with "
            "the board as it stands now.") in text
    assert ("(Out of date: Honey Donuts board 101 has moved on since this mail was made, "
            "and its reply address no longer stands for a move. As it stands now: Game won "
            "by alice (Red): bob resigned. \"honeydonuts show 101\" sends it.)") in text


# -- 2. Ex nihilo games that end after a ply or two ------------------------------------

def test_an_exnihilo_loss_at_once_says_why(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.send("exnihilo challenge alice bob pw-alice -small")
    mailer.reply("exnihilo move 101 alice pw-alice b2-a1")
    text = flat(mailer.reply("exnihilo move 101 bob pw-bob b2-a2", sender="bob@example.org"))
    assert ("Game won by bob (Black): White has no legal turn, because capturing is "
            "compulsory and Black's stack on a2, the only one White could capture, cannot "
            "move as a hostage (a single piece on the edge never can).") in text
    help_text = flat(mailer.reply("exnihilo help"))
    assert ("OPENINGS THAT LOSE AT ONCE A first move that makes a single piece on the edge "
            "(a step that gains one ring and ends on the edge, like b2-a1 or c2-b1) loses at "
            "once") in help_text
