"""Every test runs in its own HOME, with every subrosa/Claude variable pointed into tmp_path.

The database: an SQLite file under tmp_path; a test marked `engines(...)` (or in a module
so marked) that uses the `db` fixture runs once per engine named, on PostgreSQL with a
database of its own (see the `db` fixture and tests/postgres.py).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
import pytest
from click.testing import CliRunner, Result

from subrosa.cli.app import cli
from subrosa.db import dispose_all
from tests.crash import wait_for
from tests.tmpfs import tmpfs

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from tests.postgres import Cluster

REPO = Path(__file__).resolve().parent.parent

# Bytecode is written during the run, whatever PYTHONDONTWRITEBYTECODE says (the shell
# of the machines this suite runs on sets it). Without it each pytest-xdist worker
# rewrites and compiles every test module again at collection (pytest caches its
# assertion rewrites only where bytecode may be written: ~8 s of CPU a worker, 15 s of
# collection instead of 6.5), and `python -m subrosa` compiles subrosa and the test
# helpers from source until some process that may write has written them. An
# installed subrosa has its bytecode written at install time (bench/hooks.py drops the
# variable for the same reason). What is written is what any Python run writes by
# default: __pycache__ folders, which .gitignore leaves out. A test that must see no
# such write sets the variable again for its own process (test_hostile_input.py).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Each test's tmp_path (its HOME, its SQLite files, its memory dir) on a tmpfs where the
# machine has one with room: the suite's SQLite commits, renames and fsyncs then cost
# no disk I/O (a 2-core CI machine spends a good part of the run waiting on them). The
# tests see a directory either way; one who set where temporary files go (TMPDIR,
# PYTEST_DEBUG_TEMPROOT, --basetemp) keeps it. A passed test's tmp_path is removed as
# it passes (pyproject.toml, tmp_path_retention_policy), so the tmpfs holds only the
# running tests' and the failed ones' (kept for a look, the last three runs).
SHM_ROOM = 2 << 30  # free bytes the tmpfs must have: a test writes megabytes, not more


def _tmpfs_for_tmp_path() -> None:
    """pytest's temp root on the tmpfs (tests/tmpfs.py), unless one is set already."""
    if os.environ.get("TMPDIR") or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    shm = tmpfs(SHM_ROOM)
    if shm is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = shm


_tmpfs_for_tmp_path()

# Small real data vendored with the tests (tests/fixtures/SOURCES.md): a clone tests alone.
FIXTURES = REPO / "tests" / "fixtures"
# The larger shared corpus beside the checkout (helpers' worktrees sit one level deeper):
# tests that read it skip when it is absent, through `corpus()`.
CORPUS = next(
    (
        p
        for p in (REPO.parent / "shared" / "corpus", REPO.parent.parent / "shared" / "corpus")
        if p.is_dir()
    ),
    REPO.parent / "shared" / "corpus",
)


