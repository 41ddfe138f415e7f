"""The IMAP reader never blind, against the private Dovecot: a connection cut without
a word (a TCP reset, through a proxy) or gone silent is noticed and opened again; mail
that comes while another is taken, or between two looks, is taken at once; old mail
at the first start is left alone; a mail seen again under another UIDVALIDITY, long
after its stored copy was purged, is not answered again; one reader per mailbox; the
reader's heartbeat in ``status`` and ``/healthz``."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update
from starlette.testclient import TestClient

from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapMessage, ImapState, InboundMessage
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.intake import imap
from pbmserv.intake.imap import ImapIntake, connect, select_folder
from pbmserv.service.health import status_of
from pbmserv.timers import purge_mail
from pbmserv.web.app import create_app
from tests.mailservers import (
    DOVEADM,
    PASSWORD,
    USER,
    CuttingProxy,
    Dovecot,
    dovecot,
    wait_for,
)
from tests.test_imap import DONE, imap_settings, inbound, mail, take_once
from tests.test_web_ops import metric_values

__all__ = ["dovecot"]  # the fixture, used by name
MAILBOX = f"{USER}@localhost/INBOX"


@pytest.fixture
def proxy(dovecot: Dovecot) -> Iterator[CuttingProxy]:
    carried = CuttingProxy(dovecot.imaps)
    yield carried
    carried.close()


def via(settings: Settings, server: Dovecot, tmp_path: Path, proxy: CuttingProxy,
        **more: object) -> Settings:
    """Settings that read the Dovecot through the proxy."""
    return imap_settings(settings, server, tmp_path,
                         imap=f"imaps://{USER}@localhost:{proxy.port}/INBOX", **more)


class Reader:
    """An intake thread and the ids of the mails it stored."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.stored: list[int] = []
        self.intake = ImapIntake(db, settings, on_stored=self.stored.extend)

    def __enter__(self) -> Reader:
        self.intake.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.intake.stop()

    def waits(self) -> None:
        wait_for(self.intake.waiting.is_set, lambda: "the reader never waited for mail")


def test_a_cut_without_bye_is_noticed_at_once(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        proxy: CuttingProxy, caplog: pytest.LogCaptureFixture) -> None:
    """A reset while the reader waits with IDLE: imapclient's idle_check took it for
    "nothing yet" until the IDLE's renewal (4 minutes; here the keepalive is an hour,
    so only the reset itself can end the wait)."""
    settings = via(settings, dovecot, tmp_path, proxy, imap_keepalive=3600)
    with Reader(db, settings) as reader:
        reader.waits()
        assert proxy.reset() == 1
        dovecot.deliver(mail("help", 1))
        wait_for(lambda: len(reader.stored) == 1,
                 lambda: "the mail after the cut was never taken:\n" + caplog.text)
    assert proxy.accepted == 2
    assert "the connection ended while waiting with IDLE" in caplog.text
    assert "readable again" in caplog.text


