"""The server's own secret (the key of reply addresses) is made once, even when two
processes make their first reply at the same moment: the second reads the first's."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from pbmserv.db.models import ServerSecret
from pbmserv.db.session import Database
from pbmserv.service.reply_tokens import SECRET_NAME, server_secret


@pytest.mark.postgres
def test_two_first_uses_at_once_agree_on_one_secret(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        got: list[bytes] = []
        with Session(db.engine) as first:
            mine = server_secret(first, None)  # made, not yet committed

            def second() -> None:
                with Session(db.engine) as other, other.begin():
                    got.append(server_secret(other, None))

            thread = threading.Thread(target=second)
            thread.start()  # it sees no secret yet, and waits on the first's row
            with Session(db.engine) as watch:
                deadline = time.monotonic() + 30
                while not watch.scalar(text("SELECT count(*) FROM pg_locks WHERE NOT granted")):
                    assert time.monotonic() < deadline, "the second never waited"
                    watch.rollback()
                    time.sleep(0.01)
            first.commit()
            thread.join(30)
        assert got == [mine]
        with Session(db.engine) as check:
            row = check.get(ServerSecret, SECRET_NAME)
            assert row is not None and row.value.encode() == mine
    finally:
        db.engine.dispose()
