"""Transcripts holding prompts typed while Claude worked are read again.

A prompt typed during a turn is queued by Claude Code (a `queue-operation` record); when
it is handed to the model within the running turn, Claude Code before 2.1.x wrote it
nowhere else, and since writes it as an `attachment` of type `queued_command`. Ingest
skipped both record types, so those prompts (68 % of the corpus's queued prompts) were
never archived: the person's own words. From this revision on ingest keeps them
(subrosa.archive.transcripts, _queue_operation).

No schema changes. The ingest state of each transcript on this disk whose part already
read holds such a record is forgotten, so the next ingest reads it again from the start:
every message already stored is found by its uuid (or, lacking one, its key) and stored
nothing twice; only the prompts are added. A file not on this disk (deleted by Claude
Code, or another machine's on a team's server) keeps its state: this machine cannot
tell, and on a team's server each member's own files are theirs to read.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import mmap

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

MARKERS = (b'"queue-operation"', b'"queued_command"')


def upgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text('SELECT path, "offset" FROM ingested_files')).all()
    for path, offset in rows:
        if _holds_queued(str(path), int(offset or 0)):
            bind.execute(sa.text("DELETE FROM ingested_files WHERE path = :path"), {"path": path})


def _holds_queued(path: str, offset: int) -> bool:
    """Whether the first `offset` bytes of the file at `path` hold a queue record."""
    if offset <= 0:
        return False
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            end = min(offset, len(data))
            return any(data.find(marker, 0, end) >= 0 for marker in MARKERS)
    except (OSError, ValueError):  # gone, unreadable, empty
        return False


def downgrade() -> None:
    pass
