"""`subrosa mcp` keeps its archive connection across calls (subrosa.archive.kept).

A real server process over stdio, driven by a few lines of JSON-RPC (as
bench/mcp_server.py drives it), so that between two calls the test can act on the
database from outside, as another process would: kill the server's backend, ingest,
migrate, replace the file. On PostgreSQL the server's connections are told apart by
their application_name (PGAPPNAME, set for the server alone).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, TimeoutError
from pathlib import Path
from typing import Any

import pytest

from subrosa.memory.marker import INDEX_FILES
from subrosa.paths import project_transcript_dir
from subrosa.schema import SCHEMA_HEAD
from tests.conftest import Db, RunCli, dispose_all
from tests.tcprelay import relay, target

APP = "subrosa-mcp-under-test"
# How long a search may take after its connection's path died: the TCP user timeout
# (30 s), a new connection and the search, with room for a loaded machine.
DEAD_PATH_BOUND_S = 180
SESSION = "7d2c4b1e-93a0-4c55-8f6e-2b1d0c9e8a71"


class Server:
    """One `subrosa mcp` process; requests answered in order."""

    def __init__(self, tmp_path: Path) -> None:
        self.stderr = tmp_path / "mcp-stderr.txt"
        with self.stderr.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "subrosa", "mcp"],
                env={**os.environ, "PGAPPNAME": APP},
                cwd=os.getcwd(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answers(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        got: dict[int, dict[str, Any]] = {}
        assert self.process.stdout is not None
        while set(got) != ids:
            line = self.process.stdout.readline()
            assert line, f"the server ended: {self.stderr.read_text()}"
            answer = json.loads(line)
            if answer.get("id") in ids:
                got[answer["id"]] = answer
        return got

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = self.ask(method, params)
        return self.answers({ident})[ident]

    def tool(self, name: str, **arguments: Any) -> tuple[str, bool]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["content"][0]["text"], bool(result.get("isError"))

    def close(self) -> int:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
        return self.process.wait(timeout=60)


@pytest.fixture
def server(tmp_path: Path, memory_dir: Path) -> Iterator[Server]:
    started = Server(tmp_path)
    try:
        yield started
    finally:
        if started.process.poll() is None:
            started.process.kill()
            started.process.wait(timeout=60)
        assert "Traceback" not in started.stderr.read_text()


def write_session(session: str, *texts: str, minute: int = 0) -> Path:
    """A transcript of one user message per text in this project's folder."""
    directory = Path(project_transcript_dir())
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "type": "user",
                "uuid": f"{session[:8]}-{i}",
                "sessionId": session,
                "timestamp": f"2026-03-01T10:{minute + i:02d}:00Z",
                "cwd": "/work/app",
                "message": {"role": "user", "content": text},
            }
        )
        for i, text in enumerate(texts)
    ]
    path = directory / f"{session}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def archived(memory_dir: Path, run: RunCli) -> str:
    write_session(SESSION, "The zebra pipeline runs inside the VPN.", "The firewall drops it.")
    run("ingest")
    return SESSION


def backends(db: Db) -> list[int]:
    """The server's connections to the test's database (by their application name)."""
    return [
        int(row[0])
        for row in db.rows(
            f"SELECT pid FROM pg_stat_activity WHERE application_name = '{APP}'"
            " AND datname = current_database()"
        )
    ]


def archive_files(pid: int, db: Db) -> list[str]:
    """The descriptors of process `pid` open on the SQLite database file."""
    fds = Path(f"/proc/{pid}/fd")
    return sorted(
        fd.name for fd in fds.iterdir() if os.path.realpath(fd) == os.path.realpath(db.url)
    )


def revision(db: Db) -> str:
    return str(db.rows("SELECT version_num FROM alembic_version")[0][0])


@pytest.mark.engines
def test_two_searches_use_one_connection(archived: str, db: Db, server: Server) -> None:
    first = server.tool("search", query="zebra pipeline")
    if db.engine == "postgresql":
        kept = backends(db)
        assert len(kept) == 1
    else:
        kept = archive_files(server.process.pid, db)
        assert len(kept) == 1
    second = server.tool("search", query="firewall")
    got = server.tool("get", id=f"{SESSION[:8]}-1")
    line = server.tool("timeline", session=SESSION)
    for text, error in (first, second, got, line):
        assert not error, text
    assert "**zebra** **pipeline**" in first[0] and "**firewall**" in second[0]
    assert "The firewall drops it." in got[0] and "#2" in line[0]
    if db.engine == "postgresql":
        assert backends(db) == kept
    else:
        assert archive_files(server.process.pid, db) == kept


