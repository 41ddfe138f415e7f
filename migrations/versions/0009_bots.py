"""bot accounts: bot1, bot2 and bot3 on every server

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22 13:00:00

"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BOTS = ("bot1", "bot2", "bot3")
#: not an argon2 hash: no password ever matches it
NO_PASSWORD = "!bot"


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bot", sa.String(length=16), nullable=True))
        batch_op.create_index(batch_op.f("ix_users_bot"), ["bot"], unique=False)
    users = sa.table("users", sa.column("key", sa.String()), sa.column("userid", sa.String()),
                     sa.column("password_hash", sa.String()), sa.column("email", sa.String()),
                     sa.column("created_at", sa.DateTime(timezone=True)),
                     sa.column("bot", sa.String()))
    connection = op.get_bind()
    now = datetime.now(UTC)
    if connection.dialect.name == "sqlite":
        now = now.replace(tzinfo=None)
    for name in BOTS:
        taken = connection.execute(sa.select(users.c.password_hash)
                                   .where(users.c.key == name)).first()
        if taken is None:
            op.execute(users.insert().values(key=name, userid=name, password_hash=NO_PASSWORD,
                                             email=f"{name}@bots.invalid", created_at=now,
                                             bot=name))
        elif taken.password_hash == NO_PASSWORD:  # the bot itself, from before a downgrade
            op.execute(users.update().where(users.c.key == name).values(bot=name))
        # else a person took the name first and keeps it; that bot is missing


def downgrade() -> None:
    # the bot accounts stay, with their games: no password opens them, and an upgrade
    # makes them bots again
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_bot"))
        batch_op.drop_column("bot")
