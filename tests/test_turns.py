"""Where it is my turn: 'turns' (and 'games' without a game) by mail, the web player
page and the digest, from one list (pbmserv.reads.turns).

alice has boards waiting for her move in four games and two tournaments, one of
them against dora, who is on vacation; each board's turn began a day after the one
before (time moved forward in the database, as tests/test_clocks.py does)."""

from __future__ import annotations

import re
import textwrap
from datetime import datetime, timedelta

from sqlalchemy import select
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, MailPrefs, Move, OutboxMessage, User, Vacation
from pbmserv.db.session import Database
from pbmserv.games import get_engine
from pbmserv.reads.turns import turns_of
from pbmserv.service.reply_tokens import read_token, server_secret
from pbmserv.timers import run_digests
from pbmserv.web import create_app
from tests.conftest import Mailer
from tests.test_clocks import time_passes, when


def indented(text: str) -> str:
    """A paragraph of a turn, as mail lines (the dates' widths vary)."""
    return textwrap.fill(text, 76, initial_indent="  ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)


def sender(uid: str) -> str:
    return f"{uid}@example.org"


def board_of(db: Database, game: str, number: int) -> Board:
    with db.transaction() as s:
        found = s.scalar(select(Board).where(Board.game == game, Board.number == number))
        assert found is not None
        s.expunge(found)
        return found


def first_move(db: Database, game: str, number: int) -> str:
    """A legal move on the board, as a player writes it."""
    engine = get_engine(game)
    assert engine is not None
    board = board_of(db, game, number)
    position = engine.load(board.position, board.position_version)
    return engine.format_move(position, engine.legal_moves(position)[0])


def opponent_moves(mailer: Mailer, db: Database, game: str, number: int, uid: str) -> str:
    """``uid`` plays a legal move on the board; returns it as it was played."""
    move = first_move(db, game, number)
    text = mailer.reply(f"{game} move {number} {uid} pw-{uid} {move}", sender=sender(uid))
    assert "has been played" in text, text
    return move


def tournament(mailer: Mailer, db: Database, name: str, game: str, other: str) -> int:
    """A round robin of alice and ``other``; its board, with alice to move."""
    mailer.reply(f"tournament create {name} {game} alice pw-alice -roundrobin",
                 sender=sender("alice"))
    mailer.reply(f"tournament join {name} {other} pw-{other}", sender=sender(other))
    mailer.reply(f"tournament start {name} alice pw-alice", sender=sender("alice"))
    with db.transaction() as s:
        number = s.scalar(select(Board.number).where(Board.game == game)
                          .order_by(Board.id.desc()).limit(1))
        assert number is not None
    board = board_of(db, game, number)
    if board.to_move != next(p.seat for p in board.players if p.user.userid == "alice"):
        opponent_moves(mailer, db, game, number, other)
    return number


def vacation_end(db: Database, userid: str) -> datetime:
    with db.transaction() as s:
        found = s.scalar(select(Vacation.ends_at).join(User, User.id == Vacation.user_id)
                         .where(User.key == userid))
        assert found is not None
        return found


def setup(mailer: Mailer, db: Database) -> list[tuple[str, int, str, str | None]]:
    """alice's boards, each waiting a day less than the one before: (game, number,
    opponent, the opponent's last move) in the order they began to wait."""
    mailer.signup("alice", "bob", "carl", "dora", "eric")
    boards: list[tuple[str, int, str, str | None]] = []
    # Amoeba: bob opens, alice answers
    mailer.reply("amoeba challenge bob alice")
    mailer.reply("amoeba accept 101 alice pw-alice")
    boards.append(("amoeba", 101, "bob", opponent_moves(mailer, db, "amoeba", 101, "bob")))
    time_passes(db, 1)
    # Honey Donuts: alice opens a board she has not taken up yet
    mailer.reply("honeydonuts challenge alice carl")
    boards.append(("honeydonuts", 101, "carl", None))
    time_passes(db, 1)
    # Hexamoeba: carl opens
    mailer.reply("hexamoeba challenge carl alice")
    mailer.reply("hexamoeba accept 101 alice pw-alice")
    boards.append(("hexamoeba", 101, "carl",
                   opponent_moves(mailer, db, "hexamoeba", 101, "carl")))
    time_passes(db, 1)
    # Ex nihilo: dora opens, then goes away for ten days
    mailer.reply("exnihilo challenge dora alice")
    mailer.reply("exnihilo accept 101 alice pw-alice")
    boards.append(("exnihilo", 101, "dora", opponent_moves(mailer, db, "exnihilo", 101, "dora")))
    mailer.reply("vacation dora pw-dora 10", sender=sender("dora"))
    time_passes(db, 1)
    # two tournaments
    boards.append(("honeydonuts", tournament(mailer, db, "Mini", "honeydonuts", "bob"), "bob",
                   None))
    time_passes(db, 1)
    boards.append(("amoeba", tournament(mailer, db, "Cup", "amoeba", "eric"), "eric", None))
    # a board where it is not alice's turn, and a finished one: not listed
    mailer.reply("amoeba challenge alice bob")
    mailer.reply(f"amoeba move 103 alice pw-alice {first_move(db, 'amoeba', 103)}")
    mailer.reply("hexamoeba challenge alice eric")
    mailer.reply("hexamoeba move 102 alice pw-alice resign")
    assert board_of(db, "amoeba", 103).to_move == 1
    assert board_of(db, "hexamoeba", 102).finished
    return boards


def expected_turns(db: Database, boards: list[tuple[str, int, str, str | None]],
                   addresses: list[str] | None) -> str:
    """The reply to 'turns', written out from the stored boards."""
    back = vacation_end(db, "dora")
    titles = {"amoeba": "Amoeba", "honeydonuts": "Honey Donuts", "hexamoeba": "Hexamoeba",
              "exnihilo": "Ex nihilo"}
    rounds = {("honeydonuts", boards[4][1]): " (Mini, round 1)",
              ("amoeba", boards[5][1]): " (Cup, round 1)"}
    lines = ["Boards waiting for alice's move: 6, the longest waiting first."]
    for place, (game, number, opponent, _) in enumerate(boards):
        board = board_of(db, game, number)
        lines += ["", f"{titles[game]} board {number}{rounds.get((game, number), '')}, "
                  f"move #{board.ply + 1}, against {opponent}:"]
        if board.ply:
            with db.transaction() as s:
                move = s.scalar(select(Move).where(Move.board_id == board.id,
                                                   Move.ply == board.ply))
                assert move is not None
                lines.append(f"  {opponent} played {move.notation} on "
                             f"{move.created_at:%Y-%m-%d %H:%M} UTC.")
        else:
            lines.append("  No move yet.")
        runs_out = board.turn_started_at + timedelta(days=21)
        # the turns began 5, 4, 3, 2, 1 and 0 days ago
        left = 21 - (len(boards) - 1 - place)
        if game == "honeydonuts" and number == 101:  # alice has not taken it up
            lines.append(indented(f"Time runs out on {when(runs_out)} (in {left} days); not "
                                  "taken up yet, the board then ends with no result."))
        else:
            lines.append(indented(f"Time runs out on {when(runs_out)} (in {left} days)."))
        if opponent == "dora":
            lines.append(indented(f"dora is on vacation until {back.day} {back:%B %Y}; "
                                  "dora's clock is stopped."))
        if addresses is not None:
            lines += ["  To move, mail the move alone on the first line to",
                      f"  {addresses[place]}"]
        else:
            lines.append(f"  To move: {game} move {number} alice <password> <move>#"
                         f"{board.ply + 1}")
    return "\n".join(lines)


def test_turns_by_mail_on_the_web_and_in_the_digest(mailer: Mailer, db: Database,
                                                    settings: Settings) -> None:
    boards = setup(mailer, db)
    text = mailer.reply("turns")
    addresses = re.findall(r"^  (pbmserv\+\S+@localhost)$", text, re.M)
    assert len(addresses) == 6
    assert text == (
        "> turns\n" + expected_turns(db, boards, addresses) + "\n\n"
        '"<game> games <userid> all" lists a player\'s boards of a game; "help clocks"\n'
        "explains the clocks and vacations.\n\n\n"
        "--\n"
        'pbmserv <pbmserv@localhost>: send "help" for the commands.\n'), text
    # each address is alice's, for the move asked on its board
    with db.transaction() as s:
        secret = server_secret(s, settings.secret)
        alice = s.scalar(select(User).where(User.key == "alice"))
        assert alice is not None
        for address, (game, number, _, _) in zip(addresses, boards, strict=True):
            token = read_token(secret, address.split("+")[1].split("@")[0])
            board = s.scalar(select(Board).where(Board.game == game, Board.number == number))
            assert token is not None and board is not None
            assert (token.board_id, token.user_id, token.ply) == (
                board.id, alice.id, board.ply + 1)
    # 'games' without a game is the same list
    assert mailer.reply("games") == text.replace("> turns\n", "> games\n")
    # anyone may ask for alice's turns, but the addresses go only to her own
    other = mailer.reply("turns alice", sender=sender("bob"))
    assert other.startswith("> turns alice\n" + expected_turns(db, boards, None) + "\n\n"
                            "The addresses that take a move by reply go only to a player's own"
                            ' address,\nso they are not listed here ("help turns").\n')
    # a Reply-To elsewhere: no address either (the reply may go there)
    [reply] = [m for m in mailer.send("turns", sender=sender("alice"),
                                      Reply_To="someone@example.net") if m.in_reply_to]
    assert "pbmserv+" not in reply.body and "To move: amoeba move 101 alice" in reply.body
    # a move by one of the addresses is played on its board, and the board leaves the list
    game, number, _, _ = boards[0]
    move = first_move(db, game, number)
    mailer.send("Re: your turns", move, sender=sender("alice"), To=addresses[0])
    assert board_of(db, game, number).ply == 2
    assert mailer.reply("turns").startswith(
        "> turns\nBoards waiting for alice's move: 5, the longest waiting first.\n\n"
        "Honey Donuts board 101, move #1, against carl:\n")
    # a long list is cut, the longest waiting kept, and says how many more wait
    with db.reading() as session:
        user = session.scalar(select(User).where(User.key == "alice"))
        assert user is not None
        cut = turns_of(session, user, utcnow(), limit=2)
        assert [(t.board.game, t.board.number) for t in cut.turns] == [
            (g, n) for g, n, _, _ in boards[1:3]] and cut.more == 3
    assert mailer.reply("turns", sender="nobody@example.net").startswith(
        "> turns\nERROR: no account has this mail's address")

    # the web player page shows the same list, without the addresses
    with TestClient(create_app(db, settings)) as client:
        page = client.get("/players/alice").text
    rows = re.findall(r'<a href="/boards/([a-z]+)/([0-9]+)">\2</a></td><td class="n">'
                      r'([0-9]+)</td>', page)
    assert [(g, int(n)) for g, n, _ in rows[:5]] == [(g, n) for g, n, _, _ in boards[1:]]
    assert "Waiting for alice's move" in page
    back = vacation_end(db, "dora")
    assert f"on vacation until {back.day} {back:%B %Y}; dora's clock is stopped" in page
    deadline = board_of(db, "hexamoeba", 101).turn_started_at + timedelta(days=21)
    assert f"{when(deadline)} (in 18 days)" in page
    assert "pbmserv+" not in page
    with TestClient(create_app(db, settings)) as client:
        dora_page = client.get("/players/dora").text
        board_page = client.get("/boards/exnihilo/101").text
    assert f"dora is on vacation until {back.day} {back:%B %Y}; dora's clock is" \
        in dora_page
    ex_deadline = board_of(db, "exnihilo", 101).turn_started_at + timedelta(days=21)
    assert f"alice has until {when(ex_deadline)} to move; then the game is lost on time." \
        in board_page
    assert f"dora is on vacation until {back.day} {back:%B %Y}" in board_page

    # the digest lists the same boards, the longest waiting first, with their deadlines
    mailer.reply("notify alice pw-alice digest daily")
    with db.transaction() as s:
        prefs = s.get(MailPrefs, alice.id)
        assert prefs is not None
        due = prefs.digest_next_at
    assert due is not None
    with db.transaction() as s:
        last = s.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc()).limit(1))
    assert run_digests(db, settings, now=due) >= 1
    with db.transaction() as s:
        [mail] = s.scalars(select(OutboxMessage).where(OutboxMessage.id > (last or 0),
                                                       OutboxMessage.to_addr == sender("alice")))
    text = " ".join(mail.body.split())
    heads = re.findall(r"((?:Honey Donuts|Hexamoeba|Ex nihilo|Amoeba) board [0-9]+): "
                       r"your move, #[0-9]+\. Time runs out on", text)
    assert heads == [
        "Honey Donuts board 101", "Hexamoeba board 101", "Ex nihilo board 101",
        f"Honey Donuts board {boards[4][1]}", f"Amoeba board {boards[5][1]}"], mail.body
    hexa = board_of(db, "hexamoeba", 101)
    hexa_out = hexa.turn_started_at + timedelta(days=21)
    assert (f"Hexamoeba board 101: your move, #{hexa.ply + 1}. Time runs out on "
            f"{when(hexa_out)} (in {round((hexa_out - due) / timedelta(days=1))} days).") \
        in text, mail.body
    assert (f"Ex nihilo board 101: your move, #2. Time runs out on {when(ex_deadline)} "
            f"(in {round((ex_deadline - due) / timedelta(days=1))} days). dora is on vacation "
            f"until {back.day} {back:%B %Y}; dora's clock is stopped.") in text, mail.body
