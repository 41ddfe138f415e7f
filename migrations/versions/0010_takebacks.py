"""boards count the moves taken back (a move-by-reply address made before one is void)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 12:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BOTS = ("bot1", "bot2", "bot3")
#: the password hash of the bot accounts (0009): no password matches it
NO_PASSWORD = "!bot"


def upgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("takebacks", sa.Integer(), nullable=False,
                                      server_default="0"))
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.alter_column("takebacks", server_default=None)
    # the bot accounts are bots again where an older downgrade of 0009 left them plain
    # accounts (no password opens them: their hash is not an argon2 one)
    users = sa.table("users", sa.column("key", sa.String()), sa.column("bot", sa.String()),
                     sa.column("password_hash", sa.String()))
    op.execute(users.update()
               .where(users.c.key.in_(BOTS), users.c.password_hash == NO_PASSWORD,
                      users.c.bot.is_(None))
               .values(bot=users.c.key))


def downgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.drop_column("takebacks")
