"""An address longer than any address is refused before the database, with a clear
answer: a command that names one gets a reply saying so (the mail is done, not
failed, and no administrator is alerted), an envelope sender gets an SMTP refusal.
On PostgreSQL, whose address columns are varchar(320), such an address used to fail
the mail's processing, keep it failed with its password in it, and alert the
administrator, again and again."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pbmserv.config import Settings
from pbmserv.db.models import Alert, InboundMessage, User
from pbmserv.db.session import Database
from pbmserv.db.status import InboundStatus
from pbmserv.intake.store import clean_envelope
from pbmserv.mail.addresses import MAX_ADDRESS
from pbmserv.server import Server
from tests.conftest import Mailer, free_port

#: 330 characters: over RFC 5321's 254 and over the columns' 320
LONG = "x" * 318 + "@example.org"
#: 262: over 254, under 320 (the database would take it, no relay would)
OVER = "y" * 250 + "@example.org"
#: exactly the longest taken
LONGEST = "z" * (MAX_ADDRESS - len("@example.org")) + "@example.org"


def check_long_addresses(db: Database, settings: Settings) -> None:
    mailer = Mailer(db, settings)
    mailer.signup("alice")
    for address in (LONG, OVER):
        said = " ".join(mailer.reply(f"signup bob pw-bob-long {address}",
                                     sender="bob@example.org").split())
        assert f"is {len(address)} characters long; a mail address has at most 254" in said
        said = " ".join(mailer.reply(f"change address alice pw-alice {address}").split())
        assert f"is {len(address)} characters long; a mail address has at most 254" in said
    # the longest address taken is taken
    said = mailer.reply(f"change address alice pw-alice {LONGEST}")
    assert "ERROR" not in said
    with db.reading() as session:
        statuses = set(session.scalars(select(InboundMessage.status)))
        assert statuses == {InboundStatus.DONE}  # none failed, none kept with a password
        assert session.scalar(select(func.count()).select_from(Alert)) == 0
        # taken, to be confirmed by the new address before it is alice's
        assert session.scalar(select(User.new_email).where(User.userid == "alice")) == LONGEST
        assert session.scalar(select(User.id).where(User.userid == "bob")) is None


def test_a_long_address_in_a_command_is_refused_with_a_reply(db: Database,
                                                             settings: Settings) -> None:
    check_long_addresses(db, settings)


@pytest.mark.postgres
def test_a_long_address_in_a_command_is_refused_on_postgres(pg_url: str,
                                                            tmp_path: Path) -> None:
    db = Database(pg_url)
    try:
        check_long_addresses(db, Settings(database_url=pg_url, maildir=tmp_path / "mail"))
    finally:
        db.dispose()


def test_a_long_envelope_is_never_stored_cut_short() -> None:
    """Cut to a length, a long address becomes another one (or none): it is dropped
    instead, and the mail's From is used."""
    assert clean_envelope(f"<{LONG}>") == "" and clean_envelope(OVER) == ""
    assert clean_envelope(f"<{LONGEST}>") == f"<{LONGEST}>"
    assert clean_envelope("<>") == "<>"


@pytest.fixture
def smtp(db: Database, settings: Settings) -> Iterator[smtplib.SMTP]:
    srv = Server(db, settings, "127.0.0.1", free_port(), interval=0.2, bots=False)
    srv.start()
    try:
        with smtplib.SMTP(srv.controller.hostname, srv.controller.port, timeout=10) as client:
            yield client
    finally:
        srv.stop()


def test_smtp_refuses_a_sender_longer_than_an_address(smtp: smtplib.SMTP) -> None:
    smtp.ehlo()
    code, text = smtp.mail(OVER)
    assert code == 553 and text.decode() == (
        f"5.1.7 The sender address is {len(OVER)} characters long; this server takes "
        "addresses of at most 254")
    code, _ = smtp.mail(LONGEST)
    assert code == 250
    code, _ = smtp.rcpt("pbmserv@localhost")
    assert code == 250