def corpus(*parts: str) -> Path:
    """A path in the shared corpus, or a skip (with the reason) when it is not there."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared corpus at {path} (not part of a clone)")
    return path


# Read now: isolated_env clears every SUBROSA_* variable before each test.
# SUBROSA_TEST_PG_URL: an existing server to use (an admin URL allowed to create
# databases) instead of starting one. SUBROSA_TEST_PG=require: fail, not skip, when
# no PostgreSQL can be had (.ci/run sets it, so CI never passes by skipping).
PG_URL = os.environ.get("SUBROSA_TEST_PG_URL") or None
PG_REQUIRED = os.environ.get("SUBROSA_TEST_PG") == "require"
PG_MISSING = (
    "PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH, "
    "and SUBROSA_TEST_PG_URL is not set): apt-get install postgresql to run these"
)
ENGINES = ("sqlite", "postgresql")
# What the run used, for the summary at its end: the servers the PostgreSQL tests ran on
# (`pg_cluster`), and the Claude Code the e2e tests ran or why they skipped
# (`claude_code`, tests/e2e/conftest.py: "version" and "binary", or "skipped"). Under
# pytest-xdist each worker fills its own and hands it to the controller as it finishes
# (pytest_sessionfinish, pytest_testnodedown), which prints the summary once.
# "pg_skipped": why no PostgreSQL test ran (PG_MISSING), when they skipped.
RAN: dict[str, Any] = {"servers": [], "e2e": {}, "pg_skipped": ""}
# Read now, before any test's monkeypatching replaces HOME and drops SUBROSA_*.
_E2E_ENV = {k: v for k, v in os.environ.items() if k.startswith("SUBROSA_E2E_")}


def pytest_report_header(config: pytest.Config) -> str:
    from tests.e2e.claude_code import PACKAGE, PINNED_VERSION

    version = _E2E_ENV.get("SUBROSA_E2E_CLAUDE_VERSION") or PINNED_VERSION
    given = _E2E_ENV.get("SUBROSA_E2E_CLAUDE")
    return f"e2e: Claude Code {given or f'{PACKAGE}@{version} (npm)'}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: its part of the summary, for the controller
        output["subrosa_ran"] = RAN


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest without xdist has no such spec
def pytest_testnodedown(node: Any, error: object) -> None:
    ran = getattr(node, "workeroutput", {}).get("subrosa_ran")
    if not ran:  # a worker that crashed
        return
    RAN["servers"] += [s for s in ran["servers"] if s not in RAN["servers"]]
    RAN["pg_skipped"] = RAN["pg_skipped"] or ran.get("pg_skipped", "")
    if "version" not in RAN["e2e"]:  # one worker that ran it beats one that skipped
        RAN["e2e"].update(ran["e2e"])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    import sqlite3

    engines = [f"SQLite {sqlite3.sqlite_version}", *RAN["servers"]]
    terminalreporter.write_line("database engines: " + ", ".join(engines))
    if RAN["pg_skipped"] and not RAN["servers"]:
        # The README's command on a machine without PostgreSQL: say so once, not only in
        # each skipped test's reason (shown with -rs).
        terminalreporter.write_line(f"PostgreSQL tests: skipped, {RAN['pg_skipped']}", yellow=True)
    e2e = RAN["e2e"]
    if "version" in e2e:
        terminalreporter.write_line(
            f"e2e: ran Claude Code {e2e['version']} ({e2e['binary']})", bold=True
        )
    elif "skipped" in e2e:
        terminalreporter.write_line(f"e2e: skipped, {e2e['skipped']}", yellow=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked `engines` that uses the database runs on each engine named (both
    when none is named); the test's own mark wins over its module's."""
    marker = metafunc.definition.get_closest_marker("engines")
    if marker is not None and "db" in metafunc.fixturenames:
        metafunc.parametrize("db_engine", marker.args or ENGINES, indirect=True)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A throwaway HOME; no subrosa or Claude setting leaks in from the machine."""
    for var in list(os.environ):
        if var.startswith(("SUBROSA_", "CLAUDE_", "XDG_")):
            monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    yield home
    dispose_all()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One PostgreSQL server for the whole run, started on first use."""
    try:
        from tests.postgres import Cluster, find_bindir
    except ImportError as exc:  # psycopg, from the test extra
        pytest.fail(f"the PostgreSQL tests need psycopg ({exc}): pip install -e '.[test]'")
    if PG_URL is not None:
        server = Cluster.existing(PG_URL)
        RAN["servers"].append(f"PostgreSQL {server.version} (SUBROSA_TEST_PG_URL)")
        yield server
        return
    bindir = find_bindir()
    if bindir is None:
        if PG_REQUIRED:
            pytest.fail(PG_MISSING)
        RAN["pg_skipped"] = PG_MISSING
        pytest.skip(PG_MISSING)
    cluster = Cluster.start(bindir)
    RAN["servers"].append(f"PostgreSQL {cluster.version} (a throwaway cluster from {bindir})")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def db_engine(request: pytest.FixtureRequest) -> str:
    """The engine of this test's database: SQLite unless the test is parametrized."""
    return getattr(request, "param", "sqlite")


