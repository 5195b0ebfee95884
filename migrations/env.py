"""Alembic environment. subrosa sets script_location and the URL in code
(subrosa.db.alembic_config) and usually hands over an open connection."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from subrosa.models import Base

target_metadata = Base.metadata
config = context.config

# The full-text pieces are made by raw SQL in migrations 0002, 0003 and 0005: FTS5
# virtual tables and their shadow tables (`messages_fts_data`, …) on SQLite, GIN
# indexes over tsvector expressions on PostgreSQL. Models cannot express them, so
# autogenerate must not see them (it would propose dropping them). Nor the tsvector
# column migration 0007 adds to messages on PostgreSQL only (what the GIN index reads).
FTS_TABLES = ("messages_fts", "facts_fts")
FTS_INDEXES = (
    "ix_messages_text_tsv",
    "ix_messages_cjk_tsv",
    "ix_messages_terms_tsv",
    "ix_facts_tsv",
    "ix_messages_words",
    "ix_facts_words",
)
FTS_COLUMNS = (("messages", "words"),)
# The GIN index of each id range of messages (migration 0008), numbered as ids grow.
FTS_INDEX_PREFIXES = ("ix_messages_words_r",)


# PostgreSQL's tables for search, kept by the server's triggers and functions: the
# archive's words (migration 0016) and the postings of sealed chunks of ids (0018). The
# models leave them out, as they leave out the full-text tables they serve.
SEARCH_TABLES = ("lexicon", "postings", "sealed_chunks")


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    if type_ == "table" and name is not None:
        if name in SEARCH_TABLES:
            return False
        return not any(name == fts or name.startswith(fts + "_") for fts in FTS_TABLES)
    if type_ == "index":
        return name not in FTS_INDEXES and not (name or "").startswith(FTS_INDEX_PREFIXES)
    if type_ == "column" and isinstance(parent_names, dict):
        return (parent_names.get("table_name"), name) not in FTS_COLUMNS
    return True


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        include_name=include_name,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            include_name=include_name,
            render_as_batch=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        context.configure(
            connection=conn,
            target_metadata=target_metadata,
            include_name=include_name,
            render_as_batch=True,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
