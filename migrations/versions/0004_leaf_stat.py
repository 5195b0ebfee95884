"""facts.leaf_stat: what the leaf's stat was when its hash was last taken.

`generate` compares each leaf's size, mtime and inode with this and reads and hashes
only the leaves whose stat changed (docs/architecture.md, "generate, quickly"). NULL
means "not known": the leaf is hashed. A cache of the disk, like the rest of the row.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("facts", sa.Column("leaf_stat", sa.String(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN (SQLite 3.35+), not a batch copy of the table: the copy
    # would drop the triggers that keep facts_fts in step.
    op.drop_column("facts", "leaf_stat")
