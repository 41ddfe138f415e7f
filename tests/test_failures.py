"""A bug while processing a mail: the mail is kept, its sender told, and it can be replayed."""

from __future__ import annotations

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
