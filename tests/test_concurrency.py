"""Two processes at the same board at the same instant, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv.config import Settings
from pbmserv.db.models import Board, InboundMessage, Move, OutboxMessage, User
from pbmserv.db.session import Database
from tests.conftest import Mailer, make_mail


def deliver_at_once(url: str, maildir: Path, mails: list[bytes]) -> None:
    env = dict(os.environ, PBMSERV_DATABASE_URL=url, PBMSERV_MAILDIR=str(maildir))
    procs = [subprocess.Popen([sys.executable, "-m", "pbmserv", "deliver"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) for _ in mails]
    for proc, raw in zip(procs, mails, strict=True):  # both are waiting on stdin: go
        assert proc.stdin is not None
        proc.stdin.write(raw)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    outputs = [proc.stdout.read() if proc.stdout else b"" for proc in procs]
    for proc in procs:
        proc.wait(timeout=120)
    assert [proc.returncode for proc in procs] == [0] * len(procs), outputs


def race_two_moves(url: str, tmp_path: Path) -> None:
    db = Database(url)
    settings = Settings(database_url=url, maildir=tmp_path / "mail")
    mailer = Mailer(db, settings)
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    deliver_at_once(url, settings.maildir, [
        make_mail("honeydonuts move 101 alice pw-alice a1-a2", sender="alice@example.org"),
        make_mail("honeydonuts move 101 alice pw-alice a1-b1", sender="alice@example.org"),
    ])
    with db.transaction() as s:
        moves = list(s.scalars(select(Move.notation)))
        board = s.scalar(select(Board))
        replies = [m.body for m in s.scalars(select(OutboxMessage)
                                             .where(OutboxMessage.in_reply_to.is_not(None)))]
    db.dispose()
    assert len(moves) == 1 and board is not None and board.ply == 1
    assert sum("has been played" in r for r in replies) == 1
    assert sum("it is bob's turn, not yours" in r for r in replies) == 1


def race_two_challenges(url: str, tmp_path: Path) -> None:
    db = Database(url)
    settings = Settings(database_url=url, maildir=tmp_path / "mail2")
    Mailer(db, settings).signup("carol", "dave")
    deliver_at_once(url, settings.maildir, [
        make_mail("honeydonuts challenge carol dave"),
        make_mail("honeydonuts challenge dave carol"),
    ])
    with db.transaction() as s:
        numbers = sorted(s.scalars(select(Board.number)))
    db.dispose()
    assert numbers[-2:] == [numbers[-2], numbers[-2] + 1]


def test_sqlite_two_moves_at_once(db_url: str, tmp_path: Path) -> None:
    race_two_moves(db_url, tmp_path)


@pytest.mark.postgres
def test_postgres_two_moves_at_once(pg_url: str, tmp_path: Path) -> None:
    race_two_moves(pg_url, tmp_path)


@pytest.mark.postgres
def test_postgres_two_challenges_at_once(pg_url: str, tmp_path: Path) -> None:
    race_two_challenges(pg_url, tmp_path)


@pytest.mark.postgres
def test_postgres_whole_game(pg_url: str, tmp_path: Path) -> None:
    db = Database(pg_url)
    mailer = Mailer(db, Settings(database_url=pg_url, maildir=tmp_path / "mail"))
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts move 101 alice pw-alice a1-b1#1")
    mailer.reply("honeydonuts move 101 bob pw-bob c5-d4#2")
    text = mailer.reply("honeydonuts move 101 alice pw-alice b1-c2#3")
    assert "Game won by alice (Red): Blue's King was pushed off the board." in text
    assert "honeydonuts   Honey Donuts, 0 boards in play" in mailer.reply("list")
    db.dispose()


def test_one_senders_flood_keeps_no_one_waiting(mailer: Mailer, db: Database,
                                                 settings: Settings) -> None:
    from pbmserv.intake.store import store_message
    from pbmserv.processing.batches import process_pending

    flood = [i for i in (store_message(db, make_mail("help", sender="flood@example.org",
                                                     Precedence="bulk"), "flood@example.org")
                         for _ in range(120)) if i is not None]
    late = store_message(db, make_mail("signup alice pw-long-1", sender="alice@example.org"),
                         "alice@example.org")
    assert late is not None
    assert process_pending(db, settings, reads=1) == 6  # one batch: 5 of the flood
    with db.transaction() as s:
        done = {m.id: m.status for m in s.scalars(select(InboundMessage))}
    assert done[late] == "done"  # in the first batch, though stored last
    handled = [i for i in flood if done[i] != "new"]
    assert handled == flood[:5]  # the flood's own oldest five, in their order


def apply_in_order_with_two_workers(url: str, tmp_path: Path) -> None:
    db = Database(url)
    settings = Settings(database_url=url, maildir=tmp_path / "mail")
    mailer = Mailer(db, settings)
    users = [f"u{n}" for n in range(6)]
    mailer.signup(*users)
    from pbmserv.intake.store import store_message
    for k in range(1, 16):
        for uid in users:
            store_message(db, make_mail(f"change address {uid} pw-{uid} {uid}-{k}@example.org",
                                        sender=f"{uid}@example.org"), f"{uid}@example.org")
    # each change of address mails a code to the new address, a mail to another: the
    # fifteen a sender asks for here are over the hourly allowance of those
    env = dict(os.environ, PBMSERV_DATABASE_URL=url, PBMSERV_MAILDIR=str(settings.maildir),
               PBMSERV_MAILS_TO_OTHERS_PER_HOUR="100")
    procs = [subprocess.Popen([sys.executable, "-m", "pbmserv", "work"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
             for _ in range(2)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    subprocess.run([sys.executable, "-m", "pbmserv", "work"], env=env, check=True,
                   stdout=subprocess.DEVNULL)  # anything left to one of them
    with db.transaction() as s:
        # (each new address waits for its confirmation: the last one asked for waits)
        emails = {u.userid: u.new_email
                  for u in s.scalars(select(User).where(User.bot.is_(None)))}
        statuses = list(s.scalars(select(InboundMessage.status)))
        # the replies (each change of address also tells the old address)
        replies = list(s.scalars(select(OutboxMessage.inbound_id)
                                 .where(OutboxMessage.in_reply_to.is_not(None))))
    db.dispose()
    assert set(statuses) == {"done"}
    assert len(replies) == len(set(replies)) == len(statuses)  # each mail answered once
    assert emails == {uid: f"{uid}-15@example.org" for uid in users}  # in each sender's order


def test_sqlite_two_workers_keep_each_senders_order(db_url: str, tmp_path: Path) -> None:
    apply_in_order_with_two_workers(db_url, tmp_path)


@pytest.mark.postgres
def test_postgres_two_workers_keep_each_senders_order(pg_url: str, tmp_path: Path) -> None:
    apply_in_order_with_two_workers(pg_url, tmp_path)


def test_an_urgent_writer_of_another_process_is_seen_waiting(db_url: str) -> None:
    """On SQLite a writer waiting urgently (the intake, with a sender waiting for its
    250) raises a flag that another process's long writer sees, as it sees one of its
    own (the worker then commits what it has and gives way); the flag falls once the
    urgent writer has the lock.  Two engines stand for the two processes."""
    import threading
    import time

    worker, intake = Database(db_url), Database(db_url)
    got_lock = threading.Event()
    try:
        assert not worker.urgent_waiting
        with worker.transaction(lazy=True) as session:
            session.get(User, 1)  # the write lock is taken at BEGIN IMMEDIATE

            def urgent() -> None:
                with intake.transaction(urgent=True) as mine:
                    mine.get(User, 1)  # BEGIN IMMEDIATE: waits for the worker's lock
                    got_lock.set()

            thread = threading.Thread(target=urgent)
            thread.start()
            deadline = time.monotonic() + 30
            while not worker.urgent_waiting:
                assert time.monotonic() < deadline, "the waiting intake was never seen"
                time.sleep(0.001)
            assert not got_lock.is_set()
        thread.join(timeout=30)
        assert got_lock.is_set() and not worker.urgent_waiting and not intake.urgent_waiting
    finally:
        worker.dispose()
        intake.dispose()


_RAISE_AND_WAIT = """
import sys
from pathlib import Path
from pbmserv.db.session import UrgentFlag
flag = UrgentFlag(Path(sys.argv[1]))
flag.set(True)
print("raised", flush=True)
sys.stdin.read()
"""


def test_urgent_flags_of_two_processes_are_their_own(tmp_path: Path) -> None:
    """Two processes' urgent writers wait at once (two deliver processes, say): the one
    that gets the lock first lowers its own flag, not the other's, which is still seen
    waiting; and a process that dies waiting leaves no flag raised."""
    import signal

    from pbmserv.db.session import UrgentFlag

    path = tmp_path / "db.sqlite3-urgent"
    looker, second = UrgentFlag(path), UrgentFlag(path)
    open_files = len(os.listdir("/proc/self/fd"))
    second.set(True)
    assert looker.raised
    second.set(False)
    assert not looker.raised
    # a flag keeps no file open but while its writer waits: a process that opens many
    # databases (a test run) does not run out of descriptors
    assert len(os.listdir("/proc/self/fd")) == open_files
    first = subprocess.Popen([sys.executable, "-c", _RAISE_AND_WAIT, str(path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None and first.stdout.readline() == "raised\n"
        assert looker.raised
        second.set(True)
        second.set(False)  # the second got the lock: it lowers its flag
        assert looker.raised  # the first still waits, and is seen
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert not looker.raised  # it died waiting: nothing is left raised
    finally:
        first.kill()
        first.wait(timeout=30)


def test_a_writer_waits_while_an_urgent_writer_of_another_process_waits(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's lock is no queue: a worker that commits and begins again at once wins
    it over an intake that asks every half millisecond, again and again.  So a writer
    that begins while another process's urgent writer waits (its flag raised) waits
    until the flag falls; and no longer than GIVE_WAY for a flag left raised by a
    writer that died."""
    import threading
    import time

    from pbmserv.db import session as sessions

    monkeypatch.setattr(sessions, "GIVE_WAY", 30.0)
    worker = Database(db_url)
    flag = sessions.UrgentFlag(Path(str(worker.engine.url.database) + "-urgent"))
    began: list[float] = []
    looks: list[bool] = []  # the writer's looks at the flag, and what it saw
    look: property = vars(sessions.UrgentFlag)["raised"]

    def counted(self: sessions.UrgentFlag) -> bool:
        seen = bool(look.__get__(self))
        if self is not flag:  # not this test's own looks
            looks.append(seen)
        return seen

    monkeypatch.setattr(sessions.UrgentFlag, "raised", property(counted))

    def write() -> None:
        with worker.transaction(lazy=True) as session:
            session.get(User, 1)  # BEGIN IMMEDIATE
            began.append(time.monotonic())

    try:
        flag.set(True)
        thread = threading.Thread(target=write)
        thread.start()
        deadline = time.monotonic() + 30
        while looks.count(True) < 3:  # it saw the flag raised, and again as it waits
            assert not began, "the writer began while the flag was raised"
            assert time.monotonic() < deadline, "the writer never waited for the flag"
            time.sleep(0.001)
        assert not began
        lowered = time.monotonic()
        flag.set(False)
        thread.join(timeout=30)
        assert began and began[0] >= lowered  # it began only once the flag fell

        monkeypatch.setattr(sessions, "GIVE_WAY", 0.05)
        flag.set(True)  # left raised: the writer waits its while, then goes on
        began.clear()
        thread = threading.Thread(target=write)
        thread.start()
        thread.join(timeout=30)
        assert began and flag.raised
    finally:
        flag.set(False)
        worker.dispose()
