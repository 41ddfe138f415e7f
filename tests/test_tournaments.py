"""Tournaments by mail: a 5-player Swiss and a 4-player double round robin played to
the end, leaving and signing off, -max, passwords, decline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import (
    Board,
    BoardRating,
    OutboxMessage,
    Tournament,
    TournamentGame,
    User,
)
from pbmserv.db.session import Database
from pbmserv.db.status import BoardStatus, TournamentStatus
from pbmserv.timers import run_clocks
from tests.conftest import Mailer, check_mail_shape
from tests.test_clocks import time_passes

SWISS = ["ann", "ben", "cat", "dan", "eve"]


def flat(text: str) -> str:
    return " ".join(text.split())


def sender(uid: str) -> str:
    return f"{uid}@example.org"


def create(mailer: Mailer, players: list[str], flags: str, name: str = "Spring") -> None:
    mailer.signup(*players)
    first = players[0]
    text = mailer.reply(f"tournament create {name} honeydonuts {first} pw-{first} {flags}",
                        sender=sender(first))
    assert f"Tournament {name} is open for players" in flat(text)
    for uid in players[1:]:
        mailer.reply(f"tournament join {name} {uid} pw-{uid}", sender=sender(uid))


def pairs_of(db: Database, number: int = 1, name: str = "spring"
             ) -> tuple[list[tuple[str, str]], str | None]:
    """A round's boards as (first, second) userids in board order, and the bye."""
    with db.transaction() as s:
        names = {u.id: u.userid for u in s.scalars(select(User))}
        games = list(s.scalars(
            select(TournamentGame).join(Tournament)
            .where(Tournament.key == name, TournamentGame.round == number)
            .order_by(TournamentGame.board_id)))
    pairs = [(names[g.first_id], names[g.second_id]) for g in games if g.second_id]
    byes = [names[g.first_id] for g in games if g.second_id is None]
    return pairs, (byes[0] if byes else None)


def number_of(db: Database, first: str, second: str, round_: int, name: str = "spring") -> int:
    with db.transaction() as s:
        ids = {u.userid: u.id for u in s.scalars(select(User))}
        number = s.scalar(select(Board.number).join(
            TournamentGame, TournamentGame.board_id == Board.id).join(Tournament).where(
            Tournament.key == name, TournamentGame.round == round_,
            TournamentGame.first_id == ids[first], TournamentGame.second_id == ids[second]))
    assert number is not None
    return number


def decide(mailer: Mailer, number: int, first: str, second: str,
           winner: str | None) -> list[OutboxMessage]:
    """End a board: the loser resigns, or a draw is offered and accepted."""
    if winner is None:
        mailer.send(f"honeydonuts move {number} {first} pw-{first} propose", sender=sender(first))
        return mailer.send(f"honeydonuts move {number} {second} pw-{second} accept",
                           sender=sender(second))
    loser = second if winner == first else first
    return mailer.send(f"honeydonuts resign {number} {loser} pw-{loser}", sender=sender(loser))


def table(body: str, rows: int) -> list[str]:
    """The crosstable's header and rows in a mail."""
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  # Name"))
    return lines[start:start + rows + 1]


def tournament_mails(out: list[OutboxMessage], name: str = "Spring") -> list[OutboxMessage]:
    return [m for m in out if m.subject.startswith(f"Tournament {name} ")
            and not m.in_reply_to]


# -- Swiss -----------------------------------------------------------------------------------
SWISS_RESULTS: dict[tuple[int, frozenset[str]], str | None] = {
    (1, frozenset({"ann", "cat"})): "ann",
    (1, frozenset({"ben", "dan"})): "dan",
    (2, frozenset({"ann", "dan"})): None,
    (2, frozenset({"ben", "eve"})): "ben",
    (3, frozenset({"ann", "eve"})): "ann",
    (3, frozenset({"cat", "dan"})): "cat",
    (4, frozenset({"ann", "ben"})): "ann",
    (4, frozenset({"cat", "eve"})): "cat",
}
#: the pairings the pure pairer gives for these results (tests/test_pairing.py)
SWISS_ROUNDS = [
    ([("ann", "cat"), ("dan", "ben")], "eve"),
    ([("dan", "ann"), ("ben", "eve")], "cat"),
    ([("eve", "ann"), ("cat", "dan")], "ben"),
    ([("ann", "ben"), ("eve", "cat")], "dan"),
]


