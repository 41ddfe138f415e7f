"""What a new player reads when they slip: every wording checked exactly (issue 24)."""

from __future__ import annotations

import random
import textwrap
from datetime import timedelta

from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.render import wrap
from pbmserv.spelling import closest, distance
from pbmserv.timers import run_digests
from tests.conftest import Mailer
from tests.test_clocks import when
from tests.test_digest import digest_due, last_id, new_mails

FOOTER = '\n\n--\npbmserv <pbmserv@localhost>: send "help" for the commands.\n'


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer, game: str = "honeydonuts") -> None:
    mailer.signup("alice", "bob")
    mailer.reply(f"{game} challenge alice bob")


# -- spelling ----------------------------------------------------------------------------
def test_edit_distance_and_the_closest_word() -> None:
    assert distance("mvoe", "move") == 1  # two neighbours swapped: one slip
    assert distance("amoebe", "amoeba") == 1
    assert distance("kitten", "sitting") == 3
    assert distance("", "abc") == 3
    assert closest("mvoe", ["moves", "move", "show"]) == "move"
    assert closest("AMOEBE", ["amoeba", "hexamoeba"]) == "amoeba"
    assert closest("honeydonut", ["honeydonuts", "hexamoeba"]) == "honeydonuts"
    assert closest("xyzzy", ["move", "show"]) is None
    assert closest("move", ["move"]) is None  # nothing to correct
    assert closest("ab", ["cd"]) is None  # two slips in a short word: a different word


def test_a_bounded_distance_is_the_distance_up_to_its_bound() -> None:
    """distance(a, b, limit) works out only the cells near the diagonal and stops
    early: it must give the full distance when that is within the limit, and
    limit + 1 otherwise."""
    rng = random.Random(34)
    for _ in range(3000):
        a = "".join(rng.choice("abc") for _ in range(rng.randint(0, 7)))
        b = "".join(rng.choice("abc") for _ in range(rng.randint(0, 7)))
        full = distance(a, b)
        for limit in range(4):
            assert distance(a, b, limit) == min(full, limit + 1), (a, b, limit)
    assert distance("ab" * 16, "ba" * 16, 1) == 2 and distance("ab" * 16, "ba" * 16, 2) == 2
    assert distance("a" * 32, "b" * 32, 2) == 3 and distance("a" * 32, "b" * 32) == 32


def test_did_you_mean_a_verb_a_game_and_a_userid(mailer: Mailer) -> None:
    start(mailer)
    assert mailer.reply("honeydonuts mvoe 101 alice pw-alice a1-b1") == (
        "> honeydonuts ...\n"
        "ERROR: honeydonuts has no command 'mvoe' (did you mean 'honeydonuts move'?);\n"
        "its commands are: help, challenge, move, resign, decline, queue, seek, join,\n"
        "unseek, accept, reject, limit, ratings, standings, history, record,\n"
        "subscribe, unsubscribe, notify, chat, show, games, preview, moves\n" + FOOTER)
    assert mailer.reply("amoebe challenge alice bob") == (
        "> amoebe ...\n"
        "ERROR: 'amoebe' is neither a command nor a game (did you mean 'amoeba'?);\n"
        "send 'help' for the list\n" + FOOTER)
    assert mailer.reply("mvoe 101 alice pw-alice a1-b1") == (
        "> mvoe ...\n"
        "ERROR: 'mvoe' is neither a command nor a game (did you mean '<game> move'? a\n"
        "game's commands begin with its name, like 'amoeba move'); send 'help' for\n"
        "the list\n" + FOOTER)
    assert mailer.reply("amoeba challenge alice bobb") == (
        "> amoeba challenge alice bobb\n"
        "ERROR: there is no user 'bobb' (did you mean bob?); players sign up with\n"
        "'signup'\n" + FOOTER)
    # no guess when nothing is near
    assert "nor a game; send 'help'" in flat(mailer.reply("xyzzy"))


def test_a_missing_board_number_is_named(mailer: Mailer) -> None:
    start(mailer)
    assert mailer.reply("honeydonuts move alice pw-alice a1-b1") == (
        "> honeydonuts move ...\n"
        "ERROR: the board number is missing: it comes right after 'move', like\n"
        "'honeydonuts move 101 ...'; 'honeydonuts games <userid>' lists your boards\n"
        "\n"
        "Write it as: honeydonuts move board userid password move[#n]\n" + FOOTER)
    assert "the board number is missing: it comes right after 'resign'" in flat(
        mailer.reply("honeydonuts resign alice pw-alice"))


