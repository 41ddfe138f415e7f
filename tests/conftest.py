"""Shared fixtures: a migrated database, settings with a Maildir, mail helpers."""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv import logs
from pbmserv.config import Settings
from pbmserv.db.migrate import upgrade
from pbmserv.db.models import InboundMessage, OutboxMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus, OutboxStatus
from pbmserv.intake.store import store_message
from pbmserv.logs import AUDIT, MARK
from pbmserv.processing import process_message
from pbmserv.render import columns
from pbmserv.service.accounts import MIN_PASSWORD
from pbmserv.service.passwords import hash_password

_counter = iter(range(1, 10**9))
#: set by .ci/run, where every peer is installed and PostgreSQL runs: a test that would
#: skip (a peer missing, PBMSERV_TEST_POSTGRES_URL unset) fails instead, so that a
#: failed install cannot turn CI green by skipping what it could not run
NO_SKIPS = "PBMSERV_TEST_NO_SKIPS"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and os.environ.get(NO_SKIPS) and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, but {NO_SKIPS} is set (every test must run): {reason}"


@pytest.fixture(autouse=True)
def no_settings_file() -> Iterator[None]:
    """No test reads this machine's /etc/pbmserv/pbmserv.toml (or logs at info level to
    the CLI's output): settings come from the test alone (a patch of its own, which a
    test's monkeypatch.undo() leaves alone).  A command's log setup ends with the test."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PBMSERV_CONFIG", "")
        patch.setenv("PBMSERV_LOG_LEVEL", "warning")
        # the administrator's audit lines of the commands tests run stay off this
        # machine's syslog (a test that wants them gives a socket of its own)
        patch.setattr(logs, "SYSLOG_SOCKET", "/nonexistent/pbmserv-test/log")
        yield
    for logger in (logging.getLogger(), logging.getLogger(AUDIT)):
        for handler in list(logger.handlers):
            if getattr(handler, MARK, False):
                logger.removeHandler(handler)
                handler.close()
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("pbmserv").setLevel(logging.NOTSET)
    logging.raiseExceptions = True  # deliver turns it off


@pytest.fixture(scope="session")
def migrated_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file built by the real migrations, copied for each test."""
    path = tmp_path_factory.mktemp("template") / "template.sqlite3"
    db = Database(f"sqlite:///{path}")
    upgrade(db)
    db.dispose()
    return path


@pytest.fixture
def db_url(tmp_path: Path, migrated_file: Path) -> str:
    path = tmp_path / "pbmserv.sqlite3"
    shutil.copy(migrated_file, path)
    return f"sqlite:///{path}"


@pytest.fixture
def settings(tmp_path: Path, db_url: str) -> Settings:
    return Settings(database_url=db_url, maildir=tmp_path / "mail")


@pytest.fixture
def db(settings: Settings) -> Iterator[Database]:
    database = Database(settings.database_url)
    yield database
    database.dispose()


