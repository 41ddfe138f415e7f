"""A player's mail that came through a mailing list (List-Id, List-Post,
List-Unsubscribe, Precedence: list): RFC 3834 forbids answering it, not acting on it.
What proves to be an account's (its password, a reply address) is carried out and
answered to that account's own address alone; nothing else of it is carried out, and
a list's mail that proves nothing gets no answer at all.  Every mail goes through the
real store and processor; the assertions are on the board, the outbox and the kept
reason."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, InboundMessage, Move, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.mail.parse import parse_message
from tests.conftest import Mailer, make_mail

LIST = "games@lists.example.org"
#: what a list (Mailman, Sympa, a Debian list) adds to the mail it passes on
LISTED = {"List-Id": "Board games <games.lists.example.org>",
          "List-Post": f"<mailto:{LIST}>",
          "List-Unsubscribe": "<mailto:games-leave@lists.example.org>",
          "Precedence": "list"}
PLAYED = "Your move a1-a2 on Honey Donuts board 101 has been played."


def start(mailer: Mailer) -> str:
    """A board between alice and bob, alice to move; her board mail's reply address."""
    mailer.signup("alice", "bob")
    out = mailer.send("honeydonuts challenge alice bob", sender="carol@example.org")
    [mail] = [m for m in out if m.to_addr == "alice@example.org"]
    assert mail.reply_to is not None
    return mail.reply_to


def plies(db: Database) -> int:
    with db.transaction() as s:
        ply = s.scalar(select(Board.ply))
        assert ply is not None
        return ply


def kept_reason(db: Database) -> str | None:
    with db.transaction() as s:
        return s.scalar(select(InboundMessage.error).order_by(InboundMessage.id.desc())
                        .limit(1))


@pytest.mark.parametrize("mark", ["List-Id", "List-Post", "List-Unsubscribe", "Precedence"])
def test_every_list_mark_is_read_as_a_list(mark: str) -> None:
    mail = parse_message(make_mail("honeydonuts move 101 alice pw-alice a1-a2",
                                   **{mark: LISTED[mark]}), ("pbmserv@localhost",),
                         "alice@example.org", lambda line: line.startswith("honeydonuts"))
    shown = "Precedence: list" if mark == "Precedence" else mark
    assert (mail.via_list, mail.silent_reason) == (
        shown, f"mail through a mailing list ({shown})")
    assert mail.commands == ["honeydonuts move 101 alice pw-alice a1-a2"]


def test_a_move_with_its_password_is_played_and_answered_to_the_player_alone(
        mailer: Mailer, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    start(mailer)
    with caplog.at_level(logging.INFO, logger="pbmserv"):
        out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2", "Good luck!",
                          **LISTED)
    assert plies(db) == 1
    assert {m.to_addr for m in out} == {"alice@example.org", "bob@example.org"}
    [reply] = [m for m in out if m.to_addr == "alice@example.org"]
    assert PLAYED in reply.body
    assert ("Your mail came through a mailing list (List-Id): this answer goes to your\n"
            "own address alone, never to the list. Your password was in that mail, so\n"
            "everyone on the list, and the list's archive, may have it: change it now\n"
            "with \"change password <userid> <old> <new>\", sent to pbmserv@localhost\n"
            "directly.\n") in reply.body
    assert "pw-alice" not in reply.body
    [to_bob] = [m for m in out if m.to_addr == "bob@example.org"]
    assert "Good luck!" in to_bob.body
    assert kept_reason(db) == ("mail through a mailing list (List-Id); carried out as "
                               "alice@example.org's, answered to that address alone")
    with db.transaction() as s:
        inbound = s.scalar(select(InboundMessage.id).order_by(InboundMessage.id.desc())
                           .limit(1))
    assert (f"message {inbound} from alice@example.org: honeydonuts move; 2 mail(s) queued; "
            "it came through a mailing list (List-Id): answered to the account's address "
            "alone") in caplog.messages


def test_a_reply_by_reply_address_through_a_list(mailer: Mailer, db: Database) -> None:
    """A Mutt reply to the board mail, copied to a list and come back through it: the
    reply address proves the player; no password, so no warning about one."""
    to = start(mailer)
    out = mailer.send("Re: New Honey Donuts Board 101 alice", "a1-a2\nYour turn.\n",
                      To=to, Cc=LIST, **{"List-Id": "<games.lists.example.org>",
                                         "Precedence": "list"})
    assert plies(db) == 1
    [reply] = [m for m in out if m.to_addr == "alice@example.org"]
    assert PLAYED in reply.body
    assert "came through a mailing list (List-Id): this answer goes to your" in reply.body
    assert "password" not in reply.body.split("never to the list.")[1].split("--")[0]
    assert LIST not in {m.to_addr for m in out}
    with db.transaction() as s:
        assert s.scalar(select(Move.comment)) == "Your turn."


