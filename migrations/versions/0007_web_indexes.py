"""indexes for the web pages

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-10 10:00:00

- boards (game, status): the front page counts each game's boards in play and
  finished from the index alone;
- board_players (user_id, board_id): a player's boards, newest first, a page at a
  time, read in index order;
- seeks (status, game, number): the open challenges, by game and number, without
  reading the others.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_boards_game_status", "boards", ["game", "status"])
    op.create_index("ix_board_players_user_id_board_id", "board_players",
                    ["user_id", "board_id"])
    op.create_index("ix_seeks_status_game_number", "seeks", ["status", "game", "number"])


def downgrade() -> None:
    op.drop_index("ix_seeks_status_game_number", table_name="seeks")
    op.drop_index("ix_board_players_user_id_board_id", table_name="board_players")
    op.drop_index("ix_boards_game_status", table_name="boards")
