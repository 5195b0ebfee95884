"""The migrations: what a blank database becomes, and that the models agree with it,
on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from subrosa.config import resolve_db_url
from subrosa.db import SCHEMA_HEAD, alembic_config, get_engine, open_database, upgrade
from subrosa.models import Base
from subrosa.schema import ensure_current
from tests.conftest import Db

pytestmark = pytest.mark.engines


def _migrated(tmp_path: Path) -> Path:
    path = tmp_path / "blank.db"
    open_database(f"sqlite:///{path}")
    return path


def test_blank_database_gets_tables_columns_and_triggers(tmp_path: Path) -> None:
    conn = sqlite3.connect(_migrated(tmp_path))
    names = {(kind, name) for kind, name in conn.execute("SELECT type, name FROM sqlite_master")}
    tables = ("facts", "sessions", "messages", "shared_messages", "ingested_files", "messages_fts")
    for table in (*tables, "facts_fts", "archive_reindex"):
        assert ("table", table) in names
    for trigger in ("messages_fts_ad", "messages_fts_au", "facts_fts_ai", "facts_fts_ad"):
        assert ("trigger", trigger) in names
    assert ("trigger", "facts_fts_au") in names
    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    assert columns == {"id", "session_pk", "uuid", "role", "timestamp", "text", "terms"}
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    assert {"session_id", "project", "cwd", "git_branch", "title", "summary"} <= columns
    assert {"first_at", "last_at", "message_count"} <= columns
    columns = {row[1] for row in conn.execute("PRAGMA table_info(ingested_files)")}
    assert {"path", "inode", "size", "mtime_ns", "offset", "head_hash"} <= columns
    columns = {row[1] for row in conn.execute("PRAGMA table_info(shared_messages)")}
    assert columns == {"session_pk", "message_id", "position"}
    fts = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()[0]
    assert "content='messages'" in fts and "prefix='2 3'" in fts
    assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == SCHEMA_HEAD


def test_blank_database_gets_the_tables_and_columns_of_the_models(db: Db) -> None:
    engine = open_database(resolve_db_url(db.url))
    inspector = inspect(engine)
    tables = set(inspector.get_table_names())
    assert {"facts", "sessions", "messages", "shared_messages", "ingested_files"} <= tables
    for table in Base.metadata.sorted_tables:
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        if db.engine == "postgresql" and table.name == "messages":
            columns.remove("words")  # migration 0007: what the GIN index reads
        assert columns == {c.name for c in table.columns}, table.name
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == SCHEMA_HEAD


@pytest.mark.engines("postgresql")
def test_blank_postgres_database_gets_the_search_indexes(db: Db) -> None:
    """The GIN indexes phase 2's search will query (docs/team.md), and BIGINT offsets."""
    engine = open_database(db.url)
    with engine.connect() as conn:
        indexes = dict(
            conn.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")
            ).all()
        )
        types = dict(
            conn.execute(
                text(
                    "SELECT column_name, data_type FROM information_schema.columns"
                    " WHERE table_name = 'ingested_files'"
                )
            ).all()
        )
        words = conn.execute(
            text(
                "SELECT generation_expression FROM information_schema.columns"
                " WHERE table_name = 'messages' AND column_name = 'words'"
            )
        ).scalar_one()
    # Migration 0005: the words as unicode61 cuts them, then the terms column; 0007
    # stores that vector in a column, which the index reads; 0021 folds its diacritics
    # (subrosa_words(): 0005's vector, folded when a row holds one; tests/test_fold.py).
    assert indexes["ix_messages_words"].endswith("USING gin (words)")
    assert words == "subrosa_words(text, terms)"
    assert "subrosa_fact_words((title)::text, description, hook, body)" in indexes["ix_facts_words"]
    assert not {"ix_messages_text_tsv", "ix_messages_terms_tsv", "ix_facts_tsv"} & set(indexes)
    assert {types[c] for c in ("inode", "size", "mtime_ns", "offset")} == {"bigint"}


def test_schema_head_is_the_newest_migration(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    script = ScriptDirectory.from_config(alembic_config(engine))
    assert script.get_current_head() == SCHEMA_HEAD


@pytest.mark.parametrize("how", ["as subrosa makes it", "by Alembic"])
def test_models_match_the_migrations(db: Db, how: str) -> None:
    """Autogenerate finds nothing to do: the models and the migrations agree (the FTS
    virtual tables and their shadow tables, and PostgreSQL's full-text indexes, are left
    out of the comparison). A blank SQLite file gets its schema without Alembic
    (subrosa.schema.SQLITE_SCHEMA); it is compared too, and so is one Alembic made."""
    from subrosa.resources import migrations_dir

    if how == "by Alembic":
        engine = get_engine(resolve_db_url(db.url))
        upgrade(engine)
    else:
        engine = open_database(resolve_db_url(db.url))
    source = (migrations_dir() / "env.py").read_text()
    namespace: dict[str, object] = {}
    # Only the filter is needed; running env.py itself would start a migration.
    start = source.index("FTS_TABLES")
    end = source.index("def run_migrations_offline")
    exec(compile(source[start:end], "env.py", "exec"), namespace)
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": namespace["include_name"], "compare_type": True}
        )
        assert compare_metadata(context, Base.metadata) == []


