"""The newest schema revision, importable without SQLAlchemy.

`subrosa search` and `subrosa ingest` check the stored revision with the standard
library's sqlite3 (and whether the archive's re-index after migration 0003 is done)
and only load SQLAlchemy and Alembic when a migration is due:
importing SQLAlchemy costs more than a whole search. subrosa.db re-exports it; a
test asserts it equals the migration scripts' head.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA_HEAD = "0003"


def state(path: Path) -> tuple[bool, bool]:
    """Whether the SQLite file at `path` is at SCHEMA_HEAD, and whether its archive is
    being re-indexed (migration 0003: subrosa.archive.reindex finishes it)."""
    if not path.is_file():
        return False, False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            if row is None or row[0] != SCHEMA_HEAD:
                return False, False
            pending = conn.execute("SELECT 1 FROM archive_reindex LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False, False
    return True, pending is not None


def is_current(path: Path) -> bool:
    """Whether the SQLite file at `path` is ready as it is: at SCHEMA_HEAD, its archive
    fully indexed (two small queries)."""
    current, reindexing = state(path)
    return current and not reindexing


BUSY_TIMEOUT_MS = 30_000
# Every connection to the SQLite file, SQLAlchemy's (subrosa.db) and the archive's
# DB-API one (subrosa.archive.connection), starts with these: WAL so readers never
# block the writer, a busy timeout so writers wait instead of failing, foreign keys on,
# and NORMAL sync (safe with WAL; a power cut loses at most the last transaction).
CONNECTION_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)
