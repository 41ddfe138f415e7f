"""A forgotten password, reset by mail: a one-time code to the account's own address."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from pbmserv.db.base import utcnow
from pbmserv.db.models import OutboxMessage, PasswordReset
from pbmserv.db.session import Database
from pbmserv.service.accounts import authenticate
from pbmserv.service.errors import PlayerError
from tests.conftest import Mailer, check_mail_shape

CODE = re.compile(r"reset alice ([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}) <new password>")


def code_mails(db: Database) -> list[OutboxMessage]:
    with db.reading() as s:
        return list(s.scalars(select(OutboxMessage).where(OutboxMessage.subject.like(
            "%code to reset%")).order_by(OutboxMessage.id)))


def ask(mailer: Mailer, db: Database, sender: str = "mallory@example.org") -> str:
    reply = mailer.reply("reset alice", sender=sender)
    mails = code_mails(db)
    found = CODE.search(mails[-1].body)
    assert found is not None
    assert found.group(1) not in reply  # the code only goes to the account's address
    return found.group(1)


def test_the_code_goes_to_the_account_only_and_sets_the_password(
        mailer: Mailer, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    mailer.signup("alice")
    reply = mailer.reply("reset alice", sender="mallory@example.org")
    assert "has been mailed to the address of the account" in " ".join(reply.split())
    [mail] = code_mails(db)
    assert mail.to_addr == "alice@example.org"
    assert "The request came from mallory@example.org." in " ".join(mail.body.split())
    check_mail_shape([mail])
    code = CODE.search(mail.body)
    assert code is not None and code.group(1) not in reply
    done = mailer.reply(f"reset alice {code.group(1).upper()} brand-new")
    assert "The password of alice has been changed" in done
    assert code.group(1) not in done and "brand-new" not in done
    with db.transaction() as s:
        assert authenticate(s, "alice", "brand-new", "x@example.org").userid == "alice"
        assert s.scalar(select(PasswordReset)) is None
    used = mailer.reply(f"reset alice {code.group(1)} another-one")  # once only
    assert "not a valid reset code" in used
    assert code.group(1) not in caplog.text and "brand-new" not in caplog.text


def test_one_code_per_ten_minutes_and_only_the_newest(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    first = ask(mailer, db)
    again = mailer.reply("reset alice", sender="mallory@example.org")
    assert "no new one is sent before" in " ".join(again.split())
    assert len(code_mails(db)) == 1
    with db.transaction() as s:
        s.execute(update(PasswordReset).values(requested_at=utcnow() - timedelta(minutes=11)))
    second = ask(mailer, db)
    assert second != first and len(code_mails(db)) == 2
    assert "not a valid reset code" in mailer.reply(f"reset alice {first} pw-new-one")
    assert "changed" in mailer.reply(f"reset alice {second} pw-new-one")


def test_an_expired_code_fails(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    code = ask(mailer, db)
    with db.transaction() as s:
        s.execute(update(PasswordReset).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert "not a valid reset code" in mailer.reply(f"reset alice {code} pw-new-one")


def test_wrong_codes_have_their_own_limit_per_address(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    code = ask(mailer, db)
    for n in range(5):
        reply = mailer.reply(f"reset alice aaaa-bbbb-ccc{n + 2} pw-new-one",
                             sender="guesser@example.org")
        assert "not a valid reset code" in reply
    locked = mailer.reply(f"reset alice {code} pw-new-one", sender="guesser@example.org")
    assert "so its reset codes are paused until" in " ".join(locked.split())
    with db.transaction() as s, pytest.raises(PlayerError):
        authenticate(s, "alice", "pw-new-one", "x@example.org")
    # wrong codes from one address hold up neither the account's password checks nor
    # the codes sent from another address
    with db.transaction() as s:
        assert authenticate(s, "alice", "pw-alice", "x@example.org").userid == "alice"
    assert "changed" in mailer.reply(f"reset alice {code} pw-new-one")


def test_reset_words(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    assert "there is no user 'nobody'" in mailer.reply("reset nobody")
    assert "give the code and the new password, or neither" in mailer.reply(
        "reset alice k7qm-4htp")
    code = ask(mailer, db)
    bad = mailer.reply(f"reset alice {code} has'quote")
    assert "may not contain spaces, quotes or colons" in bad
    assert code not in bad  # the command is quoted masked
    assert bad.startswith("> reset ...\n")  # not understood: quoted by its verb only
    assert "reset" in mailer.reply("help reset")
