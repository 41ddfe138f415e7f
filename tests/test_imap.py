"""The IMAP intake against a real Dovecot: mail taken once, marked done only after it
is stored, a crash at either step losing nothing and answering nothing twice, a
dropped connection, a wrong password and a missing folder told to the administrator.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select, update

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import ImapMessage, InboundMessage, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.intake.imap import (
    DONE_KEYWORD,
    OVER_QUOTA_RETRY,
    ImapIntake,
    connect,
    envelope_of,
    select_folder,
)
from pbmserv.operations import check_settings
from pbmserv.processing import process_message
from tests.conftest import make_mail
from tests.mailservers import (
    PASSWORD,
    USER,
    Dovecot,
    dovecot,
    wait_for,
)

__all__ = ["dovecot"]  # the fixture, used by name
DONE = DONE_KEYWORD.encode()
ADDRESS = "clubgames@games.test"


def imap_settings(settings: Settings, server: Dovecot, tmp_path: Path, **more: object) -> Settings:
    password = tmp_path / "imap-password"
    password.write_text(PASSWORD + "\n")
    values: dict[str, object] = {
        "imap": f"imaps://{USER}@localhost:{server.imaps}/INBOX",
        "imap_password_file": str(password), "imap_ca_file": str(server.cert),
        # the mail these tests put in the folder first is answered, as it was before
        # there was imap_since (tests/test_imap_cuts.py tests "now")
        "imap_since": "all",
    }
    values.update(more)
    loaded = Settings.from_values(values)
    return replace(settings, addresses=(ADDRESS,), imap=loaded.imap,
                   imap_password_file=loaded.imap_password_file,
                   imap_ca_file=loaded.imap_ca_file, imap_done=loaded.imap_done,
                   imap_verify=loaded.imap_verify, imap_poll=loaded.imap_poll,
                   imap_password=loaded.imap_password, imap_since=loaded.imap_since,
                   imap_keepalive=loaded.imap_keepalive)


def mail(subject: str, n: int, sender: str = "alice@example.org") -> bytes:
    return make_mail(subject, sender=sender, message_id=f"<m{n}@example.org>", To=ADDRESS)


def inbound(db: Database) -> list[InboundMessage]:
    with db.reading() as session:
        return list(session.scalars(select(InboundMessage).order_by(InboundMessage.id)))


def take_once(intake: ImapIntake) -> int:
    """One look at the mailbox, as the intake's thread makes after each IDLE."""
    client = connect(intake.settings)
    try:
        return intake.take_new(client, select_folder(client, intake.settings))
    finally:
        client.logout()


def test_mail_is_stored_once_then_flagged(dovecot: Dovecot, db: Database, settings: Settings,
                                          tmp_path: Path) -> None:
    settings = imap_settings(settings, dovecot, tmp_path)
    dovecot.deliver(b"Return-Path: <alice@example.org>\r\n" + mail("signup alice pw-long-1", 1))
    dovecot.deliver(mail("help", 2, sender="bob@example.org"))
    stored: list[int] = []
    intake = ImapIntake(db, settings, on_stored=stored.extend)
    assert take_once(intake) == 2
    rows = inbound(db)
    assert [r.sender for r in rows] == ["alice@example.org", "bob@example.org"]
    assert rows[0].envelope_from == "alice@example.org" and stored == [r.id for r in rows]
    assert b"signup alice pw-long-1" in rows[0].raw
    flags = dovecot.messages()
    assert len(flags) == 2 and all(DONE in f and b"\\Seen" in f for f in flags.values())
    # the next look takes nothing: both are marked done, and known by their UIDs
    assert take_once(intake) == 0 and len(inbound(db)) == 2
    with db.reading() as session:
        taken = session.scalars(select(ImapMessage).order_by(ImapMessage.uid)).all()
        assert [(t.uid, t.inbound_id, t.outcome) for t in taken] == [
            (uid, row.id, "stored") for uid, row in zip(sorted(flags), rows, strict=True)]
        assert {t.mailbox for t in taken} == {f"{USER}@localhost/INBOX"}


@pytest.mark.postgres
def test_mail_is_stored_once_then_flagged_on_postgres(dovecot: Dovecot, pg_url: str,
                                                      tmp_path: Path) -> None:
    settings = imap_settings(Settings(database_url=pg_url, maildir=tmp_path / "mail"),
                             dovecot, tmp_path)
    db = Database(pg_url)
    try:
        dovecot.deliver(mail("help", 1))
        intake = ImapIntake(db, settings)
        assert take_once(intake) == 1 and take_once(intake) == 0
        assert len(inbound(db)) == 1
        assert all(DONE in f for f in dovecot.messages().values())
    finally:
        db.dispose()


def test_config_check_logs_in(dovecot: Dovecot, settings: Settings, tmp_path: Path) -> None:
    good = imap_settings(settings, dovecot, tmp_path)
    [line] = [c for c in check_settings(good) if c.name == "imap"]
    assert (line.level, line.text) == (
        "ok", f"{USER}@localhost/INBOX: logged in, the folder is there")
    assert good.imap_password_file is not None
    good.imap_password_file.write_text("wrong\n")
    [line] = [c for c in check_settings(good) if c.name == "imap"]
    assert line.level == "FAIL" and f"localhost refused the login of {USER}" in line.text


