"""ingested_files.queue_state: the queue of prompts where the last read of a file ended.

A prompt typed while Claude worked is queued by Claude Code (a `queue-operation`
`enqueue`) and later taken up: by a `dequeue` and a user record of its own, or by a
`remove` (and since 2.1.x a `queued_command` attachment). Ingest keeps each prompt once
within a read of a file; one still queued where the read ends is kept all the same. An
ingest that ran while a prompt waited kept it then, and the next ingest, reading the
grown file from its offset, kept it again when it read it taken up. From this revision
ingest saves what the next read must know of the queue (the prompts kept while queued,
the counts that stop a later record from keeping one again: compact JSON, a few KB at
most, NULL for most files) with the offset, in the same transaction, and starts the
next read from it (subrosa.archive.transcripts, queue_state).

Nothing else changes: a prompt an earlier ingest stored twice stays so (both copies
are the person's words; a new archive ingested from the transcripts still on disk holds
it once).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ingested_files", sa.Column("queue_state", sa.Text(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN (SQLite 3.35+), as 0004's downgrade.
    op.drop_column("ingested_files", "queue_state")
