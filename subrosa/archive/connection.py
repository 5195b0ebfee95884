"""The archive's connection to the database: the DB-API (sqlite3), not SQLAlchemy.

One database file holds both halves (facts, and the sessions and messages of the
archive), reached by two paths on purpose. The memory half goes through SQLAlchemy
(subrosa.db): few rows, typed models, Alembic migrations. The archive goes through
the standard library's sqlite3, for two measured reasons (docs/search.md):
  - start-up: importing SQLAlchemy costs ~380 ms, more than a whole `subrosa
    search` at 1 GB; a search answers with sqlite3 alone when the schema is current;
  - throughput: ingest's executemany into SQLite runs near the speed of a bare FTS5
    insert; the ORM would spend more time building objects than SQLite indexing.
Both paths set the connection up the same way (WAL, a busy timeout, foreign keys,
BEGIN IMMEDIATE for writes). SQLAlchemy and Alembic load only to migrate.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from subrosa.errors import SUPPORTED_DATABASES, InvalidInput
from subrosa.fsutil import file_lock
from subrosa.schema import connect as connect  # one setup for every sqlite3 connection

# pathlib stays off `subrosa search`'s path: only the type checker sees it here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from subrosa.paths import StrPath

# A background `ingest --pending` and a search or a manual ingest may race.
INGEST_LOCK_TIMEOUT_S = 120.0


def archive_path(db_url: str) -> str:
    """The SQLite file behind `db_url` (the archive needs one)."""
    from subrosa.paths import sqlite_path

    path = sqlite_path(db_url)
    if path is None:
        raise InvalidInput(f"{db_url}: {SUPPORTED_DATABASES}.")
    return path


@contextmanager
def open_archive(
    db_url: str, progress: Callable[[int, int], None] | None = None
) -> Iterator[sqlite3.Connection]:
    """The archive's connection (archive_connection()), closed after."""
    conn = archive_connection(db_url, progress)
    try:
        yield conn
    finally:
        conn.close()


def archive_connection(
    db_url: str, progress: Callable[[int, int], None] | None = None
) -> sqlite3.Connection:
    """The archive's connection, the database created first when it is new (directly,
    subrosa.schema.ensure_current) or migrated when it is older (the only time SQLAlchemy
    and Alembic are loaded), and its full-text index rebuilt first when a migration
    asked for it (subrosa.archive.reindex, under the ingest lock; `progress` is told
    the messages indexed and to index, and how far a migration that works through the
    archive is: 0014). On a PostgreSQL server, subrosa.archive.pgstore's connection (no
    re-index: the server keeps its indexes in step). The caller closes it (open_archive;
    the MCP server keeps it: subrosa.archive.kept)."""
    from subrosa.pg import is_server
    from subrosa.schema import ensure_current, state

    if is_server(db_url):
        from subrosa.archive.pgstore import server_connection

        return server_connection(db_url, progress)
    path = archive_path(db_url)
    current, reindexing = state(path)
    if not current:
        if not ensure_current(path):
            from subrosa.db import open_database

            open_database(db_url, progress)
        current, reindexing = state(path)
    conn = connect(path, any_thread=True)  # ingest's writer thread commits on it
    try:
        if reindexing:
            from subrosa.archive.reindex import reindex

            with ingest_lock(path):
                reindex(conn, progress)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def archive_lock(db_url: str) -> Iterator[None]:
    """ingest_lock for the archive at `db_url`; none on a PostgreSQL server, where
    ingests run side by side (uuid-keyed inserts: subrosa.archive.pgstore)."""
    from subrosa.pg import is_server

    if is_server(db_url):
        yield
        return
    with ingest_lock(archive_path(db_url)):
        yield


@contextmanager
def ingest_lock(path: StrPath) -> Iterator[None]:
    """One ingest at a time into the archive at `path` (a file beside it)."""
    busy = (
        f"{path}.ingest.lock: another ingest held the lock for "
        f"{INGEST_LOCK_TIMEOUT_S:.0f} s; try again."
    )
    with file_lock(f"{path}.ingest.lock", INGEST_LOCK_TIMEOUT_S, busy):
        yield