@pytest.mark.engines("postgresql")
def test_a_killed_backend_is_replaced_at_the_next_call(
    archived: str, db: Db, server: Server
) -> None:
    assert not server.tool("search", query="zebra")[1]
    (pid,) = backends(db)
    db.rows(f"SELECT pg_terminate_backend({pid})")
    text, error = server.tool("search", query="firewall")
    assert not error and "**firewall**" in text
    (again,) = backends(db)
    assert again != pid
    assert not server.tool("get", id=f"{SESSION[:8]}-0")[1]
    assert backends(db) == [again]


@pytest.mark.engines("postgresql")
def test_a_server_that_cannot_be_reached_again_is_one_sentence(
    archived: str, db: Db, server: Server
) -> None:
    """The backend gone and no new connection allowed: the tool's error, then the
    next call after the server is back answers."""
    from sqlalchemy.engine import make_url

    name = make_url(db.url).database
    assert not server.tool("search", query="zebra")[1]
    assert db.cluster is not None
    db.cluster.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
    try:
        db.cluster.execute(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name"
            f" = '{APP}'"
        )
        text, error = server.tool("search", query="firewall")
    finally:
        db.cluster.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    assert error and "\n" not in text
    assert "cannot connect (" in text and "not currently accepting connections" in text
    text, error = server.tool("search", query="firewall")
    assert not error and "**firewall**" in text


@pytest.mark.engines
def test_an_ingest_by_another_process_between_calls_is_found(
    archived: str, db: Db, server: Server, run: RunCli
) -> None:
    assert server.tool("search", query="quokka") == ("No facts or messages match 'quokka'.", False)
    write_session("5f0e9a44-1b2c-4d3e-8f70-aa11bb22cc33", "A quokka in the test data.")
    run("ingest")  # another process: the test's, not the server's
    text, error = server.tool("search", query="quokka")
    assert not error and "**quokka**" in text
    # And a session that ended since (the SessionEnd hook's queue): the server drains it.
    from subrosa.archive import pending

    path = write_session("9a8b7c6d-0000-4e4e-9f9f-123456789abc", "A wombat this time.", minute=9)
    pending.record(str(path), "9a8b7c6d-0000-4e4e-9f9f-123456789abc", "/work/app")
    text, error = server.tool("search", query="wombat")
    assert not error and "**wombat**" in text
    assert pending.list_pending() == []


@pytest.mark.engines
def test_a_migration_by_another_process_between_calls_is_handled(
    archived: str, db: Db, server: Server
) -> None:
    """Taken back to 0015 by another process (on PostgreSQL that drops the table of
    words that misspelt words are read against, migration 0016): the next call sees it
    (on SQLite it asks the revision every call; on a server a statement fails on the
    kept connection), migrates as a new connection would, and answers."""
    assert not server.tool("search", query="zebra")[1]
    db.migrate("0015", down=True)
    assert revision(db) == "0015"
    text, error = server.tool("search", query="firewal")
    assert not error, text
    assert text.splitlines()[0] == '(read "firewal" as "firewall")'
    assert "**firewall**" in text
    assert revision(db) == SCHEMA_HEAD


@pytest.mark.engines("sqlite")
def test_a_database_file_replaced_between_calls_is_opened_anew(
    archived: str, db: Db, server: Server, run: RunCli
) -> None:
    assert not server.tool("search", query="zebra")[1]
    dispose_all()
    for suffix in ("", "-wal", "-shm"):
        Path(db.url + suffix).unlink(missing_ok=True)
    write_session("5f0e9a44-1b2c-4d3e-8f70-aa11bb22cc33", "A quokka in the new file.")
    run("ingest")
    text, error = server.tool("search", query="quokka")
    assert not error and "**quokka**" in text


@pytest.mark.engines
def test_calls_sent_at_once_are_each_answered(archived: str, db: Db, server: Server) -> None:
    """The SDK runs each request as a task of its own: several at once share the one
    connection one after the other."""
    words = ["zebra", "firewall", "pipeline", "quokka", "vpn", "zebra"] * 3
    ids = {
        server.ask("tools/call", {"name": "search", "arguments": {"query": word}}): word
        for word in words
    }
    answers = server.answers(set(ids))
    for ident, word in ids.items():
        result = answers[ident]["result"]
        text = result["content"][0]["text"]
        assert not result.get("isError"), text
        assert (f"**{word}**" in text.lower()) == (word != "quokka"), text


