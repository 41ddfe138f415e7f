"""What a new player tripped over (issue 38, "What a new player tripped over"), each
with the reply as it reads."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.bot_loop import BotLoop
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage, PlayerRating, User
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.games import get_engine
from pbmserv.notifications.held import fold_held
from pbmserv.web import create_app
from tests.conftest import Mailer, check_mail_shape
from tests.test_bot_games import alice_moves, board_row
from tests.test_tournaments import create, pairs_of


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
        # (the bot thinks for a time, so its moves, and the game's length, vary)
        if board_row(db, "honeydonuts").finished:
            break
        alice_moves(mailer, db, "honeydonuts", rng)
        if board_row(db, "honeydonuts").finished:
            break
        assert loop.once() == 1
    mails = outbox(db, "alice@example.org")
    assert len(mails) > limited.mails_per_address_hour
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


# -- 4. replies that help ------------------------------------------------------------

def test_an_unconfirmed_accounts_error_names_its_own_userid(mailer: Mailer) -> None:
    mailer.signup("alice")
    mailer.send("signup victor pw-victor-long", sender="victor@example.org")
    text = mailer.reply("honeydonuts challenge alice victor", sender="victor@example.org")
    assert text.startswith("""\
> honeydonuts challenge ...
ERROR: the account victor is not confirmed yet: it works once its address
answers the confirmation mail sent there when it was opened (a reply will
do: its Subject is the command that confirms it)
""")
    # to another address (a stranger's), nothing of the line is quoted back
    text = mailer.reply("honeydonuts challenge alice victor", sender="mallory@example.net")
    assert "victor" not in text


def test_the_front_page_says_to_confirm(db: Database, settings: Settings) -> None:
    with TestClient(create_app(db, settings)) as client:
        page = " ".join(client.get("/").text.split())
    assert ("then reply to the mail that comes back (its Subject, <code>confirm "
            "&lt;userid&gt; &lt;code&gt;</code>, confirms your account), then send "
            "<code>honeydonuts challenge &lt;userid&gt; bot1 &lt;password&gt;</code>") in page


def test_a_move_with_words_after_it_is_quoted(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob pw-alice")
    [board_mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert board_mail.reply_to is not None
    out = mailer.send(f"Re: {board_mail.subject}", "a1-a2 please\n", To=board_mail.reply_to)
    assert out[0].body.startswith("""\
This looks like a reply to a board mail of Honey Donuts board 101, but I
found no command in it: the Subject was left as it was, and the first line
of the body ("a1-a2 ...") is not a command either, nor a move alone: a move
goes alone on its line, your comment below it.
""")


def test_a_reply_to_a_chat_mail_says_how_to_chat(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    out = mailer.send("honeydonuts chat 101 bob pw-bob", "hello there", sender="bob@example.org")
    [chat] = [m for m in out if m.to_addr == "alice@example.org"]
    text = mailer.reply(f"Re: {chat.subject}", "hi to you\n", sender="alice@example.org")
    assert text.startswith("""\
This looks like a reply to a chat message of Honey Donuts board 101, but I
found no command in it: the Subject was left as it was, and the first line
of the body ("hi ...") is not a command either.

To answer in the board's chat, write the command on the first line of the
body (or as the Subject), and your message below it:

    honeydonuts chat 101 <userid> <password>

To move, write the command on the first line of the body (or as the
Subject):

    honeydonuts move 101 <userid> <password> <move>#n
""")


def test_a_reply_to_the_digest_says_how_to_move(mailer: Mailer) -> None:
    mailer.signup("alice")
    text = mailer.reply("Re: pbmserv digest: 2 boards wait for your move", "a1-a2\n")
    assert text.startswith("""\
This looks like a reply to your digest, but I found no command in it: the
Subject was left as it was, and the first line of the body is not a command
either.

A digest shows several boards, so a reply to it cannot say which board a
move is for. To move, reply to that board's own mail (a move alone will do
there), or write the whole command on the first line of the body, as the
board's "To move:" line in the digest shows it:

    <game> move <board> <userid> <password> <move>#n
