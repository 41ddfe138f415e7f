"""Clocks: nags, loss on time and vacations, driven by moving time forward in the
database (every stored instant moved back by the same amount)."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from pbmserv import worker
from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import Board, Move, OutboxMessage, PlayerRating, User, Vacation
from pbmserv.db.session import Database
from pbmserv.notifications import Notifier
from pbmserv.server import Server
from pbmserv.service.games import GameService
from pbmserv.timers import RETRY_AFTER, run_clocks
from pbmserv.worker import WorkLoop
from tests.conftest import Mailer, check_mail_shape, free_port, read_maildir, wait_until_settled


def when(instant: datetime) -> str:
    """A deadline as the mails write it: 3 December 2026, 14:05 UTC."""
    return f"{instant.day} {instant:%B %Y}, {instant:%H:%M} UTC"


def flat(text: str) -> str:
    return " ".join(text.split())


def time_passes(db: Database, days: float) -> None:
    """Move every instant the clock reads back by ``days``: as if that much time passed."""
    d = timedelta(days=days)
    with db.transaction() as s:
        for board in s.scalars(select(Board)):
            board.turn_started_at -= d
            board.created_at -= d
            board.updated_at -= d
            if board.clock_due_at is not None:
                board.clock_due_at -= d
        for move in s.scalars(select(Move)):
            move.created_at -= d
            if move.turn_started_at is not None:
                move.turn_started_at -= d
        for vacation in s.scalars(select(Vacation)):
            vacation.starts_at -= d
            vacation.ends_at -= d


def clock_mails(db: Database, settings: Settings) -> list[OutboxMessage]:
    """Run the clock; the mails it queued."""
    with db.transaction() as s:
        last = s.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc()).limit(1)) or 0
    run_clocks(db, settings)
    with db.transaction() as s:
        out = list(s.scalars(select(OutboxMessage).where(OutboxMessage.id > last)
                             .order_by(OutboxMessage.id)))
    check_mail_shape(out)
    return out


def start(mailer: Mailer, *flags: str, take_up: bool = True) -> None:
    mailer.signup("alice", "bob")
    mailer.reply(" ".join(("honeydonuts challenge alice bob", *flags)))
    mailer.reply("honeydonuts move 101 alice pw-alice a1-a2")  # bob to move
    if take_up:  # bob takes the board up without moving: it is his to lose on time
        mailer.reply("honeydonuts accept 101 bob pw-bob", sender="bob@example.org")


def board(db: Database) -> Board:
    with db.transaction() as s:
        found = s.scalar(select(Board))
        assert found is not None
        return found


def test_nags_then_loss_on_time(mailer: Mailer, db: Database, settings: Settings) -> None:
    start(mailer)
    time_passes(db, 6.9)
    assert clock_mails(db, settings) == []
    time_passes(db, 0.2)
    [nag] = clock_mails(db, settings)
    assert nag.to_addr == "bob@example.org" and nag.subject == "Nag: Honey Donuts Board 101 bob"
    text = flat(nag.body)
    runs_out = board(db).turn_started_at + timedelta(days=21)
    # (the dates' widths vary: compared with the lines' breaks left out)
    assert text.startswith(
        "It is your move on Honey Donuts board 101, bob, and you have not moved for 7 "
        f"days. If you have not moved after 21 days, by {when(runs_out)} "
        "(in 14 days), you lose the game on time. Going away?")
    assert ("Clock: a reminder after 7 days without a move, lost on time after 21. "
            f"bob has until {when(runs_out)} to move; then the game is lost on "
            "time. Or simply reply") in text
    assert "Summary of Honey Donuts Board 101" in text
    # the board drawn in the HTML part, as in every board mail
    assert nag.html_body is not None and "<table" in nag.html_body
    assert "you have not moved for 7 days" in " ".join(nag.html_body.split())
    assert clock_mails(db, settings) == []  # never twice
    time_passes(db, 7)
    [second] = clock_mails(db, settings)
    assert "you have not moved for 14 days" in flat(second.body)
    time_passes(db, 7)
    out = clock_mails(db, settings)
    assert sorted(m.to_addr for m in out) == ["alice@example.org", "bob@example.org"]
    assert all(m.subject == "Honey Donuts Board 101 Game over" for m in out)
    assert "Game won by alice (Red): bob did not move for 21 days." in flat(out[0].body)
    ended = board(db)
    assert ended.finished and ended.termination == "time" and ended.clock_due_at is None


def test_a_board_never_taken_up_ends_with_no_result(mailer: Mailer, db: Database,
                                                    settings: Settings) -> None:
    """A challenge needs no password: bob, who never moved on the board nor accepted
    it, does not lose it on time; it ends like a declined board, rated for nobody."""
    start(mailer, take_up=False)
    time_passes(db, 7.1)
    [nag] = clock_mails(db, settings)
    assert nag.to_addr == "bob@example.org"
    time_passes(db, 14)
    out = clock_mails(db, settings)
    assert sorted(m.to_addr for m in out) == ["alice@example.org", "bob@example.org"]
    assert "Game ended with no result: bob did not take the board up within 21 days." in flat(
        out[0].body)
    ended = board(db)
    assert ended.finished and ended.termination == "abandoned" and ended.winner is None
    with db.transaction() as s:
        assert s.scalars(select(PlayerRating)).all() == []


def test_a_move_restarts_the_clock(mailer: Mailer, db: Database, settings: Settings) -> None:
    start(mailer)
    time_passes(db, 8)
    assert len(clock_mails(db, settings)) == 1
    mailer.reply("honeydonuts move 101 bob pw-bob e1-e2")
    time_passes(db, 6)
    assert clock_mails(db, settings) == []
    time_passes(db, 1.1)
    [nag] = clock_mails(db, settings)
    assert nag.subject == "Nag: Honey Donuts Board 101 alice"


def test_clock_times_set_in_the_challenge(mailer: Mailer, db: Database,
                                          settings: Settings) -> None:
    start(mailer, "--nagtime=3", "--forfeittime=7")
    assert "a reminder after 3 days without a move, lost on time after 7" in flat(
        mailer.reply("honeydonuts show 101"))
    time_passes(db, 3.1)
    assert [m.subject for m in clock_mails(db, settings)] == ["Nag: Honey Donuts Board 101 bob"]
    time_passes(db, 3)
    assert [m.subject for m in clock_mails(db, settings)] == ["Nag: Honey Donuts Board 101 bob"]
    time_passes(db, 1)
    assert len(clock_mails(db, settings)) == 2 and board(db).finished
    # a challenge's clock has a floor: anyone may send one, in anyone's name
    assert flat(mailer.reply("honeydonuts challenge alice bob --nagtime=1 --forfeittime=1")) \
        .startswith("> honeydonuts challenge alice bob --nagtime=1 --forfeittime=1 "
                    "ERROR: a challenge's clock nags after 3 days at the least and forfeits "
                    "after 7 "
                    "at the least (--nagtime=3 --forfeittime=7); a shorter clock may be "
                    "agreed with a seek, which both players join themselves")
    assert "must not be shorter than the nag time" in mailer.reply(
        "honeydonuts challenge alice bob --nagtime=5 --forfeittime=2")
    assert "nag and forfeit times are 1 to 365 days" in mailer.reply(
        "honeydonuts challenge alice bob --nagtime=0")


def test_vacation_stops_the_clock(mailer: Mailer, db: Database, settings: Settings) -> None:
    start(mailer)
    time_passes(db, 3)
    text = flat(mailer.reply("vacation bob pw-bob 10", sender="bob@example.org"))
    assert "bob is on vacation until" in text and "has 20 of 30 vacation days left" in text
    time_passes(db, 10)  # 13 days since the move, 3 of them not on vacation
    assert clock_mails(db, settings) == []
    time_passes(db, 3.9)
    assert clock_mails(db, settings) == []
    time_passes(db, 0.2)  # 7 days off vacation
    [nag] = clock_mails(db, settings)
    assert "you have not moved for 7 days" in flat(nag.body)


def test_vacation_allowance_and_ending_early(mailer: Mailer, db: Database,
                                            settings: Settings) -> None:
    start(mailer)
    assert "has 30 vacation day(s) left this year" in flat(
        mailer.reply("vacation bob pw-bob 31"))
    mailer.reply("vacation bob pw-bob 20")
    time_passes(db, 2)
    text = flat(mailer.reply("vacation bob pw-bob off"))
    assert "bob is not on vacation" in text and "has 28 of 30 vacation days left" in text
    assert "bob is not on vacation" in mailer.reply("vacation bob pw-bob off")
    time_passes(db, 7.1)  # the clock runs again from the early end
    assert [m.subject for m in clock_mails(db, settings)] == ["Nag: Honey Donuts Board 101 bob"]


def test_a_crash_between_the_nag_and_its_mail_loses_and_repeats_nothing(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    start(mailer)
    time_passes(db, 7.5)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed between the decision and the mail")

    with monkeypatch.context() as patch:
        patch.setattr(Notifier, "_send", crash)
        assert clock_mails(db, settings) == []
    assert board(db).nags_sent == 0  # the decision was rolled back with the mail
    assert clock_mails(db, settings) == []  # the board is put off for an hour
    time_passes(db, RETRY_AFTER / timedelta(days=1))
    assert [m.subject for m in clock_mails(db, settings)] == ["Nag: Honey Donuts Board 101 bob"]
    assert clock_mails(db, settings) == []


def test_a_board_whose_clock_fails_keeps_no_other_waiting(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    start(mailer)
    mailer.reply("exnihilo challenge alice bob")  # alice to move there
    time_passes(db, 7.5)
    real = GameService.check_clock

    def broken_on_honeydonuts(service: GameService, board: Board) -> None:
        if board.game == "honeydonuts":
            raise ValueError("a bug")
        real(service, board)

    with monkeypatch.context() as patch:
        patch.setattr(GameService, "check_clock", broken_on_honeydonuts)
        assert [m.subject for m in clock_mails(db, settings)] == ["Nag: Ex nihilo Board 101 alice"]
    # why the batch was given up for one board at a time is in the log
    assert [r.getMessage() for r in caplog.records if r.name == "pbmserv.timers"
            and "batch" in r.getMessage()] == [
        "clock: the batch of due boards failed (ValueError: a bug); each board is tried alone"]
    with db.transaction() as s:
        broken = s.scalar(select(Board).where(Board.game == "honeydonuts"))
        assert broken is not None and broken.nags_sent == 0 and broken.clock_due_at is not None
        assert broken.clock_due_at > utcnow() + RETRY_AFTER - timedelta(minutes=1)


def test_sending_goes_on_when_the_clock_fails(mailer: Mailer, db: Database, settings: Settings,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    mailer.reply("help")  # its reply waits in the outbox

    def broken(*args: object) -> None:
        raise RuntimeError("the clock is broken")

    monkeypatch.setattr(worker, "run_clocks", broken)
    loop = WorkLoop(db, settings)
    with pytest.raises(RuntimeError, match="the clock is broken"):
        loop.once()
    assert [m["To"] for m in read_maildir(settings.maildir)] == ["alice@example.org"]


def test_every_failure_of_a_round_is_raised_and_logged(
        mailer: Mailer, db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Two steps of one round fail: both are raised (not only the first) and both are
    logged, each with its traceback; the same failures in the next round are not
    logged again."""
    mailer.reply("help")

    def broken_clock(*args: object) -> None:
        raise RuntimeError("the clock is broken")

    def broken_digests(*args: object) -> None:
        raise ValueError("the digests are broken")

    monkeypatch.setattr(worker, "run_clocks", broken_clock)
    monkeypatch.setattr(worker, "run_digests", broken_digests)
    loop = WorkLoop(db, settings)
    with pytest.raises(ExceptionGroup) as raised:
        loop.once()
    assert [str(e) for e in raised.value.exceptions] == ["the clock is broken",
                                                         "the digests are broken"]
    assert [m["To"] for m in read_maildir(settings.maildir)] == ["alice@example.org"]
    with caplog.at_level(logging.ERROR, logger="pbmserv.worker"):
        said = loop._report(raised.value, "")
        again = loop._report(raised.value, said)
    assert said == ("RuntimeError: the clock is broken; ValueError: the digests are broken")
    assert again == said
    logged = [(r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert logged == [
        ("worker round failed, will try again every 2.0s: RuntimeError: the clock is broken",
         True),
        ("worker round failed, will try again every 2.0s: ValueError: the digests are "
         "broken", True)]


def test_busy_worker_sends_every_little_while_and_at_once_when_mail_stops(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """While mail keeps coming, what is due goes out every SEND_EVERY seconds, not
    after every round (each sending round is a durable commit and a flush of the
    Maildir); the round that finds no mail sends at once."""
    from pbmserv.intake.store import store_message
    from tests.conftest import make_mail

    monkeypatch.setattr(worker, "SEND_EVERY", 3600.0)
    loop = WorkLoop(db, settings)
    store_message(db, make_mail("help", sender="a@example.org"), "a@example.org")
    assert loop.once() == (1, 1)  # the first round sends
    store_message(db, make_mail("help", sender="b@example.org"), "b@example.org")
    assert loop.once() == (1, 0)  # busy, and sent a moment ago: it waits
    assert [m["To"] for m in read_maildir(settings.maildir)] == ["a@example.org"]
    assert loop.once() == (0, 1)  # no more mail: out at once
    assert sorted(m["To"] for m in read_maildir(settings.maildir)) == [
        "a@example.org", "b@example.org"]


def test_busy_worker_looks_for_tournament_steps_every_little_while(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tournament's start goes on a step a round while boards wait; while none waits
    and mail keeps coming the worker looks every STEPS_EVERY seconds (a read each
    round), and a round that finds no mail always looks."""
    from pbmserv.intake.store import store_message
    from tests.conftest import make_mail

    waiting = [0]
    looks: list[int] = []

    def steps(*args: object) -> int:
        looks.append(waiting[0])
        return waiting[0]

    monkeypatch.setattr(worker, "STEPS_EVERY", 3600.0)
    monkeypatch.setattr(worker, "run_tournament_steps", steps)
    loop = WorkLoop(db, settings)

    def busy_round() -> None:
        store_message(db, make_mail("help", sender=f"p{len(looks)}@example.org"))
        assert loop.once()[0] == 1

    busy_round()  # the first round looks
    busy_round()  # none waited, looked a moment ago: no look
    assert len(looks) == 1
    assert loop.once()[0] == 0 and len(looks) == 2  # no mail: it looks
    waiting[0] = 16
    assert loop.once()[0] == 0 and len(looks) == 3  # boards wait now
    busy_round()
    busy_round()  # while boards wait, a step every round
    assert len(looks) == 5


def test_work_runs_the_clock(mailer: Mailer, db: Database, settings: Settings) -> None:
    start(mailer)
    time_passes(db, 8)
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_MAILDIR": str(settings.maildir)}
    result = CliRunner().invoke(main, ["work"], env=env)
    assert result.exit_code == 0, result.output
    subjects = [m["Subject"] for m in read_maildir(settings.maildir)]
    assert "Nag: Honey Donuts Board 101 bob" in subjects


def test_serve_runs_the_clock(mailer: Mailer, db: Database, settings: Settings,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The nag goes out, once: two more rounds of the clock after it was sent, and all
    they queued sent, bring no second one."""
    start(mailer)
    time_passes(db, 8)
    rounds: list[int] = []  # the clock rounds done
    clocks = run_clocks  # what the worker calls

    def counted(*args: Any, **kwargs: Any) -> Any:
        done = clocks(*args, **kwargs)
        rounds.append(1)
        return done

    monkeypatch.setattr(worker, "run_clocks", counted)  # the server's worker is a thread

    def nagged() -> bool:
        return any(m["Subject"] == "Nag: Honey Donuts Board 101 bob"
                   for m in read_maildir(settings.maildir))

    server = Server(db, settings, "127.0.0.1", free_port(), interval=0.1, clock_every=0.1)
    server.start()
    try:
        deadline = time.monotonic() + 20
        while not nagged():
            assert time.monotonic() < deadline, "no nag was sent"
            time.sleep(0.05)
        seen = len(rounds)
        while len(rounds) < seen + 2:
            assert time.monotonic() < deadline + 20, "the clock stopped"
            time.sleep(0.05)
        wait_until_settled(db)
    finally:
        server.stop()
    nags = [m for m in read_maildir(settings.maildir)
            if m["Subject"] == "Nag: Honey Donuts Board 101 bob"]
    assert len(nags) == 1


def board_no(db: Database, number: int) -> Board:
    with db.transaction() as s:
        found = s.scalar(select(Board).where(Board.number == number))
        assert found is not None
        return found


def vacation_end(db: Database, userid: str) -> datetime:
    with db.transaction() as s:
        found = s.scalar(select(Vacation.ends_at).join(User, User.id == Vacation.user_id)
                         .where(User.key == userid))
        assert found is not None
        return found


def test_a_vacation_is_shown_and_a_loss_on_time_counts_it(
        mailer: Mailer, db: Database, settings: Settings) -> None:
    """bob's vacation shows on his boards (the board mail, 'show', his opponent's
    reminder), moves his deadline by its length, and the loss on time that follows
    says how many days he did not move, and how many of them he was away."""
    start(mailer, "--nagtime=3", "--forfeittime=7")  # board 101: bob to move
    mailer.reply("honeydonuts challenge bob alice --nagtime=3 --forfeittime=7")
    mailer.reply("honeydonuts move 102 bob pw-bob a1-a2", sender="bob@example.org")
    mailer.reply("honeydonuts accept 102 alice pw-alice")  # alice to move on 102
    time_passes(db, 2)
    mailer.reply("vacation bob pw-bob 5", sender="bob@example.org")
    back = vacation_end(db, "bob")
    # 2 of bob's 7 days are gone; the other 5 run from the end of his vacation
    runs_out = back + timedelta(days=5)
    shown = mailer.reply("honeydonuts show 101")
    # (the dates' widths vary: compared with the lines' breaks left out)
    assert ("Clock: a reminder after 3 days without a move, lost on time after 7. "
            f"bob has until {when(runs_out)} to move; then the game is lost on time. "
            f"bob is on vacation until {back.day} {back:%B %Y}; bob's clock is stopped. "
            ) in flat(shown)
    time_passes(db, 1.1)  # alice has let board 102 wait 3 days: her reminder
    [nag] = clock_mails(db, settings)
    assert nag.to_addr == "alice@example.org"
    alice_out = board_no(db, 102).turn_started_at + timedelta(days=7)
    back = vacation_end(db, "bob")  # (moved back with every instant stored)
    assert flat(nag.body).startswith(
        "It is your move on Honey Donuts board 102, alice, and you have not moved for "
        f"3 days. If you have not moved after 7 days, by {when(alice_out)} (in "
        "4 days), you lose the game on time. "
        f"bob is on vacation until {back.day} {back:%B %Y}; bob's clock is stopped. "
        'Going away? "vacation alice <password> DAYS" stops all your clocks for DAYS')
    mailer.reply("honeydonuts move 102 alice pw-alice e1-e2")
    # 12 days after his turn began on board 101, 5 of them away: bob's 7 are up
    time_passes(db, 9)
    out = clock_mails(db, settings)
    ended = [m for m in out if m.subject == "Honey Donuts Board 101 Game over"]
    assert sorted(m.to_addr for m in ended) == ["alice@example.org", "bob@example.org"]
    assert ("Game won by alice (Red): bob did not move for 12 days (5 of them on\n"
            "vacation, which the clock does not count).\n") in ended[0].body
    # on board 102 his clock started on his vacation's fourth day: a reminder only
    assert [m.subject for m in out if m not in ended] == ["Nag: Honey Donuts Board 102 bob"]


def test_a_vacation_begun_in_the_same_mail_shows_at_once(mailer: Mailer, db: Database) -> None:
    """The board's view is made once per state of the board in a mail; a vacation
    begun by a later command of the mail is shown all the same."""
    start(mailer)
    text = mailer.reply("multiple", "honeydonuts show 101\nvacation bob pw-bob 4\n"
                        "honeydonuts show 101\n", sender="bob@example.org")
    first, _, second = text.partition("> vacation bob ***** 4")
    back = vacation_end(db, "bob")
    away = f"bob is on vacation until {back.day} {back:%B %Y}; bob's clock is stopped."
    assert away not in flat(first) and away in flat(second)
    runs_out = board(db).turn_started_at + timedelta(days=25)
    assert f"bob has until {when(runs_out)} to move" in flat(second)
