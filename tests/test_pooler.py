"""subrosa behind a connection pooler (docs/team.md, "Behind a connection pooler").

A real pgbouncer (tests/pgbouncer.py) stands before the run's cluster, in session mode
and in transaction mode: every command a member runs goes through it, and what search
answers through it is what it answers on a direct connection to the same database. In
transaction mode the pool has one server connection, so every client shares it: a
setting subrosa left on it, a statement it prepared or a temporary table it made would
be seen by the next client, and a statement that relied on one of them would fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from subrosa.paths import claude_root, encode_project_path
from tests.conftest import FIXTURES, RunCli, write_leaf
from tests.pgbouncer import MISSING, Bouncer, find
from tests.postgres import Cluster

# SUBROSA_TEST_POOLER=require: fail, not skip, without pgbouncer (.ci/run installs it).
REQUIRED = os.environ.get("SUBROSA_TEST_POOLER") == "require"
# What a client would see left behind on a shared server connection.
SETTINGS = (
    "jit",
    "max_parallel_workers_per_gather",
    "enable_seqscan",
    "enable_indexscan",
    "enable_bitmapscan",
    "synchronous_commit",
    "lock_timeout",
)
SEARCHES = (
    ("decorator",),
    ('"Hello Claude"',),
    ("decor*",),
    ("python", "example", "function"),
    ("--sessions", "example"),
)


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _left_behind(url: str) -> tuple[list[str], list[str], list[str]]:
    """What a client sees on its server connection: the settings, the statements
    prepared on it, and the temporary tables of the database's server connections."""
    import psycopg

    with psycopg.connect(
        _plain(url), autocommit=True, prepare_threshold=None, connect_timeout=30
    ) as conn:
        shown = [str(conn.execute(f"SHOW {name}").fetchone()[0]) for name in SETTINGS]  # type: ignore[index]
        prepared = [str(r[0]) for r in conn.execute("SELECT name FROM pg_prepared_statements")]
        temporary = [
            str(r[0])
            for r in conn.execute("SELECT relname FROM pg_class WHERE relpersistence = 't'")
        ]
    return shown, prepared, temporary


@pytest.fixture(params=["session", "transaction"])
def pooled(
    request: pytest.FixtureRequest, pg_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Bouncer, str, str]]:
    """A pgbouncer in each mode before a new database: the bouncer, the database's URL
    through it (SUBROSA_DB) and its direct URL."""
    binary = find()
    if binary is None:
        if REQUIRED:
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    if pg_cluster.directory is None:
        pytest.skip("pgbouncer needs a cluster this run starts (SUBROSA_TEST_PG_URL is set)")
    database = pg_cluster.create_database()
    bouncer = Bouncer.start(
        binary, pg_cluster, request.param, 1 if request.param == "transaction" else 3
    )
    url = bouncer.url(str(database.database))
    monkeypatch.setenv("SUBROSA_DB", url)
    memory = Path.cwd() / "memory"
    memory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    try:
        yield bouncer, url, database.render_as_string(hide_password=False)
    finally:
        bouncer.stop()
        pg_cluster.drop_database(database)


def _transcripts() -> Path:
    """Real transcripts where Claude Code files this project's sessions."""
    folder = Path(claude_root()) / "projects" / encode_project_path(Path.cwd())
    folder.mkdir(parents=True)
    for name in ("representative_messages.jsonl", "edge_cases.jsonl", "todowrite_examples.jsonl"):
        shutil.copy(FIXTURES / "transcripts" / "claude-code-log" / name, folder / name)
    for path in sorted((FIXTURES / "transcripts" / "bookminder-subagents").glob("*.jsonl")):
        shutil.copy(path, folder / path.name)
    return folder


