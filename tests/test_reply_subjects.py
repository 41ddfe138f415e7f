"""What mail programs do to a command: Subject prefixes in many languages and tags that
lists and gateways put first are stripped, and a ``#n`` written apart from its move
("a3-a4 #11") is read wherever ``#n`` is."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from pbmserv.commands import is_command
from pbmserv.db.models import Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.mail.parse import parse_message
from tests.conftest import Mailer, make_mail


def answer(mailer: Mailer, subject: str, body: str = "",
           sender: str = "alice@example.org") -> OutboxMessage:
    """The one reply to the sender."""
    [reply] = [m for m in mailer.send(subject, body, sender=sender) if m.in_reply_to]
    return reply


PREFIXES = [
    "Re:", "RE: re:", "Fwd:", "FW:", "Fw:", "AW:", "WG:", "SV:", "VS:", "Antw:", "Doorst:",
    "Réf:", "Réf. :", "RÉF :", "TR :", "RV:", "R:", "I:", "RIF:", "Odp:", "PD:", "ENC:",
    "RES:", "YNT:", "VL:", "Vá:", "ΑΠ:", "ΣΧΕΤ:", "ΠΡΘ:", "Ответ:", "Отв:", "Пересл:",
    "回复:", "回复\uff1a", "答复:", "转发:", "回覆:", "轉寄:", "답장:", "회신:", "전달:", "返信:",
    "転送:", "Re[2]:", "Re(2):", "Re^3:", "RE [4]:", "[EXT] Re:", "[EXTERNAL] RE: Fwd:",
    "[games] Re: [EXT]", "Re: [games]", "AW: AW: WG:",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_prefixed_subjects_get_the_bare_commands_reply(mailer: Mailer, prefix: str) -> None:
    bare = answer(mailer, "list honeydonuts")
    prefixed = answer(mailer, f"{prefix} list honeydonuts")
    assert prefixed.subject == bare.subject == "pbmserv boards"
    assert prefixed.body == bare.body
    assert prefixed.body.startswith("> list honeydonuts\n")


@pytest.mark.parametrize(("subject", "read"), [
    ("Research: list", "Research: list"), ("Rebus: list", "Rebus: list"),
    ("Island: list", "Island: list"), ("Re list", "Re list"), ("Re:list [EXT]", "list [EXT]"),
])
def test_words_that_only_start_like_a_prefix_stay(subject: str, read: str) -> None:
    """Nothing but a whole prefix word and its colon is taken off (and a tag only
    before the command)."""
    mail = parse_message(make_mail(subject), ("pbmserv@localhost",), "alice@example.org",
                         is_command)
    assert mail.subject == read and mail.commands == [read]


def board(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")


@pytest.mark.parametrize("written", ["a1-a2 #1", "a1-a2 # 1", "a1-a2  #1"])
def test_a_move_number_written_apart(mailer: Mailer, db: Database, written: str) -> None:
    board(mailer)
    reply = answer(mailer, f"honeydonuts move 101 alice pw-alice {written}")
    assert reply.body.startswith("> honeydonuts move 101 alice ***** a1-a2#1\n"
                                 "Your move a1-a2 on Honey Donuts board 101 has been played.")
    # a wrong number written apart is refused as the same number written joined is
    late = answer(mailer, "honeydonuts move 101 bob pw-bob e1-e2 #1", sender="bob@example.org")
    joined = answer(mailer, "honeydonuts move 101 bob pw-bob e1-e2#1", sender="bob@example.org")
    assert late.body == joined.body
    assert "this would be move 2 of board 101, not move 1; your mail may be old or sent " \
        "twice" in " ".join(late.body.split())
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == ["a1-a2"]


def test_move_words_and_show_take_a_number_apart(mailer: Mailer) -> None:
    board(mailer)
    mailer.send("honeydonuts move 101 alice pw-alice a1-a2")
    apart = answer(mailer, "honeydonuts show 101 #1")
    joined = answer(mailer, "honeydonuts show 101#1")
    assert apart.body == joined.body and apart.subject == joined.subject
    offer = answer(mailer, "honeydonuts move 101 bob pw-bob propose #2",
                   sender="bob@example.org")
    assert offer.body.startswith("> honeydonuts move 101 bob ***** propose#2\n"
                                 "You have offered to end Honey Donuts board 101")


def test_a_number_apart_is_not_glued_where_none_is_taken(mailer: Mailer) -> None:
    """Only the move (and show's board) take a number: elsewhere the words stay as
    written, so a password is never joined to the word after it."""
    board(mailer)
    reply = answer(mailer, "honeydonuts move 101 alice pw-alice #1 a1-a2")
    assert "a move is one word, and nothing may follow it" in reply.body
    assert "pw-alice" not in reply.body


@pytest.mark.parametrize(("first_line", "subject"), [
    ("a1-a2 #1", "Re: New Honey Donuts Board 101 alice"),
    ("a1-a2 # 1", "Re: New Honey Donuts Board 101 alice"),
    ("", "Re: a1-a2 #1"),
    ("", "[EXT] Réf : a1-a2 #1"),
])
def test_a_reply_move_with_its_number_apart(mailer: Mailer, db: Database, first_line: str,
                                            subject: str) -> None:
    board(mailer)
    with db.transaction() as s:
        to_alice = s.scalar(select(OutboxMessage).where(
            OutboxMessage.to_addr == "alice@example.org", OutboxMessage.reply_to.is_not(None)))
        assert to_alice is not None and to_alice.reply_to is not None
        address = to_alice.reply_to
    out = mailer.send(subject, f"{first_line}\nGood luck!\n", To=address)
    reply = out[0]
    assert reply.body.startswith("> (your reply) a1-a2#1\n"
                                 "Your move a1-a2 on Honey Donuts board 101 has been played.")
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert "alice writes:\n  Good luck!" in to_bob.body
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == ["a1-a2"]
