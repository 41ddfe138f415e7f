"""alerts that arrive: mails to the administrator marked, incidents acked and resolved

Bounces are kept when forgiven.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 02:00:00

``outbox.alert_id``: the incident a mail to the administrator is about (a refusal or
bounce of it is never counted against an address, and tells that the administrator
cannot be reached).  ``alerts.resolution``, ``acked_at``, ``acked_by``: how an
incident ended (resolved, quiet, acknowledged by whom).  ``bounces.cleared_at``: a
bounce forgiven (the address mailed the server again, or the administrator cleared
it) is kept, no longer counted toward a suspension, so the count of bounces only
grows.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("alert_id", sa.Integer(), nullable=True))
        batch_op.create_index("ix_outbox_alert_id", ["alert_id"])
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resolution", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("acked_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("acked_by", sa.String(length=200), nullable=True))
    with op.batch_alter_table("bounces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cleared_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("bounces", schema=None) as batch_op:
        batch_op.drop_column("cleared_at")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_column("acked_by")
        batch_op.drop_column("acked_at")
        batch_op.drop_column("resolution")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_alert_id")
        batch_op.drop_column("alert_id")
