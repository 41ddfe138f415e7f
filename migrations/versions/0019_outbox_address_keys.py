"""the limits per address count an address without +tag and case; mail to others

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-25 12:00:00

Every limit on mail to one address counts it in one form, lower case and without a
``+tag`` (``to_key``; ``rv+1@`` and ``RV@`` were counted apart). A mail made for
someone who did not ask for it (a challenge's board, a reset code, a confirmation)
keeps the key of the sender whose mail made it (``cause_key``), counted by
``mails_to_others_per_hour``; a reply counted by ``refusals_per_address_day`` keeps
its kind (``answer_kind``). Mail queued before is keyed by its address in lower case.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("to_key", sa.String(length=320), nullable=False,
                                      server_default=""))
        batch_op.add_column(sa.Column("cause_key", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("answer_kind", sa.String(length=16), nullable=True))
    op.execute("UPDATE outbox SET to_key = lower(to_addr)")
    op.drop_index("ix_outbox_recent", table_name="outbox")
    op.create_index("ix_outbox_recent", "outbox",
                    ["to_key", "created_at", "status", "in_reply_to"])
    op.create_index("ix_outbox_cause", "outbox", ["cause_key", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_outbox_cause", table_name="outbox")
    op.drop_index("ix_outbox_recent", table_name="outbox")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("answer_kind")
        batch_op.drop_column("cause_key")
        batch_op.drop_column("to_key")
    op.create_index("ix_outbox_recent", "outbox",
                    ["to_addr", "created_at", "status", "in_reply_to"])
