"""Answers by reply: the mail that asks a player to answer a draw offer or an undo
request carries a reply address for that answer, whoever's turn it is; ``accept``,
``reject`` (``decline``: the offer) and, on one's own turn, a move (which declines it)
work through it, and a stale address gets a clear reply."""

from __future__ import annotations

import re
from dataclasses import replace
from email.utils import parseaddr

from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, Move, OutboxMessage
from pbmserv.db.session import Database
from tests.conftest import Mailer

ANSWER_DRAW = ('Or simply reply to this mail with just "accept" or "reject" on the first '
               "line to answer alice's offer to end the game by agreement: no userid or "
               "password needed, and the rest of your reply is your comment.")
ANSWER_UNDO = ('Or simply reply to this mail with just "accept" or "reject" on the first '
               "line to answer alice's request to take back a move: no userid or password "
               "needed, and the rest of your reply is your comment.")
MOVE_LINE = "Or simply reply to this mail with just your move on the first line"
ALICE = "honeydonuts move 101 alice pw-alice"
BOB = "honeydonuts move 101 bob pw-bob"


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")


def to(out: list[OutboxMessage], address: str) -> OutboxMessage:
    [mail] = [m for m in out if m.to_addr == address]
    return mail


def bob_reply(mailer: Mailer, address: str | None, first_line: str,
              rest: str = "") -> list[OutboxMessage]:
    """Bob answers the way mail programs write a reply: his line, his comment, the
    attribution, the quoted board mail and his signature."""
    assert address is not None
    body = (f"{first_line}\n{rest}\nOn Tue, 24 Nov 2026 at 10:02, pbmserv wrote:\n"
            "> Summary of Honey Donuts Board 101\n> alice has offered...\n-- \nBob\n")
    return mailer.send("Re: Honey Donuts Board 101 alice **", body, sender="bob@example.org",
                       To=address)


def ply_and_request(db: Database) -> tuple[int, str | None, bool]:
    with db.transaction() as s:
        board = s.scalar(select(Board))
        assert board is not None
        return board.ply, board.request_kind, board.finished


def test_a_draw_offered_on_ones_own_turn_is_accepted_by_reply(mailer: Mailer,
                                                              db: Database) -> None:
    start(mailer)
    out = mailer.send(f"{ALICE} propose", "Shall we call it a day?")
    offer = to(out, "bob@example.org")
    assert offer.reply_to is not None
    assert re.fullmatch(r"pbmserv\+b[0-9]+u[0-9]+m1t0r[0-9]+-[a-z2-7]{16}@localhost",
                        offer.reply_to)
    assert ANSWER_DRAW in flat(offer.body) and MOVE_LINE not in flat(offer.body)
    assert offer.html_body is not None and ANSWER_DRAW in flat(offer.html_body)
    # alice is still to move: her own reply carries the address for her move
    assert MOVE_LINE in flat(out[0].body) and out[0].reply_to is not None
    # bob's reply, as his mail program wrote it: the comment is his own words only
    out = bob_reply(mailer, offer.reply_to, "accept", "Fair enough, a draw it is.\n")
    assert out[0].to_addr == "bob@example.org"
    assert out[0].body.startswith("> (your reply) accept\nYou accepted the offer to end "
                                  "Honey Donuts board 101: the game is over.\n")
    assert out[0].reply_to is None  # the game is over: nothing to answer
    to_alice = to(out, "alice@example.org")
    assert "bob writes:\n  Fair enough, a draw it is.\n" in to_alice.body
    assert "Summary of Honey Donuts Board 101\n> " not in to_alice.body
    assert "Bob\n" not in to_alice.body.split("bob writes:")[1]
    assert ply_and_request(db) == (0, None, True)
    # the same reply again: the game is over, and the reply says so
    again = bob_reply(mailer, offer.reply_to, "accept")
    assert again[0].body.startswith("> (your reply) accept\n"
                                    "ERROR: Honey Donuts board 101 is over\n")