def test_five_player_swiss_by_mail_to_the_end(mailer: Mailer, db: Database) -> None:
    create(mailer, SWISS, "-swiss -rounds 4")
    out = mailer.send("tournament start Spring ann pw-ann", sender=sender("ann"))
    assert "Tournament Spring has started with 5 players" in flat(out[0].body)
    started = tournament_mails(out)
    assert sorted(m.to_addr for m in started) == sorted(sender(u) for u in SWISS)
    text = flat(started[0].body)
    assert "a Swiss tournament of Honey Donuts, 4 rounds, 5 players" in text
    assert "board 101 ann - cat board 102 dan - ben bye eve (1 point)" in text
    # every player of round 1 gets the board mail of their board, ann (who sent the
    # start) too; eve has the bye
    boards = [m for m in out if m.subject.startswith("New Honey Donuts Board")]
    assert sorted(m.to_addr for m in boards) == sorted(sender(u) for u in
                                                       ("ann", "cat", "dan", "ben"))
    for number, (pairs, bye) in enumerate(SWISS_ROUNDS, start=1):
        assert pairs_of(db, number) == (pairs, bye), f"round {number}"
        for i, (a, b) in enumerate(pairs):
            out = decide(mailer, number_of(db, a, b, number), a, b,
                         SWISS_RESULTS[(number, frozenset({a, b}))])
            mails = tournament_mails(out)
            if i < len(pairs) - 1:
                assert mails == []  # the round is not over yet
                continue
            assert sorted(m.to_addr for m in mails) == sorted(sender(u) for u in SWISS)
            body = mails[0].body
            if number < len(SWISS_ROUNDS):
                nxt, nbye = SWISS_ROUNDS[number]
                assert mails[0].subject == f"Tournament Spring round {number + 1}"
                assert f"round {number + 1} of 4 has started" in flat(body)
                for x, y in nxt:
                    assert f"{x} - {y}" in body
                assert f"bye        {nbye} (1 point)" in body
                assert f"Standings after round {number} of Spring" in body
                # the new boards' mails go to their players, the one who just
                # resigned or accepted too
                new = [m for m in out if m.subject.startswith("New Honey Donuts Board")]
                assert sorted(m.to_addr for m in new) == sorted(
                    sender(u) for pair in nxt for u in pair)
            else:
                assert mails[0].subject == "Tournament Spring is over"
                final = body
    assert "The winner: ann. Congratulations!" in final
    assert table(final, 5) == [
        "  # Name   Pts     BH  R1  R2  R3  R4",
        "  1 ann    3.5    8.5 R2+ B3= B5+ R4+",
        "  2 cat      3      7 B1- bye R3+ B5+",
        "  3 dan    2.5    8.5 R4+ R1= B2- bye",
        "  4 ben      2      7 B3- R5+ bye B1-",
        "  5 eve      1    8.5 bye B4- R1- R2-",
    ]
    with db.transaction() as s:
        tournament = s.scalar(select(Tournament))
        assert tournament is not None and tournament.status is TournamentStatus.FINISHED
        # tournament boards are rated like any other
        assert len(s.scalars(select(BoardRating)).all()) == 16
    shown = mailer.reply("tournament show Spring")
    assert "Over since" in shown and "Won by ann." in flat(shown)
    assert "Final standings of Spring" not in shown and "Final standings" in shown
    assert "board 108  eve - cat, 0-1" in shown
    assert "Spring: a Swiss tournament of Honey Donuts, 4 rounds; over, won by ann." in flat(
        mailer.reply("tournament list"))


# -- double round robin -------------------------------------------------------------------------
RR_RESULTS: dict[frozenset[str], list[str | None]] = {
    frozenset({"ann", "ben"}): ["ann", None],
    frozenset({"ann", "cat"}): ["ann", None],
    frozenset({"ann", "dan"}): ["ann", None],
    frozenset({"ben", "cat"}): ["ben", "ben"],
    frozenset({"ben", "dan"}): ["ben", "ben"],
    frozenset({"cat", "dan"}): [None, None],
}