def make_mail(subject: str, body: str = "", sender: str = "alice@example.org",
              message_id: str | None = None, **headers: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = headers.pop("To", "pbmserv@localhost")
    msg["Subject"] = subject
    msg["Message-ID"] = message_id or f"<test{next(_counter)}@example.org>"
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(body or "\n")
    return msg.as_bytes(policy=policy.SMTP)


#: a JSON record by mail may hold a long string (a comment) on one line
LONG_JSON_LINE = re.compile(r' *"[a-z_]+": ".*",?')
#: a line longer than 76 columns may hold one URL, indented, and nothing else
LONG_URL_LINE = re.compile(r" *(> ?)*<?(https?://|ftp://|www\.|mailto:)\S+")


def check_mail_shape(mails: list[OutboxMessage]) -> None:
    """Every mail the server sends: lines of at most 76 columns, a wide character
    counted as two (but for a long URL
    alone on its line, and a long string in a JSON record: they are never cut), no
    trailing blanks."""
    for mail in mails:
        for line in mail.body.split("\n"):
            assert columns(line) <= 76 or LONG_URL_LINE.fullmatch(line) or (
                mail.subject.endswith("(JSON)") and LONG_JSON_LINE.fullmatch(line)), \
                f"{mail.subject!r}: line of {len(line)}: {line!r}"
            assert line == line.rstrip(), f"{mail.subject!r}: trailing blank: {line!r}"


class Mailer:
    """Drives mail through the real store and processor; reads the outbox."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    def send(self, subject: str, body: str = "", sender: str = "alice@example.org",
             **headers: str) -> list[OutboxMessage]:
        return self.send_raw(make_mail(subject, body, sender, **headers), sender)

    def send_raw(self, raw: bytes, envelope_from: str = "alice@example.org") -> list[OutboxMessage]:
        stored = store_message(self.db, raw, envelope_from)
        assert stored is not None
        process_message(self.db, self.settings, stored)
        with self.db.transaction() as session:
            out = list(session.scalars(
                select(OutboxMessage).where(OutboxMessage.inbound_id == stored)
                .order_by(OutboxMessage.id)
            ))
        check_mail_shape(out)
        return out

    def reply(self, subject: str, body: str = "", sender: str = "alice@example.org") -> str:
        """Send a mail and return the body of the one reply to the sender."""
        out = self.send(subject, body, sender)
        replies = [m for m in out if m.in_reply_to]
        assert len(replies) == 1, [m.subject for m in out]
        return replies[0].body

    def signup(self, *userids: str) -> None:
        """Accounts ``uid`` with the password ``pw-uid``, at ``uid@example.org``, confirmed
        as their players would: each replies to the reply to its signup (whose Subject is
        the command that confirms it).  One shorter than a new password may be (pw-bob)
        is given as an account from before that rule has it: signed up with a long one,
        then set straight in the database (a short old password still opens its
        account)."""
        for uid in userids:
            password = f"pw-{uid}"
            short = len(password) < MIN_PASSWORD
            out = self.send(f"signup {uid} {password}{'-long' if short else ''}",
                            sender=f"{uid}@example.org")
            [reply] = [m for m in out if m.in_reply_to]
            self.answer(reply)
            if short:
                with self.db.transaction() as session:
                    user = session.scalar(select(User).where(User.key == uid.lower()))
                    assert user is not None
                    user.password_hash = hash_password(password)

    def answer(self, mail: OutboxMessage) -> list[OutboxMessage]:
        """Reply to a mail of the server as a mail program does: 'Re: ' and its Subject,
        the mail quoted below; from the address it went to."""
        quoted = "\n".join("> " + line for line in mail.body.splitlines())
        return self.send(f"Re: {mail.subject}", f"\n\nOn a day, pbmserv wrote:\n{quoted}",
                         sender=mail.to_addr)


@pytest.fixture
def mailer(db: Database, settings: Settings) -> Mailer:
    return Mailer(db, settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_settled(db: Database, limit: float = 60.0) -> None:
    """Until every stored mail is processed and no queued mail waits to be sent: the
    positive signal after which a test may say that no more mail comes (a fixed sleep
    says nothing on a busy machine).  For a server whose intake, workers and sender
    run, and mail that was all acknowledged (stored) before this is called."""
    deadline = time.monotonic() + limit
    while True:
        with db.reading() as session:
            unread = session.scalar(select(func.count()).select_from(InboundMessage)
                                    .where(InboundMessage.status == InboundStatus.NEW))
            unsent = session.scalar(select(func.count()).select_from(OutboxMessage)
                                    .where(OutboxMessage.status == OutboxStatus.PENDING))
        if not unread and not unsent:
            return
        assert time.monotonic() < deadline, \
            f"after {limit} s, {unread} mail(s) not processed and {unsent} not sent"
        time.sleep(0.05)


def text_of(mail: EmailMessage) -> str:
    """The plain text of a mail the server sent (beside an HTML part or alone)."""
    part = mail.get_body(preferencelist=("plain",))
    assert isinstance(part, EmailMessage)
    return str(part.get_content())


def read_maildir(maildir: Path) -> list[EmailMessage]:
    new = maildir / "new"
    if not new.is_dir():
        return []
    out = []
    for path in sorted(new.iterdir(), key=lambda p: p.stat().st_mtime_ns):
        msg = message_from_bytes(path.read_bytes(), policy=policy.default)
        assert isinstance(msg, EmailMessage)
        out.append(msg)
    return out


@contextmanager
def postgres_database(migrated: bool) -> Iterator[str]:
    """A fresh PostgreSQL database (needs PBMSERV_TEST_POSTGRES_URL), dropped after."""
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = os.environ.get("PBMSERV_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("PBMSERV_TEST_POSTGRES_URL is not set")
    name = f"pbmserv_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    if migrated:
        database = Database(url)
        upgrade(database)
        database.dispose()
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL database (needs PBMSERV_TEST_POSTGRES_URL)."""
    with postgres_database(migrated=True) as url:
        yield url


@pytest.fixture
def pg_blank_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database (needs PBMSERV_TEST_POSTGRES_URL)."""
    with postgres_database(migrated=False) as url:
        yield url
