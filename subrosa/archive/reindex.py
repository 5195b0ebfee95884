"""The archive's full-text index rebuilt in place, after a migration that changed what
it holds (0003: the terms column, subrosa.terms). Standard library only.

The migration itself only marks the work (`archive_reindex.next_id`: the first message
the new index does not hold yet), so that it stays one short transaction; this module
does the work, in message id order, a transaction per COMMIT_CHARS of text: the
messages' terms are computed again, then the rows whose terms changed are updated, the
messages are added to the index in one statement, next_id moves past them, and the
transaction commits, so a kill loses at most the last one and the next run picks up
from next_id. The update and delete triggers skip the messages at or past next_id
(migration 0003), so the index matches the table at every commit.

As ingest's (subrosa.archive.ingest, CommitBehind), a transaction's writes and its
commit are made by a writer thread while this one computes the next transaction's
terms, reading its messages on a second connection; the last transaction (a small
re-index's only one) is written here.

Every command that opens the archive (subrosa.archive.connection.open_archive) runs
it first, under the ingest lock; `subrosa db upgrade` too. It costs less than
ingesting the same messages afresh: the JSON is not parsed or redacted again, and the
messages table is only touched where a message's terms changed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import suppress
from typing import NamedTuple

from subrosa.archive.connection import connect
from subrosa.archive.ingest import CommitBehind, tune_index
from subrosa.terms import index_terms

# Messages read per batch, and the text per write transaction (as ingest's COMMIT_BYTES:
# FTS5 writes a segment per transaction and merges them later).
BATCH_MESSAGES = 2000
COMMIT_CHARS = 32 << 20

Progress = Callable[[int, int], None]  # (messages just indexed, messages in all)

# The changed terms in one statement needs `UPDATE … FROM` (SQLite 3.33, 2020; subrosa
# otherwise asks 3.24's upserts): an older library stores them a row at a time (in the
# thread, at the cost of taking the interpreter's lock for each).
_ONE_UPDATE = sqlite3.sqlite_version_info >= (3, 33, 0)


def reindex_database(db_url: str, progress: Progress | None = None) -> int:
    """`subrosa db upgrade`: finish the archive's re-index when one is due (an SQLite
    database); on a server, build the id ranges' indexes ahead of the ids and seal the
    complete chunks of ids not sealed (subrosa.archive.pgstore.ranges_ahead()). How many
    messages were indexed."""
    from subrosa.archive.connection import ingest_lock
    from subrosa.paths import is_file, sqlite_path
    from subrosa.pg import is_server

    if is_server(db_url):
        from subrosa.archive.pgstore import ranges_ahead

        ranges_ahead(db_url)
        return 0
    path = sqlite_path(db_url)
    if path is None or not is_file(path):
        return 0
    conn = connect(path, any_thread=True)  # the writer thread commits on it
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
    done, next_id, first = 0, start, True
    writer = CommitBehind(conn, "reindex writer")
    reader: sqlite3.Connection | None = None
    try:
        while True:
            # While the writer thread has the connection, the rows are read on one of
            # their own: it sees the last commit, and rows past the transaction in
            # flight are not changed by it (nor by anything else: the ingest lock is
            # held, and nothing else writes to stored messages).
            read = reader if writer.running and reader is not None else conn
            work = _gather(read, next_id, total, progress)
            done += work.messages
            writer.wait()
            conn.execute("BEGIN IMMEDIATE")
            if first:  # as ingest's: one segment per transaction
                tune_index(conn)
                first = False
            if work.last or writer.refused:
                _finish(conn, work)
                conn.execute("COMMIT")
                if work.last:
                    break
            else:
                if reader is None:  # opened here: a statement on `conn` would wait for the thread
                    reader = _read_only(conn)
                _commit_behind(writer, conn, work)
            next_id = work.end
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            writer.interrupt()  # its transaction rolls back, as the one here does
        with suppress(Exception):  # its error, if any, is not the one raised here
            writer.wait()
        # SQLite rolls back some failures itself; a Ctrl-C that interrupted the thread's
        # COMMIT can leave the ROLLBACK interrupted too: closing the connection (the
        # caller's) then rolls the transaction back.
        if conn.in_transaction:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    finally:
        if reader is not None:
            reader.close()
    return done


class _Work(NamedTuple):
    """One write transaction's messages (ids from `first` up to `end`), their terms
    computed again: the ids and terms of those whose terms changed (`changed`, a JSON
    array of [id, terms]; None when none did). `last`: no message is left after them."""

    first: int
    end: int
    messages: int
    changed: str | None
    last: bool


def _gather(read: sqlite3.Connection, next_id: int, total: int, progress: Progress | None) -> _Work:
    """The next transaction's messages from `next_id` on, BATCH_MESSAGES at a time,
    until COMMIT_CHARS of text or the last message; their terms computed again (as
    subrosa.terms computes them now)."""
    changed: list[tuple[int, str | None]] = []
    chars = messages = 0
    first = next_id
    while True:
        batch = read.execute(
            "SELECT id, text, terms FROM messages WHERE id >= ? ORDER BY id LIMIT ?",
            (next_id, BATCH_MESSAGES),
        ).fetchall()
        if not batch:
            break
        for rowid, text, terms in batch:
            fresh = index_terms(text)
            if fresh != terms:
                changed.append((rowid, fresh))
            chars += len(text)
        messages += len(batch)
        next_id = int(batch[-1][0]) + 1
        if progress is not None:
            progress(len(batch), total)
        if chars >= COMMIT_CHARS:
            break
    return _Work(
        first,
        next_id,
        messages,
        json.dumps(changed, ensure_ascii=False) if changed else None,
        last=not batch,
    )


def _commit_behind(writer: CommitBehind, conn: sqlite3.Connection, work: _Work) -> None:
    """The transaction's writes and its commit made by the writer thread, while this one
    computes the next transaction's terms (a transaction that fills COMMIT_CHARS has
    one after it; a smaller re-index, a hook's, starts no thread)."""
    writer.start(lambda: _finish(conn, work))


def _finish(conn: sqlite3.Connection, work: _Work) -> None:
    """A transaction's writes, each one statement (the writer thread runs each without
    the interpreter's lock; `executemany` would take it again for every row): the
    changed terms stored, the messages indexed and next_id moved past them (_index), and
    on the last transaction the re-index marked done."""
    if work.changed is not None:
        # The update trigger skips these rows: they are at or past next_id.
        if _ONE_UPDATE:
            conn.execute(
                "UPDATE messages SET terms = json_extract(j.value, '$[1]')"
                " FROM json_each(?) AS j WHERE messages.id = json_extract(j.value, '$[0]')",
                (work.changed,),
            )
        else:
            conn.executemany(
                "UPDATE messages SET terms = ? WHERE id = ?",
                [(terms, rowid) for rowid, terms in json.loads(work.changed)],
            )
    _index(conn, work.first, work.end)
    if work.last:
        conn.execute("DELETE FROM archive_reindex")


def _read_only(conn: sqlite3.Connection) -> sqlite3.Connection:
    """A second connection to `conn`'s database, for reading only."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    reader = connect(path)
    reader.execute("PRAGMA query_only = ON")
    return reader


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
