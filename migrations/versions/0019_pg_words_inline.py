"""PostgreSQL keeps each message's `words` vector in its row (storage MAIN), not in TOAST.

A phrase no index settles (`"in the"`, or any phrase a GIN bitmap finds rows for: a GIN
index holds no positions) is tested against each candidate row's stored `words`
(subrosa.archive.pgsearch: the walk of the newest ids, and every bitmap's recheck). With
the column's default storage (EXTENDED) a row over the TOAST threshold (~2 KB) has its
largest values compressed and then moved out of the row: a tool output's vector, often
larger than its text, goes to the TOAST table, and reading it back costs a lookup of the
TOAST index and the chunks' pages for every row tested. MAIN keeps the vector in the row
(compressed if it must be), the text and terms going out first. Measured at 1 GB on a copy
of the newest 100,000 messages (docs/team.md, "Where a walk's time goes"): the newest
4,000 matches of `'in' <-> 'the'` 6.3 -> 4.1 ms (4,130 -> 1,272 buffers), the phrase test
over all 100,000 rows 117 -> 69 ms, reading 1,000 messages' text by id the same.

Storage applies to rows written from now on: an archive's rows written before keep their
layout (a rewrite of the table would lock it for minutes); walks read the newest rows
first, so the gain grows with every ingest. Nothing on SQLite.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE messages ALTER COLUMN words SET STORAGE MAIN")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE messages ALTER COLUMN words SET STORAGE EXTENDED")