""")
    assert "neither a command nor a game" not in text


def test_a_full_stop_after_a_move_is_left_out(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    text = mailer.reply("honeydonuts move 101 alice pw-alice A1-A2.")
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in flat(text)
    # and after a reply address's move, with its number
    out = mailer.send("honeydonuts show 101", sender="bob@example.org")
    assert out[0].reply_to is not None
    engine = get_engine("honeydonuts")
    assert engine is not None
    board = board_row(db, "honeydonuts")
    pos = engine.load(board.position, board.position_version)
    move = engine.format_move(pos, engine.legal_moves(pos)[0])
    text = flat(mailer.send("Re: x", f"{move.upper()}#2!\n", sender="bob@example.org",
                            To=out[0].reply_to)[0].body)
    assert f"Your move {move} on Honey Donuts board 101 has been played." in text


def test_signing_off_with_boards_names_the_command(mailer: Mailer) -> None:
    mailer.signup("victor", "bob")
    mailer.send("honeydonuts challenge victor bob pw-victor", sender="victor@example.org")
    text = flat(mailer.reply("signoff victor pw-victor", sender="victor@example.org"))
    assert ("ERROR: victor still plays honeydonuts 101; finish or resign them first (to "
            "resign one: honeydonuts resign 101 victor <password>; a board you have not "
            "moved on yet: honeydonuts decline 101 victor <password>)") in text


def test_a_reply_to_a_board_mail_from_before_a_password_change(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob pw-alice")
    [board_mail] = [m for m in out if m.to_addr == "alice@example.org"]
    mailer.reply("change password alice pw-alice pw-alice-new")
    assert board_mail.reply_to is not None
    out = mailer.send(f"Re: {board_mail.subject}", "a1-a2\n", To=board_mail.reply_to)
    [reply] = out
    assert reply.body.startswith("""\
> (your reply) a1-a2
ERROR: this reply address of honeydonuts board 101 no longer stands for a
move: alice's password (or address) changed since the board mail was sent,
which voids the reply addresses made before. Nothing was played; the board
as it stands is below, with a fresh reply address if it waits for you
""")
    assert reply.reply_to is not None and reply.reply_to != board_mail.reply_to
    # the fresh one plays
    text = flat(mailer.send("Re: x", "a1-a2\n", To=reply.reply_to)[0].body)
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in text


# -- 5. wordings -----------------------------------------------------------------------

def test_an_answered_draw_offer_is_called_an_offer(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.send("hexamoeba challenge alice bob pw-alice")
    mailer.send("hexamoeba move 101 alice pw-alice propose")
    out = mailer.send("hexamoeba move 101 bob pw-bob accept", sender="bob@example.org")
    [alice_mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert alice_mail.body.startswith(
        "bob accepted your offer to end the game by agreement.\n")
    assert "request" not in alice_mail.body.split("\n\n")[0]


def test_a_two_move_undo_says_both_moves_go(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    play(mailer, db, "alice")
    play(mailer, db, "bob")
    # alice's turn again: her last move and bob's answer to it would go back
    out = mailer.send("honeydonuts move 101 alice pw-alice undo")
    [reply] = [m for m in out if m.to_addr == "alice@example.org"]
    assert flat(reply.body).startswith(
        "> honeydonuts move 101 alice ***** undo You have asked to take back your last move "
        "on Honey Donuts board 101, and your opponent's answer to it (two moves). Your "
        "opponent may answer")
    [bob_mail] = [m for m in out if m.to_addr == "bob@example.org"]
    text = flat(bob_mail.body)
    assert text.startswith("alice asks to take back their last move and bob's answer to "
                           "it (two moves).")
    assert ("Open request: alice asks to take back alice's last move and bob's answer to it "
            "(two moves). bob answers with the move \"accept\" or \"reject\".") in text


def test_a_record_says_what_its_line_breaks_are(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    mailer.send("honeydonuts move 101 alice pw-alice a1-a2", "first line\nsecond line")
    text = mailer.reply("honeydonuts record 101", sender="bob@example.org")
    assert """\
The same record as JSON: "honeydonuts record 101 json".
In a comment, \\n stands for a line break its writer made: written so, the
record reads back exactly as it was sent.
""" in text
    assert "{first line\\nsecond line}" in text
    # without a line break in any comment, nothing to say
    mailer.send("honeydonuts challenge alice bob pw-alice")
    assert "stands for a line break" not in mailer.reply("honeydonuts record 102")


# -- 7. signing off and back; a watcher's chat mail ------------------------------------

def test_a_chat_mail_to_a_watcher_says_why_and_how_to_stop(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "wendy")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    mailer.send("honeydonuts subscribe 101 wendy pw-wendy", sender="wendy@example.org")
    out = mailer.send("honeydonuts chat 101 bob pw-bob", "hello all", sender="bob@example.org")
    [wendy_mail] = [m for m in out if m.to_addr == "wendy@example.org"]
    assert wendy_mail.body.endswith("""\