def test_a_connection_gone_silent_is_noticed_by_the_keepalive(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        proxy: CuttingProxy, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing comes back any more, and nothing says so: the IDLE ends after
    imap_keepalive seconds, the server does not answer its end, and the reader opens a
    new connection."""
    monkeypatch.setattr(imap, "ANSWER_WAIT", 1.0)
    settings = via(settings, dovecot, tmp_path, proxy, imap_keepalive=2)
    with Reader(db, settings) as reader:
        reader.waits()
        assert proxy.go_silent() == 1
        dovecot.deliver(mail("help", 1))
        wait_for(lambda: len(reader.stored) == 1,
                 lambda: "the mail after the silence was never taken:\n" + caplog.text)
    assert proxy.accepted == 2
    assert "TimeoutError" in caplog.text or "timed out" in caplog.text


def test_mail_that_comes_while_another_is_taken_is_taken_at_once(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    """The second mail comes while the first is being taken: the server tells of it in
    its answer to the STORE that marks the first, and says nothing of it in the IDLE
    that follows (here an hour long)."""
    settings = imap_settings(settings, dovecot, tmp_path, imap_keepalive=3600)
    stored: list[int] = []

    def on_stored(ids: list[int]) -> None:
        stored.extend(ids)
        if len(stored) == 1:
            dovecot.deliver(mail("help", 2))  # before the first is marked done

    intake = ImapIntake(db, settings, on_stored=on_stored)
    intake.start()
    try:
        dovecot.deliver(mail("help", 1))
        wait_for(lambda: len(stored) == 2, lambda: f"only {stored} taken")
    finally:
        intake.stop()
    assert all(DONE in flags for flags in dovecot.messages().values())


def test_the_first_look_after_a_mail_came_takes_it(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    """Dovecot brings a session's view of the folder up to date at the end of a
    command: a SEARCH alone misses what came since the command before it (polling, a
    mail waited one look more); the look begins with a NOOP."""
    intake = ImapIntake(db, imap_settings(settings, dovecot, tmp_path))
    client = connect(intake.settings)
    try:
        uidvalidity = select_folder(client, intake.settings)
        assert intake.look(client, uidvalidity) == 0
        dovecot.deliver(mail("help", 1))
        assert intake.look(client, uidvalidity) == 1
    finally:
        client.logout()


def test_at_first_start_the_mail_already_there_is_left_alone(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    for n in range(3):  # the owner's own mail, long before pbmserv
        dovecot.deliver(mail(f"holiday photos {n}", n, sender="aunt@example.org"))
    now = imap_settings(settings, dovecot, tmp_path, imap_since="now")
    assert take_once(ImapIntake(db, now)) == 0
    after = dovecot.messages()  # not flagged, not seen, not moved
    assert len(after) == 3 and all(DONE not in f and b"\\Seen" not in f for f in after.values())
    said = [r.getMessage() for r in caplog.records if "first read" in r.getMessage()]
    assert said == [f"IMAP {MAILBOX}: first read: 3 mail(s) already in the folder are left "
                    "as they are and never answered (imap_since = \"now\"); set imap_since "
                    "to \"all\" or to a day to answer them"]
    dovecot.deliver(mail("help", 10))
    assert take_once(ImapIntake(db, now)) == 1  # a restart: what came after is taken
    assert [m.raw.count(b"<m10@example.org>") for m in inbound(db)] == [1]
    assert sum("first read" in r.getMessage() for r in caplog.records) == 1
    # a day, as the server dates its mail: none of these came on it
    assert take_once(ImapIntake(db, replace(now, imap_since="2999-01-01"))) == 0
    assert "3 mail(s) from before 2999-01-01 are left as they are" in caplog.text
    # the administrator wants them answered after all
    assert take_once(ImapIntake(db, replace(now, imap_since="all"))) == 3


def validity(server: Dovecot, folder: str) -> int:
    with server.client() as client:
        return int(client.select_folder(folder)[b"UIDVALIDITY"])


def test_mail_seen_again_under_another_uidvalidity_is_known_after_the_purge(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The folder rebuilt past purge_days: its answered mails come back unflagged, with
    new UIDs under a new UIDVALIDITY, and their stored copies are long gone."""
    if DOVEADM is None:  # pragma: no cover - the fixture skips without it
        pytest.skip("doveadm is missing")
    caplog.set_level(logging.INFO, logger="pbmserv.intake.imap")
    dovecot.create_folder("Games")
    games = imap_settings(settings, dovecot, tmp_path, imap_since="now",
                          imap=f"imaps://{USER}@localhost:{dovecot.imaps}/Games")
    assert take_once(ImapIntake(db, games)) == 0  # the first read: nothing there
    dovecot.deliver(mail("help", 1), "Games")
    dovecot.deliver(mail("help", 2, sender="bob@example.org"), "Games")
    assert take_once(ImapIntake(db, games)) == 2
    with db.transaction() as session:  # answered, and purged a month later
        session.execute(update(InboundMessage).values(
            status=InboundStatus.DONE, received_at=utcnow() - timedelta(days=40)))
    assert purge_mail(db, timedelta(days=30)) == (2, 0)
    with dovecot.client() as client:  # the folder rebuilt: the same mails, unflagged
        client.select_folder("Games")
        kept = client.fetch(client.search(["ALL"]), ["BODY.PEEK[]", "INTERNALDATE"])
        client.close_folder()
        client.delete_folder("Games")
        client.create_folder("Games")
        for item in kept.values():
            client.append("Games", item[b"BODY[]"], msg_time=item[b"INTERNALDATE"])
        old = utcnow() - timedelta(hours=20)  # the owner's, from before the first read
        client.append("Games", mail("holiday photos", 3, sender="aunt@example.org"),
                      msg_time=old)
    dovecot.deliver(mail("help", 4, sender="carol@example.org"), "Games")
    first = validity(dovecot, "Games")
    subprocess.run([DOVEADM, "-c", str(dovecot.config), "mailbox", "update", "-u", USER,
                    "--uid-validity", str(first + 7), "Games"], check=True,
                   capture_output=True)
    assert validity(dovecot, "Games") == first + 7
    assert take_once(ImapIntake(db, games)) == 1  # carol's alone
    assert [m.sender for m in inbound(db)] == ["carol@example.org"]
    flags = dovecot.messages("Games")
    assert [DONE in f for _, f in sorted(flags.items())] == [True, True, False, True]
    with db.reading() as session:
        outcomes = sorted(session.scalars(select(ImapMessage.outcome)
                                          .where(ImapMessage.uidvalidity == first + 7)))
    assert outcomes == ["again", "again", "old", "stored"]
    assert "2 mail(s) taken before under another UID" in caplog.text


def test_one_reader_per_mailbox(dovecot: Dovecot, db: Database, settings: Settings,
                                tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = imap_settings(settings, dovecot, tmp_path, imap_keepalive=1)
    with Reader(db, settings) as first:
        first.waits()
        with Reader(db, settings) as second:
            wait_for(lambda: "is read by another pbmserv" in caplog.text,
                     lambda: "the second reader said nothing:\n" + caplog.text)
            dovecot.deliver(mail("help", 1))
            wait_for(lambda: len(first.stored) == 1, lambda: "mail 1 not taken")
            assert not second.intake.waiting.is_set()  # it never logged in
            first.intake.stop()  # the first serve stops: the second reads the mailbox
            second.waits()
            dovecot.deliver(mail("help", 2))
            wait_for(lambda: len(second.stored) == 1, lambda: "mail 2 not taken")
    [line] = [r.getMessage() for r in caplog.records if "is read by another" in r.getMessage()]
    assert line.startswith(f"IMAP {MAILBOX} is read by another pbmserv ({first.intake.me}")
    assert f"the other reader ({first.intake.me}) is gone" in caplog.text


@pytest.mark.parametrize("same_pid", [False, True])
def test_a_reader_killed_on_this_host_does_not_hold_the_mailbox(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture, same_pid: bool) -> None:
    """A serve killed (SIGKILL, the OOM killer) leaves its hold behind: a new one on
    the same host sees that its process is gone and reads the mailbox at once, also
    when the new process has the old one's pid (a container started again)."""
    if same_pid:
        pid = os.getpid()
    else:
        dead = subprocess.Popen(["true"])
        dead.wait()
        pid = dead.pid
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with db.transaction() as session:
        session.add(ImapState(mailbox=MAILBOX, since=utcnow(), checked_at=utcnow(),
                              reader=f"{socket.gethostname()} pid {pid} (0ldrun-1234)",
                              beat_at=utcnow(), held_until=utcnow() + timedelta(hours=1)))
    with Reader(db, imap_settings(settings, dovecot, tmp_path)) as reader:
        reader.waits()
    assert "is read by another" not in caplog.text


def test_the_readers_heartbeat_in_status_and_healthz(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    settings = imap_settings(settings, dovecot, tmp_path, imap_keepalive=1)
    never = status_of(db, settings)
    assert never.problems == [f"IMAP {MAILBOX}: never read (is 'pbmserv serve' running?)"]
    app = create_app(db, settings)
    with Reader(db, settings) as reader:
        reader.waits()
        with db.reading() as session:
            beat = session.get(ImapState, MAILBOX)
            assert beat is not None and beat.beat_at is not None
            first_beat = beat.beat_at
        # it beats while it waits with IDLE (every imap_keepalive seconds at most, the
        # database written every 5 seconds at most)
        wait_for(lambda: _beat_at(db) > first_beat, lambda: "no heartbeat")
        running = status_of(db, settings)
        assert running.healthy, running.problems
        assert running.imap.startswith(f"{MAILBOX}: read since ")
        assert f"waiting with IDLE; reader {reader.intake.me}, heartbeat " in running.imap
        with TestClient(app) as client:
            health = client.get("/healthz")
            metrics = metric_values(client.get("/metrics").text)
        assert health.status_code == 200
        assert health.text.startswith(f"ok\nimap {MAILBOX}: read since ")
        assert metrics[f'pbmserv_imap_reading{{mailbox="{MAILBOX}"}}'] == 1
        assert metrics[f'pbmserv_imap_heartbeat_age_seconds{{mailbox="{MAILBOX}"}}'] < 60
    stopped = status_of(db, settings)  # serve stopped: the reader let the mailbox go
    [problem] = stopped.problems
    assert problem.startswith(f"IMAP {MAILBOX}: not read since ")
    assert problem.endswith("when its reader stopped (is 'pbmserv serve' running?)")
    with TestClient(app) as client:
        health = client.get("/healthz")
        metrics = metric_values(client.get("/metrics").text)
    assert (health.status_code, health.text) == (503, problem + "\n")
    assert metrics[f'pbmserv_imap_reading{{mailbox="{MAILBOX}"}}'] == 0
    with db.transaction() as session:  # killed: its hold stays, its heart stops
        session.execute(update(ImapState).values(
            reader=reader.intake.me, beat_at=utcnow() - timedelta(minutes=3)))
    [problem] = status_of(db, settings).problems
    assert problem.startswith(f"IMAP {MAILBOX}: its reader ({reader.intake.me}) has not "
                              "beaten since ")


def _beat_at(db: Database) -> datetime:
    with db.reading() as session:
        state = session.get(ImapState, MAILBOX)
        assert state is not None and state.beat_at is not None
        return state.beat_at


def test_a_restored_backup_replays_the_mail_taken_after_it_once_its_flag_is_cleared(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    """docs/admin.md, "Restoring a backup": the mail taken after the backup is still
    marked done on the server; the keyword taken off every mail, only it is taken
    again, and the rest is marked again."""
    settings = imap_settings(settings, dovecot, tmp_path)
    dovecot.deliver(mail("help", 1))
    dovecot.deliver(mail("help", 2))
    assert take_once(ImapIntake(db, settings)) == 2
    live = settings.database_url.removeprefix("sqlite:///")
    backup = tmp_path / "backup.sqlite3"
    with sqlite3.connect(live) as source, sqlite3.connect(backup) as copy:
        source.backup(copy)
    dovecot.deliver(mail("help", 3))
    assert take_once(ImapIntake(db, settings)) == 1
    db.dispose()
    with sqlite3.connect(backup) as copy, sqlite3.connect(live) as restored:
        copy.backup(restored)
    assert [m.raw.count(b"<m3@example.org>") for m in inbound(db)] == [0, 0]
    assert take_once(ImapIntake(db, settings)) == 0  # left so, mail 3 is lost
    curl = shutil.which("curl")
    if curl is not None:  # the docs' own command
        subprocess.run([curl, "-sS", "--cacert", str(dovecot.cert), "--user",
                        f"{USER}:{PASSWORD}", f"imaps://localhost:{dovecot.imaps}/INBOX",
                        "-X", "STORE 1:* -FLAGS ($PbmservDone)"], check=True,
                       capture_output=True)
    else:
        with dovecot.client() as client:
            client.select_folder("INBOX")
            client.remove_flags(client.search(["ALL"]), [imap.DONE_KEYWORD])
    assert not any(DONE in flags for flags in dovecot.messages().values())
    assert take_once(ImapIntake(db, settings)) == 1
    assert [m.raw.count(b"<m3@example.org>") for m in inbound(db)] == [0, 0, 1]
    assert all(DONE in flags for flags in dovecot.messages().values())


@pytest.mark.postgres
def test_one_reader_per_mailbox_and_its_heartbeat_on_postgres(
        dovecot: Dovecot, pg_url: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    settings = imap_settings(Settings(database_url=pg_url, maildir=tmp_path / "mail"),
                             dovecot, tmp_path, imap_keepalive=1)
    db = Database(pg_url)
    try:
        with Reader(db, settings) as first:
            first.waits()
            with Reader(db, settings) as second:
                wait_for(lambda: "is read by another pbmserv" in caplog.text,
                         lambda: "the second reader said nothing:\n" + caplog.text)
                assert status_of(db, settings).healthy
                first.intake.stop()
                second.waits()
                dovecot.deliver(mail("help", 1))
                wait_for(lambda: len(second.stored) == 1, lambda: "mail 1 not taken")
        assert first.stored == []
        [problem] = status_of(db, settings).problems
        assert problem.endswith("when its reader stopped (is 'pbmserv serve' running?)")
    finally:
        db.dispose()