@dataclass
class Db:
    """This test's database, on either engine, and what tests do to one."""

    engine: str
    tmp_path: Path
    cluster: Cluster | None = None
    made: list[URL] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self.url = self.other("subrosa")

    def other(self, name: str) -> str:
        """A further empty database (another machine's): a file, or a new PG database."""
        if self.cluster is None:
            return str(self.tmp_path / f"{name}.db")
        made = self.cluster.create_database()
        self.made.append(made)
        return made.render_as_string(hide_password=False)

    def reset(self) -> None:
        """Make the main database blank again (a deleted file, a dropped database)."""
        dispose_all()
        if self.cluster is None:
            for suffix in ("", "-wal", "-shm"):
                Path(self.url + suffix).unlink(missing_ok=True)
        else:
            self.cluster.drop_database(self.made[0])
            self.cluster.create_database(name=self.made[0].database)

    def snapshot(self) -> dict[str, Any]:
        """Every row of every table, and on SQLite the file's bytes too (so a dry run
        is shown to write nothing at all)."""
        from sqlalchemy import MetaData, create_engine, select

        from subrosa.config import resolve_db_url
        from subrosa.db import database_url

        dispose_all()  # closes connections, so the WAL is checkpointed into the file
        engine = create_engine(database_url(resolve_db_url(self.url)))
        try:
            metadata = MetaData()
            metadata.reflect(engine)
            rows: dict[str, Any] = {}
            with engine.connect() as conn:
                for name, table in sorted(metadata.tables.items()):
                    order = list(table.primary_key.columns) or list(table.columns)
                    rows[name] = conn.execute(select(table).order_by(*order)).all()
        finally:
            engine.dispose()
        if self.cluster is None:
            rows["(file)"] = Path(self.url).read_bytes()
        return rows

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """What a statement returns from the main database (run in a transaction of
        its own; a statement that returns nothing gives [])."""
        from sqlalchemy import create_engine, text

        from subrosa.config import resolve_db_url
        from subrosa.db import database_url

        dispose_all()
        engine = create_engine(database_url(resolve_db_url(self.url)))
        try:
            with engine.begin() as conn:
                result = conn.execute(text(sql))
                return [tuple(row) for row in result.all()] if result.returns_rows else []
        finally:
            engine.dispose()

    def migrate(self, revision: str, *, down: bool = False) -> None:
        """Take the main database up (or `down`) to `revision` with Alembic."""
        from alembic import command

        from subrosa.config import resolve_db_url
        from subrosa.db import alembic_config, open_database

        engine = open_database(resolve_db_url(self.url))
        config = alembic_config(engine)
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(config, revision)
        dispose_all()

    def close(self) -> None:
        dispose_all()
        if self.cluster is not None:
            for made in self.made:
                self.cluster.drop_database(made)


@pytest.fixture
def db(db_engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Db]:
    """This test's database: a file under tmp_path, or a PostgreSQL database of its own."""
    cluster = request.getfixturevalue("pg_cluster") if db_engine == "postgresql" else None
    database = Db(db_engine, tmp_path, cluster)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def memory_dir(tmp_path: Path, db: Db, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty memory dir and the test's database, both set in the environment."""
    directory = tmp_path / "memory"
    directory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(directory))
    monkeypatch.setenv("SUBROSA_DB", db.url)
    return directory


RunCli = Callable[..., Result]


@pytest.fixture
def run() -> RunCli:
    """Invoke the real CLI in-process; assert the exit code (default 0)."""

    def _run(*args: str, expect: int | None = 0, input: str | None = None) -> Result:
        command = _entry if _searches_a_server(list(args)) else cli
        result = CliRunner().invoke(command, list(args), input=input, catch_exceptions=False)
        if expect is not None:
            assert result.exit_code == expect, (
                f"exit {result.exit_code} != {expect}\nstdout:\n{result.stdout}\n"
                f"stderr:\n{result.stderr}"
            )
        return result

    return _run


def _searches_a_server(args: list[str]) -> bool:
    """Whether `subrosa ARGS` is a search a real process answers on its fast path, on a
    server (subrosa.cli.fastsearch)."""
    from subrosa.cli.fastsearch import parse_argv
    from subrosa.config import resolve_db_url
    from subrosa.pg import is_server

    parsed = None if {"--help", "-h"} & set(args) else parse_argv(args)
    return parsed is not None and is_server(resolve_db_url(parsed[0]["db"] or None))


