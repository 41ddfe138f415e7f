"""the IMAP intake: the UIDs taken from each mailbox, and how it stands

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 15:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "imap_messages",
        sa.Column("mailbox", sa.String(length=400), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=False),
        sa.Column("uid", sa.BigInteger(), nullable=False),
        sa.Column("inbound_id", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("taken_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("mailbox", "uidvalidity", "uid", name=op.f("pk_imap_messages")),
    )
    op.create_table(
        "imap_state",
        sa.Column("mailbox", sa.String(length=400), nullable=False),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("since", TZ, nullable=False),
        sa.Column("checked_at", TZ, nullable=False),
        sa.Column("idle", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("mailbox", name=op.f("pk_imap_state")),
    )


def downgrade() -> None:
    op.drop_table("imap_state")
    op.drop_table("imap_messages")