def test_a_move_with_words_after_it_says_where_the_comment_goes(mailer: Mailer,
                                                                  db: Database) -> None:
    start(mailer)
    reply = mailer.reply("honeydonuts move 101 alice pw-alice a1-b1 please")
    assert reply == (
        "> honeydonuts move ...\n"
        "ERROR: a move is one word, and nothing may follow it on the command line; a\n"
        "comment for your opponent goes in the body of the mail, under the command\n"
        "\n"
        "Write it as: honeydonuts move board userid password move[#n]\n" + FOOTER)
    # written out of order, the password is not echoed either
    reply = mailer.reply("honeydonuts move 101 alice a1-b1 pw-alice now")
    assert "pw-alice" not in reply and "a comment for your opponent goes in the body" in flat(
        reply)
    with db.transaction() as s:
        assert not any("pw-alice" in m.body for m in s.scalars(select(OutboxMessage)))


def test_out_of_turn_with_a_move_number_says_whose_turn_it_is(mailer: Mailer) -> None:
    start(mailer)
    reply = mailer.reply("honeydonuts move 101 bob pw-bob e3-d3#2", sender="bob@example.org")
    assert reply.startswith("> honeydonuts move 101 bob ***** e3-d3#2\n"
                            "ERROR: it is alice's turn, not yours\n")
    # an old or repeated mail is still told so
    mailer.reply("honeydonuts move 101 alice pw-alice a1-b1#1")
    reply = mailer.reply("honeydonuts move 101 alice pw-alice a1-b1#1")
    assert reply.startswith(
        "> honeydonuts move 101 alice ***** a1-b1#1\n"
        "ERROR: this would be move 2 of board 101, not move 1; your mail may be old\n"
        "or sent twice\n")


def test_a_hexamoeba_offer_warns_that_agreement_counts_stacks(mailer: Mailer) -> None:
    start(mailer, "hexamoeba")
    mailer.reply("hexamoeba move 101 alice pw-alice c2-d2#1")
    mailer.reply("hexamoeba move 101 bob pw-bob e2-d2#2", sender="bob@example.org")
    out = mailer.send("hexamoeba move 101 alice pw-alice propose")
    assert out[0].body.startswith(
        "> hexamoeba move 101 alice ***** propose\n"
        "You have offered to end Hexamoeba board 101 by agreement. Mind that\n"
        "Hexamoeba scores an agreed end by the rules, not as a draw: as the board\n"
        "stands, White controls 10 stacks, Black 11: bob would win. Your opponent may\n"
        "answer with the move \"accept\" or \"reject\"; a move of theirs declines it.\n")
    told = flat(out[1].body)
    assert ("It is alice's turn (White), move 3. Open offer: alice offers to end the game "
            "by agreement, scored by the rules as it stands (White controls 10 stacks, "
            "Black 11: bob would win). bob answers with the move \"accept\" or \"reject\".") \
        in told
    # Honey Donuts has plain draws: no warning
    mailer.reply("honeydonuts challenge alice bob")
    text = flat(mailer.reply("honeydonuts move 101 alice pw-alice propose"))
    assert "Mind that" not in text and "scored by the rules" not in text


