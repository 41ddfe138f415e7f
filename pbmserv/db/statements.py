"""Hand-made statements: SQL the ORM cannot run as cheaply, each kept for a measured
reason (docs/benchmarks.md, "Issue 35: the ORM again").  Everything else reaches the
database through the ORM.  Public SQLAlchemy API only: a typed ``text`` statement run
through the session's Connection.  Only pbmserv.db and the intake may import this
module (an import contract in pyproject.toml).

- ``store_mail``: INSERT ... ON CONFLICT (dedupe_key) DO NOTHING RETURNING id, the
  same SQL on SQLite and PostgreSQL, for every mail the intake stores.  SQLAlchemy's
  own ``insert().on_conflict_do_nothing()`` has no cache key: it is compiled again
  for every mail, 1,000 Python calls against 130 for this one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from pbmserv.db.models import InboundMessage

#: the columns the intake gives a stored mail
STORED = ("raw", "size", "envelope_from", "sender", "dedupe_key", "received_at", "status")
_COLUMNS = InboundMessage.__table__.c
_STORE = text(
    f"INSERT INTO inbound_messages ({', '.join(STORED)}) "
    f"VALUES ({', '.join(':' + name for name in STORED)}) "
    "ON CONFLICT (dedupe_key) DO NOTHING RETURNING id"
).bindparams(*(bindparam(name, type_=_COLUMNS[name].type) for name in STORED))


def store_mail(session: Session, values: dict[str, Any]) -> int | None:
    """Store one mail (``values``: the columns of STORED) in the session's transaction;
    its id, or None if a mail of the same dedupe key is stored already."""
    row = session.connection().execute(_STORE, values).first()
    return None if row is None else int(row[0])
