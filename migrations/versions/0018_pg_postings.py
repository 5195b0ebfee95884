"""PostgreSQL keeps postings per sealed chunk of message ids, for common words' search.

A word's newest matches read through a GIN index cost the server ~10 ms for a medium
or common word at 1 GB: thousands of matches, each read for its id. The same ids kept
in id order, a few thousand to a row, answer in ~0.2 ms (docs/team.md, round eight's
"merged" rows). Rows written per ingest batch are too small to pay, and merging them
later races with batches that commit late with lower ids (round ten's design says
how sealing avoids both). So the ids go by chunk: chunk = id / 4096
(subrosa.archive.pgpostings.CHUNK), and

- `postings (lexeme, chunk, n, ids)`: for each lexeme of a chunk's messages (the
  lexemes `tsvector_to_array(words)` gives), the ids of the chunk's messages holding
  it, newest first, and their number;
- `sealed_chunks (chunk)`: the chunks whose postings are complete.

At every committed state a chunk in sealed_chunks has exactly the postings its
committed messages give, and a chunk not in it has none. Search reads a sealed
chunk's postings and the rest through GIN.

**Sealing** (subrosa_seal_chunk(c), one statement in its own transaction, called after
an ingest or an import commits, by `subrosa db upgrade`, and here): take
pg_try_advisory_xact_lock(KEY, c) (not had: return false, someone is writing or
sealing c; a later call gets it); c sealed already: true; else insert c's rows from its
committed messages (one INSERT … SELECT … GROUP BY) and c into sealed_chunks; true.
Each statement of a plpgsql function (VOLATILE) takes a new snapshot in READ COMMITTED,
so the INSERT sees every message committed before the lock was had.

**Unsealing**: statement triggers after INSERT, UPDATE and DELETE on messages (their
rows as transition tables) take pg_advisory_xact_lock_shared(KEY, c) for each chunk c
the statement's rows touch, in ascending order, and delete c from sealed_chunks and, if
it was there, its postings: in the writer's own transaction. A batch into the newest
chunk, which is never sealed, costs one shared lock and one probe of sealed_chunks'
key. A TRUNCATE of messages empties both tables.

**Why no interleaving leaves a sealed chunk wrong.** A sealer holds c's lock from its
try to its commit; a writer holds c's shared lock from its trigger to its commit.
- A writer W that wrote into c before the sealer's try either holds the shared lock by
  then (its trigger ran: the try fails, nothing is sealed) or reaches its trigger after
  the try: its rows were not committed, so the sealer's INSERT did not see them; W's
  trigger waits for the sealer's commit, then (its DELETE's new snapshot) sees c sealed
  and unseals it. Either way W's commit leaves c unsealed or unsealed-and-resealed-later.
- A writer whose trigger runs while the sealer holds the lock waits for its commit,
  then unseals c the same way.
- A write committed before the try is in the sealer's snapshot; no write to c can
  commit between the try and the sealer's commit (its trigger would wait). So what the
  sealer inserts is what c's committed messages give when it commits.
- Two sealers of c: one has the lock, the other returns false (or, after the first
  commits, finds c sealed). Two writers unsealing c: the second's DELETE waits for the
  first's and then finds c gone. Shared locks do not conflict with each other and the
  sealer never waits for one, so none of these locks can deadlock.
Writers must run in READ COMMITTED (PostgreSQL's default, and subrosa's): a writer in
REPEATABLE READ would not see a seal committed after its snapshot, and leave it.

Every writing path keeps it: ingest's INSERT per batch, import's per session, a
migration that rewrites texts or terms (the generated `words` column follows them, the
UPDATE trigger unseals), a deleted session's messages (the cascade's DELETE). What no
trigger sees: a migration that changes the `words` column's expression (as 0005 and
0007 did) rewrites the table without row triggers; such a migration must empty both
tables (then `db upgrade` seals again). A migration that rewrites every message in its
one transaction (as 0014 and 0017 did) would hold a shared lock per chunk, and the
server's lock table holds max_locks_per_transaction x max_connections locks (6,400 by
default, ~6,000 chunks: a 30 GB archive); one past a few hundred chunks takes
`LOCK TABLE postings, sealed_chunks IN EXCLUSIVE MODE` first (a sealer then waits, and
its snapshot comes after the commit), empties both, and disables the postings
triggers for its writes.

The functions run as their owner (SECURITY DEFINER, with the search path they were
made with), so a member's ingest needs no grant on either table, and a reader reads
both through the default privileges docs/team.md's set-up gives. This revision seals
every complete chunk (those below the newest message's chunk) itself: in the
migration's transaction, which the new triggers' lock on messages keeps every writer
out of until it commits, so it takes no advisory locks (a few hundred chunks' locks in
one transaction would fill the server's lock table at 10 GB). A chunk at a time,
reported to the caller's re-index bar in message ids. Nothing on SQLite.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# subrosa.archive.pgpostings' CHUNK and LOCK_KEY, spelled here as this revision made
# them (a test holds them equal): a later change is a later revision's.
CHUNK = 4096
LOCK_KEY = 1934652276

# A chunk's rows from its committed messages: grouped by hashing, then each lexeme's ids
# sorted, newest first. (array_agg(id ORDER BY id DESC) would have the server sort
# every (lexeme, id) pair of the chunk by lexeme instead: a fifth more time here, more
# under a locale's collation.) BETWEEN: the last chunk's end, (c + 1) * CHUNK, would not
# fit an integer.
SEAL_ROWS = (
    "INSERT INTO postings (lexeme, chunk, n, ids)"
    " SELECT g.lexeme, {c}, g.n, ARRAY(SELECT i FROM unnest(g.ids) AS i ORDER BY i DESC)"
    " FROM (SELECT w.lexeme, count(*) AS n, array_agg(m.id) AS ids"
    " FROM messages m, unnest(tsvector_to_array(m.words)) AS w(lexeme)"
    f" WHERE m.id BETWEEN {{c}} * {CHUNK} AND {{c}} * {CHUNK} + {CHUNK - 1} GROUP BY 1) g"
)

SEAL = (
    "CREATE OR REPLACE FUNCTION subrosa_seal_chunk(c integer) RETURNS boolean"
    " LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path FROM CURRENT AS $$ BEGIN"
    f" IF NOT pg_try_advisory_xact_lock({LOCK_KEY}, c) THEN RETURN false; END IF;"
    " PERFORM 1 FROM sealed_chunks s WHERE s.chunk = c;"
    " IF FOUND THEN RETURN true; END IF; "
    + SEAL_ROWS.format(c="c")
    + "; INSERT INTO sealed_chunks (chunk) VALUES (c); RETURN true; END $$"
)

# One function for the four triggers (plpgsql plans a statement when it first runs it,
# so each branch names only the transition tables its event has).
UNSEAL = (
    "CREATE OR REPLACE FUNCTION subrosa_postings_unseal() RETURNS trigger LANGUAGE plpgsql"
    " SECURITY DEFINER SET search_path FROM CURRENT AS $$"
    " DECLARE touched integer[]; c integer; BEGIN"
    " IF TG_OP = 'TRUNCATE' THEN DELETE FROM postings; DELETE FROM sealed_chunks; RETURN NULL;"
    f" ELSIF TG_OP = 'INSERT' THEN touched := ARRAY(SELECT DISTINCT a.id / {CHUNK}"
    " FROM added a ORDER BY 1);"
    f" ELSIF TG_OP = 'DELETE' THEN touched := ARRAY(SELECT DISTINCT g.id / {CHUNK}"
    " FROM gone g ORDER BY 1);"
    f" ELSE touched := ARRAY(SELECT a.id / {CHUNK} FROM added a"
    f" UNION SELECT g.id / {CHUNK} FROM gone g ORDER BY 1); END IF;"
    " FOREACH c IN ARRAY touched LOOP"
    f" PERFORM pg_advisory_xact_lock_shared({LOCK_KEY}, c);"
    " DELETE FROM sealed_chunks s WHERE s.chunk = c;"
    " IF FOUND THEN DELETE FROM postings p WHERE p.chunk = c; END IF;"
    " END LOOP; RETURN NULL; END $$"
)

TRIGGERS = {
    "messages_postings_insert": "AFTER INSERT ON messages REFERENCING NEW TABLE AS added",
    "messages_postings_update": "AFTER UPDATE ON messages"
    " REFERENCING OLD TABLE AS gone NEW TABLE AS added",
    "messages_postings_delete": "AFTER DELETE ON messages REFERENCING OLD TABLE AS gone",
    "messages_postings_truncate": "AFTER TRUNCATE ON messages",
}

UPGRADE = [
    "CREATE TABLE IF NOT EXISTS postings (lexeme text NOT NULL, chunk integer NOT NULL,"
    " n integer NOT NULL, ids integer[] NOT NULL, PRIMARY KEY (lexeme, chunk) INCLUDE (n))",
    # Unsealing deletes a chunk's rows: found by their chunk (one B-tree entry a row,
    # deduplicated: a small index) rather than by reading the whole table.
    "CREATE INDEX IF NOT EXISTS ix_postings_chunk ON postings (chunk)",
    "CREATE TABLE IF NOT EXISTS sealed_chunks (chunk integer PRIMARY KEY)",
    SEAL,
    UNSEAL,
    *(f"DROP TRIGGER IF EXISTS {name} ON messages" for name in TRIGGERS),
    *(
        f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT"
        " EXECUTE FUNCTION subrosa_postings_unseal()"
        for name, when in TRIGGERS.items()
    ),
]

DOWNGRADE = [
    *(f"DROP TRIGGER IF EXISTS {name} ON messages" for name in TRIGGERS),
    "DROP FUNCTION IF EXISTS subrosa_postings_unseal()",
    "DROP FUNCTION IF EXISTS subrosa_seal_chunk(integer)",
    "DROP TABLE IF EXISTS sealed_chunks",
    "DROP TABLE IF EXISTS postings",
]


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for statement in UPGRADE:
        op.execute(statement)
    _seal_complete(bind)


def _seal_complete(bind: sa.Connection) -> None:
    """Every complete chunk not sealed yet (a database stamped back may have some),
    oldest first, telling the caller's progress bar."""
    config = op.get_context().config
    progress = None if config is None else config.attributes.get("progress")
    unsealed = [
        int(row[0])
        for row in bind.execute(
            sa.text(
                f"SELECT c FROM generate_series(0, (SELECT max(id) FROM messages) / {CHUNK} - 1)"
                " AS c WHERE NOT EXISTS (SELECT 1 FROM sealed_chunks s WHERE s.chunk = c)"
                " ORDER BY c"
            )
        )
    ]
    for chunk in unsealed:
        bind.execute(sa.text(SEAL_ROWS.format(c=chunk)))
        bind.execute(sa.text("INSERT INTO sealed_chunks (chunk) VALUES (:c)"), {"c": chunk})
        if progress is not None:
            progress(CHUNK, CHUNK * len(unsealed))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