# -- the digest -------------------------------------------------------------------------
def test_the_digest_tells_offers_answers_and_cleared_queues(mailer: Mailer, db: Database,
                                                            settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("notify alice pw-alice digest daily 7")
    mailer.reply("honeydonuts challenge bob alice", sender="bob@example.org")
    mailer.send("honeydonuts move 101 bob pw-bob a1-a2", sender="bob@example.org")
    mailer.send("honeydonuts move 101 alice pw-alice e3-d3")
    mailer.send("honeydonuts queue 101 alice pw-alice a1-b1 d1-d2")
    mailer.send("honeydonuts move 101 bob pw-bob propose", "Call it a day?",
                sender="bob@example.org")
    mailer.send("honeydonuts move 101 alice pw-alice reject", "Not yet.")
    mailer.send("honeydonuts move 101 bob pw-bob a3-a2", "Then this.", sender="bob@example.org")
    before = last_id(db)
    digest_due(db)
    assert run_digests(db, settings) == 1
    [mail] = new_mails(db, before)
    assert mail.subject == "pbmserv digest: 1 board waits for your move"
    with db.transaction() as s:
        started = s.scalar(select(Board.turn_started_at))
        assert started is not None
    # (the date's width varies: the line is filled as a mail's lines are)
    head = textwrap.fill("Honey Donuts board 101: your move, #4. Time runs out on "
                         f"{when(started + timedelta(days=21))} (in 21 days).", 76)
    assert mail.body.split("\n\nSummary of")[0] == (
        "Your digest, alice: 1 board waits for your move since the last digest.\n"
        "\n"
        "----------------------------------------------------------------------------\n"
        f"{head}\n"
        "Since the last digest:\n"
        "  bob played a1-a2\n"
        "  alice played e3-d3\n"
        "  bob has offered to end the game by agreement.\n"
        "    bob writes:\n"
        "      Call it a day?\n"
        "  You rejected bob's offer to end the game by agreement.\n"
        "    alice writes:\n"
        "      Not yet.\n"
        "  bob played a3-a2\n"
        "    bob writes:\n"
        "      Then this.\n"
        "  Your queued moves were cleared: your opponent played a3-a2, not a1-b1.")


def test_no_digest_when_nothing_waits_and_nothing_new(mailer: Mailer, db: Database,
                                                      settings: Settings) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("notify alice pw-alice digest daily 7")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.send("honeydonuts move 101 alice pw-alice a1-a2")  # now bob's move
    before = last_id(db)
    digest_due(db)
    run_digests(db, settings)
    assert new_mails(db, before) == []
    # alice resigns: she knows, her reply said so; nothing else happened
    mailer.reply("honeydonuts challenge bob alice", sender="bob@example.org")
    mailer.send("honeydonuts resign 102 alice pw-alice")
    before = last_id(db)
    digest_due(db)
    run_digests(db, settings)
    assert new_mails(db, before) == []
    # bob resigns: that is news, though no board waits for alice's move
    mailer.send("honeydonuts resign 101 bob pw-bob", "Well played.", sender="bob@example.org")
    before = last_id(db)
    digest_due(db)
    assert run_digests(db, settings) == 1
    [mail] = new_mails(db, before)
    assert mail.subject == "pbmserv digest: 1 game of yours ended"
    assert mail.body.startswith(
        "Your digest, alice: 1 game of yours ended, and no board waits for your move\n"
        "since the last digest.\n"
        "\n"
        "Ended: Honey Donuts board 101. Game won by alice (Red): bob resigned.\n"
        "Since the last digest:\n"
        "    bob writes:\n"
        "      Well played.\n")


# -- long URLs --------------------------------------------------------------------------
URL = "https://example.org/a/long/path/that/goes/on/and/on/for/ever/index.html?page=12345"


def test_a_long_url_is_never_cut_when_wrapping() -> None:
    assert len(URL) > 76
    assert wrap(f"See {URL} for the opening.") == f"See\n{URL}\nfor the opening."
    assert wrap(URL, 72, "  ") == f"  {URL}"
    # any other long word is still cut to fit
    assert wrap("x" * 100) == "x" * 76 + "\n" + "x" * 24
    assert wrap(f"{'y' * 80} {URL}") == f"{'y' * 76}\n{'y' * 4}\n{URL}"


def test_a_long_url_in_a_comment_reaches_the_opponent_whole(mailer: Mailer) -> None:
    start(mailer)
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2", f"Read {URL} first.")
    assert f"\n  {URL}\n" in out[1].body


# -- names and looks --------------------------------------------------------------------
def test_ex_nihilo_is_named_as_it_is_written(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send("exnihilo challenge alice bob -small")
    assert out[0].subject == "New Ex nihilo Board 101 alice"
    assert "Summary of Ex nihilo Board 101" in out[0].body
    assert "exnihilo      Ex nihilo, 1 board in play" in mailer.reply("list")
    # a reply to its board mail with the Subject left as it was is still understood
    reply = mailer.reply("Re: New Ex nihilo Board 101 alice", "hello")
    assert "This looks like a reply to a board mail of Ex nihilo board 101" in flat(reply)


def test_the_honey_donuts_legend_explains_an_empty_cell(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    legend = ("r R = Red piece, Red King   b B = Blue piece, Blue King\n"
              "o = white piece   # = the hole   (key at right: cell numbers in each row)\n")
    start_mail = mailer.reply("honeydonuts show 101")
    assert legend in start_mail and ". = an empty cell" not in start_mail
    # Blue's King is pushed off the board: its cell stays empty
    for uid, move in (("alice", "a1-b1"), ("bob", "c5-d4"), ("alice", "b1-c2")):
        text = mailer.reply(f"honeydonuts move 101 {uid} pw-{uid} {move}",
                            sender=f"{uid}@example.org")
    assert "ERROR" not in text, text
    assert legend + ". = an empty cell: a King pushed off the board does not come back in\n" \
        in text


def test_move_examples_are_legal_on_a_small_amoeba_board(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("amoeba challenge alice bob -small")
    shown = flat(mailer.reply("amoeba show 101"))
    assert "(written like d2-d3)" in shown and "e2-e4" not in shown
    bad = flat(mailer.reply("amoeba move 101 alice pw-alice e2-e4"))
    assert ("Amoeba moves are written like d2-d3 or c1-d3,b1-a1; \"amoeba moves 101\" lists "
            "every legal move.") in bad
    assert "ERROR" not in mailer.reply("amoeba move 101 alice pw-alice d2-d3")
    assert "ERROR" not in mailer.reply("amoeba move 101 bob pw-bob d6-d5",
                                       sender="bob@example.org")
    mailer.reply("amoeba challenge alice bob")
    assert "(written like e2-e4)" in flat(mailer.reply("amoeba show 102"))


def test_time_taken_names_only_those_who_moved(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    text = mailer.reply("honeydonuts move 101 alice pw-alice a1-a2")
    assert "\nTime taken: alice under a minute.\n" in text
    text = mailer.reply("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    assert "\nTime taken: alice under a minute, bob under a minute.\n" in text


def test_mail_for_watchers_and_notify_says_why_and_how_to_stop(mailer: Mailer) -> None:
    mailer.signup("alice", "bob", "carol", "dave")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol", sender="carol@example.org")
    mailer.reply("honeydonuts notify dave pw-dave on", sender="dave@example.org")
    out = mailer.send("honeydonuts resign 101 alice pw-alice")
    mails = {m.to_addr: m.body for m in out}
    assert mails["carol@example.org"].endswith(
        "\n\nYou get this mail because you watch Honey Donuts board 101; \"honeydonuts\n"
        "unsubscribe 101 carol <password>\" stops it.\n")
    assert mails["dave@example.org"].endswith(
        "\n\nYou get this mail because you asked to hear of every finished Honey Donuts\n"
        "game; \"honeydonuts notify dave <password> off\" stops it.\n")
    assert "You get this mail" not in mails["bob@example.org"]
    html = {m.to_addr: m.html_body or "" for m in out}
    assert "you asked to hear of every finished Honey Donuts" in flat(html["dave@example.org"])
    # a watcher is told so also when the mover's own copy is the reply
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts subscribe 102 carol pw-carol", sender="carol@example.org")
    mailer.reply("honeydonuts notify dave pw-dave off", sender="dave@example.org")
    out = mailer.send("honeydonuts move 102 alice pw-alice a1-a2")
    [watched] = [m.body for m in out if m.to_addr == "carol@example.org"]
    assert watched.endswith(
        "\n\nYou get this mail because you watch Honey Donuts board 102; \"honeydonuts\n"
        "unsubscribe 102 carol <password>\" stops it.\n")


def test_users_list_shows_bots_as_bots(mailer: Mailer, settings: Settings) -> None:
    from tests.test_admin import cli

    mailer.signup("alice")
    listed = cli(settings, "users", "list").output.splitlines()
    bot = next(line for line in listed if line.startswith("bot2 "))
    assert bot.endswith("(a bot, played by the server as bot2)")
    assert "no password" not in bot
    assert "state     a bot: the server plays it as bot2; no password opens it" in cli(
        settings, "users", "show", "bot2").output


# -- records -----------------------------------------------------------------------------
def test_a_record_by_mail_as_json_with_every_comment(mailer: Mailer) -> None:
    import json

    from pbmserv.records import parse_json

    start(mailer)
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2", "Here goes.")
    mailer.reply("honeydonuts move 101 bob pw-bob propose", "Draw?", sender="bob@example.org")
    mailer.reply("honeydonuts move 101 alice pw-alice reject", "Not yet.")
    mailer.reply("honeydonuts move 101 bob pw-bob e1-e2", sender="bob@example.org")
    mailer.reply("honeydonuts resign 101 alice pw-alice", "Well played.")
    out = mailer.send("honeydonuts record 101 json")
    assert out[0].subject == "Honey Donuts Board 101 record (JSON)"
    head, _, text = out[0].body.partition("-" * 76 + "\n")
    assert head == (
        "> honeydonuts record 101 json\n"
        "The record of Honey Donuts Board 101 as JSON follows, from the line after\n"
        "the dashes to the end of the mail's text: the same form as the\n"
        "administrator's \"pbmserv export --format json\" writes, which \"pbmserv\n"
        "import\" reads back. Save it as a file to keep it (a long comment stays on\n"
        "one line).\n")
    data = json.loads(text[:text.index("\n\n--\n")])
    assert data["format"] == "pbmserv-record" and data["result"] == "0-1"
    assert [m["comment"] for m in data["moves"]] == [
        "Here goes.\nbob, offering to end the game by agreement: Draw?\n"
        "alice, rejecting: Not yet.",
        "alice, resigning: Well played."]
    # to the second, as players read times
    assert all(m["played_at"].endswith("Z") and "." not in m["played_at"]
               for m in data["moves"])
    [record] = parse_json(text[:text.index("\n\n--\n")])
    assert record.players == ("alice", "bob")
    # the text form says the same, ratings to hundredths
    shown = mailer.reply("honeydonuts record 101")
    assert '"honeydonuts record 101 json".' in shown
    assert "{Here goes.\\nbob, offering to end the game by agreement: Draw?\\nalice," in \
        shown.replace("\n", " ")
    assert '[Ratings "alice 1500.00 1337.69; bob 1500.00 1662.31"]' in shown
    assert "a record comes as 'text' or 'json', not 'pgn'" in mailer.reply(
        "honeydonuts record 101 pgn")


# -- the web pages ----------------------------------------------------------------------
def test_the_pages_say_where_to_mail_and_how_to_start(db: Database, settings: Settings) -> None:
    from starlette.testclient import TestClient

    from pbmserv.web import create_app

    with TestClient(create_app(db, settings)) as client:
        home = client.get("/").text
        play = client.get("/play").text
        tournaments = client.get("/tournaments").text
    address = settings.address
    assert (f'write to <a href="mailto:{address}">{address}</a> with <code>signup '
            "&lt;userid&gt; &lt;password&gt;</code> as the Subject") in home
    assert '<a href="/play">How to play</a>' in home
    assert f'mail to <a href="mailto:{address}">{address}</a>' in play
    assert "<code>signup alice my-secret</code>" in play
    assert "<code>honeydonuts challenge alice bot1</code>" in play
    assert '<a href="/games/exnihilo">Ex nihilo</a>' in play
    assert "<code>help tournament</code>" in tournaments
    assert "tournament help" not in tournaments


# -- what each reply says next -------------------------------------------------------------
def test_replies_say_what_happened_and_what_comes_next(mailer: Mailer) -> None:
    start(mailer)
    assert mailer.reply("honeydonuts move 101 alice pw-alice a1-a2").startswith(
        "> honeydonuts move 101 alice ***** a1-a2\n"
        "Your move a1-a2 on Honey Donuts board 101 has been played. Now it is bob's\n"
        "turn; a board mail tells you when they have moved.\n")
    assert mailer.reply("honeydonuts resign 101 bob pw-bob", sender="bob@example.org"
                        ).startswith(
        "> honeydonuts resign 101 bob *****\n"
        "You resigned Honey Donuts board 101: the game is over. \"honeydonuts record\n"
        "101\" mails its whole record.\n")
    mailer.reply("honeydonuts challenge alice bot1")
    assert mailer.reply("honeydonuts move 102 alice pw-alice a1-a2").startswith(
        "> honeydonuts move 102 alice ***** a1-a2\n"
        "Your move a1-a2 on Honey Donuts board 102 has been played. Now it is bot1's\n"
        "turn: the bot's answer comes by mail within seconds.\n")
    mailer.reply("amoeba seek alice pw-alice")
    assert mailer.reply("amoeba unseek 1 alice pw-alice") == (
        "> amoeba unseek 1 alice *****\n"
        "Amoeba seek 1 is withdrawn: nobody can join it any more. \"amoeba seek\n"
        "<userid> <password>\" posts a new one.\n" + FOOTER)
    assert mailer.reply("vacation alice pw-alice").startswith(
        "> vacation alice *****\n"
        "alice is not on vacation: the clocks run. \"vacation alice <password> DAYS\"\n"
        "stops them for DAYS days.")
    assert mailer.reply("exnihilo games alice") == (
        "> exnihilo games alice\n"
        "Ex nihilo boards of alice (active):\n"
        "  none\n"
        "\n"
        "\"exnihilo games alice all\" lists the finished ones too; \"list exnihilo\"\n"
        "shows every board and open challenge.\n" + FOOTER)


def test_too_few_words_says_how_many_are_needed(mailer: Mailer) -> None:
    start(mailer)
    assert mailer.reply("honeydonuts move 101 alice pw-alice") == (
        "> honeydonuts move ...\n"
        "ERROR: too few words after 'move': it needs 4, this has 3\n"
        "\n"
        "Write it as: honeydonuts move board userid password move[#n]\n" + FOOTER)
    assert mailer.reply("honeydonuts challenge alice") == (
        "> honeydonuts challenge ...\n"
        "ERROR: too few words after 'challenge': it needs 2 or more, this has 1\n"
        "\n"
        "Write it as: honeydonuts challenge userid1 userid2 [-option...]\n"
        "[--nagtime=DAYS] [--forfeittime=DAYS] [password]\n" + FOOTER)
