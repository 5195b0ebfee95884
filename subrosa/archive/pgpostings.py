"""Postings per sealed chunk of message ids, on a PostgreSQL server (docs/team.md,
"Round eleven"): for each lexeme of the `words` vectors of a chunk's messages, the ids
holding it, newest first, in one row. Search reads a medium or common word's newest
matches from a few such rows instead of reading thousands of rows through a GIN index.

A chunk is CHUNK consecutive ids (chunk = id / CHUNK). Only sealed chunks have postings;
any write to a sealed chunk's messages unseals it in the writer's own transaction, so
the rows of a sealed chunk are always those its messages give.

The server keeps them (migration 0018 says how, and why no interleaving of writers and
sealers breaks that): triggers on messages unseal, and subrosa_seal_chunk(c) seals one
chunk in a statement of its own. This module asks it to: which complete chunks are
not sealed (those below the newest message's chunk), and each sealed in turn, each in
its own transaction (the connection in autocommit, as subrosa.pg's are), one statement
each (so it works behind a pooler in transaction mode too). A chunk another writer is
writing or sealing is skipped: a later call gets it.
"""

from __future__ import annotations

from typing import Any

# Ids a chunk holds: a medium word's 4,000 newest matches in a few dozen rows, and the
# newest, unsealed chunk (read through the GIN index, as before) at most this many ids.
CHUNK = 4096
# The first of the two int4 keys of a chunk's advisory lock (the chunk is the second):
# the bytes "sPst" read as a number. Locks of two int4 keys are a space of their own,
# apart from subrosa's one-bigint keys (subrosa.db, subrosa.archive.pgstore).
LOCK_KEY = int.from_bytes(b"sPst", "big")

# The complete chunks (below the newest message's) not sealed, oldest first: ~0.5 ms on
# the server at 20 chunks (100 MB of transcripts), ~1.3 ms at 2,000 (10 GB).
_UNSEALED = (
    f"SELECT c FROM generate_series(0, (SELECT max(id) FROM messages) / {CHUNK} - 1) AS c"
    " WHERE NOT EXISTS (SELECT 1 FROM sealed_chunks s WHERE s.chunk = c) ORDER BY c"
)


def unsealed(conn: Any) -> list[int]:
    """The complete chunks not sealed, oldest first."""
    return [int(row[0]) for row in conn.execute(_UNSEALED).fetchall()]


def seal(conn: Any, chunk: int) -> bool:
    """Seal `chunk` (its own transaction: `conn` in autocommit); False when another
    connection is writing or sealing it, True when it is sealed."""
    return bool(conn.execute("SELECT subrosa_seal_chunk(?)", (chunk,)).fetchone()[0])


def seal_ready(conn: Any) -> int:
    """Seal every complete chunk not sealed yet (each in its own transaction, busy ones
    skipped); how many are sealed now that were not. `conn` is a subrosa.pg.Connection
    in autocommit. Sealing never fails its caller (an ingest) for the server's settings:
    a role it refuses the function to (none should be: it runs as its owner, and PUBLIC
    may execute it unless a team revoked that), or a statement_timeout shorter than a
    seal, leaves the chunks to `subrosa db upgrade` (doctor says when they pile up)."""
    errors = conn.errors
    sealed = 0
    for chunk in unsealed(conn):
        try:
            done = seal(conn, chunk)
        except (errors.InsufficientPrivilege, errors.QueryCanceled):
            return sealed
        sealed += done
    return sealed


def coverage(conn: Any) -> tuple[int, int]:
    """How many chunks are complete, and how many of those are sealed (doctor)."""
    row = conn.execute(
        f"SELECT coalesce((SELECT max(id) FROM messages) / {CHUNK}, 0),"
        f" (SELECT count(*) FROM sealed_chunks WHERE chunk < coalesce((SELECT max(id)"
        f" FROM messages) / {CHUNK}, 0))"
    ).fetchone()
    return int(row[0]), int(row[1])
