"""A PostgreSQL server reached through the DB-API (psycopg 3), as the archive and fact
search reach an SQLite file through sqlite3 (subrosa.archive.connection says why the
archive bypasses SQLAlchemy).

`Connection` speaks the dialect those paths were written in, so their plain SQL runs
on both engines unchanged: `?` placeholders, timestamps read back as the text SQLite
stores (`YYYY-MM-DD HH:MM:SS`, naive UTC), `BEGIN IMMEDIATE` as `BEGIN`, autocommit
unless a transaction is begun. What differs between the engines (the full-text
queries, ingest's bulk writes) lives in subrosa.archive.pgsearch,
subrosa.archive.pgstore and subrosa.memory.pgfacts. psycopg is imported only here, and
only when a server is named. Every error names the server without its password.
`subrosa search`'s one-shot process (at_once()) speaks to libpq itself instead, with
this module's translation of the SQL (subrosa.libpq: psycopg's import costs more than
the search).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from subrosa.errors import SubrosaError, hide_passwords, one_line_reason
from subrosa.lazyre import compile_lazily

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

SCHEMES = ("postgresql://", "postgresql+psycopg://", "postgres://")
CONNECT_TIMEOUT_S = 10
# Over TCP, a connection whose path died in silence (a laptop's Wi-Fi changed, a NAT or
# firewall forgot it) ends within ~30 s, where TCP alone would retransmit a statement
# for ~15 minutes and keep an idle one forever: idle 10 s, the kernel probes every 5 s;
# nothing acknowledged for 30 s, a statement or the probes (Linux applies the user
# timeout to both; libpq 12+), it ends (else after 3 unanswered probes). The kept
# connections (subrosa.archive.kept, subrosa.db's pool) then see it ended and open
# another. libpq ignores them on a Unix socket; subrosa adds them only over TCP
# (over_tcp()), and never one the URL names (connect_defaults()).
TCP_DEFAULTS = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}
USER_TIMEOUT_SINCE = 120000  # PQlibVersion() of libpq 12, the first with tcp_user_timeout
# A host that is a Unix socket's directory (`/…`, percent-encoded in a URL's address
# part) or an abstract socket's name (`@…`).
_SOCKETS = ("/", "%2f", "@", "%40")
# A pooler declared in the URL (declared_pooler()), for one subrosa does not recognise:
# taken out before libpq reads the URL, which refuses a parameter it does not know.
POOLER_PARAMETER = "subrosa_pooler"
# libpq ignores a password file that others may read, and says so on stderr at each
# connection it opens (docs/team.md, step 3): a command opens several (doctor's checks
# six, `db upgrade` three), and the warning came as often. A process's first connection
# lets libpq say it; the later ones name this file instead, which does not exist and
# which libpq skips in silence: the same connection, as the other file is ignored either
# way (passfile_once()).
NO_PASSFILE = "/dev/null/no-passfile"
_passfile_warned: list[bool] = []
# psycopg's count of runs after which it prepares a statement itself: never (None would
# forbid preparing even the statements Connection.execute() asks it to).
NEVER = 2**62
_DRIVER = compile_lazily(r"^postgres(?:ql)?(?:\+psycopg)?://")
# Behind a connection pooler (docs/team.md, "Behind a connection pooler"): a process id
# past Linux's ceiling (pid_max's, 2^22) or not above zero is no server process's, but
# the random cancel key a pooler hands its clients (pgbouncer's: any 32-bit number).
PID_MAX = 2**22
# A URL's host part: its hosts and ports (`a:5432,b`), as libpq reads them.
_HOST_PART = compile_lazily(r"^[^:]+://(?:[^@/?#]*@)?([^/?#]*)")
# The usual addresses of poolers in transaction mode: port 6543 (Supabase's Supavisor),
# a host named `…-pooler.…` (Neon's pgbouncer). In the host part, and a `port=`.
_POOLER_PORT = compile_lazily(r"(?::6543(?:,|$)|-pooler\.)")
_POOLER_QUERY = compile_lazily(r"[?&](?:port=6543(?:&|$)|host=[^&]*-pooler\.)")
# psycopg goes into the environment subrosa runs in (the extra
# `subrosa-memory[postgres]` once a release is published). subrosa.db says it too.
INSTALL_DRIVER = (
    "psycopg is not installed beside subrosa: pip install 'psycopg[binary]' in its venv, "
    "pipx inject subrosa-memory 'psycopg[binary]', or uv tool install --with "
    "'psycopg[binary]' followed by where you installed subrosa from"
)


def is_server(url: str) -> bool:
    """Whether `url` names a PostgreSQL server (else: an SQLite file)."""
    return url.startswith(SCHEMES)


def conninfo(url: str, libpq_version: int = USER_TIMEOUT_SINCE) -> str:
    """The URL as libpq reads it (without SQLAlchemy's `+psycopg` and subrosa's own
    `subrosa_pooler`), with the settings of connect_defaults() it does not name; its
    other query parameters (sslmode, …) pass through."""
    declared_pooler(url)  # a mode it does not know: one sentence, before connecting
    # SQLAlchemy writes a password's space as it is; libpq wants it percent-encoded.
    info = without_declaration(_DRIVER.sub("postgresql://", url).replace(" ", "%20"))
    info = _encoded_values(info)
    added = "&".join(f"{k}={v}" for k, v in connect_defaults(info, libpq_version).items())
    if added:
        info += ("&" if "?" in info else "?") + added
    return info


def ignored_passfile(url: str = "") -> str | None:
    """The password file libpq reads for `url` (its `passfile=`, else PGPASSFILE, else
    ~/.pgpass) when it exists and others may read it: libpq then ignores it with a
    warning on stderr. None elsewhere, and on Windows (where libpq checks no mode)."""
    named = _parameters(url).get("passfile")
    if named:  # urllib only then: `subrosa search` imports no more than it needs
        from urllib.parse import unquote

        named = unquote(named)
    path = named or os.environ.get("PGPASSFILE")
    path = path or os.path.join(os.path.expanduser("~"), ".pgpass")
    if os.name == "nt":
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return path if mode & 0o077 else None


def passfile_once(url: str) -> dict[str, str]:
    """The `passfile` a connection to `url` about to be opened is given (NO_PASSFILE's
    comment says why): none for the first of the process, or when the file is private or
    the URL names one."""
    if "passfile" in _parameters(url) or ignored_passfile(url) is None:
        return {}
    if not _passfile_warned:
        _passfile_warned.append(True)
        return {}
    return {"passfile": NO_PASSFILE}


def with_passfile_once(info: str) -> str:
    """A conninfo() URL with passfile_once()'s parameter, for a connection about to be opened."""
    added = passfile_once(info)
    if not added:
        return info
    return info + ("&" if "?" in info else "?") + f"passfile={added['passfile']}"


