"""The archive's full-text index also indexes two-letter prefixes (SQLite).

`messages_fts` indexed the prefixes of three letters (prefix='3', since 0002): a query's
`con*` reads one doclist, built at insert time. A prefix of one or two letters had none,
so FTS5 merged the doclists of every word it starts, over the whole index, in each
statement that asked it: at 1 GB, `co*` took 0.2 s in-process and `t*` 0.5 s, past
#12's 150 ms for any query. Measured on a bare FTS5 table of the newest 200,000 messages
at 1 GB (docs/search.md, "Short prefixes"): prefix='2 3' costs 1.15x the insert CPU and
1.17x the size of prefix='3', and answers `co*` in 0.5 ms (was 42) and `t*` in 54 ms (was
119); prefix='1 2 3' would cost 1.49x the insert CPU for the last letter alone.

FTS5 fixes the prefix option when the table is created, so the index is built again: as
0003 did, this migration only drops `messages_fts` and creates it again empty (with its
triggers, which skip the messages the new index does not hold yet) and marks every
archived message to be indexed again (`archive_reindex.next_id`), in one short
transaction. subrosa.archive.reindex then indexes them batch by batch with a progress
bar, committing as it goes, and resumes after a kill; every command that opens the
archive finishes it first (`subrosa db upgrade` too). It computes each message's terms
again and writes only those that differ: with subrosa.terms unchanged, none.

The downgrade does the same with prefix='3'. Nothing on PostgreSQL: its prefixes are
answered by a GIN index of every word (subrosa.archive.pgsearch).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

TOKENIZE = "unicode61 remove_diacritics 2"
# Only the messages below next_id are in the index (0003).
_INDEXED = "NOT EXISTS (SELECT 1 FROM archive_reindex WHERE old.id >= next_id)"


def _fts_sql(prefix: str) -> list[str]:
    """messages_fts and its triggers, as 0003 made them, with the prefixes `prefix`."""
    return [
        f"""CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, terms, content='messages', content_rowid='id',
        tokenize='{TOKENIZE}', prefix='{prefix}')""",
        f"""CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages WHEN {_INDEXED} BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, terms)
        VALUES ('delete', old.id, old.text, old.terms);
    END""",
        f"""CREATE TRIGGER messages_fts_au AFTER UPDATE OF text, terms ON messages
    WHEN {_INDEXED} BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, terms)
        VALUES ('delete', old.id, old.text, old.terms);
        INSERT INTO messages_fts(rowid, text, terms) VALUES (new.id, new.text, new.terms);
    END""",
    ]


def _rebuild(prefix: str) -> None:
    """messages_fts created again, empty, and every message marked to be indexed."""
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TRIGGER IF EXISTS messages_fts_au")
    op.execute("DROP TRIGGER IF EXISTS messages_fts_ad")
    op.execute("DROP TABLE IF EXISTS messages_fts")
    for statement in _fts_sql(prefix):
        op.execute(statement)
    # A re-index under way (0003's, unfinished) starts again from the first message.
    op.execute("DELETE FROM archive_reindex")
    op.execute(
        "INSERT INTO archive_reindex(id, next_id)"
        " SELECT 1, min(id) FROM messages HAVING count(*) > 0"
    )


def upgrade() -> None:
    _rebuild("2 3")


def downgrade() -> None:
    _rebuild("3")
