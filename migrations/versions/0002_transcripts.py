"""The transcript archive (sessions, messages, ingest offsets) and full-text search.

The tables are the same on both engines; the full-text pieces are not.

On SQLite, two external-content FTS5 tables: `messages_fts` over each message's text (and its
CJK characters, one per token) and `facts_fts` over the title, description, hook and
body of every fact. Triggers keep them in step with their tables, except for new
messages, which ingest indexes itself in the same transaction: FTS5 flushes its
in-memory index at every statement savepoint and a trigger runs inside one, which
makes trigger-fed bulk inserts four times slower (measured; docs/search.md). Models cannot
express virtual tables or triggers, so they are created here with raw SQL (and
migrations/env.py keeps them out of autogenerate's comparison). Why this tokenizer
and prefix index: docs/search.md.

On PostgreSQL, GIN indexes over tsvector expressions (PG_SQL below), which the server
keeps in step by itself: no triggers, no second table, nothing for ingest to write.
They are what `subrosa search` will query on a server (docs/team.md, "The schema on
PostgreSQL"): an expression index is used only by a query that spells the same
expression, so those expressions are the contract. Ingest offsets are BIGINT there
(a file's mtime in nanoseconds does not fit PostgreSQL's 32-bit INTEGER; SQLite's
INTEGER is 64-bit already, so SQLite databases are unchanged).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TOKENIZE = "unicode61 remove_diacritics 2"

FTS_SQL = [
    # Messages. prefix='3': a prefix query like `dep*` reads one prebuilt doclist
    # instead of merging every term that starts with "dep" (seconds at a million
    # messages); see docs/search.md.
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
    # Facts: few rows, so no prefix index.
    f"""CREATE VIRTUAL TABLE facts_fts USING fts5(
        title, description, hook, body, content='facts', content_rowid='id',
        tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts(rowid, title, description, hook, body)
        VALUES (new.id, new.title, new.description, new.hook, new.body);
    END""",
    """CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, title, description, hook, body)
        VALUES ('delete', old.id, old.title, old.description, old.hook, old.body);
    END""",
    """CREATE TRIGGER facts_fts_au AFTER UPDATE OF title, description, hook, body ON facts
    BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, title, description, hook, body)
        VALUES ('delete', old.id, old.title, old.description, old.hook, old.body);
        INSERT INTO facts_fts(rowid, title, description, hook, body)
        VALUES (new.id, new.title, new.description, new.hook, new.body);
    END""",
    # Facts registered before this revision.
    "INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')",
]


# `simple`: lower-cased words, no stemming and no stopwords, like FTS5's unicode61
# today. The CJK column holds one character per token, so a CJK query is a phrase of
# characters (`'東' <-> '京'`), as with FTS5. Facts are weighted as FTS5's bm25 weights
# them (title 10, description and hook 5, body 1) through setweight's A, B and D.
PG_SQL = [
    """CREATE INDEX ix_messages_text_tsv ON messages
        USING gin (to_tsvector('simple'::regconfig, text))""",
    """CREATE INDEX ix_messages_cjk_tsv ON messages
        USING gin (to_tsvector('simple'::regconfig, cjk)) WHERE cjk IS NOT NULL""",
    """CREATE INDEX ix_facts_tsv ON facts USING gin ((
        setweight(to_tsvector('simple'::regconfig, title), 'A')
        || setweight(to_tsvector('simple'::regconfig, description), 'B')
        || setweight(to_tsvector('simple'::regconfig, hook), 'B')
        || setweight(to_tsvector('simple'::regconfig, body), 'D')))""",
]
PG_INDEXES = ("ix_messages_text_tsv", "ix_messages_cjk_tsv", "ix_facts_tsv")

# 64-bit on every engine: BIGINT on PostgreSQL, and on SQLite the INTEGER it always was.
BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _dialect() -> str:
    return op.get_bind().dialect.name


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("session_id", sa.String(), nullable=False, unique=True),
        sa.Column("project", sa.String(), nullable=False),
        sa.Column("cwd", sa.String(), nullable=True),
        sa.Column("git_branch", sa.String(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("first_at", sa.DateTime(), nullable=True),
        sa.Column("last_at", sa.DateTime(), nullable=True),
        sa.Column("message_count", sa.Integer(), nullable=False),
    )
    op.create_index("ix_sessions_project_last", "sessions", ["project", "last_at"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "session_pk",
            sa.Integer(),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("uuid", sa.String(), nullable=False, unique=True),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("timestamp", sa.DateTime(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("cjk", sa.Text(), nullable=True),
    )
    op.create_index("ix_messages_session", "messages", ["session_pk"])
    op.create_table(
        "ingested_files",
        sa.Column("path", sa.String(), primary_key=True),
        sa.Column("project", sa.String(), nullable=False),
        sa.Column("inode", BIG, nullable=False),
        sa.Column("size", BIG, nullable=False),
        sa.Column("mtime_ns", BIG, nullable=False),
        sa.Column("offset", BIG, nullable=False),
        sa.Column("head_hash", sa.String(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    for statement in FTS_SQL if _dialect() == "sqlite" else PG_SQL:
        op.execute(statement)


def downgrade() -> None:
    if _dialect() == "sqlite":
        for name in ("facts_fts_au", "facts_fts_ad", "facts_fts_ai"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        for name in ("messages_fts_au", "messages_fts_ad"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS facts_fts")
        op.execute("DROP TABLE IF EXISTS messages_fts")
    else:
        for name in PG_INDEXES:
            op.execute(f"DROP INDEX IF EXISTS {name}")
    op.drop_table("ingested_files")
    op.drop_index("ix_messages_session", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_sessions_project_last", table_name="sessions")
    op.drop_table("sessions")