def _encoded_values(url: str) -> str:
    """`url` with each `=` inside a query value percent-encoded: SQLAlchemy reads
    `options=-c statement_timeout=5000` (docs/team.md writes it so) as one value, where
    libpq's URL parser refuses the second `=` ("extra key/value separator")."""
    base, mark, query = url.partition("?")
    params = [p.partition("=") for p in query.split("&")]
    return base + mark + "&".join(k + eq + v.replace("=", "%3D") for k, eq, v in params)


def _parameters(url: str) -> dict[str, str]:
    """The URL's query parameters by name (the last of a name wins, as in libpq)."""
    query = url.partition("?")[2]
    return dict(p.partition("=")[::2] for p in query.split("&") if p)


def connect_defaults(url: str, libpq_version: int = USER_TIMEOUT_SINCE) -> dict[str, str]:
    """The settings subrosa gives a connection to `url` that its URL does not name
    (each one the URL names is the user's): a connect timeout, and over TCP
    (over_tcp()) keepalives and a TCP user timeout. `libpq_version` (PQlibVersion's):
    a libpq before 12 refuses tcp_user_timeout."""
    named = _parameters(url)
    defaults = {"connect_timeout": str(CONNECT_TIMEOUT_S)}
    if over_tcp(url):
        defaults.update(TCP_DEFAULTS)
        if libpq_version < USER_TIMEOUT_SINCE:
            del defaults["tcp_user_timeout"]
    return {key: value for key, value in defaults.items() if key not in named}


def over_tcp(url: str) -> bool:
    """Whether libpq may reach the server at `url` over TCP: a host of the URL (its
    query's `host=` before its address part) that is no socket directory (`/…`, or
    `@…`: an abstract socket), a `hostaddr=`, a service file's host (unknown here); a
    URL naming no host reaches PGHOST's (PGHOSTADDR's), else the default socket."""
    params = _parameters(url)
    if params.get("hostaddr") or "service" in params:
        return True
    if "host" in params:
        hosts = params["host"].split(",")
    else:
        found = _HOST_PART.match(url)
        hosts = [h.partition(":")[0] for h in (found.group(1) if found else "").split(",")]
    hosts = [h for h in hosts if h]
    if not hosts:
        if os.environ.get("PGHOSTADDR") or os.environ.get("PGSERVICE"):
            return True
        hosts = [h for h in os.environ.get("PGHOST", "").split(",") if h]
        if not hosts:
            return os.name == "nt"  # libpq's default: a socket, but localhost on Windows
    return any(not h.lower().startswith(_SOCKETS) for h in hosts)


