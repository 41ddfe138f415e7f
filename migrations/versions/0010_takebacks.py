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


def upgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("takebacks", sa.Integer(), nullable=False,
                                      server_default="0"))
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.alter_column("takebacks", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.drop_column("takebacks")
