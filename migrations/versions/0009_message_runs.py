"""message_runs: each session's messages as runs of ids, for project-scoped search.

`subrosa search` looks in the project it runs in by default. The index finds a word's
matches newest first in the whole archive; testing each against its project walks
through every other project's newer matches first: at 1 GB with four projects whose
sessions alternate, a word in many messages took ~0.1 s in-process in a project holding
1 % of them (SQLite), and seconds on PostgreSQL. Ids grow with ingest, so a project's
messages are a list of runs of ids (what one ingest of a session added); search walks
the project's runs newest first and asks the index only within them
(subrosa.archive.search.for_project).

A run: ids `lo` to `hi` hold messages of session `session_pk` and of no other session
(ids no message took, where a repeated uuid was left out, may be among them). Ingest
extends a session's run when the next batch of that session takes the next id, else
adds one (subrosa.archive.ingest, subrosa.archive.pgstore). This revision derives the
runs of the messages already stored, in one statement (gaps and islands: a session's
ids numbered in order, minus the number of every message before, are the same along a
run). Derived data, like the rest of the archive: the messages stay as they are. On
PostgreSQL the roles that may insert messages (a team's members) are granted what
ingest does to the runs.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from subrosa.db import grant_to_message_writers

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The runs of the stored messages: along a run, a message's place among all messages
# minus its place among its session's is the same number.
BACKFILL = """INSERT INTO message_runs (session_pk, lo, hi)
SELECT session_pk, min(id), max(id) FROM (
    SELECT session_pk, id,
        row_number() OVER (ORDER BY id)
        - row_number() OVER (PARTITION BY session_pk ORDER BY id) AS island
    FROM messages) AS numbered
GROUP BY session_pk, island"""


def upgrade() -> None:
    op.create_table(
        "message_runs",
        sa.Column("session_pk", sa.Integer(), nullable=False),
        sa.Column("lo", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("hi", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["session_pk"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_pk", "lo"),
    )
    op.execute(BACKFILL)
    # Who may write messages writes their runs too (a team's members).
    grant_to_message_writers(op.get_bind(), "message_runs", "SELECT, INSERT, UPDATE")


def downgrade() -> None:
    op.drop_table("message_runs")