def declared_pooler(url: str) -> bool:
    """Whether the URL says a connection pooler in transaction mode stands between
    (`subrosa_pooler=transaction`, for one behind_pooler() does not recognise);
    SubrosaError for another value."""
    if POOLER_PARAMETER not in url:  # no parsing on the usual path (search's)
        return False
    value = _parameters(url).get(POOLER_PARAMETER)
    if value is None:
        return False
    if value != "transaction":
        raise SubrosaError(
            f"{hide_passwords(url)}: {POOLER_PARAMETER}={value!r} is not a pooler mode"
            f" subrosa knows; {POOLER_PARAMETER}=transaction declares a pooler in"
            ' transaction mode (docs/team.md, "Behind a connection pooler").'
        )
    return True


def without_declaration(url: str) -> str:
    """`url` without `subrosa_pooler=…` (libpq refuses a parameter it does not know)."""
    if POOLER_PARAMETER not in url:
        return url
    base, _, query = url.partition("?")
    params = [p for p in query.split("&") if p and p.partition("=")[0] != POOLER_PARAMETER]
    return base + ("?" + "&".join(params) if params else "")


def behind_pooler(url: str, backend_pid: int, answered: Any = None) -> bool:
    """Whether the connection to `url`, whose server reported `backend_pid`, goes through
    a connection pooler that may run consecutive statements on different server
    connections (transaction mode; session mode cannot be told apart, and is taken
    alike): declared so in the URL (declared_pooler()), recognised(), or, once the
    server was asked its process id (`answered`: settings()), passed_through()."""
    return (
        declared_pooler(url)
        or recognised(url, backend_pid)
        or passed_through(backend_pid, answered)
    )


def passed_through(backend_pid: int, answered: Any) -> bool:
    """Whether the server answered another process id than the connection reported:
    the reported one is a pooler's cancel key (None: not asked)."""
    return answered is not None and int(answered) != backend_pid


def recognised(url: str, backend_pid: int) -> bool:
    """Whether the connection is a pooler's by what subrosa recognises: a process id no
    server has (PID_MAX), or a pooler's usual address. Asks the server nothing: the id
    came with the connection."""
    if backend_pid <= 0 or backend_pid > PID_MAX:
        return True
    if "6543" not in url and "-pooler." not in url:  # no regex to compile (search's path)
        return False
    host = _HOST_PART.match(url)
    return bool((host and _POOLER_PORT.search(host.group(1))) or _POOLER_QUERY.search(url))


@lru_cache(maxsize=512)
def _native(sql: str) -> str:
    """SQL written for sqlite3 as psycopg reads it: `%` doubled, `?` as `%s`."""
    if sql.startswith("BEGIN IMMEDIATE"):
        return "BEGIN"
    return sql.replace("%", "%%").replace("?", "%s")


_IN_LIST = compile_lazily(r"\bIN \((\?(?:, ?\?)*)\)")