def test_a_mail_whose_flag_was_taken_off_is_not_stored_again(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    settings = imap_settings(settings, dovecot, tmp_path)
    dovecot.deliver(mail("help", 1))
    intake = ImapIntake(db, settings)
    assert take_once(intake) == 1
    with dovecot.client() as client:  # someone reading the mailbox clears the mark
        client.select_folder("INBOX")
        client.remove_flags(client.search(["ALL"]), [DONE_KEYWORD])
    assert take_once(intake) == 0 and len(inbound(db)) == 1
    assert all(DONE in f for f in dovecot.messages().values())  # marked again


def test_delete_and_move(dovecot: Dovecot, db: Database, settings: Settings,
                         tmp_path: Path) -> None:
    dovecot.create_folder("Processed")
    dovecot.deliver(mail("help", 1))
    dovecot.deliver(mail("help", 2))
    moving = ImapIntake(db, imap_settings(settings, dovecot, tmp_path,
                                          imap_done="move:Processed"))
    assert take_once(moving) == 2
    assert dovecot.messages() == {} and len(dovecot.messages("Processed")) == 2
    dovecot.deliver(mail("help", 3))
    deleting = ImapIntake(db, imap_settings(settings, dovecot, tmp_path, imap_done="delete"))
    assert take_once(deleting) == 1
    assert dovecot.messages() == {} and len(dovecot.messages("Processed")) == 2
    assert len(inbound(db)) == 3
    # a process that died between marking a mail deleted and expunging it: the next
    # look expunges it (and leaves alone a mail someone else marked deleted)
    dovecot.deliver(mail("help", 4))
    dovecot.deliver(mail("help", 5))
    assert take_once(deleting) == 2 and dovecot.messages() == {}
    dovecot.deliver(mail("help", 6))
    with dovecot.client() as client:
        client.select_folder("INBOX")
        [uid] = client.search(["ALL"])
        client.add_flags([uid], [b"\\Deleted"])
    dovecot.deliver(mail("help", 7))
    before = len(inbound(db))
    with db.transaction() as session:  # as if help 7 were stored before the crash
        session.add(ImapMessage(mailbox=f"{USER}@localhost/INBOX",
                                uidvalidity=validity(dovecot), uid=uid + 1, outcome="stored"))
    with dovecot.client() as client:
        client.select_folder("INBOX")
        client.add_flags([uid + 1], [b"\\Deleted"])
    assert take_once(deleting) == 0 and len(inbound(db)) == before
    assert list(dovecot.messages()) == [uid]  # someone else's, still there


def test_a_mail_over_the_size_limit_is_answered_with_the_limit_and_left_in_the_folder(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    settings = replace(imap_settings(settings, dovecot, tmp_path), max_message_size=2048)
    dovecot.deliver(mail("help", 1) + b"x" * 4000 + b"\r\n")
    dovecot.deliver(mail("help", 2))
    intake = ImapIntake(db, settings)
    assert take_once(intake) == 2
    [big, small] = sorted(dovecot.messages().items())
    assert DONE not in big[1] and DONE in small[1]  # the big one stays for its owner
    assert ("is 4197 bytes, over max_message_size (2048): answered with the limit, left in the "
            "folder unmarked") in caplog.text
    [stored_big, _] = inbound(db)
    assert stored_big.size == 4197 and b"x" * 100 not in stored_big.raw  # its header alone
    assert b"Message-ID: <m1@example.org>\r\n" in stored_big.raw
    assert stored_big.raw.endswith(b"MIME-Version: 1.0\r\n\r\n")
    assert process_message(db, settings, stored_big.id) == "done"
    with db.reading() as session:
        [reply] = session.scalars(select(OutboxMessage)
                                  .where(OutboxMessage.inbound_id == stored_big.id)).all()
    assert reply.to_addr == "alice@example.org" and reply.in_reply_to == "<m1@example.org>"
    assert reply.subject == "pbmserv: your mail was not read"
    assert "larger than this server takes (at most\n2048 bytes)" in reply.body
    # known by its UID: neither fetched nor answered again
    assert take_once(intake) == 0 and len(inbound(db)) == 2


def test_a_mail_over_its_senders_quota_is_left_in_the_folder_for_later(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = replace(imap_settings(settings, dovecot, tmp_path), sender_quota_mails=1)
    dovecot.deliver(mail("help", 1))
    dovecot.deliver(mail("help", 2))
    intake = ImapIntake(db, settings)
    assert take_once(intake) == 1
    [first, second] = sorted(dovecot.messages().items())
    assert DONE in first[1] and DONE not in second[1]
    assert ("is not taken: <alice@example.org> has had 1 mails stored in the last 24 hours"
            in caplog.text)
    assert take_once(intake) == 0  # not fetched again before its time
    with db.transaction() as session:  # a day later the first leaves the window
        session.execute(update(InboundMessage).values(
            received_at=utcnow() - timedelta(days=1, minutes=1)))
    later = time.monotonic() + OVER_QUOTA_RETRY + 1
    monkeypatch.setattr("pbmserv.intake.imap.time.monotonic", lambda: later)
    assert take_once(intake) == 1
    assert all(DONE in flags for flags in dovecot.messages().values())


def test_envelope_of() -> None:
    assert envelope_of(b"Return-Path: <a@b.org>\r\nFrom: c@d.org\r\n\r\nx") == "a@b.org"
    assert envelope_of(b"return-path: <>\nFrom: MAILER-DAEMON\n\nx") == "<>"
    assert envelope_of(b"From: c@d.org\r\n\r\nReturn-Path: <x@y>\r\n") == ""


def test_wrong_password_and_missing_folder_are_one_line_and_a_status(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    wrong = imap_settings(settings, dovecot, tmp_path)
    assert wrong.imap_password_file is not None
    wrong.imap_password_file.write_text("not-the-password\n")
    intake = ImapIntake(db, wrong)
    intake.start()
    try:
        wait_for(lambda: "refused the login" in caplog.text, lambda: caplog.text)
    finally:
        intake.stop()
    lines = [r for r in caplog.records if r.levelname == "ERROR"]
    [line] = [r.getMessage() for r in lines]
    said, _, wait = line.rpartition("; trying again in ")
    assert said == (
        f"IMAP {USER}@localhost/INBOX: localhost refused the login of {USER} "
        "([AUTHENTICATIONFAILED] Authentication failed.): check the password "
        "(imap_password_file), and whether the provider wants an app password or IMAP "
        "turned on")
    assert 96 <= int(wait.removesuffix("s")) <= 144  # two minutes, give or take a fifth
    status = status_of(wrong)
    assert status.exit_code == 1
    assert (f"problem  IMAP {USER}@localhost/INBOX: localhost refused the login of {USER}"
            in status.output)
    assert f"imap     {USER}@localhost/INBOX: cannot be read since" in status.output

    missing = imap_settings(settings, dovecot, tmp_path, imap=(
        f"imaps://{USER}@localhost:{dovecot.imaps}/Games"))
    caplog.clear()
    intake = ImapIntake(db, missing)
    intake.start()
    try:
        wait_for(lambda: "does not exist" in caplog.text, lambda: caplog.text)
    finally:
        intake.stop()
    status = status_of(missing)
    assert status.exit_code == 1
    assert (f"problem  IMAP {USER}@localhost/Games: the folder 'Games' does not exist in the "
            f"mailbox of {USER} at localhost; it has: INBOX") in status.output


def test_an_untrusted_certificate_is_refused(dovecot: Dovecot, db: Database,
                                             settings: Settings, tmp_path: Path) -> None:
    untrusting = replace(imap_settings(settings, dovecot, tmp_path), imap_ca_file=None)
    intake = ImapIntake(db, untrusting)
    with pytest.raises(Exception, match=r"is not trusted .*set imap_ca_file"):
        connect(intake.settings)
    # turned off for a test host, the same server is read
    dovecot.deliver(mail("help", 1))
    assert take_once(ImapIntake(db, replace(untrusting, imap_verify=False))) == 1


def test_starttls_on_the_imap_port(dovecot: Dovecot, db: Database, settings: Settings,
                                   tmp_path: Path) -> None:
    dovecot.deliver(mail("help", 1))
    intake = ImapIntake(db, imap_settings(settings, dovecot, tmp_path, imap=(
        f"imap://{USER}@localhost:{dovecot.imap}/INBOX")))
    assert take_once(intake) == 1


def status_of(settings: Settings) -> Result:
    env = {"PBMSERV_CONFIG": "", "PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_IMAP": settings.imap.url if settings.imap else "off"}
    return CliRunner().invoke(main, ["status"], env=env)


def validity(server: Dovecot) -> int:
    with server.client() as client:
        return int(client.select_folder("INBOX")[b"UIDVALIDITY"])


def test_a_mail_that_comes_between_the_search_and_the_idle_ends_the_idle(
        dovecot: Dovecot, db: Database, settings: Settings, tmp_path: Path) -> None:
    """The server tells of it with its "+ idling" (read into the client's buffer with
    it, where no poll of the socket sees it): IDLE must end at once, not at its renewal
    minutes later."""
    intake = ImapIntake(db, imap_settings(settings, dovecot, tmp_path))
    client = connect(intake.settings)
    try:
        uidvalidity = select_folder(client, intake.settings)
        assert intake.take_new(client, uidvalidity) == 0
        dovecot.deliver(mail("help", 1))  # after the SEARCH, before the IDLE
        ended = threading.Event()

        def idle() -> None:
            intake._idle(client)
            ended.set()

        waiter = threading.Thread(target=idle)
        waiter.start()
        wait_for(ended.is_set, lambda: "IDLE did not end for the mail that came before it")
        waiter.join()
        assert intake.take_new(client, uidvalidity) == 1
    finally:
        intake._stopping.set()
        client.logout()
