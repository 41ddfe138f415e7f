"""each stored mail's size, and an index to count a sender's recent mail by it

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 22:00:00

The intake refuses a mail whose sender has had more than the quota stored in the last
24 hours (``sender_quota_mails``, ``sender_quota_bytes``): it counts the sender's
mails and their bytes from the index (sender, received_at, size) alone. The size is
the mail's as it came, kept when the text of an ignored mail is dropped.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("size", sa.Integer(), nullable=False,
                                      server_default="0"))
    inbound = sa.table("inbound_messages", sa.column("size", sa.Integer()),
                       sa.column("raw", sa.LargeBinary()))
    op.execute(inbound.update().values(size=sa.func.length(inbound.c.raw)))
    op.create_index("ix_inbound_messages_sender_received", "inbound_messages",
                    ["sender", "received_at", "size"])


def downgrade() -> None:
    op.drop_index("ix_inbound_messages_sender_received", table_name="inbound_messages")
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.drop_column("size")
