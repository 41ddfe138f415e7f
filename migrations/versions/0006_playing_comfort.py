"""playing comfort: move by reply, HTML parts, digests

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 12:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reply_to", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("html_body", sa.Text(), nullable=True))
    op.create_table(
        "mail_prefs",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("html", sa.Boolean(), nullable=False),
        sa.Column("digest", sa.String(length=16), nullable=False),
        sa.Column("digest_hour", sa.Integer(), nullable=False),
        sa.Column("digest_next_at", TZ, nullable=True),
        sa.Column("digest_event_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_mail_prefs_user_id_users")),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_mail_prefs")),
    )
    op.create_index("ix_mail_prefs_digest_next_at", "mail_prefs", ["digest_next_at"])
    op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_server_secrets")),
    )


def downgrade() -> None:
    op.drop_table("server_secrets")
    op.drop_index("ix_mail_prefs_digest_next_at", table_name="mail_prefs")
    op.drop_table("mail_prefs")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("html_body")
        batch_op.drop_column("reply_to")
