"""The archive's terms column and a full-text index over it, rebuilt in place.

Search (issue 12) finds camelCase identifiers by their parts: each message's terms
column (`cjk` until now, which held its CJK characters one per token) also holds the
parts of its camelCase identifiers, computed in Python (subrosa.terms.index_terms), so
that the same terms can be indexed by any engine (docs/search.md).

This migration changes the schema only, in one short transaction: the column is
renamed, `messages_fts` is dropped and created again empty, and the messages already
archived are marked to be indexed again (`archive_reindex.next_id`: the first message
not yet in the new index). Re-indexing a gigabyte takes a minute, so it is not done
here: subrosa.archive.reindex does it batch by batch, committing as it goes, with a
progress bar, and picks up where it stopped after a kill; every command that opens
the archive finishes it first. The update and delete triggers leave alone the
messages the new index does not hold yet (their WHEN clause), so the index is right
at every moment of the re-index.

On PostgreSQL (no archive there yet): the column and its index are renamed, and the
state table is created, so the models agree on both engines.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TOKENIZE = "unicode61 remove_diacritics 2"
# Only the messages below next_id are in the index (see the docstring).
_INDEXED = "NOT EXISTS (SELECT 1 FROM archive_reindex WHERE old.id >= next_id)"

FTS_SQL = [
    # prefix='3': see 0002 and docs/search.md.
    f"""CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, terms, content='messages', content_rowid='id',
        tokenize='{TOKENIZE}', prefix='3')""",
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
OLD_FTS_SQL = [
    f"""CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, cjk, content='messages', content_rowid='id',
        tokenize='{TOKENIZE}', prefix='3')""",
    """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, cjk)
        VALUES ('delete', old.id, old.text, old.cjk);
    END""",
    """CREATE TRIGGER messages_fts_au AFTER UPDATE OF text, cjk ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, cjk)
        VALUES ('delete', old.id, old.text, old.cjk);
        INSERT INTO messages_fts(rowid, text, cjk) VALUES (new.id, new.text, new.cjk);
    END""",
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
]


def _drop_fts() -> None:
    op.execute("DROP TRIGGER IF EXISTS messages_fts_au")
    op.execute("DROP TRIGGER IF EXISTS messages_fts_ad")
    op.execute("DROP TABLE IF EXISTS messages_fts")


def _cjk_only() -> None:
    """The old column held each message's CJK characters only (0002's rule)."""
    from subrosa.cjk import cjk_index_text

    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, text FROM messages WHERE cjk IS NOT NULL")).all()
    values = [{"id": rowid, "cjk": cjk_index_text(text)} for rowid, text in rows]
    if values:
        bind.execute(sa.text("UPDATE messages SET cjk = :cjk WHERE id = :id"), values)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _drop_fts()
    op.alter_column("messages", "cjk", new_column_name="terms")
    op.create_table(
        "archive_reindex",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("next_id", sa.Integer(), nullable=False),
    )
    if sqlite:
        for statement in FTS_SQL:
            op.execute(statement)
    else:
        op.execute("ALTER INDEX ix_messages_cjk_tsv RENAME TO ix_messages_terms_tsv")
    op.execute(
        "INSERT INTO archive_reindex(id, next_id)"
        " SELECT 1, min(id) FROM messages HAVING count(*) > 0"
    )


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        _drop_fts()
    op.drop_table("archive_reindex")
    op.alter_column("messages", "terms", new_column_name="cjk")
    if sqlite:
        _cjk_only()
        for statement in OLD_FTS_SQL:
            op.execute(statement)
    else:
        op.execute("ALTER INDEX ix_messages_terms_tsv RENAME TO ix_messages_cjk_tsv")
