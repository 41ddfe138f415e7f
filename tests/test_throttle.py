"""Wrong passwords are throttled per account and per sender; passwords are never echoed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from pbmserv.cli import main
from pbmserv.config import Settings
from pbmserv.db.base import utcnow
from pbmserv.db.models import AuthThrottle, Move, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.service.throttle import lock_length
from tests.conftest import Mailer

PAUSED = "password checks are paused until"


def flat(text: str) -> str:
    return " ".join(text.split())


def start(mailer: Mailer) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("honeydonuts challenge alice bob")


def lock(db: Database, key: str) -> AuthThrottle | None:
    with db.transaction() as s:
        return s.get(AuthThrottle, key)


def time_passes(db: Database, amount: timedelta) -> None:
    with db.transaction() as s:
        for row in s.scalars(select(AuthThrottle)):
            row.last_failure_at -= amount
            if row.locked_until is not None:
                row.locked_until -= amount


def test_five_wrong_passwords_lock_the_account(mailer: Mailer, db: Database) -> None:
    start(mailer)
    for n in range(5):
        text = flat(mailer.reply(f"honeydonuts move 101 alice wrong{n} a1-a2",
                                 sender=f"guesser{n}@example.org"))
        assert "do not match" in text
    row = lock(db, "user:alice")
    assert row is not None and row.failures == 5 and row.locked_until is not None
    # locked: from any address but the account's own, even the right password is
    # refused, and the reply says until when
    text = flat(mailer.reply("honeydonuts move 101 alice pw-alice a1-a2",
                             sender="alice@work.example"))
    assert PAUSED in text and "minute" in text and "has been played" not in text
    assert ("Mail from the account's own address is not held up by others' wrong "
            "passwords.") in text
    assert lock(db, "user:alice").failures == 5  # type: ignore[union-attr]
    time_passes(db, timedelta(minutes=1, seconds=1))
    assert "has been played" in mailer.reply("honeydonuts move 101 alice pw-alice a1-a2",
                                             sender="alice@work.example")
    assert lock(db, "user:alice") is None  # a right password clears the count


def test_strangers_wrong_passwords_never_hold_up_the_owner(mailer: Mailer,
                                                           db: Database) -> None:
    """Issue 34: a stranger's guesses pause the strangers; the owner, writing from the
    account's own address, plays on, and their right password gives the strangers no
    fresh guesses."""
    start(mailer)
    lines = "\n".join(f"honeydonuts move 101 alice guess{n} a1-a2" for n in range(12))
    for n in range(3):  # the lock grows with every guess after it
        time_passes(db, timedelta(minutes=n + 1, seconds=1))
        mailer.reply("multiple", lines, sender=f"mallory{n}@example.net")
    row = lock(db, "user:alice")
    assert row is not None and row.locked_until is not None and row.failures == 7
    assert "has been played" in mailer.reply("honeydonuts move 101 alice pw-alice a1-a2",
                                             sender="alice@example.org")
    after = lock(db, "user:alice")  # still counted, still locked
    assert after is not None and (after.failures, after.locked_until) == (7, row.locked_until)
    text = flat(mailer.reply("honeydonuts resign 101 alice pw-alice",
                             sender="mallory9@example.net"))
    assert PAUSED in text and "You resigned" not in text


def test_the_lock_grows_with_every_failure_after_it(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    for n in range(5):
        mailer.reply(f"signoff alice bad{n}", sender=f"x{n}@example.org")
    first = lock(db, "user:alice")
    assert first is not None and first.locked_until is not None
    time_passes(db, timedelta(minutes=1, seconds=1))
    mailer.reply("signoff alice bad5", sender="x5@example.org")
    second = lock(db, "user:alice")
    assert second is not None and second.failures == 6 and second.locked_until is not None
    assert second.locked_until - second.last_failure_at == timedelta(minutes=2)
    assert [lock_length(n) for n in (5, 6, 7, 20, 40)] == [
        timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4),
        timedelta(days=1), timedelta(days=1)]


def test_a_quiet_quarter_hour_forgets_the_failures(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    for n in range(4):
        mailer.reply(f"signoff alice bad{n}", sender=f"x{n}@example.org")
    time_passes(db, timedelta(minutes=16))
    mailer.reply("signoff alice bad4", sender="x4@example.org")
    row = lock(db, "user:alice")
    assert row is not None and row.failures == 1 and row.locked_until is None


def test_multiple_counts_every_line(mailer: Mailer, db: Database) -> None:
    start(mailer)
    lines = "\n".join(f"honeydonuts move 101 alice guess{n} a1-a2" for n in range(8))
    text = mailer.reply("multiple", lines, sender="mallory@example.org")
    # each refusal is said once, with how many more lines were refused in its words
    assert text.count("do not match") == 1 and flat(text).count(PAUSED) == 1
    assert "(and 4 more lines of this mail refused in the same words)" in text
    assert "(and 2 more lines of this mail refused in the same words)" in text
    assert lock(db, "user:alice").failures == 5  # type: ignore[union-attr]


def test_one_sender_guessing_many_accounts_is_locked(mailer: Mailer, db: Database) -> None:
    start(mailer)
    mailer.signup("carol")
    for n in range(5):
        mailer.reply(f"signoff user{n} guess", sender="mallory@example.org")
    assert lock(db, "sender:mallory@example.org").locked_until is not None  # type: ignore[union-attr]
    # from that address nothing is checked; from elsewhere all is well
    text = flat(mailer.reply("change address carol pw-carol c@example.org",
                             sender="mallory@example.org"))
    assert PAUSED in text
    assert "moves to c@example.org once that address confirms it" in flat(mailer.reply(
        "change address carol pw-carol c@example.org", sender="carol@example.org"))


def test_admin_can_clear_a_lock(mailer: Mailer, db: Database, settings: Settings) -> None:
    start(mailer)
    for n in range(5):
        mailer.reply(f"honeydonuts resign 101 alice no{n}", sender=f"g{n}@example.org")
    env = {"PBMSERV_DATABASE_URL": settings.database_url}
    listed = CliRunner().invoke(main, ["throttle", "list"], env=env)
    assert "user:alice  5 failure(s)" in listed.output and "locked until" in listed.output
    assert CliRunner().invoke(main, ["users", "unlock", "Alice"], env=env).output == \
        "Alice: unlocked\n"
    assert "You resigned" in mailer.reply("honeydonuts resign 101 alice pw-alice")
    cleared = CliRunner().invoke(main, ["throttle", "clear", "--all"], env=env)
    assert cleared.output == "cleared 5 key(s)\n"  # the five guessing senders


@pytest.mark.parametrize("command", [
    "honeydonuts move bob pw-bob 101 a1-a2",  # words in the wrong order
    "honeydonuts move 101 bob pw-bob a1-a2 and-more",  # a wrapped line's extra words
    "change passwd bob pw-bob pw-new",
    "change carol pw-bob",
    "honeydonuts resign bob pw-bob",
    "honeydonuts resgn 101 bob pw-bob",
    "signoff bob pw-bob extra",
])
def test_malformed_commands_quote_no_password(mailer: Mailer, db: Database,
                                             command: str) -> None:
    mailer.signup("alice", "bob")
    out = mailer.send(command, sender="bob@example.org")
    assert out and all("pw-bob" not in m.body and "pw-new" not in m.body
                       and "pw-bob" not in m.subject for m in out)


def test_pasted_command_in_the_body_is_masked_for_the_opponent(mailer: Mailer,
                                                               db: Database) -> None:
    start(mailer)
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2",
                      "honeydonuts move 101 alice pw-alice a1-a2\nyour move, bob")
    board_mail = next(m for m in out if m.to_addr == "bob@example.org")
    assert "honeydonuts move 101 alice ***** a1-a2" in board_mail.body
    assert "your move, bob" in board_mail.body
    with db.transaction() as s:
        bodies = " ".join(s.scalars(select(OutboxMessage.body)))
        comment = s.scalar(select(Move.comment))
    assert "pw-alice" not in bodies and "pw-alice" not in (comment or "")


def test_lock_expires_on_its_own(mailer: Mailer, db: Database) -> None:
    mailer.signup("alice")
    for n in range(5):
        mailer.reply(f"signoff alice bad{n}", sender=f"x{n}@example.org")
    row = lock(db, "user:alice")
    assert row is not None and row.locked_until is not None
    assert row.locked_until <= utcnow() + timedelta(minutes=1)


def test_a_code_key_is_the_senders_mailbox_whatever_its_tag_and_case() -> None:
    """Wrong codes from rv+1@ and RV+2@ count as one sender's, as wrong passwords do."""
    from pbmserv.service.throttle import code_key

    assert code_key("code", "Alice", "Rv+1@Example.org") == "code:alice|rv@example.org"
    assert code_key("confirm", "alice", "rv+2@example.org") == "confirm:alice|rv@example.org"
