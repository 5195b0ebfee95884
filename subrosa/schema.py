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
from urllib.parse import quote

SCHEMA_HEAD = "0007"


def state(path: Path) -> tuple[bool, bool]:
    """Whether the SQLite file at `path` is at SCHEMA_HEAD, and whether its archive is
    being re-indexed (migration 0003: subrosa.archive.reindex finishes it)."""
    if not path.is_file():
        return False, False
    try:
        # Percent-encoded: a raw `#` or `?` in the path would end it early, and SQLite
        # would open (and create) another file. `/` stays, as in any file: URI.
        uri = "file:" + quote(str(path), safe="/") + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=30)
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


# The first 16 bytes of every SQLite database file.
SQLITE_MAGIC = b"SQLite format 3\x00"


def file_problem(path: Path) -> str | None:
    """Why the file at `path` cannot be a subrosa database, in a few words; None when it
    does not exist yet (it will be made) or starts as an SQLite database does (damage
    further in shows when it is read: see subrosa.errors.corruption)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "it is a directory"
    except OSError:
        return None  # unreadable for another reason: opening it says which
    if not head:
        return "it is empty, 0 bytes"
    if not head.startswith(SQLITE_MAGIC):
        return "it is not an SQLite database"
    if len(head) < 100:
        return "it is cut short"
    return _tables_problem(path)


def _tables_problem(path: Path) -> str | None:
    """Another program's database (tables, but no subrosa schema revision), which a
    migration would fill with subrosa's tables; or damage SQLite sees in its schema.
    A plain connection, no pragma: looking changes nothing in the file."""
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return None  # locked, or unreadable for a reason opening it will name
    except sqlite3.DatabaseError as exc:
        return str(exc) or "damaged"
    if names and "alembic_version" not in names:
        return "it holds another program's tables and no subrosa schema"
    return None


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
