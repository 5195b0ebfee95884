"""The engine, sessions and migrations, on SQLite or PostgreSQL.

One engine per process. SQLite gets WAL (readers never block the writer), a busy
timeout (concurrent sessions wait instead of failing), foreign keys, and write
transactions that start with BEGIN IMMEDIATE (so a reader never has to upgrade to
a writer mid-transaction, which SQLite refuses at once with "database is locked").
PostgreSQL needs none of that; it gets a connect timeout, so that a command facing an
unreachable server fails in seconds rather than waiting for TCP to give up, and over
TCP keepalives (subrosa.pg.connect_defaults); a pooled connection the server ended
is replaced when checked out.
Migrations never run at import time: `ensure_schema` compares the stored revision
with SCHEMA_HEAD (one cheap query) and only then loads Alembic; concurrent first runs
are serialized by a file lock beside an SQLite file, by an advisory lock on a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TypeGuard

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, DisconnectionError, NoSuchModuleError
from sqlalchemy.orm import Session

from subrosa.errors import (
    SUPPORTED_DATABASES,
    DatabaseUnreadable,
    InvalidInput,
    corruption,
    cut_short,
    cut_short_sentence,
    denied,
    hide_passwords,
    one_line_reason,
)
from subrosa.errors import DatabaseError as DatabaseError  # defined beside the others
from subrosa.fsutil import file_lock
from subrosa.paths import exists, sqlite_path
from subrosa.pg import INSTALL_DRIVER, POOLER_PARAMETER, connect_defaults, declared_pooler

# The newest Alembic revision lives in subrosa.schema, which imports no SQLAlchemy;
# a test asserts it equals the script directory's head.
from subrosa.schema import (
    BUSY_TIMEOUT_MS,
    CONNECTION_PRAGMAS,
    ensure_current,
    folder_problem,
    migrate_lock_path,
    prepare_file,
)
from subrosa.schema import SCHEMA_HEAD as SCHEMA_HEAD

# pg_advisory_xact_lock's key for migrations: any constant will do; this one is the
# bytes "subrosaM" read as a number, unlikely to be another application's.
MIGRATION_LOCK_KEY = int.from_bytes(b"subrosaM", "big")

_engines: dict[str, Engine] = {}


def database_url(value: str) -> URL:
    """The SQLAlchemy URL for a `--db` value (see subrosa.config.resolve_db_url).

    A file's URL is made with `URL.create` from the path `sqlite_path` reads, so the
    file created beforehand and the file SQLAlchemy opens are one, whatever characters
    its name has. `postgresql://` (or `postgres://`, as libpq and subrosa.pg.SCHEMES take
    it) means psycopg 3, the driver subrosa declares (SQLAlchemy's own default for it is
    psycopg2).
    """
    path = sqlite_path(value)
    try:
        url = make_url(value)
    except (ArgumentError, ValueError):
        raise DatabaseError(
            f"{hide_passwords(value)}: not a database URL (expected a file path, "
            "sqlite:///PATH or postgresql://USER@HOST/DATABASE)."
        ) from None
    if path is not None:
        return URL.create("sqlite", database=str(path), query=url.query)
    if url.drivername == "postgres":  # libpq's other spelling (Heroku's URLs), not SQLAlchemy's
        url = url.set(drivername="postgresql")
    # psycopg 3 is the one driver subrosa speaks to a server through (subrosa.pg's
    # libpq too): another's name (psycopg2, asyncpg) is refused as another server is.
    if url.get_backend_name() not in ("postgresql", "sqlite") or url.drivername not in (
        "postgresql",
        "postgresql+psycopg",
        "sqlite",
    ):
        raise InvalidInput(f"{hide_passwords(value)}: {SUPPORTED_DATABASES}.")
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() == "postgresql" and declared_pooler(value):
        # subrosa's own, read from `value` (subrosa.pg.behind_pooler); libpq refuses it.
        url = url.difference_update_query([POOLER_PARAMETER])
    return url


def shown(url: URL) -> str:
    """How a database is named in messages: a file by its path, a server by its URL
    without the password."""
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return hide_passwords(url.render_as_string(hide_password=True))


def get_engine(url: str) -> Engine:
    """The process's engine for `url`, created on first use."""
    engine = _engines.get(url)
    if engine is not None:
        return engine
    target = database_url(url)
    path = sqlite_path(url)
    if path is not None:
        prepare_file(path)  # refuses a file that is no subrosa database, or cannot be made
        engine = create_engine(target, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        _configure_sqlite(engine)
    else:
        engine = _server_engine(target, url)
    _engines[url] = engine
    return engine


def _server_engine(url: URL, given: str) -> Engine:
    """The engine for a server's `url` (`given`: the URL as the user wrote it)."""
    postgresql = url.get_backend_name() == "postgresql"
    try:
        connect_args: dict[str, Any] = {}
        if postgresql:
            import psycopg

            # The connect timeout, and over TCP the keepalives, the URL does not name.
            connect_args.update(connect_defaults(given, psycopg.pq.version()))
        engine = create_engine(url, connect_args=connect_args)
    except (NoSuchModuleError, ImportError) as exc:
        if postgresql:  # as subrosa.pg says it
            raise DatabaseError(f"{shown(url)}: {INSTALL_DRIVER}.") from None
        raise DatabaseError(
            f"{shown(url)}: no database driver for {url.drivername} ({exc})."
        ) from None
    if postgresql:
        _unprepared_behind_pooler(engine, given)
        _replaced_when_ended(engine)
        _password_file_warned_once(engine, given)
    return engine


def _password_file_warned_once(engine: Engine, url: str) -> None:
    """libpq's warning of a password file others may read, once a process, not once a
    connection (subrosa.pg.NO_PASSFILE says why): decided as each connection opens."""
    from subrosa.pg import passfile_once

    @event.listens_for(engine, "do_connect")
    def _do_connect(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        params.update(passfile_once(url))


def _unprepared_behind_pooler(engine: Engine, url: str) -> None:
    """Behind a connection pooler (subrosa.pg.behind_pooler()), psycopg prepares nothing:
    after five runs of a statement it would prepare it under a name that, in transaction
    mode, another server connection does not know or knows as another client's. A
    connection that looks direct asks the server its process id (one round trip, as it
    connects, outside psycopg's transaction): a pooler's cancel key may look like one
    (subrosa.pg.SETTINGS says why)."""
    from subrosa.pg import behind_pooler

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        info = getattr(dbapi_connection, "info", None)
        if info is None:
            return
        pid = int(info.backend_pid)
        pooled = behind_pooler(url, pid)
        if not pooled:
            result = dbapi_connection.pgconn.exec_(b"SELECT pg_backend_pid()")
            answered = result.get_value(0, 0) if result.ntuples == 1 else None
            pooled = behind_pooler(url, pid, -1 if answered is None else int(answered))
        if pooled:
            dbapi_connection.prepare_threshold = None


def _replaced_when_ended(engine: Engine) -> None:
    """A pooled connection that can no longer answer is replaced as it is checked out
    (subrosa.pg.idle_ended: its backend was terminated, the server restarted, a pooler
    closed it, TCP's keepalives gave up on its path), so the call that follows runs
    on a new one: the MCP server keeps its engine, and `remember`'s writes, across
    calls. One poll of the socket, where pool_pre_ping's `SELECT 1` would cost every
    checkout a round trip (a command checks out several times; a team's server may
    be a network away)."""
    from subrosa.pg import idle_ended

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if idle_ended(dbapi_connection):
            # The pool closes it and checks out a new one (SQLAlchemy's "custom
            # pessimistic" disconnect handling).
            raise DisconnectionError("the server ended the connection while it was idle")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # We issue BEGIN ourselves (below); the driver's own transaction handling
        # would start deferred transactions behind our back.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in CONNECTION_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("subrosa_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def dispose_all() -> None:
    """Close every engine (tests switch databases between runs; the MCP server ends)."""
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


def _missing_table(exc: DBAPIError) -> bool:
    """Whether the error says the table does not exist (a blank database)."""
    if getattr(exc.orig, "sqlstate", None) == "42P01":  # PostgreSQL's undefined_table
        return True
    return "no such table" in str(exc.orig)


def _reason(exc: DBAPIError) -> str:
    """The driver's own message, which names the cause (refused, auth, no such db), and
    libpq's hint after it, on one line."""
    return one_line_reason(str(exc.orig)) or type(exc.orig).__name__


def current_revision(engine: Engine) -> str | None:
    """The stored Alembic revision, or None for a blank database."""
    try:
        conn = engine.connect()
    except DBAPIError as exc:
        # A server that cannot be reached: the wording of subrosa.pg.connect(), which
        # search and ingest use.
        said = (
            "cannot connect" if engine.dialect.name == "postgresql" else "cannot read the database"
        )
        if cut_short(exc) is not None:  # connected, and the first statements were cut
            raise DatabaseError(cut_short_sentence(shown(engine.url), _reason(exc))) from None
        raise DatabaseError(f"{shown(engine.url)}: {said} ({_reason(exc)}).") from None
    try:
        with conn:
            row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    except DBAPIError as exc:
        if _missing_table(exc):
            return None
        damage = corruption(exc)
        if damage is not None:
            raise DatabaseUnreadable(shown(engine.url), damage) from None
        if cut_short(exc) is not None:
            raise DatabaseError(cut_short_sentence(shown(engine.url), _reason(exc))) from None
        raise DatabaseError(
            f"{shown(engine.url)}: cannot read the database ({_reason(exc)})."
        ) from None
    return row[0] if row else None


def is_newer(revision: str | None) -> TypeGuard[str]:
    """Whether the schema `revision` is none of this subrosa's migrations: a newer
    subrosa wrote it (None, a blank database, and the head are this subrosa's)."""
    if revision is None or revision == SCHEMA_HEAD:
        return False
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    from subrosa.resources import migrations_dir

    try:
        return ScriptDirectory(str(migrations_dir())).get_revision(revision) is None
    except CommandError:
        return True


def newer_schema(where: str, revision: str) -> DatabaseError:
    """The error for a schema a newer subrosa migrated: this one may neither write nor
    migrate it (a teammate's upgrade of a team's server, or a newer subrosa run here)."""
    return DatabaseError(
        f"{where}: its schema is at revision {revision}, which this subrosa does not know"
        f" (its newest is {SCHEMA_HEAD}): a newer subrosa migrated it; upgrade subrosa to use"
        " this database (`pipx upgrade subrosa-memory`, or `pip install -U subrosa-memory`"
        " where it is installed); nothing was written."
    )


def alembic_config(engine: Engine) -> Any:
    """An Alembic Config whose script location is set in code (works from a wheel)."""
    from alembic.config import Config

    from subrosa.resources import migrations_dir

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    # The config is a ConfigParser, which reads `%` as interpolation: a path or a
    # password with a `%` in it must be written `%%`. (env.py uses the connection
    # it is handed; the URL is only for Alembic's own command line.)
    url = engine.url.render_as_string(hide_password=False)
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def grant_to_message_writers(bind: Any, table: str, privileges: str) -> None:
    """On PostgreSQL, grant `privileges` on `table` (one a migration makes and ingest
    writes) to every role that may insert messages (a team's members, docs/team.md):
    the owner running the migration grants it, so their ingest goes on after the
    upgrade without a grant of their own. Nothing on SQLite."""
    if bind.dialect.name != "postgresql":
        return
    writers = bind.execute(
        text(
            "SELECT DISTINCT grantee FROM information_schema.role_table_grants"
            " WHERE table_schema = current_schema() AND table_name = 'messages'"
            " AND privilege_type = 'INSERT' AND grantee <> current_user"
        )
    ).scalars()
    for role in list(writers):
        quoted = '"' + role.replace('"', '""') + '"'
        bind.execute(text(f"GRANT {privileges} ON {table} TO {quoted}"))


# Told (units just done, units in all) by a migration that works through the archive
# (0014); the caller's re-index bar (subrosa.cli.common.reindex_bar), or None.
Progress = Callable[[int, int], None]


def upgrade(engine: Engine, progress: Progress | None = None) -> None:
    """Run Alembic to the newest revision, serialized across processes; a migration that
    works through the archive tells `progress` how far it is."""
    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    with ExitStack() as held:
        if path is not None:
            held.enter_context(file_lock(migrate_lock_path(path), 60, f"{path}: busy migrating."))
        try:
            revision = current_revision(engine)
            if revision == SCHEMA_HEAD:
                return
            if is_newer(revision):
                raise newer_schema(shown(engine.url), revision)
            _run_alembic(engine, progress)
        except DBAPIError as exc:
            damage = corruption(exc)
            if damage is not None:
                raise DatabaseUnreadable(shown(engine.url), damage) from None
            if denied(exc) is not None:  # a member's or reader's role (docs/team.md)
                raise DatabaseError(
                    f"{shown(engine.url)}: cannot migrate to revision {SCHEMA_HEAD}"
                    f" ({_reason(exc)}): a migration creates and alters tables, which only"
                    " the role that owns them may do; run `subrosa db upgrade` as that"
                    ' role (docs/team.md, "Security").'
                ) from None
            raise DatabaseError(f"{shown(engine.url)}: cannot migrate ({_reason(exc)}).") from None


def _run_alembic(engine: Engine, progress: Progress | None = None) -> None:
    """Upgrade to head in one transaction (PostgreSQL's DDL is transactional too)."""
    from alembic import command

    config = alembic_config(engine)
    # A migration finds it as op.get_context().config.attributes["progress"].
    config.attributes["progress"] = progress
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Held to the end of the transaction: a second process waits here, then
            # finds the schema current (Alembic reads the revision after the lock).
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def ensure_schema(engine: Engine, progress: Progress | None = None) -> None:
    """Migrate on first use; when the schema is current this is one query. A blank
    SQLite file gets the newest schema directly, without Alembic (subrosa.schema)."""
    revision = current_revision(engine)
    if revision == SCHEMA_HEAD:
        return
    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    if revision is None and path is not None and ensure_current(path):
        return
    upgrade(engine, progress)


def open_database(url: str, progress: Progress | None = None) -> Engine:
    """The engine for `url`, migrated to the newest schema (a migration that works
    through the archive telling `progress` how far it is)."""
    engine = get_engine(url)
    ensure_schema(engine, progress)
    return engine


def migrate(url: str, progress: Progress | None = None) -> tuple[str | None, str | None]:
    """Migrate the database at `url` to the newest schema (`subrosa db upgrade`); the
    revisions before and after (None before: a blank database)."""
    engine = get_engine(url)
    before = current_revision(engine)
    upgrade(engine, progress)
    return before, current_revision(engine)


def status(url: str) -> dict[str, Any]:
    """Where the database is (password hidden) and which schema revision it has, against
    the newest (`subrosa db status`; the `--json` shape). Looking creates nothing: a
    database file that does not exist yet is reported as such (`exists` false)."""
    path = sqlite_path(url)
    if path is not None and not exists(path):
        problem = folder_problem(path)
        if problem is not None:
            raise InvalidInput(problem)
        return {
            "url": hide_passwords(database_url(url).render_as_string(hide_password=True)),
            "revision": None,
            "head": SCHEMA_HEAD,
            "current": False,
            "exists": False,
        }
    engine = get_engine(url)
    revision = current_revision(engine)
    return {
        "url": hide_passwords(engine.url.render_as_string(hide_password=True)),
        "revision": revision,
        "head": SCHEMA_HEAD,
        "current": revision == SCHEMA_HEAD,
        "exists": True,
        # Migrated by a newer subrosa: upgrade subrosa, not the database.
        "newer": is_newer(revision),
    }
