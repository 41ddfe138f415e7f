"""Replies stay small and quote nothing they should not: strangers get a verb, never a
word of theirs; a word in a password's place is never echoed; lists come a page at a
time, repeated words once; no reply grows past its cap."""

from __future__ import annotations

from dataclasses import replace

from pbmserv.config import Settings
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.service.accounts import find_user
from pbmserv.service.games import GameService
from tests.conftest import Mailer

FOOTER = '\n--\npbmserv <pbmserv@localhost>: send "help" for the commands.\n'


def boards(db: Database, count: int, players: tuple[str, str] = ("alice", "bob")) -> None:
    """``count`` honeydonuts boards of the two players (numbered from 101)."""
    engine = get_engine("honeydonuts")
    assert engine is not None
    with db.transaction() as session:
        service = GameService(session)
        users = [find_user(session, userid) for userid in players]
        for _ in range(count):
            service.challenge(engine, users, [])  # type: ignore[arg-type]


def test_fifty_lines_of_spam_from_a_forged_sender_get_one_small_reply(
        mailer: Mailer) -> None:
    spam = "\n".join(f"http://spam.example/buy-now-{n} cheap pills, best prices"
                     for n in range(50))
    out = mailer.send("multiple", spam, sender="victim@example.net")
    assert len(out) == 1  # how to begin, once a day: none of its lines is a command
    assert out[0].body.startswith("I found no command in your mail.\n\npbmserv is a server")
    assert "spam" not in out[0].subject + out[0].body and len(out[0].body) < 800
    assert mailer.send("multiple", spam, sender="victim@example.net") == []
    # with a command among the lines, each line gets its answer (the spam said once;
    # a 'multiple' mail is read up to its 50th line)
    out = mailer.send("multiple", "help\n" + spam, sender="victim@example.net")
    assert len(out) == 1
    assert out[0].body.endswith(
        "> (a line that is not a command)\n"
        "ERROR: '...' is neither a command nor a game; send 'help' for the list\n"
        "\n\n"
        "(and 48 more lines of this mail refused in the same words)\n" + FOOTER)
    assert "spam" not in out[0].subject + out[0].body


def test_a_stranger_gets_the_verb_and_no_word_of_the_line(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    text = mailer.reply("honeydonuts move 101 alice visit-my-shop a1-b1",
                        sender="mallory@example.net")
    assert text == (
        "> honeydonuts move ...\n"
        "ERROR: the userid and password do not match (passwords are case-sensitive;\n"
        "the userid comes first, then the password)\n\n" + FOOTER)
    text = mailer.reply("honeydonuts show buy-cheap-pills-at-example-net",
                        sender="mallory@example.net")
    assert text == ("> honeydonuts show ...\n"
                    "ERROR: there is no user '...'; players sign up with 'signup'\n\n"
                    + FOOTER)


def test_extra_words_quote_the_verb_only(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "carol")
    mailer.reply("honeydonuts challenge alice bob")
    text = mailer.reply("honeydonuts moves 101 carol secret-c", sender="carol@example.org")
    assert text == ("> honeydonuts moves ...\nERROR: too many words after 'moves': it takes "
                    "at most 2, this has 3\n\n"
                    "Write it as: honeydonuts moves board [all]\n\n" + FOOTER)
    text = mailer.reply("list carol secret-c", sender="carol@example.org")
    assert text == (
        "> list ...\n"
        "ERROR: word 1 after 'list' is not a game; the games are amoeba, honeydonuts,\n"
        "hexamoeba, exnihilo\n\nWrite it as: list [game...] [before N]\n\n" + FOOTER)
    text = mailer.reply("list honeydonuts secret-c", sender="carol@example.org")
    assert "secret-c" not in text and "ERROR: word 2 after 'list' is not a game;" in text


def test_a_password_in_its_place_is_never_echoed(mailer: Mailer) -> None:
    mailer.signup("alice")
    text = mailer.reply('change password alice pw-alice new"quote')
    assert text.startswith("> change password alice ***** *****\nERROR: a password")
    text = mailer.reply("signup bob has'quote")
    assert text.startswith("> signup ...\nERROR: a password may not")
    assert "has'quote" not in text


def test_list_is_paged_by_board_number_and_folds_repeated_games(
        mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    boards(db, 60)  # boards 101 to 160
    text = mailer.reply("list honeydonuts honeydonuts HONEYDONUTS honeydonuts")
    lines = text.splitlines()
    assert text.count("Honey Donuts boards") == 1
    assert lines[1] == "Honey Donuts boards, the newest first:"
    assert lines[2].split()[:4] == ["160", "alice", "vs", "bob:"]
    assert lines[51].split()[0] == "111" and lines[52] == (
        "  (50 shown; the next 50: list honeydonuts before 111)")
    text = mailer.reply("list honeydonuts before 111")
    lines = text.splitlines()
    assert lines[1] == "Honey Donuts boards numbered below 111, the newest first:"
    assert [line.split()[0] for line in lines[2:12]] == [str(n) for n in range(110, 100, -1)]
    assert lines[12] == ""  # and no pointer to a next page: there is none
    assert "ERROR: 'before' takes a board number" in mailer.reply("list honeydonuts before x")


def test_a_reply_never_grows_past_its_cap(db: Database, settings: Settings) -> None:
    capped = replace(settings, max_reply_size=8192)
    mailer = Mailer(db, capped)
    mailer.signup("alice", "bob")
    text = mailer.reply("multiple", "\n".join(["help"] * 40))
    assert len(text.encode()) <= 8192
    assert 1 <= text.count("> help\npbmserv: board games by mail") < 40
    tail = " ".join(text.split()[-40:])
    assert ("of this mail are left out: a reply to one mail is at most 8 KB; those "
            "commands were read and carried out, or refused, all the same)") in tail
    # one long answer alone is cut, saying so
    long_names = ("a-player-with-a-long-userid-no-1", "a-player-with-a-long-userid-no-2")
    mailer.signup(*long_names)
    boards(db, 60, long_names)
    small = Mailer(db, replace(settings, max_reply_size=4096))
    text = small.reply("list honeydonuts")
    assert len(text.encode()) <= 4096
    assert "(the rest of this reply is left out: a reply to one mail is at most 4 KB)" in text


def test_a_players_boards_are_listed_fifty_at_most(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice", "bob")
    boards(db, 60)
    lines = mailer.reply("honeydonuts games alice all").splitlines()
    assert lines[1] == "Honey Donuts boards of alice (all):"
    numbers = [line.split()[0] for line in lines[2:52]]
    assert numbers == [str(n) for n in range(111, 161)]  # the newest fifty, in order
    note = " ".join(" ".join(lines[52:]).split(" --")[0].split())
    assert note == ("(the newest 50 are listed; the web page of alice has them all, a "
                    "page at a time)")
    next_lines = mailer.reply("honeydonuts games alice next").splitlines()
    assert len([line for line in next_lines if line.startswith("  1")]) == 50  # alice moves
    assert "none" in mailer.reply("honeydonuts games bob next")
