"""game service: statuses, requests, clocks, undo, queues, spectators, seeks, events

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 11:00:00

"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("position_version", sa.Integer(), nullable=False,
                                      server_default="1"))
        batch_op.add_column(sa.Column("previous_position", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("previous_version", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("status", sa.String(length=16), nullable=False,
                                      server_default="active"))
        batch_op.add_column(sa.Column("termination", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("request_kind", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("request_by", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("nag_days", sa.Integer(), nullable=False,
                                      server_default="7"))
        batch_op.add_column(sa.Column("forfeit_days", sa.Integer(), nullable=False,
                                      server_default="21"))
        batch_op.add_column(sa.Column("turn_started_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("nags_sent", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("clock_due_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("watchers", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("queued", sa.Integer(), nullable=False,
                                      server_default="0"))
    boards = sa.table(
        "boards", sa.column("finished", sa.Boolean()), sa.column("status", sa.String()),
        sa.column("offer_by", sa.Integer()), sa.column("request_kind", sa.String()),
        sa.column("request_by", sa.Integer()), sa.column("updated_at", TZ),
        sa.column("turn_started_at", TZ), sa.column("clock_due_at", TZ),
    )
    op.execute(boards.update().where(boards.c.finished.is_(True)).values(status="finished"))
    op.execute(boards.update().where(boards.c.offer_by.is_not(None))
               .values(request_kind="draw", request_by=boards.c.offer_by))
    # the older server had no clocks: those of the boards in play start now (a board
    # idle for a month must not be lost on time at the first look), and the clock looks
    # at each at once to work out its first deadline
    now = datetime.now(UTC)
    if op.get_bind().dialect.name == "sqlite":
        now = now.replace(tzinfo=None)
    op.execute(boards.update().where(boards.c.finished.is_(True))
               .values(turn_started_at=boards.c.updated_at))
    op.execute(boards.update().where(boards.c.finished.is_(False))
               .values(turn_started_at=now, clock_due_at=now))
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.alter_column("turn_started_at", existing_type=TZ, nullable=False)
        batch_op.alter_column("position_version", server_default=None)
        batch_op.alter_column("status", server_default=None)
        batch_op.alter_column("nag_days", server_default=None)
        batch_op.alter_column("forfeit_days", server_default=None)
        batch_op.alter_column("nags_sent", server_default=None)
        batch_op.alter_column("watchers", server_default=None)
        batch_op.alter_column("queued", server_default=None)
        batch_op.drop_column("finished")
        batch_op.drop_column("offer_by")
        batch_op.create_index("ix_boards_status_clock_due_at", ["status", "clock_due_at"])

    with op.batch_alter_table("board_players", schema=None) as batch_op:
        batch_op.add_column(sa.Column("time_used", sa.Integer(), nullable=False,
                                      server_default="0"))
    with op.batch_alter_table("board_players", schema=None) as batch_op:
        batch_op.alter_column("time_used", server_default=None)

    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.add_column(sa.Column("turn_started_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("nags_before", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("seconds_used", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("automatic", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.alter_column("nags_before", server_default=None)
        batch_op.alter_column("seconds_used", server_default=None)
        batch_op.alter_column("automatic", server_default=None)

    op.create_table(
        "board_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("board_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_board_events_board_id_boards")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_events")),
    )
    op.create_index(op.f("ix_board_events_board_id"), "board_events", ["board_id"])
    op.create_table(
        "subscriptions",
        sa.Column("board_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_subscriptions_board_id_boards")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_subscriptions_user_id_users")),
        sa.PrimaryKeyConstraint("board_id", "user_id", name=op.f("pk_subscriptions")),
    )
    op.create_index(op.f("ix_subscriptions_user_id"), "subscriptions", ["user_id"])
    op.create_table(
        "game_notify",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_game_notify_user_id_users")),
        sa.PrimaryKeyConstraint("user_id", "game", name=op.f("pk_game_notify")),
    )
    op.create_table(
        "challenge_policies",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("accept_all", sa.Boolean(), nullable=False),
        sa.Column("board_limit", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_challenge_policies_user_id_users")),
        sa.PrimaryKeyConstraint("user_id", "game", name=op.f("pk_challenge_policies")),
    )
    op.create_table(
        "challenge_rules",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("other_id", sa.Integer(), nullable=False),
        sa.Column("accept", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_challenge_rules_user_id_users")),
        sa.ForeignKeyConstraint(["other_id"], ["users.id"],
                                name=op.f("fk_challenge_rules_other_id_users")),
        sa.PrimaryKeyConstraint("user_id", "game", "other_id", name=op.f("pk_challenge_rules")),
    )
    op.create_table(
        "seeks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("options", sa.String(length=200), nullable=False),
        sa.Column("nag_days", sa.Integer(), nullable=False),
        sa.Column("forfeit_days", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("board_id", sa.Integer(), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_seeks_board_id_boards")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_seeks_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seeks")),
        sa.UniqueConstraint("game", "number", name=op.f("uq_seeks_game")),
    )
    op.create_index(op.f("ix_seeks_user_id"), "seeks", ["user_id"])
    op.create_table(
        "queued_moves",
        sa.Column("board_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("opponent_move", sa.String(length=200), nullable=False),
        sa.Column("reply", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_queued_moves_board_id_boards")),
        sa.PrimaryKeyConstraint("board_id", "seat", "position", name=op.f("pk_queued_moves")),
    )
    op.create_table(
        "vacations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("starts_at", TZ, nullable=False),
        sa.Column("ends_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_vacations_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vacations")),
    )
    op.create_index(op.f("ix_vacations_user_id"), "vacations", ["user_id"])
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sender", sa.String(length=320), nullable=False,
                                      server_default=""))
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.alter_column("sender", server_default=None)
        batch_op.create_index("ix_inbound_messages_status_sender", ["status", "sender"])


def downgrade() -> None:
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_inbound_messages_status_sender")
        batch_op.drop_column("sender")
    for table in ("vacations", "queued_moves", "seeks", "challenge_rules",
                  "challenge_policies", "game_notify", "subscriptions", "board_events"):
        op.drop_table(table)
    with op.batch_alter_table("moves", schema=None) as batch_op:
        for column in ("automatic", "seconds_used", "nags_before", "turn_started_at"):
            batch_op.drop_column(column)
    with op.batch_alter_table("board_players", schema=None) as batch_op:
        batch_op.drop_column("time_used")
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("finished", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column("offer_by", sa.Integer(), nullable=True))
    boards = sa.table("boards", sa.column("finished", sa.Boolean()),
                      sa.column("status", sa.String()), sa.column("offer_by", sa.Integer()),
                      sa.column("request_kind", sa.String()), sa.column("request_by", sa.Integer()))
    op.execute(boards.update().where(boards.c.status == "finished").values(finished=True))
    op.execute(boards.update().where(boards.c.request_kind == "draw")
               .values(offer_by=boards.c.request_by))
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.drop_index("ix_boards_status_clock_due_at")
        for column in ("queued", "watchers", "clock_due_at", "nags_sent", "turn_started_at",
                       "forfeit_days", "nag_days", "request_by", "request_kind", "termination",
                       "status", "previous_version", "previous_position", "position_version"):
            batch_op.drop_column(column)