Answer with the Subject "honeydonuts chat 101 <userid> <password>" and your
message in the body.

You get this mail because you watch Honey Donuts board 101; "honeydonuts
unsubscribe 101 wendy <password>" stops it.
""")
    [alice_mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert "You get this mail because" not in alice_mail.body


# -- 3. tournaments ------------------------------------------------------------------

def test_a_tournament_with_a_decline_a_leaver_and_an_organiser_who_left(
        mailer: Mailer, db: Database) -> None:
    create(mailer, ["alice", "bob", "carol", "dave"], "-swiss -rounds 2", name="Mini")
    # the organiser leaves before the start: she still starts it, and hears of it
    mailer.reply("tournament leave Mini alice pw-alice", sender="alice@example.org")
    out = mailer.send("tournament start Mini alice pw-alice", sender="alice@example.org")
    assert [m.subject for m in out if m.to_addr == "alice@example.org"
            and not m.in_reply_to] == ["Tournament Mini started"]
    assert pairs_of(db, 1, "mini") == ([("bob", "carol")], "dave")
    # carol declines her round 1 board: the reply names round 1 once, and the score
    out = mailer.send("honeydonuts decline 101 carol pw-carol", sender="carol@example.org")
    [reply] = [m for m in out if m.to_addr == "carol@example.org" and m.in_reply_to]
    assert reply.body.startswith("""\
> honeydonuts decline 101 carol *****
You declined Honey Donuts board 101: it ends with no result on the board (it
is rated for nobody), and tournament Mini scores it as a loss for you.

Summary of Honey Donuts Board 101
""")
    assert "round 2" not in reply.body
    assert ("Game declined, no result: carol declined the game; tournament Mini scores it "
            "as a loss for carol (1-0).") in flat(reply.body)
    # round 2's mail: the standings after round 1 hold no bye of round 2
    [round_mail] = [m for m in out if m.to_addr == "bob@example.org"
                    and m.subject == "Tournament Mini round 2"]
    assert """\
Standings after round 1 of Mini

  # Name    Pts     BH  R1
  1 bob       1      0 R3+
  2 dave      1      0 bye
  3 carol     0      1 B1-
""" in round_mail.body
    # dave leaves with a comment: his opponent reads it with the board's end
    out = mailer.send("tournament leave Mini dave pw-dave", "Sorry all, I must go.",
                      sender="dave@example.org")
    [reply] = [m for m in out if m.to_addr == "dave@example.org" and m.in_reply_to]
    assert "Your comment went to your opponent with the end of board 102." in flat(reply.body)
    [ended] = [m for m in out if m.to_addr == "bob@example.org"
               and m.subject.startswith("Honey Donuts Board 102")]
    text = flat(ended.body)
    assert ("Game won by bob (Blue): dave left tournament Mini, which counts as a "
            "resignation.") in text
    assert "dave writes: Sorry all, I must go." in text
    # the final standings mark him, and go to the organiser too
    finals = [m for m in out if m.subject == "Tournament Mini is over"]
    assert sorted(m.to_addr for m in finals) == [
        "alice@example.org", "bob@example.org", "carol@example.org", "dave@example.org"]
    assert """\
  # Name          Pts     BH  R1  R2
  1 bob             2      2 R2+ B3+
  2 carol           1      2 B1- bye
  3 dave (left)     1      2 bye R1-

