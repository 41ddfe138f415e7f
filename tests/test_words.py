"""The board in words (pbmserv.notifications.words): a player's setting ``notify ...
words on`` adds it to their board mails (text and HTML), ``show board -words`` to one
reply; what it says for each game, and what a board mail costs those who did not ask
for it."""

from __future__ import annotations

import re

from sqlalchemy import select

from pbmserv.db.models import OutboxMessage
from tests.conftest import Mailer

HEADING = "THE BOARD IN WORDS\n"


def flat(text: str) -> str:
    return " ".join(text.split())


def play(mailer: Mailer, game: str, *moves: str) -> list[OutboxMessage]:
    """A board of ``game`` between alice and bob, ``moves`` played in turn: the mails
    of the last move."""
    out = mailer.send(f"{game} challenge alice bob", sender="carol@example.org")
    for n, move in enumerate(moves):
        who = ("alice", "bob")[n % 2]
        out = mailer.send(f"{game} move 101 {who} pw-{who} {move}", sender=f"{who}@example.org")
        assert "has been played" in out[0].body, out[0].body
    return out


def to(out: list[OutboxMessage], userid: str) -> OutboxMessage:
    [mail] = [m for m in out if m.to_addr == f"{userid}@example.org"]
    return mail


def test_words_on_adds_the_board_in_words_to_that_players_mails(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    answer = flat(mailer.reply("notify alice pw-alice words on"))
    assert "alice's board mails describe the board in words too, for a screen reader" in answer
    assert "words off" in answer
    out = play(mailer, "amoeba", "e2-e4,b3-b4")
    mine, theirs = to(out, "alice"), to(out, "bob")  # alice's reply, bob's board mail
    assert HEADING in mine.body and HEADING not in theirs.body
    words = mine.body.split(HEADING, 1)[1]
    assert words.startswith("Black (bob) to move.\n"
                            "Move 1: e2-e4,b3-b4 by White (alice). What it changed:\n")
    assert "  - b3: empty, now a hole\n  - b4: a hole, now empty\n" in words
    assert "  - e2: White pawn, now empty\n  - e4: empty, now White pawn\n" in words
    assert "  - pawns: a2, b2, c2, d2, e4, f2, g2, h2\n" in words
    assert "Holes: b3, b5, b6, d5, e5, g4, g5, g6.\n" in words
    assert ("The last slide took the square of b3 to b4: it may not slide straight back "
            "this turn.") in flat(words)
    assert "Legal moves of Black (bob)," in words and "  - e8, Black pawn: e6" in words
    # bob's next board mail: alice asked for words, bob did not
    out = mailer.send("amoeba move 101 bob pw-bob e8-e6", sender="bob@example.org")
    board_mail = to(out, "alice")
    assert HEADING in board_mail.body and HEADING not in to(out, "bob").body
    assert board_mail.html_body is not None
    assert '<h3 style="' in board_mail.html_body and ">The board in words</h3>" in \
        board_mail.html_body
    assert "<div class=\"words\"" not in (to(out, "bob").html_body or "")
    assert "words on" in flat(mailer.reply("notify alice pw-alice words off"))
    out = mailer.send("amoeba move 101 alice pw-alice d2-d3", sender="alice@example.org")
    assert HEADING not in to(out, "alice").body and HEADING not in to(out, "bob").body


def test_show_words(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    play(mailer, "hexamoeba", "a1-a2")
    shown = mailer.reply("hexamoeba show 101 -words")
    words = shown.split(HEADING, 1)[1]
    assert "  - a stack of 2 on a2: White, White from the bottom up\n" in words
    assert "  - Kernel: b3\n" in words and "  - Kernel: f3\n" in words
    assert "  - b3, White Kernel:" not in words  # it is Black's turn
    assert "Legal moves of Black (bob), 52 in all" in flat(words)
    assert HEADING not in mailer.reply("hexamoeba show 101")
    refused = flat(mailer.reply("hexamoeba show 101#1 -words"))
    assert ("the move list and the board in words are given for the board as it stands: "
            "write hexamoeba show 101 -words") in refused
    assert "only all and -words may follow, not -wards" in flat(
        mailer.reply("hexamoeba show 101 -wards"))


def test_honey_donuts_in_words_goes_round_the_ring(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    play(mailer, "honeydonuts", "a1-b1")
    words = flat(mailer.reply("honeydonuts show 101 -words").split(HEADING, 1)[1])
    assert ("The outer ring round the hole, clockwise from a1: a1 white piece; b1 Red piece; "
            "c1 white piece;") in words
    assert "Holes: c3." in words
    assert "White pieces, no one's:" in words
    assert ("Legal moves of Blue (bob), 12 in all, by the end of the line pushed, then the "
            "cell it is pushed toward: - c1, white piece: d1 - c5, white piece: d4") in words
    assert "- e2, Blue king: d2, d3 -" in words


def test_ex_nihilo_in_words_names_stacks_and_new_ones(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    play(mailer, "exnihilo", "b2-b6")
    words = flat(mailer.reply("exnihilo show 101 -words").split(HEADING, 1)[1])
    assert "Move 1: b2-b6 by White (alice). What it changed: - b6: empty, now White piece" \
        in words
    assert "White (alice), 1 piece: - pieces: b6" in words or \
        "White (alice), 1 piece: - piece: b6" in words
    assert "Black (bob), 0 pieces:" in words
    assert "by the stack moved (or the empty cell a new stack grows from)" in words


def test_a_board_mail_grows_by_three_lines_for_those_who_did_not_ask(
        mailer: Mailer) -> None:
    """The link to the move page (with web pages) is the one thing the board mail of a
    player who did not ask for words gains: here, without web pages, nothing."""
    mailer.signup("alice", "bob")
    out = play(mailer, "honeydonuts", "a1-b1")
    body = to(out, "bob").body
    assert HEADING not in body and "/move/" not in body
    with mailer.db.reading() as session:
        sizes = [len(m.body.splitlines()) for m in session.scalars(select(OutboxMessage))]
    assert max(sizes) < 80, sizes
    assert not re.search(r"^.{77,}$", body, re.M)
