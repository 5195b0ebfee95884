"""shared_messages: the messages a session holds that are stored under another session.

Claude Code forks a session (`claude --resume ID --fork-session`, `/branch`) by writing
a new transcript that begins with a copy of the parent's records, uuids kept. The
archive stores a message once (messages.uuid is unique), so the copied history was
stored under whichever session was ingested first, and the other one's `transcript
show` lacked it. From this revision on, ingest writes a row here when a uuid it reads
for a session is already stored under another (subrosa.archive.ingest, pgstore), and
`transcript show` gives a session its own messages and these, in order.

No backfill: forks archived before this revision show what they added until their
transcript is read again from the start (a replaced or rewritten file); reading every
file still on disk again to find them would cost as much as a first ingest.

On PostgreSQL a member's role needs INSERT on the new table (docs/team.md); until the
owner grants it, a member's ingest archives as before, without these rows.

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shared_messages",
        sa.Column("session_pk", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["session_pk"], ["sessions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_pk", "message_id"),
    )
    op.create_index("ix_shared_messages_message", "shared_messages", ["message_id"])


def downgrade() -> None:
    op.drop_index("ix_shared_messages_message", table_name="shared_messages")
    op.drop_table("shared_messages")
