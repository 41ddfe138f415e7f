"""the hourly count of mails to an address read from its index alone

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 22:30:00

Every mail queued counts the mails sent to its address in the last hour
(``pbmserv.notifications.outbox``), by address, time, status and whether it is a
reply. With only (to_addr, created_at) indexed, each mail counted was read from the
table, where SQLite finds its status and In-Reply-To behind the body (overflow pages
of a 14 KB board mail); with all four in the index, the count reads the index alone.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_outbox_recent", "outbox",
                    ["to_addr", "created_at", "status", "in_reply_to"])
    op.drop_index("ix_outbox_to_addr_created_at", table_name="outbox")


def downgrade() -> None:
    op.create_index("ix_outbox_to_addr_created_at", "outbox", ["to_addr", "created_at"])
    op.drop_index("ix_outbox_recent", table_name="outbox")
