"""a player may ask for the board in words with every board mail

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 10:00:00

``notify <userid> <password> words on`` adds to a player's board mails a description
of the position that a screen reader reads well (pbmserv.notifications.words); it is
off for everyone until asked for.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mail_prefs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("words", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table("mail_prefs", schema=None) as batch_op:
        batch_op.alter_column("words", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("mail_prefs", schema=None) as batch_op:
        batch_op.drop_column("words")
