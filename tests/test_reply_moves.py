"""Moves by reply: a board mail carries a signed Reply-To address good for one move of
one player; a reply whose first line is a move plays it, without userid or password."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from dataclasses import replace
from email import message_from_bytes, policy
from email.utils import parseaddr

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.sender.message import message_bytes
from pbmserv.server import Server
from pbmserv.service import reply_tokens
from tests.conftest import Mailer, free_port, make_mail

REPLY_LINE = "Or simply reply to this mail with just your move on the first line"


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer) -> OutboxMessage:
    """A board between alice and bob; the board mail that asks alice to move."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")
    [mail] = [m for m in out if m.to_addr == "alice@example.org"]
    return mail


def reply(mailer: Mailer, to: str, first_line: str, rest: str = "",
          sender: str = "alice@example.org",
          subject: str = "Re: New Honey Donuts Board 101 alice") -> list[OutboxMessage]:
    body = f"{first_line}\n{rest}\nOn Sunday, pbmserv wrote:\n> Summary of Honey Donuts...\n" \
           "-- \nAlice's signature\n"
    return mailer.send(subject, body, sender=sender, To=to)


def test_board_mail_asks_for_a_reply_move(mailer: Mailer) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    local, _, domain = mail.reply_to.partition("@")
    assert domain == "localhost" and local.startswith("pbmserv+b")
    assert REPLY_LINE in flat(mail.body) and "written like a1-a2" in flat(mail.body)
    with mailer.db.transaction() as s:
        bob_mail = s.scalar(select(OutboxMessage).where(
            OutboxMessage.to_addr == "bob@example.org", OutboxMessage.subject.like("New %")))
    assert bob_mail is not None and bob_mail.reply_to is None  # not bob's move
    assert REPLY_LINE not in flat(bob_mail.body)


def test_a_reply_plays_the_move_with_its_comment(mailer: Mailer, db: Database) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    out = reply(mailer, mail.reply_to, "a1-a2", "Good luck!\n")
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body
    assert out[0].body.startswith("> (your reply) a1-a2")
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert "alice writes:\n  Good luck!" in to_bob.body
    assert "signature" not in to_bob.body and "Summary of Honey Donuts...\n" not in to_bob.body
    assert to_bob.reply_to is not None and to_bob.reply_to != mail.reply_to
    # the same reply again (a mail sent twice) is refused like a wrong #n
    again = reply(mailer, mail.reply_to, "a1-b1")
    assert "this would be move 2 of board 101, not move 1" in flat(again[0].body)
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == ["a1-a2"]
    # bob answers through his own address, with the move in the Subject
    out = mailer.send("Re: e1-e2", "", sender="bob@example.org", To=to_bob.reply_to)
    assert "Your move e1-e2" in out[0].body


@pytest.mark.parametrize("attribution", [
    "On Sun, 22 Nov 2026 at 18:02, pbmserv <pbmserv+x@localhost> wrote:",
    "On Sun, 22 Nov 2026 at 18:02, pbmserv\n<pbmserv+x@localhost> wrote:",  # wrapped
    "Am 22.11.2026 um 18:02 schrieb pbmserv:",
])
def test_a_reply_written_below_the_quote(mailer: Mailer, db: Database,
                                         attribution: str) -> None:
    """Bottom posting (Thunderbird's and many a list reader's habit): the client's
    attribution line, the quoted board mail, then the move and a comment."""
    mail = start(mailer)
    assert mail.reply_to is not None
    body = (f"{attribution}\n> Summary of Honey Donuts Board 101\n> Red: alice\n\n"
            "a1-a2\n\nYour turn!\n-- \nAlice\n")
    out = mailer.send("Re: New Honey Donuts Board 101 alice", body, To=mail.reply_to)
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert "alice writes:\n  Your turn!" in to_bob.body and "Alice\n" not in to_bob.body
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation))) == ["a1-a2"]


def test_a_move_right_above_the_attribution(mailer: Mailer, db: Database) -> None:
    """Top posting with no blank line: the move is not taken for the first line of a
    wrapped attribution."""
    mail = start(mailer)
    assert mail.reply_to is not None
    out = mailer.send("Re: New Honey Donuts Board 101 alice",
                      "a1-a2\nOn Sunday, pbmserv wrote:\n> Summary of Honey Donuts\n",
                      To=mail.reply_to)
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body