def test_a_list_that_rewrites_the_from_gets_nothing(mailer: Mailer, db: Database) -> None:
    """A list that puts its own address in the From (DMARC's "munge from") and the
    writer in Reply-To: the answer goes to the account's address, not the list's, not
    the Reply-To's."""
    start(mailer)
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2", "",
                      sender=LIST, **{"Reply-To": "Alice <alice@elsewhere.example.net>"},
                      **LISTED)
    assert plies(db) == 1
    [reply] = [m for m in out if m.in_reply_to]
    assert reply.to_addr == "alice@example.org" and PLAYED in reply.body
    assert not {LIST, "alice@elsewhere.example.net"} & {m.to_addr for m in out}


def test_lines_that_prove_nothing_are_not_carried_out(mailer: Mailer, db: Database) -> None:
    """Several lines: the move (with its password) is played; a signup and a help
    (which need none) are undone and said so, in the one reply to alice."""
    start(mailer)
    out = mailer.send("multiple", "signup carol pw-carol-long\nhelp\n"
                      "honeydonuts move 101 alice pw-alice a1-a2\n", **LISTED)
    assert plies(db) == 1
    with db.transaction() as s:
        assert s.scalar(select(User).where(User.userid == "carol")) is None
    [reply] = out[:1]
    assert reply.to_addr == "alice@example.org"
    assert [m.to_addr for m in out] == ["alice@example.org", "bob@example.org"]
    assert reply.subject == "pbmserv: 3 commands, 2 refused"
    assert reply.body.count("Not carried out: your mail came through a mailing list") == 2
    assert PLAYED in reply.body


@pytest.mark.parametrize(("subject", "body", "why"), [
    ("help", "", "no line of it proved its account (a right password, or a reply "
     "address), nothing carried out, not answered"),
    ("honeydonuts move 101 alice wrong-password a1-a2", "",
     "no line of it proved its account (a right password, or a reply address), "
     "nothing carried out, not answered"),
    ("Re: New Honey Donuts Board 101 alice", "Nice game so far.\n",
     "no line of it proved its account (a right password, or a reply address), "
     "nothing carried out, not answered"),
    ("What a game!", "Have you seen board 101?\n",
     "no command in it, nothing carried out, not answered"),
])
def test_a_list_mail_that_proves_nothing_is_neither_run_nor_answered(
        mailer: Mailer, db: Database, subject: str, body: str, why: str) -> None:
    start(mailer)
    with db.transaction() as s:
        before = s.query(OutboxMessage).count()
    assert mailer.send(subject, body, **LISTED) == []
    assert plies(db) == 0
    assert kept_reason(db) == f"mail through a mailing list (List-Id); {why}"
    with db.transaction() as s:
        assert s.query(OutboxMessage).count() == before


def test_a_stale_reply_address_through_a_list_is_not_answered(mailer: Mailer,
                                                              db: Database) -> None:
    """The same reply twice (the player's copy, then the list's): the second proves
    nothing (its address was used), so it is not answered."""
    to = start(mailer)
    mailer.send("Re: Board 101", "a1-a2\n", To=to)
    assert plies(db) == 1
    assert mailer.send("Re: Board 101", "a1-a2\n", To=to, **LISTED) == []
    assert plies(db) == 1


def lines_through_a_list(db: Database, settings: Settings) -> None:
    """The mixed list mail above, on any database: the move played, the signup and the
    help undone in their savepoints, one reply to the account."""
    mailer = Mailer(db, settings)
    start(mailer)
    out = mailer.send("multiple", "signup carol pw-carol-long\nhelp\n"
                      "honeydonuts move 101 alice pw-alice a1-a2\n", **LISTED)
    assert plies(db) == 1
    assert [m.to_addr for m in out] == ["alice@example.org", "bob@example.org"]
    with db.transaction() as s:
        assert s.scalar(select(User).where(User.userid == "carol")) is None
    assert mailer.send("honeydonuts move 101 bob wrong-password b1-b2", **LISTED) == []
    assert plies(db) == 1


@pytest.mark.postgres
def test_lines_through_a_list_on_postgres(pg_url: str, tmp_path: Path) -> None:
    db = Database(pg_url)
    try:
        lines_through_a_list(db, Settings(database_url=pg_url, maildir=tmp_path / "mail"))
    finally:
        db.dispose()
