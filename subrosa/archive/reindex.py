"""The archive's full-text index rebuilt in place, after a migration that changed what
it holds (0003: the terms column, subrosa.terms). Standard library only.

The migration itself only marks the work (`archive_reindex.next_id`: the first message
the new index does not hold yet), so that it stays one short transaction; this module
does the work, in message id order: each batch's terms are computed again and the rows
whose terms changed are updated; every COMMIT_CHARS of text, the transaction's
messages are added to the index in one statement, next_id moves past them, and the
transaction commits, so a kill loses at most the last one and the next run picks up
from next_id. The
update and delete triggers skip the messages at or past next_id (migration 0003), so
the index matches the table at every commit.

Every command that opens the archive (subrosa.archive.connection.open_archive) runs
it first, under the ingest lock; `subrosa db upgrade` too. It costs less than
ingesting the same messages afresh: the JSON is not parsed or redacted again, and the
messages table is only touched where a message's terms changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from subrosa.terms import index_terms

# Messages read per batch, and the text per write transaction (as ingest's COMMIT_BYTES:
# FTS5 writes a segment per transaction and merges them later).
BATCH_MESSAGES = 2000
COMMIT_CHARS = 32 << 20
FTS_HASH_BYTES = 32 << 20  # as ingest sets it (subrosa.archive.ingest)

Progress = Callable[[int, int], None]  # (messages just indexed, messages in all)


def reindex_database(db_url: str, progress: Progress | None = None) -> int:
    """`subrosa db upgrade`: finish the archive's re-index when one is due (an SQLite
    database); on a server, build the id ranges' indexes ahead of the ids
    (subrosa.archive.pgstore.ranges_ahead()). How many messages were indexed."""
    from subrosa.archive.connection import connect, ingest_lock
    from subrosa.paths import is_file, sqlite_path
    from subrosa.pg import is_server

    if is_server(db_url):
        from subrosa.archive.pgstore import ranges_ahead

        ranges_ahead(db_url)
        return 0
    path = sqlite_path(db_url)
    if path is None or not is_file(path):
        return 0
    conn = connect(path)
    try:
        if pending(conn) is None:
            return 0
        with ingest_lock(path):
            return reindex(conn, progress)
    finally:
        conn.close()


def pending(conn: sqlite3.Connection) -> int | None:
    """The first message id the index does not hold yet, or None when it holds all."""
    try:
        row = conn.execute("SELECT next_id FROM archive_reindex").fetchone()
    except sqlite3.OperationalError:  # a database from before migration 0003
        return None
    return None if row is None else int(row[0])


def reindex(conn: sqlite3.Connection, progress: Progress | None = None) -> int:
    """Add every message from `archive_reindex.next_id` on to the full-text index (the
    caller holds the ingest lock); how many were added."""
    start = pending(conn)
    if start is None:
        return 0
    row = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
    total = max(0, int(row[0]) - start + 1)
    done = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('hashsize', ?)",
            (FTS_HASH_BYTES,),
        )
        chars, first, next_id = 0, start, start
        while True:
            batch = conn.execute(
                "SELECT id, text, terms FROM messages WHERE id >= ? ORDER BY id LIMIT ?",
                (next_id, BATCH_MESSAGES),
            ).fetchall()
            if batch:
                next_id = _fresh_terms(conn, batch)
                chars += sum(len(text) for _, text, _ in batch)
                done += len(batch)
                if progress is not None:
                    progress(len(batch), total)
            if chars >= COMMIT_CHARS or not batch:
                _index(conn, first, next_id)
                if not batch:
                    break
                conn.execute("COMMIT")
                conn.execute("BEGIN IMMEDIATE")
                chars, first = 0, next_id
        conn.execute("DELETE FROM archive_reindex")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return done


def _fresh_terms(conn: sqlite3.Connection, batch: list[tuple[int, str, str | None]]) -> int:
    """One batch's terms computed again, the changed ones stored (inside the caller's
    transaction, before its index statement: _index); the id after the batch."""
    changed = []
    for rowid, text, terms in batch:
        fresh = index_terms(text)
        if fresh != terms:
            changed.append((fresh, rowid))
    if changed:
        # The update trigger skips these rows: they are at or past next_id.
        conn.executemany("UPDATE messages SET terms = ? WHERE id = ?", changed)
    return int(batch[-1][0]) + 1


def _index(conn: sqlite3.Connection, first: int, end: int) -> None:
    """The messages from `first` up to `end` into the index, in one statement (as
    ingest's commit does: subrosa.archive.ingest, `Ingester._index_new`), and next_id
    past them. One statement, last but next_id's before the commit: a statement after
    FTS5's inserts opens a savepoint, at which FTS5 writes out what it holds in memory,
    so a row's insert per batch followed by next_id's update wrote a segment per
    batch of BATCH_MESSAGES."""
    if end > first:
        conn.execute(
            "INSERT INTO messages_fts(rowid, text, terms)"
            " SELECT id, text, terms FROM messages WHERE id >= ? AND id < ? ORDER BY id",
            (first, end),
        )
    conn.execute("UPDATE archive_reindex SET next_id = ?", (end,))
