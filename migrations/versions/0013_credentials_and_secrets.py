"""credentials that revoke the old ones, mail found by address, outgoing secrets blanked

users.credential_changes counts changes of password or address: a move-by-reply
address signs it, so one made before a change is void.  ix_users_email finds the
account of an address (is a sender a stranger?).  outbox.blank_after_send marks a
mail whose body holds a live secret (a reset code): it is blanked once sent.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 15:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("credential_changes", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.create_index("ix_users_email", ["email"], unique=False)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.alter_column("credential_changes", server_default=None)
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("blank_after_send", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.alter_column("blank_after_send", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("blank_after_send")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index("ix_users_email")
        batch_op.drop_column("credential_changes")
