"""Limits that keep one mail from becoming many: challenges per sender and per
player a day, seeks and tournaments per creator, subscribers per board, mails and
replies to one address an hour (held and folded, never dropped), and a tournament's
start made in steps."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, OutboxMessage, TournamentGame
from pbmserv.db.session import Database
from pbmserv.db.status import OutboxStatus
from pbmserv.notifications.held import fold_held
from pbmserv.service.tournaments import START_STEP
from pbmserv.timers import run_tournament_steps
from tests.conftest import Mailer, check_mail_shape


def flat(text: str) -> str:
    return " ".join(text.split())


def count_boards(db: Database) -> int:
    with db.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(Board)) or 0)


def test_fifty_challenges_in_one_mail_start_ten(db: Database, settings: Settings) -> None:
    """The issue's 'multiple' mail with 50 'challenge alice bob' lines, where one mail
    may mail any number of others (see test_strangers for that limit)."""
    mailer = Mailer(db, replace(settings, mails_to_others_per_mail=100,
                                mails_to_others_per_hour=100))
    mailer.signup("alice", "bob")
    lines = "\n".join(["honeydonuts challenge alice bob"] * 50)
    out = mailer.send("multiple", lines, sender="mallory@example.net")
    assert count_boards(db) == 10
    [reply] = [m for m in out if m.in_reply_to]
    assert flat(reply.body).count(
        "ERROR: alice has been challenged to 10 boards in the last 24 hours from addresses "
        "that are none of their players', the most a day; try again tomorrow (a player may "
        "still challenge alice from their own account's address)"
        ) == 1  # forty refusals in the same words: said once
    assert sum(m.to_addr == "alice@example.org" for m in out) == 10
    assert sum(m.to_addr == "bob@example.org" for m in out) == 10


def test_a_stranger_cannot_use_up_a_players_challenges(mailer: Mailer, db: Database) -> None:
    """Issue 34: ten challenges naming p40 from any address, and p40's real opponent
    was refused ("p40 has been challenged to 10 boards in the last 24 hours"), every
    day.  Now strangers use up only the strangers' allowance: p40's own challenges,
    and each opponent's from their own address, have allowances of their own."""
    mailer.signup("p40", "bob", "carol", *[f"x{n}" for n in range(10)])
    for n in range(10):
        assert "has been started" in mailer.reply(f"honeydonuts challenge x{n} p40",
                                                  sender=f"mallory{n}@example.net")
    strangers = ("ERROR: p40 has been challenged to 10 boards in the last 24 hours from "
                 "addresses that are none of their players', the most a day; try again "
                 "tomorrow (a player may still challenge p40 from their own account's "
                 "address)")
    assert strangers in flat(mailer.reply("honeydonuts challenge carol p40",
                                          sender="mallory@example.net"))
    # the real opponent, from their own address, and p40 themselves, are not refused
    for _ in range(10):
        assert "has been started" in mailer.reply("honeydonuts challenge bob p40",
                                                  sender="bob@example.org")
    assert ("ERROR: bob has challenged p40 to 10 boards in the last 24 hours, the most a "
            "day; try again tomorrow") in flat(mailer.reply("honeydonuts challenge bob p40",
                                                           sender="bob@example.org"))
    assert "has been started" in mailer.reply("honeydonuts challenge p40 carol",
                                              sender="p40@example.org")
    assert "has been started" in mailer.reply("honeydonuts challenge carol p40",
                                              sender="carol@example.org")
    assert strangers in flat(mailer.reply("honeydonuts challenge carol p40",
                                          sender="mallory@example.net"))
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Board)
                        .where(Board.challenger_id.is_(None))) == 10
    assert count_boards(db) == 22


def test_challenges_per_sender_a_day(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, challenges_per_sender_day=2))
    mailer.signup("alice", "bob", "carol")
    for pair in ("alice bob", "bob carol"):
        mailer.reply(f"honeydonuts challenge {pair}", sender="mallory@example.net")
    assert ("ERROR: 2 boards have been started by challenges from your address in the last "
            "24 hours, the most a day; try again tomorrow, or post a seek ('help seek')"
            ) in flat(mailer.reply("honeydonuts challenge carol alice",
                                   sender="mallory@example.net"))
    assert count_boards(db) == 2


def test_seeks_and_tournaments_per_player(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, seeks_per_player=2, tournaments_per_creator=1))
    mailer.signup("alice")
    for _ in range(2):
        mailer.reply("honeydonuts seek alice pw-alice")
    assert ("ERROR: alice has 2 open seeks already, the most at once; withdraw one "
            "('unseek') or wait until one is joined") in flat(
                mailer.reply("honeydonuts seek alice pw-alice"))
    mailer.reply("tournament create One honeydonuts alice pw-alice -roundrobin")
    assert ("ERROR: alice has created 1 tournaments that are not over yet, the most at "
            "once; create another when one has ended") in flat(
                mailer.reply("tournament create Two honeydonuts alice pw-alice -roundrobin"))