def test_every_command_answers_through_the_pooler_as_without_it(
    pooled: tuple[Bouncer, str, str], run: RunCli, tmp_path: Path, pg_cluster: Cluster
) -> None:
    bouncer, url, direct = pooled
    _transcripts()
    assert "migrated" in run("db", "upgrade").stdout
    assert "new messages" in run("ingest").stdout
    for words in SEARCHES:
        through = json.loads(run("search", "--json", *words).stdout)
        assert through, words
        assert json.loads(run("--db", direct, "search", "--json", *words).stdout) == through
    assert "decorator" in run("search", "decorator").stdout.lower()
    listed = run("transcript", "list").stdout
    assert "test_session" in listed
    assert "Hello Claude" in run("transcript", "show", "test_session").stdout
    write_leaf(Path.cwd() / "memory", "build.md", "How to build", body="Run make build.")
    run("fact", "upsert", "build", "--hook", "build it")
    assert "build" in run("fact", "list").stdout
    run("generate")
    doctor = run("doctor", expect=None)
    assert "?? pooler: the server is reached through a connection pooler" in doctor.stdout
    assert "ALTER ROLE subrosa SET jit = off; ALTER ROLE subrosa SET max_parallel" in doctor.stdout
    assert "!!" not in "".join(
        line for line in doctor.stdout.splitlines() if not line.startswith(("!! hooks", "   "))
    ), doctor.stdout
    exported = tmp_path / "memory.jsonl"
    run("export", str(exported))
    other = pg_cluster.create_database()
    try:
        into = bouncer.url(str(other.database))
        assert "messages added" in run("--db", into, "import", str(exported)).stdout
        assert json.loads(run("--db", into, "search", "--json", "decorator").stdout)
    finally:
        pg_cluster.drop_database(other)
    # The MCP server's search, a process that keeps its connection.
    from tests.test_mcp import calls

    [(text, error)] = calls(("search", {"query": "decorator", "kind": "messages"}))
    assert not error and "decorator" in text.lower(), text
    assert _left_behind(url) == _left_behind(direct)[:1] + ([], [])


