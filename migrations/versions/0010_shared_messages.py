"""shared_messages: the messages a session holds that are stored under another session.

Claude Code forks a session (`claude --resume ID --fork-session`, `/branch`) by writing
a new transcript that begins with a copy of the parent's records, uuids kept. The
archive stores a message once (messages.uuid is unique), so the copied history was
stored under whichever session was ingested first, and the other one's `transcript
show` lacked it. From this revision on, ingest writes a row here when a uuid it reads
for a session is already stored under another (subrosa.archive.ingest, pgstore), and
`transcript show` gives a session its own messages and these, in order.

Forks archived before this revision are found without reading a file: a session whose
transcript held a message stored under another session has a first time (first_at,
taken from every message its file held) earlier than its own first message's, or no
message of its own. Their files' ingest state (`<session id>.jsonl`) is forgotten, so
the next ingest reads those files again from the start (every message in them already
stored once: only these rows and the message counts are written). A file no longer on
disk is not read again: that session shows what it held before.

On PostgreSQL the roles that may insert messages (a team's members) are granted what
ingest does to the new table, as 0009 does for its runs; a role that may not write it
archives as before, without these rows (subrosa.archive.pgstore).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from subrosa.db import grant_to_message_writers

revision = "0010"
down_revision = "0009"
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
    bind = op.get_bind()
    grant_to_message_writers(bind, "shared_messages", "SELECT, INSERT")
    _read_forks_again(bind)


def _read_forks_again(bind: sa.Connection) -> None:
    """Forget the ingest state of the transcripts of the sessions that share messages
    with another (see the module's docstring): one pass over the messages, by session."""
    sessions = {
        str(row[0])
        for row in bind.execute(
            sa.text(
                "SELECT s.session_id FROM sessions s"
                " LEFT JOIN (SELECT session_pk, min(timestamp) AS own_first FROM messages"
                " GROUP BY session_pk) own ON own.session_pk = s.id"
                " WHERE s.first_at IS NOT NULL"
                " AND (own.own_first IS NULL OR s.first_at < own.own_first)"
            )
        )
    }
    if not sessions:
        return
    paths = [
        str(row[0])
        for row in bind.execute(sa.text("SELECT path FROM ingested_files"))
        if _session_of(str(row[0])) in sessions
    ]
    for path in paths:
        bind.execute(sa.text("DELETE FROM ingested_files WHERE path = :path"), {"path": path})


def _session_of(path: str) -> str:
    """The session a transcript's name says (`<session id>.jsonl`), as ingest names it."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else ""


def downgrade() -> None:
    op.drop_index("ix_shared_messages_message", table_name="shared_messages")
    op.drop_table("shared_messages")