def test_subscribers_per_board(db: Database, settings: Settings) -> None:
    """The issue's 40 unconfirmed subscribers: none can subscribe; confirmed ones up
    to the limit."""
    mailer = Mailer(db, replace(settings, subscribers_per_board=2))
    mailer.signup("alice", "bob", "w1", "w2", "w3")
    mailer.reply("honeydonuts challenge alice bob")
    for n in range(5):
        mailer.send(f"signup sub{n} pw-sub-{n}-x victim+{n}@example.net",
                    sender="mallory@example.net")
    assert "is not confirmed yet" in mailer.reply("honeydonuts subscribe 101 sub0 pw-sub-0-x",
                                                  sender="mallory@example.net")
    for uid in ("w1", "w2"):
        mailer.reply(f"honeydonuts subscribe 101 {uid} pw-{uid}", sender=f"{uid}@example.org")
    assert ("ERROR: board 101 has 2 subscribers already, the most a board takes") in flat(
        mailer.reply("honeydonuts subscribe 101 w3 pw-w3", sender="w3@example.org"))
    out = mailer.send("honeydonuts chat 101 alice pw-alice", "Hello all")
    assert sorted(m.to_addr for m in out if not m.in_reply_to) == [
        "bob@example.org", "w1@example.org", "w2@example.org"]


def test_mail_beyond_the_hour_is_held_and_folded(db: Database, settings: Settings) -> None:
    limited = replace(settings, mails_per_address_hour=5, replies_per_sender_hour=2)
    mailer = Mailer(db, limited)
    out = [m for n in range(5) for m in mailer.send("help", sender="flood@example.net")]
    # (no account's address: nothing announces it, see tests/test_new_player.py)
    assert [m.status for m in out] == [OutboxStatus.PENDING] * 2 + [OutboxStatus.HELD] * 3
    held_until = {m.next_attempt_at for m in out if m.status is OutboxStatus.HELD}
    assert len(held_until) == 1  # all go out together
    with db.transaction() as s:
        assert fold_held(s, limited) == 0  # not before their hour is up
        assert fold_held(s, limited, utcnow() + timedelta(hours=1, minutes=1)) == 1
    with db.transaction() as s:
        rows = list(s.scalars(select(OutboxMessage).where(
            OutboxMessage.to_addr == "flood@example.net").order_by(OutboxMessage.id)))
        assert [r.status for r in rows] == (
            [OutboxStatus.PENDING] * 2 + [OutboxStatus.FOLDED] * 3 + [OutboxStatus.PENDING])
        fold = rows[-1]
        check_mail_shape([fold])
    assert fold.subject == "pbmserv: 3 mails held for you this hour"
    text = flat(fold.body)
    assert text.startswith(
        "More mail was due to you within an hour than this server sends to one address (5 "
        "mails an hour, 2 of them replies to your own mails). So that no mailbox is flooded, "
        "the 3 mails below were held, and come together in this one, oldest first. Nothing "
        "was lost. === 1 of 3: pbmserv help")
    assert text.count("=== ") == 3


def test_a_big_tournament_starts_in_steps(mailer: Mailer, db: Database,
                                          settings: Settings) -> None:
    players = [f"p{n}" for n in range(7)]  # 21 boards: more than one step
    mailer.signup(*players)
    mailer.reply("tournament create Big honeydonuts p0 pw-p0 -roundrobin", sender="p0@example.org")
    for uid in players[1:]:
        mailer.reply(f"tournament join Big {uid} pw-{uid}", sender=f"{uid}@example.org")
    out = mailer.send("tournament start Big p0 pw-p0", sender="p0@example.org")
    assert count_boards(db) == START_STEP
    start_mail = next(m for m in out if m.to_addr == "p1@example.org"
                      and m.subject.startswith("Tournament"))
    assert "board soon " in start_mail.body
    assert run_tournament_steps(db, settings) == 21 - START_STEP
    assert run_tournament_steps(db, settings) == 0
    assert count_boards(db) == 21
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(TournamentGame)
                        .where(TournamentGame.board_id.is_(None))) == 0


def test_games_against_the_bots_count_for_no_daily_limit(db: Database,
                                                         settings: Settings) -> None:
    mailer = Mailer(db, replace(settings, challenges_per_player_day=1,
                                challenges_per_sender_day=1))
    mailer.signup("alice", "bob")
    for game in ("honeydonuts", "exnihilo"):
        assert "has been started" in mailer.reply(f"{game} challenge alice bot1")
    assert "has been started" in mailer.reply("honeydonuts challenge alice bob")
    assert ("ERROR: 1 boards have been started by challenges from your address in the last "
            "24 hours") in flat(mailer.reply("honeydonuts challenge bob alice"))