def test_a_line_that_only_looks_like_an_attribution_is_no_move(mailer: Mailer) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    # a "wrote:" line with no quote below is the player's own first line, not an
    # attribution to pass over: the move must be the first line, so nothing is played
    out = mailer.send("Re: New Honey Donuts Board 101 alice", "As I wrote:\na1-a2\n",
                      To=mail.reply_to)
    assert "has been played" not in out[0].body


def test_a_reply_address_without_a_move_is_told_the_move_will_do(mailer: Mailer) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    out = mailer.send("Re: New Honey Donuts Board 101 alice", "Which move was that?\n",
                      To=mail.reply_to)
    text = flat(out[0].body)
    assert "your move alone will do: reply again with just the move (written like a1-a2)" in text
    plain = flat(mailer.send("Re: New Honey Donuts Board 101 alice",
                             "Which move was that?\n")[0].body)
    assert "your move alone will do" not in plain
    assert "To move, write the command on the first line of the body" in plain


def test_an_address_from_before_the_takeback_count_is_still_good(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """Board mails sent before the upgrade carry b..u..m..-MAC, without the t part."""
    mail = start(mailer)
    assert mail.reply_to is not None
    local, _, domain = mail.reply_to.partition("@")
    payload = local.split("+", 1)[1].rpartition("-")[0].rsplit("t", 1)[0]
    with db.transaction() as s:
        secret = reply_tokens.server_secret(s, settings.secret)
    old = f"pbmserv+{payload}-{reply_tokens._mac(secret, payload)}@{domain}"
    out = reply(mailer, old, "a1-a2")
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body


def test_a_forged_or_foreign_address_is_refused(mailer: Mailer, db: Database) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    local, _, domain = mail.reply_to.partition("@")
    forged = local.replace("m1t0-", "m2t0-") + "@" + domain
    out = reply(mailer, forged, "a1-a2")
    assert "did not give out" in flat(out[0].body)
    other = reply(mailer, "pbmserv+b1u1m1t0-aaaaaaaaaaaaaaaa@localhost", "a1-a2")
    assert "did not give out" in flat(other[0].body)
    with db.transaction() as s:
        assert s.scalar(select(Board.ply)) == 0


def test_an_undo_voids_the_addresses_made_before_it(mailer: Mailer, db: Database) -> None:
    """alice's address for move 3; bob's move 2 is taken back and played again: move 3
    is asked again, and the old address (made before the undo) does not play it."""
    first = start(mailer)
    assert first.reply_to is not None
    reply(mailer, first.reply_to, "a1-a2")
    out = mailer.send("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    [old] = [m for m in out if m.to_addr == "alice@example.org"]
    assert old.reply_to is not None
    mailer.send("honeydonuts move 101 bob pw-bob undo", sender="bob@example.org")
    mailer.send("honeydonuts move 101 alice pw-alice accept")
    mailer.send("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    refused = reply(mailer, old.reply_to, "a2-b1")
    assert "a move was taken back on board 101 since this reply address was made" in flat(
        refused[0].body)
    with db.transaction() as s:
        assert s.scalar(select(Board.ply)) == 2


def test_move_words_and_whole_commands_by_reply(mailer: Mailer, db: Database) -> None:
    mail = start(mailer)
    assert mail.reply_to is not None
    illegal = reply(mailer, mail.reply_to, "a1-a9")
    assert "a1-a9 is not possible here" in flat(illegal[0].body)
    assert "Summary of Honey Donuts Board 101" in illegal[0].body  # the board comes along
    # a whole command on the first line is run as a command, address or not
    whole = reply(mailer, mail.reply_to, "honeydonuts moves 101")
    assert "12 legal moves" in whole[0].body
    out = reply(mailer, mail.reply_to, "resign", "I give up.\n")
    assert "You resigned Honey Donuts board 101: the game is over." in out[0].body
    with db.transaction() as s:
        board = s.scalar(select(Board))
        assert board is not None and board.finished and board.winner == 1


@pytest.fixture
def server(db: Database, settings: Settings) -> Iterator[Server]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2)
    srv.start()
    yield srv
    srv.stop()


def test_the_listener_takes_our_plus_addresses_only(server: Server) -> None:
    address = (server.controller.hostname, server.controller.port)
    with smtplib.SMTP(*address) as client:
        client.ehlo()
        client.mail("alice@example.org")
        assert client.rcpt("pbmserv+b101u1m1-abc@localhost")[0] == 250
        assert client.rcpt("pbmserv+x@elsewhere.org")[0] == 550
        assert client.rcpt("other+x@localhost")[0] == 550
        assert client.data(make_mail("help"))[0] == 250


def test_a_whole_game_by_replies(mailer: Mailer) -> None:
    mail = start(mailer)
    players = {"alice": "bob", "bob": "alice"}
    mover = "alice"
    for move in ("a1-b1", "c5-d4", "b1-c2"):
        assert mail.reply_to is not None
        out = reply(mailer, mail.reply_to, move, f"{mover} plays {move}\n",
                    sender=f"{mover}@example.org", subject=f"Re: {mail.subject}")
        assert f"Your move {move} on Honey Donuts board 101 has been played." in out[0].body
        other = players[mover]
        [mail] = [m for m in out if m.to_addr == f"{other}@example.org"]
        assert f"{mover} writes:\n  {mover} plays {move}" in mail.body
        mover = other
    assert mail.subject == "Honey Donuts Board 101 Game over **"
    assert "Game won by alice (Red): Blue's King was pushed off the board." in flat(mail.body)
    assert mail.reply_to is None  # nothing more to move


@pytest.fixture
def plain_mailer(db: Database, settings: Settings) -> Mailer:
    """The server of a mailbox without sub-addresses (``subaddressing = false``)."""
    return Mailer(db, replace(settings, subaddressing=False))


def test_without_sub_addresses_the_tag_travels_in_the_name_and_the_subject(
        plain_mailer: Mailer, db: Database) -> None:
    mail = start(plain_mailer)
    assert mail.reply_to is not None
    name, address = parseaddr(mail.reply_to)
    assert address == "pbmserv@localhost"  # the plain address: the mailbox gets it
    tag = name.removeprefix("pbmserv [").removesuffix("]")
    assert name == f"pbmserv [{tag}]" and tag.startswith("b") and "-" in tag
    assert mail.subject == f"New Honey Donuts Board 101 alice [{tag}]"
    built = message_from_bytes(message_bytes(plain_mailer.settings, mail), policy=policy.default)
    assert parseaddr(str(built["Reply-To"])) == (name, address)
    # a client that keeps the name: the To of the reply is the Reply-To as it was
    out = plain_mailer.send(f"Re: {mail.subject}", "a1-a2\nGood luck!\n", To=mail.reply_to)
    assert "Your move a1-a2 on Honey Donuts board 101 has been played." in out[0].body
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert to_bob.reply_to is not None and to_bob.subject.endswith("]")
    # a client that drops the name: the Subject still carries the tag
    out = plain_mailer.send(f"Re: {to_bob.subject}", "e1-e2\n", sender="bob@example.org",
                            To="pbmserv@localhost")
    assert "Your move e1-e2 on Honey Donuts board 101 has been played." in out[0].body
    with db.transaction() as s:
        assert list(s.scalars(select(Move.notation).order_by(Move.id))) == ["a1-a2", "e1-e2"]


def test_a_reply_with_the_tag_but_no_move_gets_the_board_and_how_to_move(
        plain_mailer: Mailer) -> None:
    """The Subject with its [TAG] still reads as that of the board mail: no command."""
    mail = start(plain_mailer)
    out = plain_mailer.send(f"Re: {mail.subject}", "", To="pbmserv@localhost")
    assert out[0].subject.startswith("Honey Donuts Board 101: how to move [b")


def test_a_forged_tag_in_brackets_is_refused(plain_mailer: Mailer, db: Database) -> None:
    mail = start(plain_mailer)
    forged = "b1u1m1t0-aaaaaaaaaaaaaaaa"
    out = plain_mailer.send(f"Re: Honey Donuts Board 101 [{forged}]", "a1-a2\n",
                            To="pbmserv@localhost")
    assert moves(db) == []
    assert out[0].body.startswith(
        "> (your reply) a1-a2\nERROR: this mail went to a reply address the server did not "
        "give out (or one\nthat was changed)")
    assert mail.reply_to is not None


def moves(db: Database) -> list[Move]:
    with db.transaction() as s:
        return list(s.scalars(select(Move)))
