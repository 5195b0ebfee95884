"""The newest schema revision, and the schema itself on SQLite, without SQLAlchemy.

`subrosa search`, `ingest`, `generate` and the `fact` commands check the stored revision
with the standard library's sqlite3 and only load SQLAlchemy and Alembic when a
migration is due: importing them costs more than the whole command (~0.5 s of CPU). A
blank SQLite file does not need Alembic either: `ensure_current` creates the newest
schema in it directly (SQLITE_SCHEMA) and stamps it with SCHEMA_HEAD, as Alembic would
have. Alembic stays the one way to move a database from one revision to the next, and
PostgreSQL's only way. subrosa.db re-exports SCHEMA_HEAD; tests assert it equals the
migration scripts' head and that SQLITE_SCHEMA is what the migrations make.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

SCHEMA_HEAD = "0003"

# What migrations 0001-0003 make on SQLite, in one place. When a migration is added,
# this follows it (tests/test_schema.py compares the two, table by table).
SQLITE_SCHEMA = (
    """CREATE TABLE alembic_version (
        version_num VARCHAR(32) NOT NULL,
        CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))""",
    """CREATE TABLE facts (
        id INTEGER NOT NULL,
        project VARCHAR NOT NULL,
        slug VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        title VARCHAR NOT NULL,
        type VARCHAR NOT NULL,
        description TEXT NOT NULL,
        hook TEXT NOT NULL,
        body TEXT NOT NULL,
        section VARCHAR,
        pinned BOOLEAN NOT NULL,
        status VARCHAR NOT NULL,
        archive_reason TEXT,
        archived_at DATETIME,
        hits INTEGER NOT NULL,
        position INTEGER NOT NULL,
        created_at DATETIME NOT NULL,
        updated_at DATETIME NOT NULL,
        last_hit_at DATETIME,
        content_hash VARCHAR NOT NULL, leaf_stat VARCHAR,
        PRIMARY KEY (id),
        CONSTRAINT uq_facts_project_slug UNIQUE (project, slug),
        CONSTRAINT ck_facts_status CHECK (status IN ('active', 'archived')),
        CONSTRAINT ck_facts_type CHECK (type IN ('user', 'feedback', 'project', 'reference')))""",
    "CREATE INDEX ix_facts_project_position ON facts (project, position)",
    """CREATE TABLE sessions (
        id INTEGER NOT NULL,
        session_id VARCHAR NOT NULL,
        project VARCHAR NOT NULL,
        cwd VARCHAR,
        git_branch VARCHAR,
        title TEXT,
        summary TEXT,
        first_at DATETIME,
        last_at DATETIME,
        message_count INTEGER NOT NULL,
        PRIMARY KEY (id),
        UNIQUE (session_id))""",
    "CREATE INDEX ix_sessions_project_last ON sessions (project, last_at)",
    """CREATE TABLE messages (
        id INTEGER NOT NULL,
        session_pk INTEGER NOT NULL,
        uuid VARCHAR NOT NULL,
        role VARCHAR NOT NULL,
        timestamp DATETIME,
        text TEXT NOT NULL,
        cjk TEXT,
        PRIMARY KEY (id),
        FOREIGN KEY(session_pk) REFERENCES sessions (id) ON DELETE CASCADE,
        UNIQUE (uuid))""",
    "CREATE INDEX ix_messages_session ON messages (session_pk)",
    """CREATE TABLE ingested_files (
        path VARCHAR NOT NULL,
        project VARCHAR NOT NULL,
        inode INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        "offset" INTEGER NOT NULL,
        head_hash VARCHAR NOT NULL,
        updated_at DATETIME NOT NULL,
        PRIMARY KEY (path))""",
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, cjk, content='messages', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2', prefix='3')""",
    """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, cjk)
        VALUES ('delete', old.id, old.text, old.cjk);
    END""",
    """CREATE TRIGGER messages_fts_au AFTER UPDATE OF text, cjk ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, cjk)
        VALUES ('delete', old.id, old.text, old.cjk);
        INSERT INTO messages_fts(rowid, text, cjk) VALUES (new.id, new.text, new.cjk);
    END""",
    """CREATE VIRTUAL TABLE facts_fts USING fts5(
        title, description, hook, body, content='facts', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2')""",
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
)


def is_current(path: Path) -> bool:
    """Whether the SQLite file at `path` exists and is at SCHEMA_HEAD (one query)."""
    if not path.is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == SCHEMA_HEAD


BUSY_TIMEOUT_MS = 30_000
# Every connection to the SQLite file, SQLAlchemy's (subrosa.db) and the archive's
# DB-API one (subrosa.archive.connection), starts with these: WAL so readers never
# block the writer, a busy timeout so writers wait instead of failing, foreign keys on,
# and NORMAL sync (safe with WAL; a power cut loses at most the last transaction).
CONNECTION_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)


def migrate_lock_path(path: Path) -> str:
    """The lock beside the SQLite file at `path` that serializes creating and migrating it."""
    return f"{path}.migrate.lock"


def connect(path: Path) -> sqlite3.Connection:
    """A DB-API connection set up like subrosa.db's engine (WAL, busy timeout, foreign
    keys); transactions are begun explicitly (BEGIN IMMEDIATE for writes)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    for pragma in CONNECTION_PRAGMAS:
        conn.execute(pragma)
    return conn


def prepare_file(path: Path) -> None:
    """Create the database file readable by its owner only, before SQLite does."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)


def ensure_current(path: Path) -> bool:
    """Whether the SQLite file at `path` is at SCHEMA_HEAD, made so here when it is blank
    (missing, empty, or without a single table): the newest schema is created and stamped
    in one transaction, under the lock Alembic's runs take. False when it holds an older
    schema (or something else): that is subrosa.db's job, with Alembic."""
    if is_current(path):
        return True
    from subrosa.fsutil import file_lock

    prepare_file(path)
    with file_lock(migrate_lock_path(path), 60, f"{path}: another process is migrating it."):
        conn = connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    conn.execute("ROLLBACK")
                    return is_current(path)
                for statement in SQLITE_SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT INTO alembic_version (version_num) VALUES (?)", [SCHEMA_HEAD])
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()
    return True
