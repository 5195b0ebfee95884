"""PostgreSQL stores each message's words as a tsvector column, indexed by GIN.

Migration 0005 indexed an expression (the text's words cut as unicode61 cuts them, then
the terms column's). A GIN index over tsvector keeps no positions, so a phrase
(`'pre' <-> 'commit'`) or a prefix match is rechecked against the row's vector, and
with an expression index the server rebuilds that vector for every candidate row:
`regexp_replace` and `to_tsvector` over the whole text, tens of microseconds a row,
seconds for a common phrase. The column `words` is that expression, computed once by
the server when a row is written (GENERATED ALWAYS … STORED: no writer can forget it,
and ingest, import and any later path fill it alike), and `ix_messages_words` now
indexes the column. Searches read the stored vector instead of recomputing it.

The index keeps GIN's pending list (`fastupdate`, the default): many writers append
their entries to it and one of them merges it into the tree now and then, which costs
less in all than each writer updating the tree's hot pages under their locks.

On SQLite this revision changes nothing (FTS5 stores its index already); the models
do not declare the column, and the autogenerate comparison leaves it out
(migrations/env.py).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Migration 0005's expression, word for word (subrosa.archive.pgsearch used to spell it).
VECTOR = (
    "to_tsvector('simple'::regconfig,"
    " regexp_replace(left(text, 250000), '[^[:alnum:]]+', ' ', 'g'))"
    " || to_tsvector('simple'::regconfig, left(coalesce(terms, ''), 250000))"
)

UPGRADE = [
    "DROP INDEX IF EXISTS ix_messages_words",
    f"ALTER TABLE messages ADD COLUMN words tsvector GENERATED ALWAYS AS ({VECTOR}) STORED",
    "CREATE INDEX ix_messages_words ON messages USING gin (words)",
]

DOWNGRADE = [
    "DROP INDEX IF EXISTS ix_messages_words",
    "ALTER TABLE messages DROP COLUMN IF EXISTS words",
    f"CREATE INDEX ix_messages_words ON messages USING gin (({VECTOR}))",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
