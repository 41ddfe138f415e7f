"""positions kept with every eighth move, so that a look back replays at most seven

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 10:00:00

A look back at a board (``show 101#n``, the web page's ``?ply=n``, an undo once the
position before the last move is gone) replayed the game from its start: on a game
of 5,000 moves 0.2 s each time (issue 34).  Every move whose number is a multiple of
CHECKPOINT_EVERY (pbmserv.service.boards) now keeps the position after it, and a
replay starts from the nearest one.

Boards played before are given theirs here, replayed by this version's engines, but
only those of LEGACY_REPLAY moves or more: a shorter one is replayed whole when
looked back on, which costs no more than it did (and a mail pays for it from its
work budget), while replaying every short board here would hold up the upgrade of a
large server.  A board whose game is not installed, or whose moves this version's
engine refuses, is left as it was.
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: pbmserv.service.boards.CHECKPOINT_EVERY when this migration was written
CHECKPOINT_EVERY = 8
#: boards of fewer moves are not replayed here
LEGACY_REPLAY = 64

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.add_column(sa.Column("position", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("position_version", sa.Integer(), nullable=True))
    fill_checkpoints(op.get_bind())


def fill_checkpoints(connection: sa.Connection) -> None:
    """The positions of the boards of LEGACY_REPLAY moves or more."""
    from pbmserv.games import get_engine  # the engines are pure: no database, no settings

    boards = connection.execute(sa.text(
        "SELECT id, game, options FROM boards WHERE ply >= :least ORDER BY id"),
        {"least": LEGACY_REPLAY}).all()
    for board_id, game, options in boards:
        engine = get_engine(game)
        if engine is None:
            continue
        notations = connection.execute(sa.text(
            "SELECT ply, notation FROM moves WHERE board_id = :board ORDER BY ply"),
            {"board": board_id}).all()
        kept = []
        try:
            position = engine.new(tuple((options or "").split()))
            for ply, notation in notations:
                position, _ = engine.play(position, notation, live=True)
                if ply % CHECKPOINT_EVERY == 0:
                    kept.append({"board": board_id, "ply": ply,
                                 "position": engine.serialize(position),
                                 "version": engine.position_version})
        except Exception as exc:  # an old board this engine cannot replay: left as it was
            log.warning("board %s (%s) not replayed: %s", board_id, game, exc)
            continue
        if kept:
            connection.execute(sa.text(
                "UPDATE moves SET position = :position, position_version = :version "
                "WHERE board_id = :board AND ply = :ply"), kept)


def downgrade() -> None:
    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.drop_column("position_version")
        batch_op.drop_column("position")
