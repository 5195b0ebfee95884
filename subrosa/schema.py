"""The newest schema revision, and the schema itself on SQLite, without SQLAlchemy.

`subrosa search`, `ingest`, `generate` and the `fact` commands check the stored revision
(and whether the archive's re-index after migration 0003 is done) with the standard
library's sqlite3 and only load SQLAlchemy and Alembic when a migration is due:
importing them costs more than the whole command (~0.5 s of CPU). A blank SQLite file
does not need Alembic either: `ensure_current` creates the newest schema in it directly
(SQLITE_SCHEMA) and stamps it with SCHEMA_HEAD, as Alembic would have. Alembic stays
the one way to move a database from one revision to the next, and PostgreSQL's only
way. subrosa.db re-exports SCHEMA_HEAD; tests assert it equals the migration scripts'
head and that SQLITE_SCHEMA is what the migrations make.

Without pathlib (and urllib.parse, and the ipaddress it loads): `subrosa search` reads
the revision through this module on every run, so a path here is a str or any
os.PathLike, handled with subrosa.paths.
"""

from __future__ import annotations

import os
import sqlite3
import stat

from subrosa.paths import absolute, data_dir, exists, is_dir, is_file, join, parent, quote, spelled

# pathlib stays off `subrosa search`'s path: only the type checker sees it here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from subrosa.paths import StrPath

SCHEMA_HEAD = "0021"

