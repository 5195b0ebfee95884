"""The facts table.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "facts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project", sa.String(), nullable=False),
        sa.Column("slug", sa.String(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("hook", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("section", sa.String(), nullable=True),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("archive_reason", sa.Text(), nullable=True),
        sa.Column("archived_at", sa.DateTime(), nullable=True),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("last_hit_at", sa.DateTime(), nullable=True),
        sa.Column("content_hash", sa.String(), nullable=False),
        sa.UniqueConstraint("project", "slug", name="uq_facts_project_slug"),
        sa.CheckConstraint("status IN ('active', 'archived')", name="ck_facts_status"),
        sa.CheckConstraint(
            "type IN ('user', 'feedback', 'project', 'reference')", name="ck_facts_type"
        ),
    )
    op.create_index("ix_facts_project_position", "facts", ["project", "position"])


def downgrade() -> None:
    op.drop_index("ix_facts_project_position", table_name="facts")
    op.drop_table("facts")