@pytest.mark.parametrize("pooled", ["transaction"], indirect=True)
def test_clients_at_once_share_a_server_connection_without_leaving_settings(
    pooled: tuple[Bouncer, str, str], run: RunCli
) -> None:
    """In transaction mode, an ingest and searches at once, and another client asking
    the one server connection's settings all the while: it sees the server's own."""
    _, url, direct = pooled
    folder = _transcripts()
    run("db", "upgrade")
    run("ingest", str(next(folder.glob("representative_*"))))
    expected = _left_behind(direct)
    env = dict(os.environ)
    command = [sys.executable, "-m", "subrosa"]
    processes = [
        subprocess.Popen(
            [*command, "ingest"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ),
        *(
            subprocess.Popen(
                [*command, "search", "--json", *words],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for words in SEARCHES * 2
        ),
    ]
    seen = []
    deadline = time.monotonic() + 60
    while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
        seen.append(_left_behind(url))
    outcomes = [(p.wait(60), p.communicate()) for p in processes]
    seen.append(_left_behind(url))
    for code, (_, err) in outcomes:
        assert code == 0, err.decode()[-2000:]
    assert {tuple(shown) for shown, _, _ in seen} == {tuple(expected[0])}
    assert not [name for _, prepared, _ in seen for name in prepared]
    assert "new messages" in outcomes[0][1][0].decode()


@pytest.mark.parametrize("pooled", ["transaction"], indirect=True)
def test_a_pooler_subrosa_does_not_recognise_is_named_then_declared(
    pooled: tuple[Bouncer, str, str],
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    pg_cluster: Cluster,
) -> None:
    """A pooler in transaction mode that passes the server's own process id through,
    on another port than 6543 (pgbouncer's cancel key recognised no more, and the
    server's answer to which process it is not compared: what subrosa.pg.recognised()
    and passed_through() read is taken away): its prepared statements collide, and
    the error says what to do instead of a traceback, `subrosa_pooler=transaction`
    first. Declared so in the URL, every command works through it as through one it
    recognises, and leaves nothing on the shared server connection (a pgbouncer of its
    own: the failure left the first one's dirty)."""
    from subrosa import pg

    _, url, direct = pooled
    monkeypatch.setattr(pg, "recognised", lambda url, pid: False)
    monkeypatch.setattr(pg, "passed_through", lambda pid, answered: False)
    folder = _transcripts()
    result = run("db", "upgrade", expect=1)
    assert result.stderr.startswith(f"Error: {url}: "), result.stderr
    assert "prepared statement" in result.stderr
    assert "declare it by adding subrosa_pooler=transaction to the URL" in result.stderr
    assert "session mode or a direct URL" in result.stderr
    assert "Traceback" not in result.stderr
    binary = find()
    assert binary is not None
    clean = Bouncer.start(binary, pg_cluster, "transaction", 1)
    try:
        url = clean.url(url.rsplit("/", 1)[1])
        monkeypatch.setenv("SUBROSA_DB", url + "?subrosa_pooler=transaction")
        _declared(folder, direct, run)
        assert _left_behind(url) == _left_behind(direct)[:1] + ([], [])
    finally:
        clean.stop()


@pytest.mark.parametrize("pooled", ["transaction"], indirect=True)
def test_a_cancel_key_that_looks_like_a_process_id_is_told_by_the_server(
    pooled: tuple[Bouncer, str, str], run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgbouncer's random cancel key is at most 2^22, and so looks like a server's
    process id, for one connection in 1,024 (taken away here for every one: what
    subrosa.pg.recognised() reads). The server's answer to which process it is, in
    the statement that sets a connection up, tells the pooler all the same: every
    command answers through it as on a direct connection, and nothing (no setting, no
    prepared statement) stays on the server connection it shares."""
    from subrosa import pg

    _, url, direct = pooled
    monkeypatch.setattr(pg, "recognised", lambda url, pid: False)
    doctor = _every_command(_transcripts(), direct, run, "migrated")
    assert "?? pooler: the server is reached through a connection pooler" in doctor, doctor
    assert _left_behind(url) == _left_behind(direct)[:1] + ([], [])


def _declared(folder: Path, direct: str, run: RunCli) -> None:
    """Every command through the pooler declared in SUBROSA_DB answers as without the
    pooler; doctor says it is declared."""
    doctor = _every_command(folder, direct, run, "revision 0")
    assert (
        "pooler: the server is reached through a connection pooler (declared by the URL's"
        " subrosa_pooler=transaction)" in doctor
    ), doctor


def _every_command(folder: Path, direct: str, run: RunCli, upgraded: str) -> str:
    """Every command through the pooler in SUBROSA_DB (`direct`: the same database
    without it) answers as without the pooler, `db upgrade` saying `upgraded`; what
    doctor says."""
    assert upgraded in run("db", "upgrade").stdout
    assert "new messages" in run("ingest", str(next(folder.glob("representative_*")))).stdout
    assert "new messages" in run("ingest").stdout
    for words in SEARCHES:
        through = json.loads(run("search", "--json", *words).stdout)
        assert through, words
        assert json.loads(run("--db", direct, "search", "--json", *words).stdout) == through
    write_leaf(Path.cwd() / "memory", "build.md", "How to build", body="Run make build.")
    run("fact", "upsert", "build", "--hook", "build it")
    assert "build" in run("fact", "list").stdout
    return str(run("doctor", expect=None).stdout)


@pytest.mark.parametrize(
    ("url", "pid", "pooled"),
    [
        ("postgresql://me@db.example.com/team", 31509, False),
        ("postgresql://me@db.example.com/team", 1_131_642_831, True),  # pgbouncer's key
        ("postgresql://me@db.example.com/team", -979_840_079, True),
        ("postgresql://me@db.example.com/team", 2**22, False),
        ("postgresql://p.ref:pw@aws-0-eu-west-1.pooler.supabase.com:6543/postgres", 7, True),
        ("postgresql://p.ref:pw@aws-0-eu-west-1.pooler.supabase.com:5432/postgres", 7, False),
        ("postgresql://me@ep-cool-1-pooler.us-east-2.aws.neon.tech/db?sslmode=require", 7, True),
        ("postgresql://me@ep-cool-1.us-east-2.aws.neon.tech/db?sslmode=require", 7, False),
        ("postgresql+psycopg://me@/db?host=/run/pg&port=6543", 7, True),
        ("postgresql://me:6543@db.example.com:5432/team", 7, False),  # a password
        ("postgresql://me@a:5432,b:6543/team", 7, True),
    ],
)
def test_a_pooler_is_known_by_the_process_id_or_its_usual_address(
    url: str, pid: int, pooled: bool
) -> None:
    from subrosa.pg import behind_pooler

    assert behind_pooler(url, pid) is pooled
    # The server asked (subrosa.pg.settings()): its own process id, or another.
    assert behind_pooler(url, pid, pid) is pooled
    assert behind_pooler(url, pid, pid + 1) is True
