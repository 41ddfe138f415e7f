"""The database's sessions (pbmserv.db.session): a command's savepoint
(``begin_nested``) rolled back after a failed statement undoes its writes and leaves
the transaction usable (on PostgreSQL too, where the failure aborted it), and the
database's errors never carry the statement's parameters (a stored mail, a password
hash).  On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from pbmserv.db.base import utcnow
from pbmserv.db.models import User
from pbmserv.db.session import Database


def account(key: str, email: str | None = None) -> User:
    return User(key=key, userid=key.title(), password_hash="x",
                email=email or f"{key}@example.org", created_at=utcnow(), credential_changes=0)


def savepoints_and_errors(db: Database) -> None:
    with pytest.raises(IntegrityError) as caught, db.transaction() as session:
        session.add(account("dup", "secret-address@example.org"))
        session.flush()
        session.add(account("dup", "secret-address@example.org"))
    assert "secret-address" not in str(caught.value)
    with db.transaction() as session:
        session.add(account("kept"))
        with pytest.raises(IntegrityError), session.begin_nested():
            session.add(account("undone"))
            session.flush()
            session.add(account("undone"))
        with session.begin_nested():
            session.add(account("released"))
    with db.reading() as session:
        keys = set(session.scalars(select(User.key)))
        assert keys & {"dup", "kept", "undone", "released"} == {"kept", "released"}


def test_on_sqlite(db: Database) -> None:
    savepoints_and_errors(db)


@pytest.mark.postgres
def test_on_postgres(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        savepoints_and_errors(db)
    finally:
        db.dispose()
