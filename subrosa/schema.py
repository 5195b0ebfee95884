"""The newest schema revision, importable without SQLAlchemy.

`subrosa search` and `subrosa ingest` check the stored revision with the standard
library's sqlite3 and only load SQLAlchemy and Alembic when a migration is due:
importing SQLAlchemy costs more than a whole search. subrosa.db re-exports it; a
test asserts it equals the migration scripts' head.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

SCHEMA_HEAD = "0002"


def is_current(path: Path) -> bool:
    """Whether the SQLite file at `path` exists and is at SCHEMA_HEAD (one query)."""
    if not path.is_file():
        return False
    try:
        # Percent-encoded: a raw `#` or `?` in the path would end it early, and SQLite
        # would open (and create) another file. `/` stays, as in any file: URI.
        uri = "file:" + quote(str(path), safe="/") + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == SCHEMA_HEAD


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