def test_four_player_double_round_robin_by_mail(mailer: Mailer, db: Database) -> None:
    players = ["ann", "ben", "cat", "dan"]
    create(mailer, players, "-roundrobin -double --nagtime=3 --forfeittime=9")
    out = mailer.send("tournament start Spring ann pw-ann", sender=sender("ann"))
    started = tournament_mails(out)
    assert len(started) == 4
    text = flat(started[0].body)
    assert "a double round robin of Honey Donuts, 4 players" in text
    assert "All 12 boards start now" in text
    assert "lost on time after 9" in text
    assert ("Round 1: board 101 ann - dan board 102 ben - cat Round 2: board 103 dan - cat "
            "board 104 ann - ben Round 3: board 105 ben - dan board 106 cat - ann Round 4: "
            "board 107 dan - ann") in text
    # every player gets the board mail of each of their six boards
    boards = [m for m in out if m.subject.startswith("New Honey Donuts Board")]
    assert len(boards) == 24
    with db.transaction() as s:
        assert {b.nag_days for b in s.scalars(select(Board))} == {3}
    expected = [[("ann", "dan"), ("ben", "cat")], [("dan", "cat"), ("ann", "ben")],
                [("ben", "dan"), ("cat", "ann")]]
    expected += [[(b, a) for a, b in rnd] for rnd in expected]
    final = ""
    for number, pairs in enumerate(expected, start=1):
        assert pairs_of(db, number)[0] == pairs
        for a, b in pairs:
            out = decide(mailer, number_of(db, a, b, number), a, b,
                         RR_RESULTS[frozenset({a, b})][0 if number <= 3 else 1])
            if tournament_mails(out):
                final = tournament_mails(out)[0].body
    assert number == 6 and final
    assert "Sharing first place" not in final and "The winner: ann." in final
    assert table(final, 4) == [
        "  # Name   Pts     SB  1  2  3  4",
        "  1 ann    4.5  11.25 ** 1= =1 1=",
        "  2 ben    4.5   8.25 =0 ** 11 11",
        "  3 cat    1.5   3.75 0= 00 ** ==",
        "  4 dan    1.5   3.75 =0 00 == **",
    ]
    shown = mailer.reply("tournament show Spring")
    assert "Over since" in shown and "board 112  ann - cat, 1/2-1/2" in shown


# -- leaving, signing off, -max -----------------------------------------------------------------
def test_leaving_and_signing_off_lose_the_games_left(mailer: Mailer, db: Database) -> None:
    players = ["ann", "ben", "cat", "dan"]
    create(mailer, [*players, "eve"], "-roundrobin")
    assert "eve has left tournament Spring. Players now: ann, ben, cat, dan." in flat(
        mailer.reply("tournament leave Spring eve pw-eve", sender=sender("eve")))
    mailer.send("tournament start Spring ann pw-ann", sender=sender("ann"))
    assert "has started already" in mailer.reply("tournament join Spring eve pw-eve")
    decide(mailer, number_of(db, "ann", "dan", 1), "ann", "dan", "ann")
    out = mailer.send("tournament leave Spring dan pw-dan", sender=sender("dan"))
    reply = flat(out[0].body)
    assert "dan has left tournament Spring and is not paired again." in reply
    assert "The games still in play were lost: board 103, 105." in reply
    told = [m for m in out if m.to_addr == sender("cat")]
    assert ("Game won by cat (Blue): dan left tournament Spring, which counts as a "
            "resignation.") in flat(told[0].body)
    # ben signs off: his three boards are lost, then his account is closed
    out = mailer.send("signoff ben pw-ben", sender=sender("ben"))
    assert "The account ben is closed" in flat(out[0].body)
    with db.transaction() as s:
        ids = {u.userid: u.id for u in s.scalars(select(User))}
        games = {(g.first_id, g.second_id): g.score for g in s.scalars(select(TournamentGame))}
        boards = {b.number: b.status for b in s.scalars(select(Board))}
    assert games[(ids["ben"], ids["cat"])] == 0.0 and games[(ids["ann"], ids["ben"])] == 1.0
    assert games[(ids["ben"], ids["dan"])] == 1.0  # dan left first: ben won that one
    assert [n for n, st in boards.items() if st is BoardStatus.ACTIVE] == [106]  # cat-ann
    out = decide(mailer, 106, "cat", "ann", None)
    over = tournament_mails(out)
    # the end goes to everyone who played, those who left too, but not a closed account
    assert sorted(m.to_addr for m in over) == [sender("ann"), sender("cat"), sender("dan")]
    assert "Left: ben, dan." in flat(mailer.reply("tournament show Spring"))


