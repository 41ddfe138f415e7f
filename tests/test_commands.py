"""Every command of the contract, through the real store, processor and database."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select

from pbmserv.db.models import Board, OutboxMessage, User
from pbmserv.db.session import Database
from tests.conftest import Mailer


def flat(text: str) -> str:
    return " ".join(text.split())


def start_game(mailer: Mailer, *options: str) -> None:
    mailer.signup("alice", "bob")
    mailer.reply(f"honeydonuts challenge alice bob {' '.join(options)}".strip())


def test_help_lists_every_command_and_game(mailer: Mailer) -> None:
    text = mailer.reply("help")
    for word in ("signup userid password [email]", "change password userid old new",
                 "signoff userid password", "list [game...]",
                 "challenge userid1 userid2 [-option...]", "move board userid password move[#n]",
                 "resign board userid password", "preview board move...", "moves board",
                 "honeydonuts"):
        assert word in text
    assert all(len(line) <= 76 for line in text.splitlines())


def test_game_help_and_help_topics(mailer: Mailer) -> None:
    text = mailer.reply("honeydonuts help")
    assert "-simple" in text and "a1-a2" in text
    assert all(len(line) <= 76 for line in text.splitlines())
    assert mailer.reply("help honeydonuts").split("\n", 1)[1] == text.split("\n", 1)[1]
    assert "move board userid password move[#n]" in mailer.reply("help move")
    for game in ("amoeba", "exnihilo", "hexamoeba", "honeydonuts"):
        body = " ".join(mailer.reply(f"{game} help").split())
        assert f"{game} move board userid password move[#n]" in body
        assert 'In place of a move: "resign"; "propose"' in body and '"undo"' in body
    # to an address that is no account's, no word of the line is quoted back
    assert ("> help ...\nERROR: there is no help topic '...'; topics are"
            in mailer.reply("help dance"))
    mailer.signup("alice")
    assert "> help dance\nERROR: there is no help topic 'dance'" in mailer.reply("help dance")


def test_signup_and_duplicate(mailer: Mailer, db: Database) -> None:
    [reply] = mailer.send("signup alice s3cret-pw")
    assert "Welcome, alice!" in reply.body and reply.subject.startswith("confirm alice ")
    code = reply.subject.split()[2]
    assert (f'reply to this mail as it is (its Subject is the command that confirms the '
            f'account), or send "confirm alice {code}". Until then no password opens it, '
            "nobody can challenge it and nothing else is mailed to it; unconfirmed, it "
            "lapses at ") in flat(reply.body)
    [welcome] = mailer.answer(reply)
    assert welcome.subject == "pbmserv: welcome, alice"
    assert '"honeydonuts challenge alice bot1"' in flat(welcome.body)
    assert "userid 'ALICE' is taken" in mailer.reply("signup ALICE other-pw")
    with db.transaction() as s:
        user = s.scalar(select(User).where(User.key == "alice"))
        assert user is not None and user.email == "alice@example.org"
        assert "s3cret-pw" not in user.password_hash


def test_signup_with_address_and_bad_input(mailer: Mailer) -> None:
    assert "goes to al@other.org" in flat(mailer.reply("signup al pw-al-long al@other.org"))
    assert "cannot be a userid" in mailer.reply("signup -x pw")
    assert "not a mail address" in mailer.reply("signup carol pw nowhere")
    text = mailer.reply("signup")
    assert "too few words" in text and "Write it as: signup userid password [email]" in text


def test_change_password_and_address(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    assert "password of alice has been changed" in mailer.reply(
        "change password alice pw-alice newpw-long")
    assert "do not match" in mailer.reply("change address alice pw-alice a@b.org")
    assert "moves to a@b.org once that address confirms it" in flat(
        mailer.reply("change address alice newpw-long a@b.org"))
    assert "do not match" in mailer.reply("change address alice NEWPW-LONG a@c.org")  # case counts


def test_signoff_refused_while_playing_then_done(mailer: Mailer) -> None:
    start_game(mailer)
    assert "still plays honeydonuts 101" in mailer.reply("signoff bob pw-bob", sender="b@x.org")
    mailer.reply("honeydonuts resign 101 bob pw-bob")
    assert "is closed" in mailer.reply("signoff bob pw-bob")
    assert "there is no user 'bob'" in mailer.reply("honeydonuts challenge alice bob")
    # the userid is kept for bob's own address for a year, then free for anyone
    assert flat(mailer.reply("signup bob again-pw")).startswith(
        "> signup ... ERROR: the userid 'bob' belonged to a player who signed off on ")
    assert "Welcome, bob!" in mailer.reply("signup bob again-pw", sender="bob@example.org")


def test_challenge_starts_board_and_mails_both_players(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")
    assert [m.to_addr for m in out] == ["carol@example.org", "alice@example.org",
                                        "bob@example.org"]
    assert out[1].subject == "New Honey Donuts Board 101 alice"
    assert "It is alice's turn (Red), move 1." in out[1].body
    assert "A new board has been started." in out[1].body
    second = mailer.send("honeydonuts chall bob alice -SIMPLE")
    assert second[0].subject == "New Honey Donuts Board 102 bob"
    assert "Options: -simple" in second[0].body


def test_challenge_checks_options_and_users(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    text = mailer.reply("honeydonuts challenge alice bob -large")
    assert "unknown option '-large' for honeydonuts; valid options: -simple" in text
    assert "there is no user 'zed'" in mailer.reply("honeydonuts challenge alice zed")
    text = mailer.reply("honeydonuts challenge alice")
    assert "too few words after 'challenge'" in text
    assert "Write it as: honeydonuts challenge userid1 userid2 [-option...]" in text
    # a third word is the challenger's password; a fourth is one too many
    assert "needs exactly 2 userids (and, to take the board up at once, your password " \
        "after them)" in flat(mailer.reply("honeydonuts challenge a b c d"))


def test_move_flow_with_comment_and_move_numbers(mailer: Mailer) -> None:
    start_game(mailer)
    out = mailer.send("honeydonuts move 101 alice pw-alice a2-a3#1", "Your move!\n\n-- \nsig")
    reply, board_mail = out
    assert reply.to_addr == "alice@example.org" and reply.subject == "Honey Donuts Board 101 bob"
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in reply.body
    assert board_mail.to_addr == "bob@example.org"
    assert board_mail.subject == "Honey Donuts Board 101 bob **"
    assert "alice writes:\n  Your move!" in board_mail.body and "sig" not in board_mail.body
    assert "1. a1-a2" in board_mail.body
    stale = mailer.reply("honeydonuts move 101 bob pw-bob e1-e2#1", sender="bob@example.org")
    assert "this would be move 2 of board 101, not move 1" in stale
    assert "Honey Donuts Board 101" in stale  # the board comes with the error
    early = mailer.reply("honeydonuts move 101 alice pw-alice a1-a2")
    assert "it is bob's turn, not yours" in early
    out = mailer.send("honeydonuts board 101 bob pw-bob e1-e2#2", sender="bob@example.org")
    assert out[0].subject == "Honey Donuts Board 101 alice"
    assert "1. a1-a2             e1-e2" in out[0].body


def test_illegal_move_says_why_and_changes_nothing(mailer: Mailer, db: Database) -> None:
    start_game(mailer)
    out = mailer.send("honeydonuts move 101 alice pw-alice b2-a2")
    assert len(out) == 1  # no board mail
    assert out[0].subject == "Honey Donuts Board 101 Error"
    assert "b2-a2 is not possible here: that move would push your own King" in out[0].body
    assert ('Honey Donuts moves are written like a1-a2; "honeydonuts moves 101" lists every '
            "legal move.") in out[0].body.replace("\n", " ")
    assert "> honeydonuts move 101 alice ***** b2-a2" in out[0].body
    assert "wrong" not in out[0].body
    out = mailer.send("honeydonuts move 101 alice wrong a1-a2")
    assert "the userid and password do not match" in out[0].body
    assert "> honeydonuts move ..." in out[0].body and "wrong" not in out[0].body
    assert "wrong" not in out[0].body
    with db.transaction() as s:
        board = s.scalar(select(Board))
        assert board is not None and board.ply == 0


def test_outsider_and_unknown_board(mailer: Mailer) -> None:
    start_game(mailer)
    mailer.signup("carol")
    assert "carol does not play honeydonuts board 101" in mailer.reply(
        "honeydonuts move 101 carol pw-carol a1-a2")
    assert "there is no honeydonuts board 999" in mailer.reply(
        "honeydonuts move 999 alice pw-alice a1-a2")


def test_resign_as_command_and_as_move(mailer: Mailer) -> None:
    start_game(mailer)
    out = mailer.send("honeydonuts resign 101 alice pw-alice")
    assert out[0].subject == "Honey Donuts Board 101 Game over"
    assert "Game won by bob (Blue): alice resigned." in out[1].body
    assert "is over" in mailer.reply("honeydonuts move 101 bob pw-bob e1-e2")
    mailer.reply("honeydonuts challenge alice bob")
    text = mailer.reply("honeydonuts move 102 alice pw-alice resign#1")
    assert "Game won by bob (Blue): alice resigned." in text


def test_winning_move_ends_the_game(mailer: Mailer) -> None:
    start_game(mailer)
    mailer.reply("honeydonuts move 101 alice pw-alice a1-b1")
    mailer.reply("honeydonuts move 101 bob pw-bob c5-d4")
    out = mailer.send("honeydonuts move 101 alice pw-alice b1-c2")  # row b1..e2: e2 falls
    assert out[0].subject == "Honey Donuts Board 101 Game over"
    assert "Game won by alice (Red): Blue's King was pushed off the board." in out[1].body
    assert "To move:" not in out[1].body
    assert "There are no moves to make." in mailer.reply("honeydonuts moves 101")


def test_show_games_preview_moves(mailer: Mailer) -> None:
    start_game(mailer)
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2")
    shown = mailer.reply("honeydonuts show 101")
    assert "Summary of Honey Donuts Board 101" in shown and "1. a1-a2" in shown
    at0 = mailer.reply("honeydonuts show 101#0")
    assert at0.startswith("> honeydonuts show 101#0\n"
        "Honey Donuts Board 101 at the start, before move 1 (1 move has been played\n"
        "since; \"honeydonuts show 101\" shows it now):\n")
    assert "a  r   R   r  a" in at0
    at1 = mailer.reply("honeydonuts show 101#1")
    assert at1.startswith("> honeydonuts show 101#1\n"
                          "Honey Donuts Board 101 after move 1, the last move so far:\n")
    assert "board 101 has moves 1 to 1; there is no #5" in mailer.reply("honeydonuts show 101#5")
    games = mailer.reply("honeydonuts games bob next")
    assert "101   alice vs bob: It is bob's turn (Blue), move 2." in games
    assert "none" in mailer.reply("honeydonuts show alice next")
    preview = mailer.reply("honeydonuts preview 101 e1-e2 a3-a2")
    assert "after e1-e2 a3-a2" in preview and "Blue would be to move." in preview
    bad = mailer.reply("honeydonuts preview 101 e1-e2 a3-a2 a1-a9")
    assert "a1-a9 is not possible after e1-e2 a3-a2: there is no cell a9" in bad
    legal = mailer.reply("honeydonuts moves 101")
    assert "12 legal moves:" in legal and "e1-e2" in legal
    listing = mailer.reply("list honeydonuts")
    assert "101   alice vs bob: It is bob's turn" in listing
    assert "honeydonuts   Honey Donuts, 1 board in play" in mailer.reply("list")


def test_multiple_runs_every_line_with_one_reply(mailer: Mailer) -> None:
    out = mailer.send("multiple", "signup alice pw1-long\nsignup bob pw2-long bob@example.org\n"
                      "honeydonuts challenge alice bob\nbogus line\n\nnot a command")
    [reply] = [m for m in out if m.in_reply_to]
    assert reply.subject == "pbmserv: 4 commands, 2 refused"
    body = reply.body
    # an address whose account is not confirmed is a stranger's: no word quoted back
    assert body.count("> ") >= 4 and "'...' is neither a command nor a game" in body
    assert "bogus" not in body and "not a command\n" not in body
    # nobody can challenge an account that is not confirmed yet
    assert "ERROR: the account alice is not confirmed yet" in body
    # bob's address gets its confirmation, and nothing else
    [confirmation] = [m for m in out if not m.in_reply_to]
    assert confirmation.to_addr == "bob@example.org"
    assert confirmation.subject.startswith("confirm bob ")


def test_command_in_body_and_subject_prefixes(mailer: Mailer) -> None:
    assert "Welcome, alice!" in mailer.reply("", "signup alice pw-alice\nthanks")
    assert "Welcome, bob!" in mailer.reply("Re: Fwd: AW: signup bob pw-long-1",
                                           sender="bob@example.org")
    assert "Welcome, carol!" in mailer.reply("hello there", "> quoted\n\nsignup carol pw-long-1",
                                             sender="carol@example.org")


def test_no_command_found(mailer: Mailer) -> None:
    text = mailer.reply("", "\n")
    assert text.startswith("I found no command in your mail.\n\npbmserv is a server for "
                           "board games played by mail")
    # a stranger is told once a day: a second mail with no command gets no answer
    assert mailer.send("hello world", "hi") == []
    mailer.signup("alice")
    assert "'hello' is neither a command nor a game" in mailer.reply("hello world", "hi")


def test_passwords_never_leave_the_server(mailer: Mailer, db: Database) -> None:
    start_game(mailer)
    mailer.send("honeydonuts move 101 alice pw-alice a1-a2")
    mailer.send("change password bob pw-bob topsecret")
    mailer.send("honeydonutz move 101 bob topsecret e1-e2")
    with db.transaction() as s:
        bodies = [m.subject + m.body for m in s.scalars(select(OutboxMessage))]
    assert bodies and not any("pw-alice" in b or "topsecret" in b or "pw-bob" in b
                              for b in bodies)


def test_offer_to_end_the_game(mailer: Mailer) -> None:
    start_game(mailer)
    assert "nobody has asked you anything" in mailer.reply(
        "honeydonuts move 101 bob pw-bob accept")
    out = mailer.send("honeydonuts move 101 alice pw-alice propose", "Shall we call it a day?")
    board_mail = flat(out[1].body)
    assert out[1].to_addr == "bob@example.org" and out[1].subject.endswith(" **")
    assert "alice has offered to end the game by agreement." in board_mail
    assert ("Open offer: alice offers to end the game by agreement. bob answers with the "
            'move "accept" or "reject".') in board_mail
    assert "alice writes: Shall we call it a day?" in board_mail
    assert "your opponent must answer it" in mailer.reply(
        "honeydonuts move 101 alice pw-alice accept")
    assert "has asked for an agreed end of the game already" in flat(mailer.reply(
        "honeydonuts move 101 bob pw-bob propose"))
    out = mailer.send("honeydonuts move 101 bob pw-bob reject", "Not yet!",
                      sender="bob@example.org")
    assert "play goes on" in out[0].body
    told = flat(out[1].body)
    assert out[1].to_addr == "alice@example.org"
    assert "bob rejected your offer to end the game by agreement; play goes on." in told
    assert "bob writes: Not yet!" in told
    mailer.reply("honeydonuts move 101 alice pw-alice propose")
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2")  # alice may still move
    assert "Open offer: alice offers to end the game by agreement." in flat(out[1].body)
    out = mailer.send("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    lapsed = flat(out[1].body)  # bob moved instead of answering: the offer lapses
    assert "Your offer to end the game by agreement lapsed: bob played a move" in lapsed
    assert "nobody has asked you anything" in mailer.reply(
        "honeydonuts move 101 bob pw-bob accept")
    mailer.reply("honeydonuts move 101 bob pw-bob propose")
    text = mailer.reply("honeydonuts move 101 alice pw-alice accept#3")
    assert "Game drawn: ended by agreement." in text
    assert "You accepted the offer to end Honey Donuts board 101: the game is over." in text


def test_hexamoeba_by_mail_ends_by_agreement_with_counts(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("hexamoeba challenge alice bob")
    assert out[0].subject == "New Hexamoeba Board 101 alice"
    assert "Stacks controlled: White 11, Black 11." in out[0].body
    assert "unknown option '-small' for hexamoeba; valid options: none" in mailer.reply(
        "hexamoeba challenge alice bob -small")
    mailer.reply("hexamoeba move 101 alice pw-alice c2-d2#1")
    text = mailer.reply("hexamoeba move 101 bob pw-bob e2-d2#2")
    assert "1. c2-d2             e2-d2" in text
    bad = mailer.reply("hexamoeba move 101 alice pw-alice d2-d3")
    assert "the stack at d2 is controlled by Black" in bad
    mailer.reply("hexamoeba move 101 alice pw-alice propose")
    out = mailer.send("hexamoeba move 101 bob pw-bob accept", sender="bob@example.org")
    assert out[0].subject == "Hexamoeba Board 101 Game over"
    assert ("Game won by bob (Black): ended by agreement; White controls 10 stacks, "
            "Black 11.") in out[0].body.replace("\n", " ")
    assert "Stacks controlled: White 10, Black 11." in out[1].body


def test_exnihilo_by_mail_with_a_capture(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("exnihilo challenge alice bob -small")
    assert "Options: -small" in out[0].body and "g  1   2   3   4  g" in out[0].body
    mailer.reply("exnihilo move 101 alice pw-alice d4-a1#1")  # a white stack of 3
    text = mailer.reply("exnihilo move 101 bob pw-bob d4-a4#2")
    assert "1. d4-a1             d4-a4" in text
    assert "a  www    .     .    bbb  a" in text
    assert "It is alice's turn (White), move 3." in mailer.reply("exnihilo moves 101")
    bad = mailer.reply("exnihilo move 101 alice pw-alice a1-a4").replace("\n", " ")
    assert "a1-a4 is not possible here: a4 is occupied: stacks never land on" in bad
    bad = mailer.reply("exnihilo move 101 alice pw-alice a1-a2").replace("\n", " ")
    assert "a whole stack may only move outward" in bad


def test_amoeba_by_mail(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("amoeba challenge alice bob -single -opponent")
    assert "Options: -opponent -single" in out[0].body
    assert "  6 |   |###|   |:::|   |:::|###|:::|  6" in out[0].body
    refused = mailer.reply("amoeba challenge alice bob -big").replace("\n", " ")
    assert "valid options: -opponent, -promote, -single, -small" in refused
    text = mailer.reply("amoeba move 101 alice pw-alice e4,a4-b4#1")
    assert "Your move e2-e4,a4-b4 on Amoeba board 101 has been played." in text
    bad = mailer.reply("amoeba move 101 bob pw-bob e8-e6,b4-a4").replace("\n", " ")
    assert "the square at b4 may not slide back to a4 this turn (ko)" in bad
    bad = mailer.reply("amoeba move 101 bob pw-bob e8-e6,c5-e5").replace("\n", " ")
    assert "with -single a square slides only into a hole next to it" in bad
    assert "1. e2-e4,a4-b4" in mailer.reply("amoeba move 101 bob pw-bob Nf7#2")


def test_logs_never_hold_passwords(mailer: Mailer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    start_game(mailer)
    mailer.send("honeydonuts move 101 alice pw-alice a1-a2")
    mailer.send("honeydonutz move 101 bob pw-bob e1-e2")
    assert "honeydonuts move; 2 mail(s) queued" in caplog.text
    assert "honeydonutz ... (refused)" in caplog.text
    assert "pw-alice" not in caplog.text and "pw-bob" not in caplog.text
