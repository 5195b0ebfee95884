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
- `sealed_chunks (chunk, upto)`: the chunks whose postings are complete below `upto`:
  a chunk's end for the chunks below the newest message's (sealed whole), the newest
  message's id + 1 for the newest chunk (sealed in part, so that search reads only the
  few ids past it through GIN, not most of a chunk).

At every committed state a chunk in sealed_chunks has exactly the postings its
committed messages below `upto` give, and a chunk not in it has none. Search reads the
postings of the ids below the first not sealed and the rest through GIN.

**Sealing** (subrosa_seal_chunk(c), one statement in its own transaction, called after
an ingest or an import commits, by `subrosa db upgrade`, and here): take
pg_try_advisory_xact_lock(KEY, c) (not had: return false, someone is writing or
sealing c; a later call gets it); the goal: c's end when c is below the newest
message's chunk, else the newest message's id + 1; c sealed that far already: true;
else c's rows (if it was sealed in part) replaced by those of its committed messages
below the goal (one INSERT … SELECT … GROUP BY), and (c, goal) in sealed_chunks; true.
Each statement of a plpgsql function (VOLATILE) takes a new snapshot in READ COMMITTED,
so the INSERT sees every message committed before the lock was had.

**Unsealing**: statement triggers after INSERT, UPDATE and DELETE on messages (their
rows as transition tables) take pg_advisory_xact_lock_shared(KEY, c) for each chunk c
the statement's rows touch, in ascending order, and, when the statement wrote an id of
c below its `upto`, delete c from sealed_chunks and its postings: in the writer's own
transaction. A batch into the newest chunk, past its seal, costs one shared lock and
one probe of sealed_chunks' key. A TRUNCATE of messages empties both tables. (Every
argument below holds for "wrote into c below its upto" as for "wrote into c": the
shared lock is taken for every chunk written, whatever its seal.)

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
every complete chunk (those below the newest message's chunk), and the newest one up to
its newest message, itself: in the
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

# A chunk's rows from its committed messages below `upto`: grouped by hashing, then each
# lexeme's ids sorted, newest first. (array_agg(id ORDER BY id DESC) would have the server
# sort every (lexeme, id) pair of the chunk by lexeme instead: a fifth more time here,
# more under a locale's collation.) `upto` is a bigint: the last chunk's end,
# (c + 1) * CHUNK, would not fit an integer.
SEAL_ROWS = (
    "INSERT INTO postings (lexeme, chunk, n, ids)"
    " SELECT g.lexeme, {c}, g.n, ARRAY(SELECT i FROM unnest(g.ids) AS i ORDER BY i DESC)"
    " FROM (SELECT w.lexeme, count(*) AS n, array_agg(m.id) AS ids"
    " FROM messages m, unnest(tsvector_to_array(m.words)) AS w(lexeme)"
    f" WHERE m.id BETWEEN {{c}} * {CHUNK} AND {{upto}} - 1 GROUP BY 1) g"
)
# How far a seal of chunk c reaches, `top` the newest message's id: a complete chunk
# (below the newest message's) whole, the newest one up to its newest message.
GOAL = (
    f"CASE WHEN {{top}} / {CHUNK} > {{c}} THEN ({{c}}::bigint + 1) * {CHUNK} ELSE {{top}} + 1 END"
)

SEAL = (
    "CREATE OR REPLACE FUNCTION subrosa_seal_chunk(c integer) RETURNS boolean"
    " LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path FROM CURRENT AS $$"
    " DECLARE top bigint; goal bigint; have bigint; BEGIN"
    f" IF NOT pg_try_advisory_xact_lock({LOCK_KEY}, c) THEN RETURN false; END IF;"
    " top := (SELECT max(m.id) FROM messages m);"
    f" goal := {GOAL.format(top='top', c='c')};"
    f" IF goal IS NULL OR goal <= c::bigint * {CHUNK} THEN RETURN false; END IF;"
    " SELECT s.upto INTO have FROM sealed_chunks s WHERE s.chunk = c;"
    " IF have >= goal THEN RETURN true; END IF;"
    " IF have IS NOT NULL THEN DELETE FROM postings p WHERE p.chunk = c; END IF; "
    + SEAL_ROWS.format(c="c", upto="goal")
    + "; INSERT INTO sealed_chunks (chunk, upto) VALUES (c, goal)"
    " ON CONFLICT (chunk) DO UPDATE SET upto = excluded.upto; RETURN true; END $$"
)

# One function for the four triggers (plpgsql plans a statement when it first runs it,
# so each branch names only the transition tables its event has). A chunk is unsealed
# when the statement wrote an id below how far its seal reaches: a write past the
# newest chunk's seal (the next messages) leaves it sealed that far.
_TOUCHED = (
    "SELECT array_agg(x.c ORDER BY x.c), array_agg(x.lo ORDER BY x.c) INTO cs, los FROM"
    f" (SELECT t.id / {CHUNK} AS c, min(t.id) AS lo FROM ({{rows}}) t GROUP BY 1) x;"
)
UNSEAL = (
    "CREATE OR REPLACE FUNCTION subrosa_postings_unseal() RETURNS trigger LANGUAGE plpgsql"
    " SECURITY DEFINER SET search_path FROM CURRENT AS $$"
    " DECLARE cs integer[]; los bigint[]; i integer; BEGIN"
    " IF TG_OP = 'TRUNCATE' THEN DELETE FROM postings; DELETE FROM sealed_chunks; RETURN NULL;"
    " ELSIF TG_OP = 'INSERT' THEN "
    + _TOUCHED.format(rows="SELECT a.id FROM added a")
    + " ELSIF TG_OP = 'DELETE' THEN "
    + _TOUCHED.format(rows="SELECT g.id FROM gone g")
    + " ELSE "
    + _TOUCHED.format(rows="SELECT a.id FROM added a UNION ALL SELECT g.id FROM gone g")
    + " END IF;"
    " FOR i IN 1 .. coalesce(cardinality(cs), 0) LOOP"
    f" PERFORM pg_advisory_xact_lock_shared({LOCK_KEY}, cs[i]);"
    " DELETE FROM sealed_chunks s WHERE s.chunk = cs[i] AND s.upto > los[i];"
    " IF FOUND THEN DELETE FROM postings p WHERE p.chunk = cs[i]; END IF;"
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
    # A chunk's postings hold its ids below `upto`: the chunk's end when it is sealed
    # whole, its newest message's id + 1 when it is the newest chunk, sealed in part.
    "CREATE TABLE IF NOT EXISTS sealed_chunks (chunk integer PRIMARY KEY, upto bigint NOT NULL)",
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
    """Every complete chunk not sealed whole yet (a database stamped back may have
    some), oldest first, telling the caller's progress bar, and the newest chunk up to
    its newest message."""
    config = op.get_context().config
    progress = None if config is None else config.attributes.get("progress")
    top = bind.execute(sa.text("SELECT max(id) FROM messages")).scalar()
    if top is None:
        return
    whole = {
        int(row[0])
        for row in bind.execute(
            sa.text(f"SELECT chunk FROM sealed_chunks WHERE upto = (chunk::bigint + 1) * {CHUNK}")
        )
    }
    chunks = [c for c in range(int(top) // CHUNK + 1) if c not in whole]
    complete = sum(c < int(top) // CHUNK for c in chunks)
    for chunk in chunks:
        goal = (chunk + 1) * CHUNK if int(top) // CHUNK > chunk else int(top) + 1  # GOAL
        bind.execute(sa.text("DELETE FROM postings WHERE chunk = :c"), {"c": chunk})
        bind.execute(sa.text(SEAL_ROWS.format(c=chunk, upto=goal)))
        bind.execute(
            sa.text(
                "INSERT INTO sealed_chunks (chunk, upto) VALUES (:c, :upto)"
                " ON CONFLICT (chunk) DO UPDATE SET upto = excluded.upto"
            ),
            {"c": chunk, "upto": goal},
        )
        if progress is not None and chunk < int(top) // CHUNK:  # the newest: a part, unsaid
            progress(CHUNK, CHUNK * complete)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
