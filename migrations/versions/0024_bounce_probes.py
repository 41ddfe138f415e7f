"""a suspended address is probed: how often, when last, and with which mail

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27 03:00:00

As GNU Mailman does, an address no longer mailed because it bounces is sent a probe
every ``bounce_probe_days`` (at most a few times): a mail to it from its own VERP
address; if no bounce of it comes back within a day, it is mailed again
(pbmserv.bounces.probes).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mail_suspensions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("probes", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("probed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("probe_outbox_id", sa.Integer(), nullable=True))
    with op.batch_alter_table("mail_suspensions", schema=None) as batch_op:
        batch_op.alter_column("probes", server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("mail_suspensions", schema=None) as batch_op:
        batch_op.drop_column("probe_outbox_id")
        batch_op.drop_column("probed_at")
        batch_op.drop_column("probes")
