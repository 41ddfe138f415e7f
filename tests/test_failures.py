"""A bug while processing a mail: the mail is kept, its sender told, and it can be replayed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from pbmserv.cli import main
from pbmserv.commands.general import Help
from pbmserv.config import Settings
from pbmserv.db.models import InboundMessage, OutboxMessage
from pbmserv.db.session import Database
from tests.conftest import Mailer


def test_failed_mail_is_kept_and_replayed(mailer: Mailer, db: Database, settings: Settings,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(Help, "run", broken)
    out = mailer.send("help")
    assert [m.subject for m in out] == ["pbmserv: your mail is held for the administrator"]
    with db.transaction() as s:
        inbound = s.scalar(select(InboundMessage))
        assert inbound is not None and inbound.status == "failed"
        assert "simulated bug" in (inbound.error or "")
        number = inbound.id
    monkeypatch.undo()
    env = {"PBMSERV_DATABASE_URL": settings.database_url,
           "PBMSERV_MAILDIR": str(settings.maildir)}
    result = CliRunner().invoke(main, ["inbox", "replay", str(number)], env=env)
    assert result.output.strip() == f"message {number}: done"
    with db.transaction() as s:
        subjects = list(s.scalars(select(OutboxMessage.subject).order_by(OutboxMessage.id)))
    assert subjects[-1] == "pbmserv help"
    again = CliRunner().invoke(main, ["inbox", "replay", str(number)], env=env)
    assert "processed already" in again.output


def test_failed_mail_is_marked_without_parsing_again_and_blocks_nothing(
        db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    marked_without_parsing_again(db, settings, monkeypatch)


@pytest.mark.postgres
def test_postgres_failed_mail_is_marked_without_parsing_again_and_blocks_nothing(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL a mail is read and parsed only once this process holds it: once
    too, the failed one included."""
    db = Database(pg_url)
    try:
        marked_without_parsing_again(
            db, Settings(database_url=pg_url, maildir=tmp_path / "mail"), monkeypatch)
    finally:
        db.dispose()


def marked_without_parsing_again(db: Database, settings: Settings,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import pbmserv.processing.batches as processing
    from pbmserv.intake.store import store_message
    from pbmserv.mail.parse import parse_message
    from tests.conftest import make_mail

    parsed: list[bytes] = []
    real_parse = parse_message

    def counting_parse(raw: bytes, *args: object) -> object:
        parsed.append(raw)
        return real_parse(raw, *args)  # type: ignore[arg-type]

    def broken(*args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(processing, "parse_message", counting_parse)
    monkeypatch.setattr(Help, "run", broken)
    bad = store_message(db, make_mail("help", sender="carol@example.org"), "carol@example.org")
    good = store_message(db, make_mail("list", sender="dave@example.org"), "dave@example.org")
    # a mail the parser itself fails on: kept as failed, nobody known to tell
    unparsed = store_message(db, make_mail("list", body="parser bug here",
                                           sender="erin@example.org"), "erin@example.org")
    assert bad is not None and good is not None and unparsed is not None

    def parse_or_fail(raw: bytes, *args: object) -> object:
        if b"parser bug here" in raw:
            raise ValueError("simulated parser bug")
        return counting_parse(raw, *args)

    monkeypatch.setattr(processing, "parse_message", parse_or_fail)
    assert processing.process_pending(db, settings) == 3
    assert len(parsed) == 2  # each mail parsed once, the failed one too
    with db.transaction() as s:
        rows = {m.id: m for m in s.scalars(select(InboundMessage))}
        out = {m.inbound_id: m.subject for m in s.scalars(select(OutboxMessage))}
    assert rows[bad].status == "failed" and "RecursionError" in (rows[bad].error or "")
    assert rows[unparsed].status == "failed"
    assert "simulated parser bug" in (rows[unparsed].error or "")
    assert rows[good].status == "done"
    assert out == {bad: "pbmserv: your mail is held for the administrator",
                   good: "pbmserv games"}
