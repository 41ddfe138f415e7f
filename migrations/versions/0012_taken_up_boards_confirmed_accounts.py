"""boards taken up by their players, confirmed accounts, the limits on fan-out

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 15:00:00

- ``board_players.accepted_at``: when the player took the board up (moved on it, or
  accepted it); a player is rated on a board, and loses it on time, only after that.
  Seats of boards in play before this revision are taken up where the player has
  moved, where the board came from a seek or a tournament, and for the bots.
- ``boards.challenged_by``: the address a challenge came from (limits per sender).
- ``users.confirmed_at``, ``confirm_code_hash``, ``signup_sender``: an account works
  once its address answered the confirmation mail; accounts made before this
  revision are confirmed.
- an index of the outbox by address and time (the limits on mail per address).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("board_players", schema=None) as batch_op:
        batch_op.add_column(sa.Column("accepted_at", TZ, nullable=True))
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.add_column(sa.Column("challenged_by", sa.String(length=320), nullable=True))
        batch_op.create_index("ix_boards_challenged_by_created_at",
                              ["challenged_by", "created_at"], unique=False)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("confirmed_at", TZ, nullable=True))
        batch_op.add_column(sa.Column("confirm_code_hash", sa.String(length=128),
                                      nullable=True))
        batch_op.add_column(sa.Column("signup_sender", sa.String(length=320), nullable=True))
        batch_op.create_index("ix_users_signup_sender_created_at",
                              ["signup_sender", "created_at"], unique=False)
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_to_addr_created_at", ["to_addr", "created_at"],
                              unique=False)

    users = sa.table("users", sa.column("id", sa.Integer()),
                     sa.column("created_at", TZ), sa.column("confirmed_at", TZ),
                     sa.column("bot", sa.String()))
    op.execute(users.update().values(confirmed_at=users.c.created_at))
    players = sa.table("board_players", sa.column("board_id", sa.Integer()),
                       sa.column("seat", sa.Integer()), sa.column("user_id", sa.Integer()),
                       sa.column("accepted_at", TZ))
    boards = sa.table("boards", sa.column("id", sa.Integer()), sa.column("created_at", TZ))
    moves = sa.table("moves", sa.column("board_id", sa.Integer()), sa.column("seat", sa.Integer()))
    seeks = sa.table("seeks", sa.column("board_id", sa.Integer()))
    games = sa.table("tournament_games", sa.column("board_id", sa.Integer()))
    taken = sa.or_(
        sa.exists().where(moves.c.board_id == players.c.board_id,
                          moves.c.seat == players.c.seat),
        sa.exists().where(seeks.c.board_id == players.c.board_id),
        sa.exists().where(games.c.board_id == players.c.board_id),
        sa.exists().where(users.c.id == players.c.user_id, users.c.bot.is_not(None)),
    )
    created = sa.select(boards.c.created_at).where(boards.c.id == players.c.board_id)
    op.execute(players.update().where(taken).values(accepted_at=created.scalar_subquery()))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_to_addr_created_at")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index("ix_users_signup_sender_created_at")
        batch_op.drop_column("signup_sender")
        batch_op.drop_column("confirm_code_hash")
        batch_op.drop_column("confirmed_at")
    with op.batch_alter_table("boards", schema=None) as batch_op:
        batch_op.drop_index("ix_boards_challenged_by_created_at")
        batch_op.drop_column("challenged_by")
    with op.batch_alter_table("board_players", schema=None) as batch_op:
        batch_op.drop_column("accepted_at")