class _Argv(click.Command):
    """A command handed its arguments as they are (`--` too)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["argv"] = list(args)
        return []


@click.command(cls=_Argv, context_settings={"help_option_names": []})
@click.pass_context
def _entry(ctx: click.Context) -> None:
    """`subrosa search` as subrosa.cli.main runs it: the fast path, then the click
    command when it declines; on the fast path, every query is asked through libpq and
    through psycopg, their rows compared (tests.pgboth), so each search on a server in
    the suite holds both connections to one behaviour."""
    from subrosa import libpq
    from subrosa.cli import fastsearch
    from tests.pgboth import both

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SUBROSA_PG_DRIVER", "libpq")  # no silent fallback to psycopg
        patch.setattr(libpq, "connect", both)
        code = fastsearch.main(ctx.meta["argv"])
    if code is not None:
        sys.exit(code)
    cli.main(ctx.meta["argv"], prog_name="subrosa")


def write_leaf(
    directory: Path,
    filename: str,
    description: str = "A fact worth keeping.",
    fact_type: str = "project",
    body: str = "The body.",
    name: str | None = None,
    extra: str = "",
) -> Path:
    """Write a canonical leaf (document 000's shape) and return its path."""
    stem = filename.removesuffix(".md")
    name = name if name is not None else stem.replace("_", "-")
    text = (
        f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {fact_type}\n"
        f"{extra}---\n\n{body}\n"
    )
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


def subrosa_process(
    *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[Any]:
    """Run `subrosa` as a real process (hooks, crash tests), with the test's environment."""
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [sys.executable, "-m", "subrosa", *args],
        input=data,
        capture_output=True,
        env=env if env is not None else dict(os.environ),
        timeout=120,
        **kw,
    )


def subrosa_forked(
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Run `subrosa ARGS` as a real process forked from this one, as `python -m subrosa`
    runs it: subrosa.cli.main (the hooks, the fast paths, then click) on its own
    stdin, stdout, stderr, environment and working directory, its exit code as the
    process's; what it leaves behind is checked after it has gone.

    What it saves is the start of an interpreter and its imports: ~1 s of CPU a command
    here (SQLAlchemy alone ~0.8 s), more than most commands' work. So it is for tests of
    what commands do, where many run one after the other (roles, damaged databases).
    What a command imports, and `python -m subrosa` itself, are tested with fresh
    interpreters (subrosa_process, subrosa_loading), as are the hooks' start-up."""
    data = input.encode() if isinstance(input, str) else input
    env = dict(os.environ if env is None else env)
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        stdin.write(data or b"")
        stdin.seek(0)
        dispose_all()  # no database connection may be shared with the child
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _forked_child(list(args), env, cwd, (stdin.fileno(), stdout.fileno(), stderr.fileno()))
        code = wait_for(pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(["subrosa", *args], timeout)
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(["subrosa", *args], code, stdout.read(), stderr.read())


def _forked_child(
    args: list[str], env: dict[str, str], cwd: str | Path | None, fds: tuple[int, int, int]
) -> NoReturn:
    """In subrosa_forked()'s child: become `python -m subrosa ARGS` and leave with its
    exit code, never returning into pytest. What this process inherited from pytest and
    a fresh interpreter would not have is set back first: the standard streams (pytest
    captures them), the warning filters and their printing (pytest records warnings),
    the root logger (pytest's handlers would swallow what the last-resort handler
    prints), SIGINT's handler, exit handlers."""
    code = 1
    try:
        atexit._clear()
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the child exits
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(  # noqa: SIM115
            2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
        )
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        warnings.filters[:] = _FRESH_WARNING_FILTERS
        warnings.showwarning = _show_warning
        logging.root.handlers.clear()
        logging.root.setLevel(logging.WARNING)
        sys.argv = [str(REPO / "subrosa" / "__main__.py"), *args]
        from subrosa.cli import main

        try:
            main()
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"), as the interpreter ends it
                print(exc.code, file=sys.stderr)
        else:
            code = 0
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# A fresh interpreter's warning filters (python -m, no -W, no PYTHONWARNINGS), and its
# way of printing one: pytest's own are in place while a test runs.
_FRESH_WARNING_FILTERS: list[Any] = [
    ("default", None, DeprecationWarning, "__main__", 0),
    ("ignore", None, DeprecationWarning, None, 0),
    ("ignore", None, PendingDeprecationWarning, None, 0),
    ("ignore", None, ImportWarning, None, 0),
    ("ignore", None, ResourceWarning, None, 0),
]


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def subrosa_loading(
    *args: str,
    report: Path,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """Run `subrosa ARGS` as a real process that writes, as it ends, the modules it
    loaded to `report`: the process, and the top-level packages among them (what the
    import-light paths are held to)."""
    script = (
        "import json, sys\n"
        "from subrosa.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"json.dump(sorted(sys.modules), open({str(report)!r}, 'w'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=input,
        capture_output=True,
        env=env,
        timeout=timeout,
    )
    loaded = {module.split(".")[0] for module in json.loads(report.read_text())}
    return result, loaded


def run_on_terminal(
    args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run `subrosa ARGS` with stderr on a pseudo-terminal (stdout piped): the process,
    and all that the terminal was shown."""
    import pty

    main, side = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "subrosa", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=side,
            timeout=120,
        )
    finally:
        os.close(side)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other end is closed: all was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return done, shown