def test_signoff_keeps_everything_when_another_board_is_in_play(mailer: Mailer,
                                                                db: Database) -> None:
    create(mailer, ["ann", "ben"], "-roundrobin")
    mailer.reply("tournament start Spring ann pw-ann", sender=sender("ann"))
    mailer.signup("cat")
    mailer.reply("honeydonuts challenge ann cat")
    text = flat(mailer.reply("signoff ann pw-ann", sender=sender("ann")))
    assert "ann still plays honeydonuts 102; finish or resign them first" in text
    with db.transaction() as s:
        assert s.scalar(select(Board).where(Board.number == 101)).status is BoardStatus.ACTIVE  # type: ignore[union-attr]


def test_max_players_starts_it_and_the_creator_may_organise_only(mailer: Mailer,
                                                                 db: Database) -> None:
    mailer.signup("org", "ann", "ben", "cat")
    mailer.reply("tournament create Cup honeydonuts org pw-org -swiss -max 3 -simple",
                 sender=sender("org"))
    mailer.reply("tournament leave Cup org pw-org", sender=sender("org"))
    mailer.reply("tournament join Cup ann pw-ann", sender=sender("ann"))
    assert "only org, who created Cup, may start it" in mailer.reply(
        "tournament start Cup ann pw-ann", sender=sender("ann"))
    mailer.reply("tournament join Cup ben pw-ben", sender=sender("ben"))
    out = mailer.send("tournament join Cup cat pw-cat", sender=sender("cat"))
    assert "which makes 3 players, the most it takes: so it has started" in flat(out[0].body)
    started = tournament_mails(out, "Cup")
    # the organiser who does not play is told too (issue 38)
    assert sorted(m.to_addr for m in started) == [sender("ann"), sender("ben"), sender("cat"),
                                                  sender("org")]
    # two rounds by default for 3 players; boards take the tournament's options
    assert "a Swiss tournament of Honey Donuts (-simple), 2 rounds, 3 players" in flat(
        started[0].body)
    with db.transaction() as s:
        assert {b.options for b in s.scalars(select(Board))} == {"-simple"}


def test_tournament_boards_skip_challenge_preferences_and_decline_loses(
        mailer: Mailer, db: Database) -> None:
    mailer.signup("ann", "ben")
    mailer.reply("honeydonuts reject ann pw-ann all", sender=sender("ann"))
    mailer.reply("tournament create Cup honeydonuts ann pw-ann -swiss -rounds 1",
                 sender=sender("ann"))
    mailer.reply("tournament join Cup ben pw-ben", sender=sender("ben"))
    mailer.reply("tournament start Cup ann pw-ann", sender=sender("ann"))
    [(first, second)] = pairs_of(db, 1, "cup")[0]
    out = mailer.send(f"honeydonuts decline 101 {second} pw-{second}", sender=sender(second))
    over = tournament_mails(out, "Cup")
    assert f"The winner: {first}." in over[0].body
    with db.transaction() as s:
        assert s.scalars(select(BoardRating)).all() == []  # a declined board is not rated


def test_refusals_and_passwords_never_quoted(mailer: Mailer, db: Database) -> None:
    mailer.signup("ann", "ben")
    text = mailer.reply("tournament create Cup honeydonuts ann pw-ann -swiss -double",
                        sender=sender("ann"))
    assert "-double is for a round robin" in text and "pw-ann" not in text
    assert "> tournament create Cup honeydonuts ann ***** -swiss -double" in text
    text = mailer.reply("tournament create Cup honeydonuts ann pw-ann", sender=sender("ann"))
    assert "-roundrobin or -swiss" in text
    text = mailer.reply("tournament create Cup chess ann pw-ann -swiss", sender=sender("ann"))
    assert "there is no game 'chess'" in text
    text = mailer.reply("tournament create Cup honeydonuts ann pw-ann -swiss -x",
                        sender=sender("ann"))
    assert "unknown option '-x'" in text
    # words out of order: the command is quoted by its verb only
    text = mailer.reply("tournament join ann pw-ann Cup", sender=sender("ann"))
    assert "pw-ann" not in text and "> tournament ..." in text
    text = mailer.reply("tournament show Cup ann pw-ann")
    assert "pw-ann" not in text and "too many words" in text
    text = mailer.reply("tournament dance ann pw-ann")
    assert "pw-ann" not in text and "write tournament create" in text
    assert "there is no tournament 'Nope'" in mailer.reply("tournament show Nope",
                                                            sender=sender("ann"))
    mailer.reply("tournament create Cup honeydonuts ann pw-ann -roundrobin", sender=sender("ann"))
    assert "there is a tournament 'cup' already" in mailer.reply(
        "tournament create cup honeydonuts ben pw-ben -swiss", sender=sender("ben"))
    assert "has 1 player(s); it needs at least 2" in mailer.reply(
        "tournament start Cup ann pw-ann", sender=sender("ann"))
    assert "ben does not play in Cup" in mailer.reply(
        "tournament leave Cup ben pw-ben", sender=sender("ben"))
    with db.transaction() as s:
        assert len(s.scalars(select(Tournament)).all()) == 1
    help_text = mailer.reply("help tournament")
    assert "Sonneborn-Berger" in help_text and "Buchholz" in help_text
    assert "tournament create NAME game userid password" in mailer.reply("help")


