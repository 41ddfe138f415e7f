"""Alembic environment: the URL comes from pbmserv's settings (or the caller)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from pbmserv.config import Settings
from pbmserv.db import models  # noqa: F401  (registers the tables)
from pbmserv.db.base import Base
from pbmserv.db.session import make_engine

config = context.config
target_metadata = Base.metadata


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    run(connection)
else:
    engine = make_engine(
        config.get_main_option("sqlalchemy.url") or Settings.load().database_url
    )
    with engine.connect() as conn:
        run(conn)
    engine.dispose()
