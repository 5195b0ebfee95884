"""Postings per sealed chunk of message ids, on a PostgreSQL server (docs/team.md,
"Round eleven"): for each lexeme of the `words` vectors of a chunk's messages, the ids
holding it, newest first, in one row. Search reads a medium or common word's newest
matches from a few such rows instead of reading thousands of rows through a GIN index.

A chunk is CHUNK consecutive ids (chunk = id / CHUNK). Only sealed chunks have postings,
each of its ids below its `upto` (the chunk's end; for the newest chunk, sealed in part,
its newest message's id + 1); any write to a sealed chunk's messages below that unseals
it in the writer's own transaction, so the rows of a sealed chunk are always those its
messages give.

The server keeps them (migration 0018 says how, and why no interleaving of writers and
sealers breaks that): triggers on messages unseal, and subrosa_seal_chunk(c) seals one
chunk in a statement of its own. This module asks it to: which complete chunks are
not sealed whole (those below the newest message's chunk), and the newest one when
PARTIAL ids or more are past its seal, and each sealed in turn, each in
its own transaction (the connection in autocommit, as subrosa.pg's are), one statement
each (so it works behind a pooler in transaction mode too). A chunk another writer is
writing or sealing is skipped: a later call gets it.
"""

from __future__ import annotations

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Ids a chunk holds: a medium word's 4,000 newest matches in a few dozen rows. Each seal
# of the newest chunk rewrites its rows: at most this many ids' worth.
CHUNK = 4096
# The first of the two int4 keys of a chunk's advisory lock (the chunk is the second):
# the bytes "sPst" read as a number. Locks of two int4 keys are a space of their own,
# apart from subrosa's one-bigint keys (subrosa.db, subrosa.archive.pgstore).
LOCK_KEY = int.from_bytes(b"sPst", "big")

# The newest chunk is sealed up to its newest message once that many ids or more have
# come past its seal (each seal of it rewrites its rows: ~0.1 s of the server for a
# quarter of a chunk), so search reads at most about this many newest ids through the
# GIN index between ingests (pgsearch.TAIL_MAX).
PARTIAL = CHUNK // 4

# The complete chunks (below the newest message's) not sealed whole, oldest first (one
# index probe each, ~1 ms for the 2,000 chunks of a 10 GB archive), then the newest
# chunk when PARTIAL ids or more are past its seal.
_UNSEALED = (
    "WITH t AS (SELECT max(id) AS top FROM messages)"
    f" SELECT c FROM t, generate_series(0, t.top / {CHUNK} - 1) AS c WHERE NOT EXISTS"
    f" (SELECT 1 FROM sealed_chunks s WHERE s.chunk = c AND s.upto = (c::bigint + 1) * {CHUNK})"
    f" UNION ALL SELECT t.top / {CHUNK} FROM t WHERE t.top + 1 - coalesce((SELECT s.upto"
    f" FROM sealed_chunks s WHERE s.chunk = t.top / {CHUNK}), (t.top / {CHUNK})::bigint * {CHUNK})"
    f" >= {PARTIAL} ORDER BY 1"
)


def unsealed(conn: Any) -> list[int]:
    """The complete chunks not sealed whole, oldest first, and the newest one when it
    is PARTIAL ids or more behind."""
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
        f" FROM messages) / {CHUNK}, 0) AND upto = (chunk::bigint + 1) * {CHUNK})"
    ).fetchone()
    return int(row[0]), int(row[1])