def test_a_loss_on_time_pairs_the_next_round(mailer: Mailer, db: Database,
                                             settings: Settings) -> None:
    create(mailer, ["ann", "ben", "cat"], "-swiss -rounds 2 --nagtime=1 --forfeittime=2")
    mailer.reply("tournament start Spring ann pw-ann", sender=sender("ann"))
    assert pairs_of(db) == ([("ann", "ben")], "cat")
    time_passes(db, 2.5)
    with db.transaction() as s:
        last = s.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc()))
    run_clocks(db, settings)
    with db.transaction() as s:
        out = list(s.scalars(select(OutboxMessage).where(OutboxMessage.id > (last or 0))))
    check_mail_shape(out)
    [lost] = [m for m in out if m.subject == "Honey Donuts Board 101 Game over"
              and m.to_addr == sender("ann")]
    assert "Game won by ben (Blue): ann did not move for 2 days." in flat(lost.body)
    mails = tournament_mails(out)
    assert len(mails) == 3 and mails[0].subject == "Tournament Spring round 2"
    # ben (1 point) meets cat (the bye's point), ben first (he was second); ann, who
    # lost, has the bye now
    assert pairs_of(db, 2) == ([("ben", "cat")], "ann")


@pytest.fixture
def pg_mailer(pg_url: str, tmp_path: Path) -> Iterator[tuple[Mailer, Database]]:
    db = Database(pg_url)
    try:
        yield Mailer(db, Settings(database_url=pg_url, maildir=tmp_path / "mail")), db
    finally:
        db.dispose()


@pytest.mark.postgres
def test_swiss_on_postgres(pg_mailer: tuple[Mailer, Database]) -> None:
    test_five_player_swiss_by_mail_to_the_end(*pg_mailer)


@pytest.mark.postgres
def test_leaving_on_postgres(pg_mailer: tuple[Mailer, Database]) -> None:
    test_leaving_and_signing_off_lose_the_games_left(*pg_mailer)


def test_swiss_round_one_follows_the_seeds_not_the_join_order(mailer: Mailer,
                                                               db: Database) -> None:
    """Five players join in one order and are seeded by rating in another: round 1
    pairs by the seeds (1-3, 2-4 with the bye to the lowest seed), as docs/commands.md
    says, not by the order of joining."""
    from datetime import UTC, datetime

    from pbmserv.db.models import PlayerRating

    joined = ["carol", "alice", "bob", "dave", "zoe"]
    create(mailer, joined, "-swiss", name="Seeds")
    ratings = {"bob": 1700.0, "zoe": 1650.0, "dave": 1600.0, "carol": 1550.0,
               "alice": 1450.0}
    with db.transaction() as s:
        for user in s.scalars(select(User).where(User.userid.in_(joined))):
            s.add(PlayerRating(user_id=user.id, game="honeydonuts",
                               rating=ratings[user.userid], rd=200.0, volatility=0.06,
                               rated_at=datetime(2026, 1, 1, tzinfo=UTC)))
    out = mailer.send("tournament start Seeds carol pw-carol", sender=sender("carol"))
    text = flat(tournament_mails(out, "Seeds")[0].body)
    assert ("Players, in seed order (by rating, then by the order of joining): "
            "bob, zoe, dave, carol, alice.") in text
    assert "board 101 bob - dave board 102 carol - zoe bye alice (1 point)" in text
    assert pairs_of(db, 1, "seeds") == ([("bob", "dave"), ("carol", "zoe")], "alice")
