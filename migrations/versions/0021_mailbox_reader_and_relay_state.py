"""one reader a mailbox with a heartbeat, its first read, mail keys, the relay's state

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 12:00:00

``imap_state`` holds who reads the mailbox (``reader`` until ``held_until``), the
reader's heartbeat, and when the mailbox was first read (with ``imap_since = "now"``
mail from before is left alone): a mailbox read before this revision counts as first
read when its first mail was taken, so nothing that came while the server was being
upgraded is left out. ``imap_messages.key`` knows a mail under any UID, as long as
the row is kept; rows taken before get the key of their stored mail where it is still
there. ``relay_state`` keeps the relay's last answer and the senders' back-off.
"""

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("imap_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reader", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("held_until", TZ, nullable=True))
        batch_op.add_column(sa.Column("beat_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("first_read_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("first_uidvalidity", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("first_uid", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("imap_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key", sa.String(length=32), nullable=True))
    op.create_index("ix_imap_messages_mailbox_key", "imap_messages", ["mailbox", "key"])
    state = sa.table("imap_state", sa.column("mailbox", sa.String()),
                     sa.column("since", TZ), sa.column("first_read_at", TZ))
    taken = sa.table("imap_messages", sa.column("mailbox", sa.String()),
                     sa.column("uidvalidity", sa.BigInteger()), sa.column("uid", sa.BigInteger()),
                     sa.column("inbound_id", sa.Integer()), sa.column("taken_at", TZ),
                     sa.column("key", sa.String()))
    first = (sa.select(sa.func.min(taken.c.taken_at))
             .where(taken.c.mailbox == state.c.mailbox).scalar_subquery())
    op.execute(state.update().values(first_read_at=sa.func.coalesce(first, state.c.since)))
    inbound = sa.table("inbound_messages", sa.column("id", sa.Integer()),
                       sa.column("dedupe_key", sa.String()))
    bind = op.get_bind()
    rows = bind.execute(sa.select(taken.c.mailbox, taken.c.uidvalidity, taken.c.uid,
                                  inbound.c.dedupe_key)
                        .join(inbound, inbound.c.id == taken.c.inbound_id)).all()
    for mailbox, uidvalidity, uid, dedupe_key in rows:
        bind.execute(taken.update()
                     .where(taken.c.mailbox == mailbox, taken.c.uidvalidity == uidvalidity,
                            taken.c.uid == uid)
                     .values(key=hashlib.sha256(dedupe_key.encode()).hexdigest()[:32]))
    op.create_table(
        "relay_state",
        sa.Column("relay", sa.String(length=400), nullable=False),
        sa.Column("failing_since", TZ, nullable=True),
        sa.Column("last_answer", sa.Text(), nullable=True),
        sa.Column("last_ok_at", TZ, nullable=True),
        sa.Column("retry_at", TZ, nullable=True),
        sa.Column("refusals", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("relay", name=op.f("pk_relay_state")),
    )


def downgrade() -> None:
    op.drop_table("relay_state")
    op.drop_index("ix_imap_messages_mailbox_key", table_name="imap_messages")
    with op.batch_alter_table("imap_messages", schema=None) as batch_op:
        batch_op.drop_column("key")
    with op.batch_alter_table("imap_state", schema=None) as batch_op:
        for column in ("first_uid", "first_uidvalidity", "first_read_at", "beat_at",
                       "held_until", "reader"):
            batch_op.drop_column(column)
