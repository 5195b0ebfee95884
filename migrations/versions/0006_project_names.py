"""Projects named the same on every machine; who archived each session.

Two clones of one repository are one project (subrosa.identity): facts and sessions are
filed under the repository's normalized git remote (`github.com/org/repo`) or a name the
settings file gives the folder, instead of a path that differs on every machine. This
migration adds `sessions.host` and `sessions.username` (which machine and member archived
the session; NULL for those archived before) and files the rows this machine can name:

- a fact filed under a memory dir that exists here moves to that dir's key (when both a
  clone's row and another's are there for one slug, the one already filed stays and gains
  the other's hits);
- a session filed under Claude Code's encoded folder of a checkout that exists here (its
  recorded working directory is inside it) moves to the checkout's name.

Rows this machine cannot name (a memory dir or a checkout since deleted, another
member's machine in a shared database) keep their key; the next `generate` in that memory
dir (subrosa.memory.store.move_legacy_rows) or ingest from that checkout
(subrosa.archive.ingest) files them. The names are read from each repository's
`.git/config` and the settings file of the user running the migration.

Downgrade drops the two columns; keys stay as they are (an older subrosa registers facts
again from the leaves and the sidecar, losing only hit counts).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _facts_renames(bind: sa.Connection) -> dict[str, str]:
    from subrosa.identity import facts_key

    renames = {}
    for (project,) in bind.execute(sa.text("SELECT DISTINCT project FROM facts")).all():
        if os.path.isabs(project) and os.path.isdir(project):
            key = facts_key(project)
            if key != project:
                renames[project] = key
    return renames


def _sessions_renames(bind: sa.Connection) -> dict[str, str]:
    from subrosa.identity import legacy_sessions_key, sessions_key

    renames: dict[str, str] = {}
    rows = bind.execute(
        sa.text("SELECT DISTINCT project, cwd FROM sessions WHERE cwd IS NOT NULL")
    ).all()
    for project, cwd in rows:
        if project in renames or not os.path.isabs(cwd):
            continue
        if legacy_sessions_key(cwd) == project:
            key = sessions_key(cwd)
            if key != project:
                renames[project] = key
    return renames


def _move_facts(bind: sa.Connection, old: str, new: str) -> None:
    keys = {"old": old, "new": new}
    bind.execute(
        sa.text(
            "UPDATE facts SET hits = hits + (SELECT o.hits FROM facts o"
            " WHERE o.project = :old AND o.slug = facts.slug)"
            " WHERE project = :new AND slug IN (SELECT slug FROM facts WHERE project = :old)"
        ),
        keys,
    )
    bind.execute(
        sa.text(
            "DELETE FROM facts WHERE project = :old"
            " AND slug IN (SELECT slug FROM facts WHERE project = :new)"
        ),
        keys,
    )
    bind.execute(sa.text("UPDATE facts SET project = :new WHERE project = :old"), keys)


def upgrade() -> None:
    op.add_column("sessions", sa.Column("host", sa.String(), nullable=True))
    op.add_column("sessions", sa.Column("username", sa.String(), nullable=True))
    bind = op.get_bind()
    for old, new in _facts_renames(bind).items():
        _move_facts(bind, old, new)
    for old, new in _sessions_renames(bind).items():
        bind.execute(
            sa.text("UPDATE sessions SET project = :new WHERE project = :old"),
            {"old": old, "new": new},
        )


def downgrade() -> None:
    # Not op.batch_alter_table: on SQLite it would copy `sessions` into a new table and
    # drop the old one, and the drop cascades to every message. ALTER TABLE ... DROP
    # COLUMN is SQLite's own since 3.35.
    op.execute("ALTER TABLE sessions DROP COLUMN username")
    op.execute("ALTER TABLE sessions DROP COLUMN host")
