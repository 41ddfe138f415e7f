"""Digests: one mail at the chosen hour instead of a board mail per move, built from
the recorded events, never sent twice; and the html on/off preference."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from pbmserv.config import Settings
from pbmserv.db.models import MailPrefs, OutboxMessage
from pbmserv.db.session import Database
from pbmserv.db.status import DigestMode
from pbmserv.notifications import digest as digest_module
from pbmserv.service.mail_prefs import next_digest
from pbmserv.timers import RETRY_AFTER, run_digests
from tests.conftest import Mailer, check_mail_shape


def flat(text: str) -> str:
    return " ".join(text.split())


def digest_due(db: Database) -> None:
    """Time passes until every digest is due."""
    with db.transaction() as s:
        s.execute(update(MailPrefs).values(digest_next_at=datetime(2000, 1, 1, tzinfo=UTC)))


def new_mails(db: Database, after: int) -> list[OutboxMessage]:
    with db.transaction() as s:
        out = list(s.scalars(select(OutboxMessage).where(OutboxMessage.id > after)
                             .order_by(OutboxMessage.id)))
    check_mail_shape(out)
    return out


def last_id(db: Database) -> int:
    with db.transaction() as s:
        return s.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc())
                        .limit(1)) or 0


def test_next_digest_times() -> None:
    now = datetime(2026, 11, 22, 17, 30, tzinfo=UTC)
    assert next_digest(DigestMode.DAILY, 18, now) == datetime(2026, 11, 22, 18, tzinfo=UTC)
    assert next_digest(DigestMode.DAILY, 9, now) == datetime(2026, 11, 23, 9, tzinfo=UTC)
    assert next_digest(DigestMode.TWICE, 9, now) == datetime(2026, 11, 22, 21, tzinfo=UTC)
    assert next_digest(DigestMode.OFF, 9, now) is None


def test_a_digest_instead_of_a_mail_per_move(mailer: Mailer, db: Database,
                                             settings: Settings) -> None:
    mailer.signup("alice", "bob")
    text = flat(mailer.reply("notify alice pw-alice digest daily 7"))
    assert "gets a digest once a day at 7:00 UTC instead of a board mail per move" in text
    for _ in range(3):
        mailer.reply("honeydonuts challenge bob alice", sender="bob@example.org")
    before = last_id(db)
    for number, move in ((101, "a1-a2"), (102, "a1-b1"), (103, "a1-a2")):
        out = mailer.send(f"honeydonuts move {number} bob pw-bob {move}", f"Board {number}!",
                          sender="bob@example.org")
        assert [m.to_addr for m in out] == ["bob@example.org"]  # nothing to alice now
    # alice's own commands are answered at once
    assert "legal moves" in mailer.reply("honeydonuts moves 101")
    assert run_digests(db, settings) == 0  # not due yet
    digest_due(db)
    assert run_digests(db, settings) == 1
    [mail] = [m for m in new_mails(db, before) if m.subject.startswith("pbmserv digest")]
    assert mail.to_addr == "alice@example.org"
    assert mail.subject == "pbmserv digest: 3 boards wait for your move"
    body = flat(mail.body)
    for number, move in ((101, "a1-a2"), (102, "a1-b1"), (103, "a1-a2")):
        assert f"Honey Donuts board {number}: your move, #2." in body
        assert f"bob played {move} bob writes: Board {number}!" in body
    assert body.count("Summary of Honey Donuts Board") == 3
    # never twice: the next digest starts after what this one covered
    before = last_id(db)
    assert run_digests(db, settings) == 0
    digest_due(db)
    run_digests(db, settings)
    [again] = new_mails(db, before)
    assert "3 boards wait" in again.subject and "bob played" not in again.body


def test_a_crash_before_the_digest_mail_repeats_nothing(
        mailer: Mailer, db: Database, settings: Settings,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    mailer.signup("alice", "bob")
    mailer.reply("notify alice pw-alice digest twice")
    mailer.reply("honeydonuts challenge bob alice")
    mailer.reply("honeydonuts move 101 bob pw-bob a1-a2", sender="bob@example.org")
    digest_due(db)

    def crash(*args: object) -> None:
        raise RuntimeError("killed while writing the digest")

    before = last_id(db)
    with monkeypatch.context() as patch:
        patch.setattr(digest_module, "board_summary", crash)
        assert run_digests(db, settings) == 1  # looked at, failed, put off
    assert [r.getMessage() for r in caplog.records if "batch" in r.getMessage()] == [
        "digests: the batch of due digests failed (RuntimeError: killed while writing the "
        "digest); each digest is tried alone"]
    assert new_mails(db, before) == []
    assert run_digests(db, settings) == 0  # not tried again at once
    later = datetime.now(UTC) + RETRY_AFTER + timedelta(minutes=1)
    assert run_digests(db, settings, now=later) == 1
    [mail] = new_mails(db, before)
    assert "bob played a1-a2" in flat(mail.body)
    with db.transaction() as s:
        prefs = s.scalar(select(MailPrefs))
        assert prefs is not None and prefs.digest_next_at is not None
        assert prefs.digest_next_at > later - timedelta(minutes=1)


def test_mail_preferences_by_mail(mailer: Mailer) -> None:
    mailer.signup("alice")
    assert "gets a board mail for every move" in flat(mailer.reply("notify alice pw-alice"))
    assert "plain text only" in flat(mailer.reply("notify alice pw-alice html off"))
    assert "adds a drawn board" not in flat(mailer.reply("notify alice pw-alice html on"))
    text = flat(mailer.reply("notify alice pw-alice digest twice 20"))
    assert "twice a day, at 20:00 and 8:00 UTC" in text
    assert "a whole hour from 0 to 23" in mailer.reply("notify alice pw-alice digest daily 25")
    assert "write 'html on'" in flat(mailer.reply("notify alice pw-alice sometimes"))
    assert "a board mail for every move" in flat(mailer.reply("notify alice pw-alice digest off"))


def test_a_digest_covers_boards_played_and_watched_boards_still_mail(
        mailer: Mailer, db: Database) -> None:
    """The digest lists the boards a player plays; a board they only watch, or a result
    they asked to hear of, still comes as it happens."""
    mailer.signup("alice", "bob", "carol")
    mailer.reply("notify carol pw-carol digest daily")
    mailer.reply("notify carol pw-carol on", sender="carol@example.org")
    mailer.reply("honeydonuts challenge alice bob")
    mailer.reply("honeydonuts subscribe 101 carol pw-carol", sender="carol@example.org")
    out = mailer.send("honeydonuts move 101 alice pw-alice a1-a2")
    assert sorted(m.to_addr for m in out) == [
        "alice@example.org", "bob@example.org", "carol@example.org"]
    out = mailer.send("honeydonuts resign 101 bob pw-bob", sender="bob@example.org")
    assert "carol@example.org" in [m.to_addr for m in out]
