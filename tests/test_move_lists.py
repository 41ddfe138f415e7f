"""A board mail lists the latest 20 rounds of moves and says how to ask for the rest:
'show ... all' lists every move, 'moves ... all' every move with the legal ones."""

from __future__ import annotations

from tests.conftest import Mailer
from tests.test_work_budget import SHUFFLE, long_amoeba

CUT = ('Moves 1 to 12 are not shown here; "amoeba show 101 all" mails them all.\n'
       "Moves, one row per round (#n counts single moves: row 2 holds #3 and #4):\n"
       "       alice             bob\n"
       "    7. b1-c3             b9-c7\n")
WHOLE = ("Moves, one row per round (#n counts single moves: row 2 holds #3 and #4):\n"
         "       alice             bob\n"
         "    1. b1-c3             b9-c7\n"
         "    2. c3-b1             c7-b9\n")


def test_a_cut_move_list_says_how_to_ask_for_all_of_it(mailer: Mailer) -> None:
    long_amoeba(mailer, 50)
    out = mailer.send(f"amoeba move 101 alice pw-alice {SHUFFLE[50 % 4]}")
    [board_mail] = [m for m in out if m.to_addr == "bob@example.org"]
    assert CUT in board_mail.body and "    6. " not in board_mail.body
    assert "   26. c3-b1\n" in board_mail.body
    # show: the board as its mails show it; with all, every move
    shown = mailer.reply("amoeba show 101")
    assert CUT in shown
    every = mailer.reply("amoeba show 101 all")
    assert WHOLE in every and "not shown here" not in every and "   26. c3-b1\n" in every
    assert mailer.reply("amoeba show 101 -words all").count("    1. b1-c3 ") == 1
    # moves: the legal moves; with all, every move played too
    legal = mailer.reply("amoeba moves 101")
    assert "Moves, one row per round" not in legal
    listed = mailer.reply("amoeba moves 101 all")
    assert listed.startswith(
        "> amoeba moves 101 all\nAmoeba Board 101: It is bob's turn (Black), move 52.\n\n")
    assert WHOLE in listed and "   26. c3-b1\n" in listed
    # what else may follow is said
    # (the word is not quoted: it may be a password written after the wrong command)
    assert mailer.reply("amoeba moves 101 every") == (
        "> amoeba moves ...\nERROR: after the board number, only all may follow "
        "(every move played, with\nthe legal moves)\n\n"
        "Write it as: amoeba moves board [all]\n\n\n"
        '--\npbmserv <pbmserv@localhost>: send "help" for the commands.\n')
    assert mailer.reply("amoeba show 101#3 all").startswith(
        "> amoeba show 101#3 all\nERROR: the move list and the board in words are given "
        "for the board as it\nstands: write amoeba show 101 all\n")
