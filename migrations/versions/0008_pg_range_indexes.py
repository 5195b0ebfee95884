"""PostgreSQL: each range of 131,072 message ids gets a GIN index of its own.

A GIN index hands over all of a word's matches at once, in no order. Search wants the
newest few thousand (subrosa.archive.pgsearch); for a word in some percent of the
messages it asked the whole table's index for all of them and kept those above an id
floor with a bitmap of the primary key's newest few hundred thousand ids: 20-40 ms at
1 GB, where SQLite's whole search takes ~10. With an index per id range
(`ix_messages_words_r<k>`, partial indexes on the same `words` column for the ids with
`id / 131072 = k`), search asks the newest range's index first and goes back a range at
a time until it has enough: only those ranges' matches are read. (The predicate is that
quotient, not bounds on the id: the planner then still combines a range's index with
the primary key's for a bound of the query's own, the newest ids of a common word.)

This revision builds the indexes of the ranges the archive's ids reach and of the
RANGES_AHEAD ranges after them (empty, a few pages each: about a million messages
ahead); ingest builds each later one before the ids reach it (subrosa.archive.pgstore)
when its role may (the table's owner's; a member's role may not, docs/team.md). Past
the ranges built, search asks the whole table's index, as before this revision.
ix_messages_words stays: rare words, counts and everything else still ask it. The
range size, the name and the statement are subrosa.archive.pgsearch's (RANGE,
RANGE_INDEX, range_index()), spelled here as they are at this revision.

On SQLite this revision changes nothing (FTS5 walks a word's matches newest first).
The models do not declare these indexes; the autogenerate comparison leaves them out
(migrations/env.py).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

RANGE = 131072
# The ranges past the newest id built now, empty: a member's role may not build
# indexes, so the owner's upgrade builds these many ahead of the ids.
RANGES_AHEAD = 8
NAME = "ix_messages_words_r"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    newest = int(bind.execute(text("SELECT coalesce(max(id), 0) FROM messages")).scalar() or 0)
    for k in range(newest // RANGE + 1 + RANGES_AHEAD):
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {NAME}{k} ON messages USING gin (words)"
            f" WHERE (id / {RANGE}) = {k}"
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    names = bind.execute(
        text(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            " AND tablename = 'messages' AND indexname LIKE 'ix\\_messages\\_words\\_r%'"
        )
    ).scalars()
    for name in list(names):
        op.execute(f'DROP INDEX IF EXISTS "{name}"')
