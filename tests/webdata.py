"""A database for the web tests, filled by mail."""

from __future__ import annotations

from tests.conftest import Mailer

ODD = "o.d+d-1"
COMMENT = '<script>alert("x")</script> & more'
HONEY_CELLS = 19


def fill(mailer: Mailer) -> None:
    """Four players, boards of three games (one finished and rated), an open
    challenge and a round robin tournament."""
    mailer.signup("alice", "bob", "carol")
    [reply] = mailer.send(f"signup {ODD} pw-odd-one", sender="odd@example.org")
    mailer.answer(reply)
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts move 101 alice pw-alice a1-b1", COMMENT)
    mailer.reply("honeydonuts move 101 bob pw-bob e3-d3", sender="bob@example.org")
    mailer.reply(f"amoeba challenge alice {ODD}")
    mailer.reply("amoeba move 101 alice pw-alice e4")
    mailer.reply(f"amoeba move 101 {ODD} pw-odd-one e6", sender="odd@example.org")
    mailer.reply("amoeba resign 101 alice pw-alice", "Well played.")
    mailer.reply("hexamoeba seek carol pw-carol --nagtime=3 --forfeittime=10",
                 sender="carol@example.org")
    mailer.reply("exnihilo challenge bob carol", sender="bob@example.org")
    mailer.reply("exnihilo move 101 bob pw-bob b2-b6", sender="bob@example.org")
    mailer.reply("tournament create cup honeydonuts alice pw-alice -roundrobin")
    mailer.reply("tournament join cup bob pw-bob", sender="bob@example.org")
    mailer.reply("tournament start cup alice pw-alice")