@lru_cache(maxsize=512)
def _in_lists(sql: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`x IN (?,?,…)` as `x = ANY(?)`, one array for the list, and where each list's
    values are among the parameters (first, how many): the archive's lookups by id
    (sqlite3 takes up to 500 values as `IN (?,…)`) become one statement text whatever
    their number, parsed and planned once when prepared, where 500 parameters cost
    the server ~0.5 ms to parse and plan each time."""
    lists: list[tuple[int, int]] = []
    out: list[str] = []
    at = 0
    for match in _IN_LIST.finditer(sql):
        lists.append((sql[: match.start()].count("?"), match.group(1).count("?")))
        out += [sql[at : match.start()], "= ANY(?)"]
        at = match.end()
    return "".join(out) + sql[at:], tuple(lists)


def _arrays(params: Sequence[Any], lists: tuple[tuple[int, int], ...]) -> list[Any]:
    """The parameters with each IN list's values as one list (see _in_lists())."""
    out: list[Any] = []
    at = 0
    for first, count in lists:
        out += [*params[at:first], list(params[first : first + count])]
        at = first + count
    return out + list(params[at:])


def _ids_as_text(params: Sequence[Any]) -> list[Any]:
    """A list of integers (ids) as an array's text, `{1,2,3}`, which the server reads
    as the type its place wants (`id = ANY(?)`: integer[]): psycopg dumps a list item
    by item in Python, ~0.6 ms for the thousand ids of a search's candidates."""
    return [
        "{" + ",".join(map(str, value)) + "}"
        if isinstance(value, list) and all(type(item) is int for item in value)
        else value
        for value in params
    ]


@lru_cache(maxsize=512)
def _planned_once(sql: str) -> bool:
    """Whether to prepare a statement, to be planned once for any parameters (after
    five runs, when the server finds the generic plan no dearer): a query that does
    not test the archive's words (details by id, sessions, facts, the newest id).
    Planning costs 0.3-1 ms a statement here, more than running most of them, and a
    process that searches again and again (the MCP server) plans each once. A test
    of the words is planned for its words each time: the plan for `the` is the wrong
    one for `zanzibarite`. (`plan_cache_mode` cannot say this: it applies to the
    unnamed statements too.)"""
    return sql.lstrip()[:6].upper() == "SELECT" and "words @@" not in sql


class Manners:
    """What subrosa's two connections to a server share (Connection below, over psycopg;
    subrosa.libpq's, over libpq itself, for `subrosa search`): sqlite3's SQL translated
    (IN lists as one array, lists of ids as array text), what the archive's search
    learns on the connection, and planner settings left off across the statements
    that want them. A connection runs the translated statements (_run: `?`
    placeholders) and the settings (_simple).

    Behind a connection pooler (`pooled`: behind_pooler()) each statement may run on
    another server connection, which serves other clients between: nothing is
    prepared, and planner settings are `SET LOCAL` in a transaction around the one
    statement that wants them, so they reach that statement and no other client."""

    def __init__(self) -> None:
        # What the archive's search has learnt of its queries (subrosa.archive.pgsearch:
        # how many messages match, to choose a plan; never a result).
        self.matches: dict[str, float] = {}
        # What one statement of the current search answered ahead of the questions that
        # follow it (subrosa.archive.pgsearch); forgotten when the next search starts.
        self.answers: dict[Any, Any] = {}
        # The archive's most common lexemes and the share of messages holding each
        # (ANALYZE's statistics), read once by search.
        self.common: dict[str, float] | None = None
        # Which id ranges have their own words index (subrosa.archive.pgsearch.RANGE).
        self.ranges: set[int] | None = None
        # How many chunks of ids, from the first, have their postings sealed
        # (subrosa.archive.pgpostings), as the search's first statement read it.
        self.sealed = 0
        # The planner settings execute_without() turned off and left off.
        self._off: tuple[str, ...] = ()
        # Whether a pooler stands between (see the class's docstring).
        self.pooled = False

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; its rows, to fetch or iterate. A query whose best plan
        does not depend on its parameters is prepared (see _planned_once())."""
        if self._off:
            self._planner(())
        return self._translated(sql, params)

    def execute_without(self, settings: str, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement run with planner settings off (`enable_seqscan`,
        several comma-separated). The settings stay off for the statements that follow
        with the same ones, and are back at their defaults before any other (execute()):
        a search asks several such statements in a row, each toggle a round trip.
        Behind a pooler, the statement runs in a transaction of its own that sets them
        `SET LOCAL`, ended at once: left open, it would hold a server connection of the
        pool while the process waits (an MCP server between searches)."""
        names = tuple(sorted(name.strip() for name in settings.split(",")))
        if not self.pooled:
            self._planner(names)
            return list(self._translated(sql, params).fetchall())
        self._simple("; ".join(["BEGIN", *(f"SET LOCAL {name} = off" for name in names)]))
        try:
            rows = list(self._translated(sql, params).fetchall())
        except BaseException:
            # Not contextlib.suppress: `subrosa search` does not load contextlib.
            try:  # noqa: SIM105
                self._simple("ROLLBACK")
            except Exception:  # noqa: BLE001, S110 (the statement's error says what failed)
                pass
            raise
        self._simple("COMMIT")
        return rows

    def _translated(self, sql: str, params: Sequence[Any] | None) -> Any:
        sql, lists = _in_lists(sql)
        if lists and params:
            params = _arrays(params, lists)
        if params and any(isinstance(value, list) for value in params):
            params = _ids_as_text(params)
        return self._run(sql, params)

    def _planner(self, off: tuple[str, ...]) -> None:
        """The settings `off` off, the ones turned off before reset, in one round trip
        (a statement that fails changes nothing: its transaction undoes it)."""
        changes = [f"SET {name} = off" for name in off if name not in self._off]
        changes += [f"RESET {name}" for name in self._off if name not in off]
        if changes:
            self._simple("; ".join(changes))
        self._off = off

    def _run(self, sql: str, params: Sequence[Any] | None) -> Any:
        raise NotImplementedError

    def _simple(self, sql: str) -> None:
        raise NotImplementedError


class Connection(Manners):
    """A psycopg connection with sqlite3's manners (see the module's docstring).
    `raw` is the psycopg connection, for what only PostgreSQL has (COPY); `errors`,
    psycopg's exception classes (psycopg is imported in connect() alone, where its
    absence is one sentence)."""

    def __init__(self, raw: Any, errors: Any) -> None:
        super().__init__()
        self.raw = raw
        self.errors = errors

    def _run(self, sql: str, params: Sequence[Any] | None) -> Any:
        native = _native(sql)
        prepare = _planned_once(native) and not self.pooled
        return self.raw.execute(native, params if params else None, prepare=prepare)

    def _simple(self, sql: str) -> None:
        """Statements without parameters (settings), in one round trip."""
        self.raw.execute(sql)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        """Run one statement for each row (psycopg pipelines them)."""
        cursor = self.raw.cursor()
        cursor.executemany(_native(sql), list(rows))
        return cursor

    def close(self) -> None:
        self.raw.close()


def idle_ended(raw: Any) -> bool:
    """Whether an idle psycopg connection (`raw`) can no longer answer: the server sent
    something while nothing was asked (its backend ended: the notice, or the end of
    the stream) or TCP gave up on its path (the keepalives of connect_defaults()).
    One poll, no round trip; True too when the connection cannot be polled."""
    import select

    try:
        fd = raw.fileno()
        if hasattr(select, "poll"):  # not select(): a descriptor past 1023 is fine
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except Exception:  # noqa: BLE001 - closed, or not a connection: not to be used
        return True


# What every connection subrosa opens sets first (here and subrosa.libpq.connect()),
# one statement: the date style; on a connection that looks direct, no parallel workers
# and no JIT, but only where the server's process id is the one the connection
# reported, and that process id, for behind_pooler() to compare. A pooler's cancel key
# can look like a process id (pgbouncer's random key is at most PID_MAX for one
# connection in 1,024): told so in the same round trip, without leaving the two
# settings on the pooler's server connection, where they would stay for other clients.
SETTINGS = (
    "SELECT set_config('datestyle', 'ISO, YMD', false), pg_backend_pid(),"
    " CASE WHEN pg_backend_pid() = {pid}"
    " THEN set_config('max_parallel_workers_per_gather', '0', false)"
    " || set_config('jit', 'off', false) END"
)
# Behind a pooler: the date style alone, which a pooler keeps for each client (pgbouncer
# sets it again on the server connection it hands a client). Parallel workers and JIT
# would stay set on a server connection for other clients, and be missing on the next
# one: a team sets them on its roles instead (docs/team.md, "Behind a connection pooler").
POOLED_SETTINGS = "SELECT set_config('datestyle', 'ISO, YMD', false), NULL"


def settings(pooled: bool, backend_pid: int) -> str:
    """What a new connection runs first, behind a pooler behind_pooler() recognised or
    not (SETTINGS); its answer's second value is the server's process id, or NULL."""
    return POOLED_SETTINGS if pooled else SETTINGS.format(pid=int(backend_pid))


def connect(url: str) -> Connection:
    """A connection to the server at `url`, in autocommit, timestamps as text."""
    try:
        import psycopg
        from psycopg.adapt import Loader
    except ImportError:
        raise SubrosaError(f"{hide_passwords(url)}: {INSTALL_DRIVER}.") from None

    class TimeText(Loader):
        def load(self, data: Any) -> str:
            return bytes(data).decode()

    try:
        # No statement is prepared by psycopg's count (after five runs of one, the
        # server would plan it once for any parameter, and a search's best plan depends
        # on its words: a rare one, the index's few matches; a common one, the newest
        # ids, each row tested): Connection.execute() says which (_planned_once()).
        raw = psycopg.connect(
            with_passfile_once(conninfo(url, psycopg.pq.version())),
            autocommit=True,
            prepare_threshold=NEVER,
        )
    except psycopg.Error as exc:
        reason = one_line_reason(str(exc))
        raise SubrosaError(f"{hide_passwords(url)}: cannot connect ({reason}).") from None
    raw.adapters.register_loader("timestamp", TimeText)
    # ISO whatever the server's default: times compare and print as SQLite's text. No
    # parallel workers: subrosa's statements take milliseconds, a worker's start as much.
    # No JIT (SETTINGS): a statement the planner costs past jit_above_cost (a word's
    # matches sorted in an archive of a few GB) would pay 5-10 ms to compile, more
    # past jit_optimize_above_cost, to save less.
    conn = Connection(raw, psycopg.errors)
    pid = raw.info.backend_pid
    conn.pooled = behind_pooler(url, pid)
    try:
        answer = raw.execute(settings(conn.pooled, pid)).fetchone()
    except psycopg.Error as exc:
        raw.close()
        raise opening_failed(url, exc) from None
    conn.pooled = conn.pooled or behind_pooler(url, pid, answer[1] if answer else -1)
    return conn


def opening_failed(url: str, exc: BaseException) -> SubrosaError:
    """The error for a connection to `url` whose first statement (settings()) failed:
    connected, so no `cannot connect`; the cut-short sentence when the server cut it
    (a statement_timeout of a few milliseconds in the URL's options or on the role)."""
    from subrosa.errors import cut_short, cut_short_sentence

    reason = cut_short(exc)
    if reason is not None:
        return SubrosaError(cut_short_sentence(hide_passwords(url), reason))
    return SubrosaError(f"{hide_passwords(url)}: {one_line_reason(str(exc))}.")


def schema_revision(conn: Connection) -> str | None:
    """The database's Alembic revision; None for a blank one."""
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except conn.errors.UndefinedTable:
        return None
    return None if row is None else str(row[0])


def role_access(conn: Connection) -> tuple[str, bool, bool]:
    """The connection's role, whether it owns the tables (it may migrate) and whether it
    may write the archive and the facts (docs/team.md: owner, member, reader)."""
    row = conn.execute(
        "SELECT current_user, pg_has_role(tableowner, 'USAGE'),"
        " has_table_privilege('messages', 'INSERT')"
        " AND has_table_privilege('facts', 'UPDATE')"
        " AND has_database_privilege(current_database(), 'TEMPORARY')"
        " FROM pg_tables WHERE tablename = 'messages' AND schemaname = current_schema()"
    ).fetchone()
    if row is None:  # no tables yet
        return str(conn.execute("SELECT current_user").fetchone()[0]), False, False
    return str(row[0]), bool(row[1]), bool(row[2])


def at_once(url: str, run: Callable[[Any], T]) -> T | None:
    """`run` on the server at `url` when it needs nothing first (its schema is current);
    None when it does, or a statement fails: the caller then takes the path that
    migrates and says what is wrong (subrosa.cli.fastsearch: `subrosa search` without
    click, SQLAlchemy or ingest). Raises SubrosaError when no driver can be had or the
    server cannot be reached (the other path would wait for it a second time).

    The connection is libpq's own (subrosa.libpq: psycopg's import costs more than
    the search) when a libpq loads, else psycopg's; psycopg's too when a value is of
    a type subrosa.libpq does not read. SUBROSA_PG_DRIVER=psycopg always takes psycopg,
    =libpq never does (an error instead: the tests hold the libpq path to its word)."""
    driver = os.environ.get("SUBROSA_PG_DRIVER", "")
    if driver != "psycopg":
        from subrosa import libpq

        lib = libpq.load()
        if lib is None and driver == "libpq":
            raise SubrosaError(f"{hide_passwords(url)}: no libpq can be loaded.")
        if lib is not None:
            try:
                return _current(libpq.connect(url, lib), run)
            except libpq.Unsupported as exc:
                if driver == "libpq":
                    raise SubrosaError(f"{hide_passwords(url)}: {exc}.") from None
    return _current(connect(url), run)


def _current(conn: Any, run: Callable[[Any], T]) -> T | None:
    """`run` on `conn` (closed after) when the schema is current, else None."""
    from subrosa.schema import SCHEMA_HEAD

    try:
        if schema_revision(conn) != SCHEMA_HEAD:
            return None
        return run(conn)
    except (conn.errors.Error, UnicodeEncodeError):
        return None
    finally:
        conn.close()
