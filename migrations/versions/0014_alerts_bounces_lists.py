"""alerts to the administrator, bounces and suspended addresses, list headers

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 15:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

TZ = sa.DateTime(timezone=True)

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("opened_at", TZ, nullable=False),
        sa.Column("last_at", TZ, nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_detail", sa.Text(), nullable=False),
        sa.Column("last_detail", sa.Text(), nullable=False),
        sa.Column("items", sa.String(length=200), nullable=False),
        sa.Column("mailed_at", TZ, nullable=True),
        sa.Column("mailed_count", sa.Integer(), nullable=False),
        sa.Column("closed_at", TZ, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
    )
    op.create_index("ix_alerts_kind_closed_at", "alerts", ["kind", "closed_at"])
    op.create_table(
        "bounces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("at", TZ, nullable=False),
        sa.Column("outbox_id", sa.Integer(), nullable=True),
        sa.Column("inbound_id", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bounces")),
    )
    op.create_index("ix_bounces_address_at", "bounces", ["address", "at"])
    op.create_index(op.f("ix_bounces_at"), "bounces", ["at"])
    op.create_index(op.f("ix_bounces_outbox_id"), "bounces", ["outbox_id"])
    op.create_table(
        "mail_suspensions",
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("since", TZ, nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("address", name=op.f("pk_mail_suspensions")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("list_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("unsubscribe", sa.String(length=200), nullable=True))


def downgrade() -> None:
    # the mails that were bounced or held back are kept, as refused ones
    outbox = sa.table("outbox", sa.column("status", sa.String()))
    op.execute(outbox.update().where(outbox.c.status.in_(("bounced", "suppressed")))
               .values(status="failed"))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("unsubscribe")
        batch_op.drop_column("list_id")
    op.drop_table("mail_suspensions")
    op.drop_index(op.f("ix_bounces_outbox_id"), table_name="bounces")
    op.drop_index(op.f("ix_bounces_at"), table_name="bounces")
    op.drop_index("ix_bounces_address_at", table_name="bounces")
    op.drop_table("bounces")
    op.drop_index("ix_alerts_kind_closed_at", table_name="alerts")
    op.drop_table("alerts")
