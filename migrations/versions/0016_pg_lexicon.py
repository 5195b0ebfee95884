"""PostgreSQL keeps the archive's words in a table of their own, for misspelt words.

`subrosa search` reads a query word the archive holds in no form as the archive's words
one typo away (docs/search.md, "Misspelt words"): about 50 candidates per letter of the
word, each asked whether the archive holds it. SQLite's FTS5 answers a hundred in a
millisecond or two from its index; a GIN index answers each with a bitmap scan (and a
scan of its pending list, the rows ingested since the last vacuum): ~1-6 ms each, seconds
for one word. PostgreSQL has no vocabulary to ask instead (ts_stat reads every row). So
the words of every message's `words` vector are kept in `lexicon` (one row per word),
and the candidates are asked of it in one statement.

The table is kept by the server, not by each writer: statement-level triggers on
messages (AFTER INSERT, AFTER UPDATE, with the statement's new rows as a transition
table) add the words of the rows each statement wrote, in one `INSERT … SELECT DISTINCT
… ON CONFLICT DO NOTHING` (in word order: two writers lock the same new words in the
same order). So every writing path keeps it whole: ingest's one INSERT per batch,
import's per session, a migration that rewrites texts or terms (the generated `words`
column follows them, and so does the table). A word no message holds any more (a message
deleted) stays: search counts each candidate's messages before it reads a word as it,
and drops those in none. The trigger's function runs as its owner (SECURITY DEFINER,
with the search path it was made with), so a member's ingest needs no grant on the
table. This revision fills it from the messages stored (and makes what it makes anew
when it is there already: a database stamped at an older revision). Nothing on SQLite.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# The words not there yet, looked up first: ON CONFLICT alone costs a speculative
# insertion per word, and most words of a batch are there (the same statement on the
# bench's 1,000 first messages, all their words held: 87 ms against 156 ms). The words
# of a vector as an array: unnest(tsvector) builds each word's positions too (the
# distinct words of the bench's 7,919 messages: 195 ms against 310 ms).
ADD_WORDS = (
    "INSERT INTO lexicon (term) SELECT d.term FROM (SELECT DISTINCT w.term"
    " FROM {rows}, unnest(tsvector_to_array({words})) AS w(term)) d"
    " WHERE NOT EXISTS (SELECT 1 FROM lexicon l WHERE l.term = d.term)"
    " ORDER BY 1 ON CONFLICT DO NOTHING"
)

UPGRADE = [
    "CREATE TABLE IF NOT EXISTS lexicon (term text PRIMARY KEY)",
    "CREATE OR REPLACE FUNCTION subrosa_lexicon_add() RETURNS trigger LANGUAGE plpgsql"
    " SECURITY DEFINER SET search_path FROM CURRENT AS $$ BEGIN "
    + ADD_WORDS.format(rows="added a", words="a.words")
    + "; RETURN NULL; END $$",
    "DROP TRIGGER IF EXISTS messages_lexicon_insert ON messages",
    "DROP TRIGGER IF EXISTS messages_lexicon_update ON messages",
    "CREATE TRIGGER messages_lexicon_insert AFTER INSERT ON messages"
    " REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION subrosa_lexicon_add()",
    "CREATE TRIGGER messages_lexicon_update AFTER UPDATE ON messages"
    " REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION subrosa_lexicon_add()",
    ADD_WORDS.format(rows="messages m", words="m.words"),
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS messages_lexicon_update ON messages",
    "DROP TRIGGER IF EXISTS messages_lexicon_insert ON messages",
    "DROP FUNCTION IF EXISTS subrosa_lexicon_add()",
    "DROP TABLE IF EXISTS lexicon",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