# What migrations 0001-0012 make on SQLite, in one place. When a migration is added,
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
        host VARCHAR,
        username VARCHAR,
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
        terms TEXT,
        PRIMARY KEY (id),
        FOREIGN KEY(session_pk) REFERENCES sessions (id) ON DELETE CASCADE,
        UNIQUE (uuid))""",
    "CREATE INDEX ix_messages_session ON messages (session_pk)",
    # Migration 0009: each session's messages as runs of ids (project-scoped search).
    """CREATE TABLE message_runs (
        session_pk INTEGER NOT NULL,
        lo INTEGER NOT NULL,
        hi INTEGER NOT NULL,
        PRIMARY KEY (session_pk, lo),
        FOREIGN KEY(session_pk) REFERENCES sessions (id) ON DELETE CASCADE)""",
    # Migration 0010: what a session holds stored under another (a fork's history).
    """CREATE TABLE shared_messages (
        session_pk INTEGER NOT NULL,
        message_id INTEGER NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (session_pk, message_id),
        FOREIGN KEY(session_pk) REFERENCES sessions (id) ON DELETE CASCADE,
        FOREIGN KEY(message_id) REFERENCES messages (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_shared_messages_message ON shared_messages (message_id)",
    """CREATE TABLE ingested_files (
        path VARCHAR NOT NULL,
        project VARCHAR NOT NULL,
        inode INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        "offset" INTEGER NOT NULL,
        head_hash VARCHAR NOT NULL,
        updated_at DATETIME NOT NULL,
        queue_state TEXT,
        PRIMARY KEY (path))""",
    # Migration 0003: the archive's re-index state (no row: nothing to re-index), and
    # the update and delete triggers that skip what the index does not hold yet.
    """CREATE TABLE archive_reindex (
        id INTEGER NOT NULL,
        next_id INTEGER NOT NULL,
        PRIMARY KEY (id))""",
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, terms, content='messages', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2', prefix='2 3')""",
    """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages
    WHEN NOT EXISTS (SELECT 1 FROM archive_reindex WHERE old.id >= next_id) BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, terms)
        VALUES ('delete', old.id, old.text, old.terms);
    END""",
    """CREATE TRIGGER messages_fts_au AFTER UPDATE OF text, terms ON messages
    WHEN NOT EXISTS (SELECT 1 FROM archive_reindex WHERE old.id >= next_id) BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text, terms)
        VALUES ('delete', old.id, old.text, old.terms);
        INSERT INTO messages_fts(rowid, text, terms) VALUES (new.id, new.text, new.terms);
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


def state(path: StrPath) -> tuple[bool, bool]:
    """Whether the SQLite file at `path` is at SCHEMA_HEAD, and whether its archive is
    being re-indexed (migration 0003: subrosa.archive.reindex finishes it)."""
    if not is_file(path):
        return False, False
    try:
        # Percent-encoded: a raw `#` or `?` in the path would end it early, and SQLite
        # would open (and create) another file. `/` stays, as in any file: URI.
        uri = "file:" + quote(str(path), safe="/") + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            return connection_state(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return False, False


def connection_state(conn: sqlite3.Connection) -> tuple[bool, bool]:
    """state() asked of an open connection to the SQLite file (two small queries; the
    MCP server asks its kept connection, subrosa.archive.kept)."""
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    if row is None or row[0] != SCHEMA_HEAD:
        return False, False
    pending = conn.execute("SELECT 1 FROM archive_reindex LIMIT 1").fetchone()
    return True, pending is not None


def is_current(path: StrPath) -> bool:
    """Whether the SQLite file at `path` is ready as it is: at SCHEMA_HEAD, its archive
    fully indexed (two small queries)."""
    current, reindexing = state(path)
    return current and not reindexing


# Every SQLite database file starts with a header of this many bytes.
SQLITE_HEADER_BYTES = 100


def file_problem(path: StrPath) -> str | None:
    """Why the file at `path` cannot be a subrosa database, in a few words; None when it
    does not exist yet (it will be made) or SQLite reads it as a database (damage
    further in shows when it is read: see subrosa.errors.corruption).

    Only a stat and SQLite itself look at it, never a descriptor of subrosa's own: POSIX
    drops every lock a process holds on a file when any of its descriptors on that file
    is closed, so reading the header with open() in a process that has the database
    open through SQLite already (an engine's pooled connection, the MCP server's
    archive) would drop that connection's shared lock; another process closing the
    database would then take itself for the last one and delete the WAL under it
    ("database disk image is malformed")."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # unreadable for another reason: opening it says which
    if stat.S_ISDIR(info.st_mode):
        return "it is a directory"
    if info.st_size == 0:
        return "it is empty, 0 bytes"
    if info.st_size < SQLITE_HEADER_BYTES:
        return f"it is cut short ({info.st_size} bytes, less than an SQLite header)"
    return _tables_problem(path)


def _tables_problem(path: StrPath) -> str | None:
    """Another program's database (tables, but no subrosa schema revision), which a
    migration would fill with subrosa's tables; or damage SQLite sees in its schema.
    A plain connection, no pragma: looking changes nothing in the file."""
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return None  # locked, or unreadable for a reason opening it will name
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):  # SQLITE_NOTADB: no SQLite header
            return "it is not an SQLite database"
        return str(exc) or "damaged"
    if names and "alembic_version" not in names:
        return "it holds another program's tables and no subrosa schema"
    return None


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


def migrate_lock_path(path: StrPath) -> str:
    """The lock beside the SQLite file at `path` that serializes creating and migrating it.

    An empty file that stays when the migration is done, on purpose: a flock is held on
    the file's inode, so removing it would let a process that opened the file before the
    removal (and waits on it) take the lock on the removed inode while a third one
    creates a new file and takes its lock: two migrations at once. Removing it safely
    needs every process to check, once it holds the lock, that the path still names the
    file it locked, and the subrosa versions already installed do not check."""
    return f"{path}.migrate.lock"


def connect(path: StrPath, any_thread: bool = False) -> sqlite3.Connection:
    """A DB-API connection set up like subrosa.db's engine (WAL, busy timeout, foreign
    keys); transactions are begun explicitly (BEGIN IMMEDIATE for writes). `any_thread`:
    usable from a thread other than the one that opened it, one thread at a time (ingest
    hands each transaction's index and commit to a writer thread: subrosa.archive.ingest,
    `Ingester._commit_behind`)."""
    conn = sqlite3.connect(
        str(path),
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=not any_thread,
    )
    for pragma in CONNECTION_PRAGMAS:
        conn.execute(pragma)
    return conn


def prepare_file(path: StrPath) -> None:
    """Create the database file readable by its owner only, before SQLite does, already
    holding SQLite's header (WAL set): it is made under a temporary name and linked into
    place, so no process ever sees it empty, and an empty file always means a lost
    database (`file_problem`). A file already there that cannot be a subrosa database
    is refused before anything writes to it (DatabaseUnreadable); one that cannot be
    made, or a dangling link where it would be, is a DatabaseError."""
    from subrosa.errors import DatabaseError, DatabaseUnreadable, InvalidInput

    path = spelled(path)
    if exists(path):
        problem = file_problem(path)
        if problem is not None:
            raise DatabaseUnreadable(path, problem)
        return
    if os.path.islink(path):  # planted where the file will be (a database in /tmp)
        raise DatabaseError(f"{path}: is a link to nothing; subrosa will not create it there.")
    problem = folder_problem(path)
    if problem is not None:
        raise InvalidInput(problem)
    try:
        _create_file(path)
    except (OSError, sqlite3.Error) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise DatabaseError(f"{path}: cannot create the database ({why}).") from None


def folder_problem(path: StrPath) -> str | None:
    """Why the database file `path` cannot be made, as one sentence, when its folder is
    not there and is not subrosa's own data dir (the default place, made when missing):
    a folder the user named (--db, SUBROSA_DB, the settings file's db) must exist, so a
    typo is told, not quietly made into a new folder holding a new, empty database."""
    path = spelled(path)
    folder = parent(path)
    if is_dir(folder) or absolute(folder) == absolute(data_dir()):
        return None
    return (
        f"{path}: cannot create the database, its folder {folder} does not exist "
        "(create it first, or name a database in a folder that exists)."
    )


def _create_file(path: StrPath) -> None:
    from subrosa.fsutil import make_private_dir, remove_file

    path = spelled(path)
    folder, name = parent(path), os.path.basename(path)
    make_private_dir(folder)
    temp = join(folder, f".{name}.{os.urandom(6).hex()}.new")
    fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.close(fd)
    try:
        conn = sqlite3.connect(str(temp), timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        finally:
            conn.close()
        os.link(temp, path)  # fails if another process made it first: theirs is as good
    except FileExistsError:
        pass
    finally:
        for leftover in (temp, f"{temp}-wal", f"{temp}-shm"):
            remove_file(leftover, FileNotFoundError)


def ensure_current(path: StrPath) -> bool:
    """Whether the SQLite file at `path` is at SCHEMA_HEAD (its archive's re-index may be
    under way: see `state`), made so here when it is blank (missing, or made by
    `prepare_file` and without a single table): the newest schema is created and
    stamped in one transaction, under the lock Alembic's runs take. False when it holds
    an older schema: that is subrosa.db's job, with Alembic. A file that cannot be a
    subrosa database is refused (DatabaseUnreadable), before anything writes to it."""
    if state(path)[0]:
        return True
    from subrosa.fsutil import file_lock

    prepare_file(path)  # made, or refused when it cannot be a subrosa database
    with file_lock(migrate_lock_path(path), 60, f"{path}: another process is migrating it."):
        conn = connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    conn.execute("ROLLBACK")
                    return state(path)[0]
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
