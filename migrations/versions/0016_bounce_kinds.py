"""what a bounce says of the address: hard, soft or a delay

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 10:00:00

Only a permanent failure of the address itself (no such mailbox or domain: 5.1.x,
5.2.1, 5.4.4) counts toward ``bounce_threshold``; a policy refusal (5.7.x), a full
mailbox (5.2.2) and any other permanent failure are soft and count toward
``soft_bounce_threshold``; a delay is kept to be seen and never counts
(``pbmserv.service.bounces``). The bounces kept before were all counted as the
first kind.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("bounces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=16), nullable=False,
                                      server_default="hard"))


def downgrade() -> None:
    with op.batch_alter_table("bounces", schema=None) as batch_op:
        batch_op.drop_column("kind")