SEARCH_FACTS = {
    "sqlite": "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'zanzibarite'",
    # The indexed expression, spelled as the index spells it, so the index is usable.
    "postgresql": """SELECT id FROM facts WHERE (
        setweight(to_tsvector('simple'::regconfig, title), 'A')
        || setweight(to_tsvector('simple'::regconfig, description), 'B')
        || setweight(to_tsvector('simple'::regconfig, hook), 'B')
        || setweight(to_tsvector('simple'::regconfig, body), 'D'))
        @@ to_tsquery('simple', 'zanzibarite')""",
}


def test_facts_written_before_the_archive_revision_are_searchable(db: Db) -> None:
    """The 0002 migration indexes the facts that revision 0001 already held (and on
    either engine, 0002 goes down and up again)."""
    from alembic import command

    engine = open_database(resolve_db_url(db.url))
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0001")
    with engine.begin() as conn:
        assert "messages" not in inspect(conn).get_table_names()
        conn.execute(
            text(
                "INSERT INTO facts(project, slug, path, title, type, description, hook, body,"
                " pinned, status, hits, position, created_at, updated_at, content_hash) VALUES"
                " ('p', 's', 's.md', 'Title', 'user', 'prefers zanzibarite', 'h', 'b', false,"
                " 'active', 0, 1, '2026-01-01', '2026-01-01', 'x')"
            )
        )
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    with engine.connect() as conn:
        assert len(conn.execute(text(SEARCH_FACTS[db.engine])).all()) == 1


def test_database_file_is_owner_only(tmp_path: Path) -> None:
    path = _migrated(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def _sqlite_schema(path: Path) -> dict[str, object]:
    """Every table, index and trigger of an SQLite file: its SQL with the spacing
    normalized, and for each table its columns, indexes and foreign keys as SQLite
    reads them."""
    conn = sqlite3.connect(path)
    try:
        found: dict[str, object] = {}
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"):
            spaced = re.sub(r"\s*([(),])\s*", r"\1", " ".join((sql or "").split()))
            found[f"{kind} {name}"] = spaced
            if kind == "table":
                for pragma in ("table_info", "index_list", "foreign_key_list"):
                    rows = conn.execute(f"PRAGMA {pragma}('{name}')").fetchall()
                    found[f"{pragma} {name}"] = rows
        found["alembic_version"] = conn.execute("SELECT * FROM alembic_version").fetchall()
        return found
    finally:
        conn.close()


def test_a_blank_sqlite_file_gets_exactly_what_the_migrations_make(tmp_path: Path) -> None:
    """subrosa.schema creates the newest schema in a blank file without Alembic (a new
    archive or memory costs no Alembic import); it must be the migrations' schema."""
    direct = tmp_path / "direct.db"
    assert ensure_current(direct)
    migrated = tmp_path / "migrated.db"
    upgrade(get_engine(resolve_db_url(str(migrated))))
    assert _sqlite_schema(direct) == _sqlite_schema(migrated)
    assert stat.S_IMODE(os.stat(direct).st_mode) == 0o600


def test_an_older_sqlite_file_is_left_to_alembic(tmp_path: Path) -> None:
    """ensure_current creates a schema only in a blank file; an older one is migrated."""
    from alembic import command

    path = tmp_path / "old.db"
    engine = get_engine(resolve_db_url(str(path)))
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
    assert not ensure_current(path)
    open_database(resolve_db_url(str(path)))
    assert ensure_current(path)
    assert _sqlite_schema(path)["alembic_version"] == [(SCHEMA_HEAD,)]


@pytest.mark.engines("sqlite")
def test_looking_at_a_database_keeps_this_process_locks(tmp_path: Path) -> None:
    """Vetting an existing database file (prepare_file, file_problem: every engine's first
    contact, ensure_current) while this process has it open through SQLite must not
    drop that connection's locks: POSIX drops every lock a process holds on a file when
    any descriptor of it on that file is closed. Another process closing the database
    would then take itself for the last one and delete the WAL under the open
    connection ("database disk image is malformed" on its next read)."""
    import subprocess
    import sys

    from subrosa.schema import connect, file_problem, prepare_file

    path = tmp_path / "subrosa.db"
    assert ensure_current(path)
    conn = connect(path)
    try:
        conn.execute("SELECT count(*) FROM facts").fetchone()  # the WAL opened: locks held
        prepare_file(path)
        assert file_problem(path) is None
        assert ensure_current(path)
        other = (
            f"import sqlite3; c = sqlite3.connect({str(path)!r}); c.execute('SELECT 1'); c.close()"
        )
        subprocess.run([sys.executable, "-c", other], check=True, timeout=60)
        assert Path(f"{path}-wal").exists()  # the other process saw this one still there
        conn.execute("INSERT INTO alembic_version VALUES ('x')")
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (2,)
    finally:
        conn.close()