@pytest.mark.engines
@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_the_connection_is_closed_when_the_server_stops(
    archived: str, db: Db, server: Server, how: str
) -> None:
    """Closed cleanly, the archive's and the one `remember` wrote through: on SQLite the
    last connection's close checkpoints the WAL and removes it; on a server the
    backends end."""
    assert not server.tool("search", query="zebra")[1]
    written = server.tool(
        "remember", slug="vpn_first", type="project", description="VPN first.", body="Yes."
    )
    assert not written[1], written[0]
    dispose_all()
    if how == "SIGTERM":
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == -signal.SIGTERM
    else:
        assert server.close() == 0
    if db.engine == "sqlite":
        assert not Path(db.url + "-wal").exists()
    else:
        import time

        for _ in range(100):  # the backend ends a moment after its client
            if not backends(db):
                break
            time.sleep(0.05)
        assert backends(db) == []


@pytest.mark.engines("postgresql")
def test_a_search_after_the_path_died_in_silence_answers_on_a_new_connection(
    archived: str, db: Db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept connection's TCP path dies without a word (tests/tcprelay.py: nothing
    the client sends is received or acknowledged any more, no end closed): the next
    search's statement fails when the connection's TCP user timeout ends it, and the
    kept archive runs the call again on a new connection, which the relay carries.
    Without the timeout the statement would wait on TCP's retransmits for ~15 minutes.
    The timeout is the URL's, 4 s, not subrosa's default of 30 s
    (subrosa.pg.TCP_DEFAULTS), which test_connections.py finds set on every driver's
    socket: the path is the same, the suite 26 s shorter. The bound below is generous:
    the call must not hang, however loaded the machine."""
    if not sys.platform.startswith("linux"):
        pytest.skip("tests/tcprelay.py is Linux's (SO_ATTACH_FILTER)")
    with relay(target(db.url)) as through:
        monkeypatch.setenv("SUBROSA_DB", through.url(db.url, tcp_user_timeout="4000"))
        server = Server(tmp_path)
        try:
            assert not server.tool("search", query="zebra")[1]
            assert through.blackhole() == through.accepted == 1
            with ThreadPoolExecutor(1) as pool:
                asked = pool.submit(server.tool, "search", query="firewall")
                try:
                    text, error = asked.result(timeout=DEAD_PATH_BOUND_S)
                except TimeoutError:
                    server.process.kill()  # the reader thread ends with the pipe
                    raise AssertionError(
                        f"no answer within {DEAD_PATH_BOUND_S} s after the path died"
                    ) from None
            assert not error and "**firewall**" in text, text
            assert through.accepted == 2
            assert not server.tool("get", id=f"{SESSION[:8]}-0")[1]
            assert through.accepted == 2  # the new connection is kept
            assert server.close() == 0
        finally:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait(timeout=60)
    assert "Traceback" not in server.stderr.read_text()


@pytest.mark.engines("postgresql")
def test_remember_after_its_backends_were_terminated_stores_each_fact_once(
    memory_dir: Path, db: Db, server: Server
) -> None:
    """`remember` writes through the process's SQLAlchemy engine, whose pool keeps a
    connection between calls: one whose backend was terminated (a server restart,
    pg_terminate_backend, a pooler closing it) is replaced as it is checked out, and
    the call stores its fact, once (subrosa.db._replaced_when_ended)."""
    first = server.tool(
        "remember", slug="vpn_first", type="project", description="VPN first.", body="Yes."
    )
    assert not first[1], first[0]
    assert backends(db)
    for pid in backends(db):
        db.rows(f"SELECT pg_terminate_backend({pid})")
    second = server.tool(
        "remember",
        slug="deploy_friday",
        type="project",
        description="No Friday deploys.",
        body="Never on a Friday.",
    )
    assert not second[1], second[0]
    assert second[0].startswith("added fact deploy_friday"), second[0]
    for pid in backends(db):
        db.rows(f"SELECT pg_terminate_backend({pid})")
    again = server.tool(
        "remember", slug="vpn_first", type="project", description="VPN first.", body="Always."
    )
    assert again[0].startswith("updated fact vpn_first"), again[0]
    assert db.rows("SELECT slug, body FROM facts ORDER BY slug") == [
        ("deploy_friday", "Never on a Friday."),
        ("vpn_first", "Always."),
    ]
    leaves = sorted(p.name for p in memory_dir.glob("*.md") if p.name not in INDEX_FILES)
    assert leaves == ["deploy_friday.md", "vpn_first.md"]