def test_reject_and_decline_by_reply_then_the_address_is_stale(mailer: Mailer,
                                                               db: Database) -> None:
    start(mailer)
    offer = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    out = bob_reply(mailer, offer.reply_to, "decline", "Not yet!\n")
    assert out[0].body.startswith("> (your reply) decline\n"
                                  "You said no on Honey Donuts board 101; play goes on as "
                                  "before.\n")
    assert "bob rejected your offer to end the game by agreement; play goes on." in flat(
        to(out, "alice@example.org").body)
    assert ply_and_request(db) == (0, None, False)
    stale = bob_reply(mailer, offer.reply_to, "reject")
    assert flat(stale[0].body).startswith(
        "> (your reply) reject ERROR: this reply address was for your answer to alice's "
        "offer to end the game by agreement on Honey Donuts board 101, and that is no "
        "longer open: it was answered, or it lapsed when a move was played. Nothing was "
        "changed; the board as it stands is below")
    assert "Summary of Honey Donuts Board 101" in stale[0].body
    # offered again at the same move: the old address does not answer the new offer
    again = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    assert again.reply_to != offer.reply_to
    assert "is no longer open" in flat(bob_reply(mailer, offer.reply_to, "accept")[0].body)
    assert ply_and_request(db) == (0, "draw", False)
    assert "You said no" in bob_reply(mailer, again.reply_to, "reject")[0].body


def test_a_move_through_an_answer_address_is_refused_while_it_is_not_ones_turn(
        mailer: Mailer, db: Database) -> None:
    start(mailer)
    offer = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    out = bob_reply(mailer, offer.reply_to, "e1-e2")
    assert flat(out[0].body).startswith(
        "> (your reply) e1-e2 ERROR: it is alice's turn, not yours, so e1-e2 cannot be "
        "played now; alice's offer to end the game by agreement waits for your answer: "
        "reply with accept or reject (a move of yours, when your turn comes, declines it)")
    out = bob_reply(mailer, offer.reply_to, "resign")
    assert "this reply address answers alice's offer to end the game by agreement: reply " \
        "with accept or reject; to resign, write the whole command" in flat(out[0].body)
    assert ply_and_request(db) == (0, "draw", False)


def test_an_offer_on_the_opponents_turn_is_answered_through_the_move_address(
        mailer: Mailer, db: Database) -> None:
    """alice offers while bob is to move: bob's address is his move's, and takes his
    answer, or a move, which declines the offer."""
    start(mailer)
    mailer.send(f"{ALICE} a1-a2")
    offer = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    assert MOVE_LINE in flat(offer.body) and ANSWER_DRAW not in flat(offer.body)
    out = bob_reply(mailer, offer.reply_to, "e1-e2", "Play on.\n")
    assert out[0].body.startswith("> (your reply) e1-e2\n"
                                  "Your move e1-e2 on Honey Donuts board 101 has been played.")
    assert "Your offer to end the game by agreement lapsed: bob played a move instead " \
        "of answering it." in flat(to(out, "alice@example.org").body)
    assert ply_and_request(db) == (2, None, False)


def test_an_undo_asked_on_ones_own_turn_is_granted_by_reply(mailer: Mailer,
                                                            db: Database) -> None:
    """alice moved, bob answered, and alice (to move) asks to take both back: bob is
    not to move, and his mail carries the address for his answer."""
    start(mailer)
    mailer.send(f"{ALICE} a1-a2")
    mailer.send(f"{BOB} e1-e2", sender="bob@example.org")
    request = to(mailer.send(f"{ALICE} undo", "Oops."), "bob@example.org")
    assert ANSWER_UNDO in flat(request.body)
    out = bob_reply(mailer, request.reply_to, "accept#3", "Go ahead.\n")
    assert out[0].body.startswith("> (your reply) accept#3\nYou accepted the request to "
                                  "take back a move on Honey Donuts board 101.\n")
    assert "bob writes:\n  Go ahead.\n" in to(out, "alice@example.org").body
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == []
    assert ply_and_request(db) == (0, None, False)


def test_an_undo_asked_on_the_opponents_turn_by_reply(mailer: Mailer, db: Database) -> None:
    start(mailer)
    mailer.send(f"{ALICE} a1-a2")
    request = to(mailer.send(f"{ALICE} undo"), "bob@example.org")
    assert MOVE_LINE in flat(request.body)  # bob is to move: his move's address
    out = bob_reply(mailer, request.reply_to, "reject")
    assert "You said no on Honey Donuts board 101; play goes on as before." in out[0].body
    assert ply_and_request(db) == (1, None, False)
    # asked again; granted through the address of the newest mail
    request = to(mailer.send(f"{ALICE} undo"), "bob@example.org")
    bob_reply(mailer, request.reply_to, "accept")
    assert ply_and_request(db) == (0, None, False)


