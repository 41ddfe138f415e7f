"""who sent a challenge, and new addresses waiting for their confirmation

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 23:00:00

- ``boards.challenger_id``: the player on the board whose own address sent its
  challenge (None: an address that plays none of its seats). A player's daily
  allowance of challenges counts strangers' challenges apart from each player's
  own, so a stranger can no longer use up a player's allowance (issue 34). Boards
  made before this revision count as strangers'.
- ``users.new_email``, ``new_email_at``: the address 'change address' asked for; it
  takes effect once it answers its confirmation mail (the code's hash is kept in
  ``confirm_code_hash``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("challenger_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f("fk_boards_challenger_id_users"), "users",
                                    ["challenger_id"], ["id"])
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("new_email", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("new_email_at", sa.DateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("new_email_at")
        batch_op.drop_column("new_email")
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_boards_challenger_id_users"),
                                 type_="foreignkey")
        batch_op.drop_column("challenger_id")
