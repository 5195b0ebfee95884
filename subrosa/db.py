"""The engine, sessions and migrations.

One engine per process. SQLite gets WAL (readers never block the writer), a busy
timeout (concurrent sessions wait instead of failing), foreign keys, and write
transactions that start with BEGIN IMMEDIATE (so a reader never has to upgrade to
a writer mid-transaction, which SQLite refuses at once with "database is locked").
Migrations never run at import time: `ensure_schema` compares the stored revision
with SCHEMA_HEAD (one cheap query) and only then loads Alembic.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from subrosa.errors import SubrosaError
from subrosa.paths import sqlite_path

# The newest Alembic revision lives in subrosa.schema, which imports no SQLAlchemy;
# a test asserts it equals the script directory's head.
from subrosa.schema import SCHEMA_HEAD as SCHEMA_HEAD

BUSY_TIMEOUT_MS = 30_000

_engines: dict[str, Engine] = {}


class DatabaseError(SubrosaError):
    """The database cannot be opened or migrated."""


def _prepare_sqlite_file(path: Path) -> None:
    """Create the database file readable by its owner only, before SQLite does."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)


def get_engine(url: str) -> Engine:
    """The process's engine for `url`, created on first use."""
    engine = _engines.get(url)
    if engine is not None:
        return engine
    path = sqlite_path(url)
    if path is not None:
        try:
            _prepare_sqlite_file(path)
        except OSError as exc:
            raise DatabaseError(f"{path}: cannot create the database ({exc.strerror}).") from None
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        _configure_sqlite(engine)
    else:
        engine = create_engine(url)
    _engines[url] = engine
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # We issue BEGIN ourselves (below); the driver's own transaction handling
        # would start deferred transactions behind our back.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("subrosa_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def dispose_all() -> None:
    """Close every engine (tests switch databases between runs)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()


@contextmanager
def session_scope(engine: Engine, *, write: bool = False) -> Iterator[Session]:
    """A session that commits on success, rolls back on error, and always closes."""
    bind = engine.execution_options(subrosa_write=True) if write else engine
    session = Session(bind=bind, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def current_revision(engine: Engine) -> str | None:
    """The stored Alembic revision, or None for a blank database."""
    try:
        with engine.connect() as conn:
            row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    except OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise DatabaseError(f"cannot read the database ({exc.orig}).") from None
    return row[0] if row else None


def alembic_config(engine: Engine) -> Any:
    """An Alembic Config whose script location is set in code (works from a wheel)."""
    from alembic.config import Config

    from subrosa.resources import migrations_dir

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def upgrade(engine: Engine) -> None:
    """Run Alembic to the newest revision, serialized across processes."""
    from alembic import command
    from filelock import FileLock

    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    lock = FileLock(str(path) + ".migrate.lock") if path is not None else None
    if lock is not None:
        lock.acquire(timeout=60)
    try:
        if current_revision(engine) == SCHEMA_HEAD:
            return
        config = alembic_config(engine)
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
    finally:
        if lock is not None:
            lock.release()


def ensure_schema(engine: Engine) -> None:
    """Migrate on first use; when the schema is current this is one query."""
    revision = current_revision(engine)
    if revision == SCHEMA_HEAD:
        return
    upgrade(engine)


def open_database(url: str) -> Engine:
    """The engine for `url`, migrated to the newest schema."""
    engine = get_engine(url)
    ensure_schema(engine)
    return engine


def migrate(url: str) -> tuple[str | None, str | None]:
    """Migrate the database at `url` to the newest schema (`subrosa db upgrade`); the
    revisions before and after (None before: a blank database)."""
    engine = get_engine(url)
    before = current_revision(engine)
    upgrade(engine)
    return before, current_revision(engine)


def status(url: str) -> dict[str, Any]:
    """Where the database is (password hidden) and which schema revision it has, against
    the newest (`subrosa db status`; the `--json` shape)."""
    engine = get_engine(url)
    revision = current_revision(engine)
    return {
        "url": engine.url.render_as_string(hide_password=True),
        "revision": revision,
        "head": SCHEMA_HEAD,
        "current": revision == SCHEMA_HEAD,
    }