def test_an_undo_that_lapsed_leaves_a_stale_address(mailer: Mailer, db: Database) -> None:
    """alice asks to take back her last move while it is her turn, then moves instead:
    the request lapses, and bob's address for answering it says so."""
    start(mailer)
    mailer.send(f"{ALICE} a1-a2")
    mailer.send(f"{BOB} e1-e2", sender="bob@example.org")
    request = to(mailer.send(f"{ALICE} undo"), "bob@example.org")
    assert request.reply_to is not None
    moves = mailer.send("honeydonuts moves 101", sender="alice@example.org")[0].body
    legal = next(w for w in moves.split() if "-" in w and w[0] in "abcde" and len(w) == 5)
    mailer.send(f"{ALICE} {legal}")
    out = bob_reply(mailer, request.reply_to, "accept")
    assert flat(out[0].body).startswith(
        "> (your reply) accept ERROR: this reply address was for your answer to alice's "
        "request to take back a move on Honey Donuts board 101, and that is no longer open")
    assert ply_and_request(db) == (3, None, False)


def test_an_address_the_board_moved_past_points_to_the_newest_mail(
        mailer: Mailer, db: Database) -> None:
    """A draw offer stands when its maker moves: bob's old address for answering it is
    void (the board changed under it), and the newest board mail's address takes it."""
    start(mailer)
    offer = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    newest = to(mailer.send(f"{ALICE} a1-a2"), "bob@example.org")
    out = bob_reply(mailer, offer.reply_to, "accept")
    assert "ERROR: the board has moved on since this reply address was made; alice's offer " \
        "to end the game by agreement is still open: answer it through the reply address " \
        "of the newest board mail, or with the whole command" in flat(out[0].body)
    assert ply_and_request(db) == (1, "draw", False)
    out = bob_reply(mailer, newest.reply_to, "accept")
    assert "You accepted the offer to end Honey Donuts board 101: the game is over." in \
        out[0].body
    assert ply_and_request(db) == (1, None, True)


def test_the_reply_to_the_answerers_own_command_carries_the_address(mailer: Mailer) -> None:
    start(mailer)
    mailer.send(f"{ALICE} propose")
    shown = mailer.send("honeydonuts show 101", sender="bob@example.org")[0]
    assert ANSWER_DRAW in flat(shown.body) and shown.reply_to is not None
    out = bob_reply(mailer, shown.reply_to, "accept")
    assert "You accepted the offer to end Honey Donuts board 101: the game is over." in \
        out[0].body


def test_a_changed_request_number_is_refused(mailer: Mailer, db: Database) -> None:
    start(mailer)
    offer = to(mailer.send(f"{ALICE} propose"), "bob@example.org")
    assert offer.reply_to is not None
    local, _, domain = offer.reply_to.partition("@")
    payload, _, mac = local.rpartition("-")
    head, _, number = payload.rpartition("r")
    forged = f"{head}r{int(number) + 1}-{mac}@{domain}"
    out = bob_reply(mailer, forged, "accept")
    assert "did not give out" in flat(out[0].body)
    assert ply_and_request(db) == (0, "draw", False)


def test_a_draw_accepted_by_reply_without_sub_addresses(db: Database,
                                                        settings: Settings) -> None:
    """``subaddressing = false``: the answer's token travels in the Reply-To's name and
    the Subject; a reply to the plain address that kept only the Subject answers."""
    mailer = Mailer(db, replace(settings, subaddressing=False))
    start(mailer)
    offer = to(mailer.send(f"{ALICE} propose", "Shall we call it a day?"), "bob@example.org")
    assert offer.reply_to is not None
    name, address = parseaddr(offer.reply_to)
    assert address == "pbmserv@localhost"
    assert re.fullmatch(r"pbmserv \[b[0-9]+u[0-9]+m1t0r[0-9]+-[a-z2-7]{16}\]", name)
    assert offer.subject.endswith(name.removeprefix("pbmserv "))
    out = mailer.send(f"Re: {offer.subject}", "accept\nFair enough.\n",
                      sender="bob@example.org", To="pbmserv@localhost")
    assert out[0].body.startswith("> (your reply) accept\nYou accepted the offer to end "
                                  "Honey Donuts board 101: the game is over.\n")
    assert ply_and_request(db)[2]
