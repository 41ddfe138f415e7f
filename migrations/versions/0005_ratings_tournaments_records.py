"""ratings, tournaments, imported records

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ratings",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("rd", sa.Float(), nullable=False),
        sa.Column("volatility", sa.Float(), nullable=False),
        sa.Column("rated_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_ratings_user_id_users")),
        sa.PrimaryKeyConstraint("user_id", "game", name=op.f("pk_ratings")),
    )
    op.create_table(
        "board_ratings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("board_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("rating_before", sa.Float(), nullable=False),
        sa.Column("rd_before", sa.Float(), nullable=False),
        sa.Column("volatility_before", sa.Float(), nullable=False),
        sa.Column("rating_after", sa.Float(), nullable=False),
        sa.Column("rd_after", sa.Float(), nullable=False),
        sa.Column("volatility_after", sa.Float(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_board_ratings_board_id_boards")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_board_ratings_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_ratings")),
        sa.UniqueConstraint("board_id", "seat", name=op.f("uq_board_ratings_board_id")),
    )
    op.create_index(op.f("ix_board_ratings_user_id"), "board_ratings", ["user_id"])
    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("game", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("double", sa.Boolean(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=True),
        sa.Column("max_players", sa.Integer(), nullable=True),
        sa.Column("options", sa.String(length=200), nullable=False),
        sa.Column("nag_days", sa.Integer(), nullable=False),
        sa.Column("forfeit_days", sa.Integer(), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("current_round", sa.Integer(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("started_at", TZ, nullable=True),
        sa.Column("finished_at", TZ, nullable=True),
        sa.ForeignKeyConstraint(["creator_id"], ["users.id"],
                                name=op.f("fk_tournaments_creator_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournaments")),
        sa.UniqueConstraint("key", name=op.f("uq_tournaments_key")),
    )
    op.create_table(
        "tournament_players",
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("joined_at", TZ, nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("withdrawn_at", TZ, nullable=True),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"],
                                name=op.f("fk_tournament_players_tournament_id_tournaments")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_tournament_players_user_id_users")),
        sa.PrimaryKeyConstraint("tournament_id", "user_id", name=op.f("pk_tournament_players")),
    )
    op.create_index(op.f("ix_tournament_players_user_id"), "tournament_players", ["user_id"])
    op.create_table(
        "tournament_games",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("first_id", sa.Integer(), nullable=False),
        sa.Column("second_id", sa.Integer(), nullable=True),
        sa.Column("board_id", sa.Integer(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["tournament_id"], ["tournaments.id"],
                                name=op.f("fk_tournament_games_tournament_id_tournaments")),
        sa.ForeignKeyConstraint(["first_id"], ["users.id"],
                                name=op.f("fk_tournament_games_first_id_users")),
        sa.ForeignKeyConstraint(["second_id"], ["users.id"],
                                name=op.f("fk_tournament_games_second_id_users")),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_tournament_games_board_id_boards")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournament_games")),
        sa.UniqueConstraint("board_id", name=op.f("uq_tournament_games_board_id")),
    )
    op.create_index(op.f("ix_tournament_games_tournament_id"), "tournament_games",
                    ["tournament_id"])
    op.create_table(
        "imported_boards",
        sa.Column("board_id", sa.Integer(), nullable=False),
        sa.Column("site", sa.String(length=200), nullable=False),
        sa.Column("event", sa.String(length=200), nullable=True),
        sa.Column("round", sa.Integer(), nullable=True),
        sa.Column("imported_at", TZ, nullable=False),
        sa.ForeignKeyConstraint(["board_id"], ["boards.id"],
                                name=op.f("fk_imported_boards_board_id_boards")),
        sa.PrimaryKeyConstraint("board_id", name=op.f("pk_imported_boards")),
    )


def downgrade() -> None:
    for table in ("imported_boards", "tournament_games", "tournament_players", "tournaments",
                  "board_ratings", "ratings"):
        op.drop_table(table)