A player marked (left) left the tournament: their games then in play were
lost, and they were paired no more.
""" in finals[0].body
    # his history says it in words
    text = flat(mailer.reply("honeydonuts history dave", sender="dave@example.org"))
    assert "Board 102, ended " in text
    assert (": lost as Red against bob (dave left tournament Mini, which counts as a "
            "resignation).") in text


def test_leaving_with_no_board_in_play_says_the_comment_reached_nobody(
        mailer: Mailer, db: Database) -> None:
    create(mailer, ["alice", "bob", "carol"], "-swiss -rounds 2", name="Mini")
    mailer.send("tournament start Mini alice pw-alice", sender="alice@example.org")
    _, bye = pairs_of(db, 1, "mini")
    assert bye is not None
    text = flat(mailer.reply(f"tournament leave Mini {bye} pw-{bye}", "Bye!",
                             sender=f"{bye}@example.org"))
    assert ("Your comment reached nobody: no board of yours was in play, and nothing else "
            "is mailed when a player leaves.") in text


def test_signing_off_and_back_brings_the_account_back(mailer: Mailer, db: Database,
                                                       settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    mailer.send("honeydonuts accept 101 bob pw-bob", sender="bob@example.org")
    mailer.send("honeydonuts resign 101 alice pw-alice")  # rated for both
    mailer.reply("signoff alice pw-alice")
    out = mailer.send("signup alice new-pass-alice")
    [reply] = [m for m in out if m.in_reply_to]
    assert flat(reply.body).startswith(
        "> signup alice ***** Welcome, alice! Your account is open, and the server's mail "
        "for it goes to alice@example.org. It is the account alice that signed off on ")
    assert ("from this address: once confirmed, it opens again with its finished games, "
            "ratings, history and page.") in flat(reply.body)
    [welcome] = mailer.answer(reply)
    assert welcome.subject == "pbmserv: welcome back, alice"
    assert flat(welcome.body).startswith(
        "> confirm alice ***** Welcome back, alice! Your account is open again as it was "
        "when you signed off on ")
    history = flat(mailer.reply("honeydonuts history alice"))
    assert "Board 101, ended " in history and "lost as Red against bob" in history
    with db.transaction() as s:
        [account] = s.scalars(select(User).where(User.key == "alice")).all()
        assert s.scalar(select(PlayerRating).where(PlayerRating.user_id == account.id,
                                                   PlayerRating.game == "honeydonuts"))
    # the new password opens it, the old one does not
    assert "has been started" in mailer.reply("honeydonuts challenge alice bob new-pass-alice")
    assert "do not match" in mailer.reply("honeydonuts challenge alice bob pw-alice")
    # the player's page and the old board's page lead to the same account
    with TestClient(create_app(db, settings)) as client:
        page = client.get("/players/alice").text
        assert "/boards/honeydonuts/101" in page
        board_page = client.get("/boards/honeydonuts/101").text
        assert "/players/alice" in board_page


def test_a_signup_from_another_address_does_not_reopen(mailer: Mailer,
                                                      settings: Settings) -> None:
    mailer.signup("alice")
    mailer.reply("signoff alice pw-alice")
    text = flat(mailer.reply("signup alice new-pass-alice", sender="eve@example.net"))
    assert "belonged to a player who signed off" in text


def test_a_held_bundle_marks_a_watchers_mail_whose_board_moved_on(
        db: Database, settings: Settings) -> None:
    """A mail with no reply address (a watcher's) is out of date once its board has
    moved on after it was made; the newest one of the board is not."""
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob", "wendy")
    mailer.send("honeydonuts challenge alice bob pw-alice")
    mailer.send("honeydonuts subscribe 101 wendy pw-wendy", sender="wendy@example.org")
    limited = replace(settings, mails_per_address_hour=len(outbox(db, "wendy@example.org")))
    mailer = Mailer(db, limited)
    play(mailer, db, "alice")
    play(mailer, db, "bob")
    held = [m for m in outbox(db, "wendy@example.org") if m.status is OutboxStatus.HELD]
    assert len(held) == 2 and all(m.reply_to is None for m in held)
    with db.transaction() as s:
        fold_held(s, limited, utcnow() + timedelta(hours=1, minutes=1))
    fold = outbox(db, "wendy@example.org")[-1]
    text = flat(fold.body)
    assert ("1 of them shows a board that moved on since: it is marked out of date, with "
            "the board as it stands now.") in text
    first, second = text.split("=== 2 of 2")
    assert ("(Out of date: Honey Donuts board 101 has moved on since this mail was made. As "
            "it stands now: It is alice's turn (Red), move 3. \"honeydonuts show 101\" sends "
            "it.)") in first
    assert "Out of date" not in second


@pytest.fixture
def pg_mailer(pg_url: str, tmp_path: Path) -> Iterator[tuple[Mailer, Database, Settings]]:
    settings = Settings(database_url=pg_url, maildir=tmp_path / "mail")
    db = Database(pg_url)
    try:
        yield Mailer(db, settings), db, settings
    finally:
        db.dispose()


@pytest.mark.postgres
def test_signing_back_on_postgres(pg_mailer: tuple[Mailer, Database, Settings]) -> None:
    """The userid moves from the signup's row back to the old account's in one
    transaction: PostgreSQL's unique index on the key must see them in order."""
    test_signing_off_and_back_brings_the_account_back(*pg_mailer)


@pytest.mark.postgres
def test_a_tournament_on_postgres(pg_mailer: tuple[Mailer, Database, Settings]) -> None:
    mailer, db, _ = pg_mailer
    test_a_tournament_with_a_decline_a_leaver_and_an_organiser_who_left(mailer, db)
