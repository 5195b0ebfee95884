"""The migrations: what a blank database becomes, and that the models agree with it."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from subrosa.db import SCHEMA_HEAD, alembic_config, open_database
from subrosa.models import Base


def _migrated(tmp_path: Path) -> Path:
    path = tmp_path / "blank.db"
    open_database(f"sqlite:///{path}")
    return path


def test_blank_database_gets_tables_columns_and_triggers(tmp_path: Path) -> None:
    conn = sqlite3.connect(_migrated(tmp_path))
    names = {(kind, name) for kind, name in conn.execute("SELECT type, name FROM sqlite_master")}
    for table in ("facts", "sessions", "messages", "ingested_files", "messages_fts", "facts_fts"):
        assert ("table", table) in names
    for trigger in ("messages_fts_ad", "messages_fts_au", "facts_fts_ai", "facts_fts_ad"):
        assert ("trigger", trigger) in names
    assert ("trigger", "facts_fts_au") in names
    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    assert columns == {"id", "session_pk", "uuid", "role", "timestamp", "text", "cjk"}
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    assert {"session_id", "project", "cwd", "git_branch", "title", "summary"} <= columns
    assert {"first_at", "last_at", "message_count"} <= columns
    columns = {row[1] for row in conn.execute("PRAGMA table_info(ingested_files)")}
    assert {"path", "inode", "size", "mtime_ns", "offset", "head_hash"} <= columns
    fts = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()[0]
    assert "content='messages'" in fts and "prefix='3'" in fts
    assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == SCHEMA_HEAD


def test_schema_head_is_the_newest_migration(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'x.db'}")
    script = ScriptDirectory.from_config(alembic_config(engine))
    assert script.get_current_head() == SCHEMA_HEAD


def test_models_match_the_migrations(tmp_path: Path) -> None:
    """Autogenerate finds nothing to do: the models and the migrations agree (the FTS
    virtual tables and their shadow tables are left out of the comparison)."""
    from subrosa.resources import migrations_dir

    engine = open_database(f"sqlite:///{tmp_path / 'x.db'}")
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


def test_facts_written_before_the_archive_revision_are_searchable(tmp_path: Path) -> None:
    """The 0002 migration indexes the facts that revision 0001 already held."""
    from alembic import command

    path = tmp_path / "old.db"
    engine = open_database(f"sqlite:///{path}")
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0001")
    raw = sqlite3.connect(path)
    raw.execute(
        "INSERT INTO facts(project, slug, path, title, type, description, hook, body, pinned,"
        " status, hits, position, created_at, updated_at, content_hash) VALUES ('p', 's',"
        " 's.md', 'Title', 'user', 'prefers zanzibarite', 'h', 'b', 0, 'active', 0, 1,"
        " '2026-01-01', '2026-01-01', 'x')"
    )
    raw.commit()
    raw.close()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    raw = sqlite3.connect(path)
    hits = raw.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'zanzibarite'")
    assert len(hits.fetchall()) == 1


def test_database_file_is_owner_only(tmp_path: Path) -> None:
    path = _migrated(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
