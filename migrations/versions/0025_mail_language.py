"""a player may choose the language of the server's mail to them

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27 02:00:00

``notify <userid> <password> language de`` (or the Content-Language of the signup
mail) chooses the language of a player's replies and board mails (pbmserv.i18n); none
chosen is English.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mail_prefs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("language", sa.String(length=8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mail_prefs", schema=None) as batch_op:
        batch_op.drop_column("language")
