"""subrosa.archive.kept in process: the paths a real server process cannot be made to
take at will (tests/test_mcp_connection.py drives the process): a dead connection
noticed only when a statement fails, the idle limit, the server's revision asked again
after RECHECK_S."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from subrosa.archive import kept
from subrosa.archive.kept import KeptArchive
from subrosa.config import resolve_db_url
from subrosa.paths import project_transcript_dir
from subrosa.schema import SCHEMA_HEAD
from tests.conftest import Db, RunCli

COUNT = "SELECT count(*) FROM messages"


@pytest.fixture
def archive(memory_dir: Path, db: Db, run: RunCli) -> Iterator[KeptArchive]:
    directory = Path(project_transcript_dir())
    directory.mkdir(parents=True)
    record = {
        "type": "user",
        "uuid": "u-1",
        "sessionId": "3c1f0a2b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
        "timestamp": "2026-03-01T10:00:00Z",
        "cwd": "/work/app",
        "message": {"role": "user", "content": "The zebra pipeline runs inside the VPN."},
    }
    (directory / "s.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    run("ingest")
    held = KeptArchive(resolve_db_url(db.url))
    try:
        yield held
    finally:
        held.close()


def count(archive: KeptArchive) -> int:
    return int(archive.run(lambda conn: conn.execute(COUNT).fetchone()[0]))


@pytest.mark.engines
def test_calls_share_one_connection(archive: KeptArchive) -> None:
    assert [count(archive) for _ in range(3)] == [1, 1, 1]
    assert archive.opened == 1


@pytest.mark.engines("postgresql")
def test_a_connection_that_died_unnoticed_is_replaced_when_a_statement_fails(
    archive: KeptArchive, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a connection a firewall dropped would look before the keepalives find it:
    nothing on the socket; the statement fails, and the call runs again on a new
    connection (a real dead path: tests/test_mcp_connection.py)."""
    from subrosa import pg

    assert count(archive) == 1
    pid = archive.conn.raw.info.backend_pid
    db.rows(f"SELECT pg_terminate_backend({pid})")
    monkeypatch.setattr(pg, "idle_ended", lambda raw: False)
    assert count(archive) == 1
    assert archive.opened == 2 and archive.conn.raw.info.backend_pid != pid


@pytest.mark.engines
def test_a_connection_idle_past_the_limit_is_replaced(
    archive: KeptArchive, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert count(archive) == 1
    monkeypatch.setattr(kept, "IDLE_S", -1.0)
    assert count(archive) == 1
    # Only a server's: a firewall drops no SQLite file.
    assert archive.opened == (2 if db.engine == "postgresql" else 1)


@pytest.mark.engines
def test_a_revision_changed_by_another_process_is_seen_when_asked(
    archive: KeptArchive, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stamped back (0017's downgrade changes nothing else): SQLite asks every call; a
    server once per RECHECK_S, so not at once, then at the next check."""
    assert count(archive) == 1
    db.migrate("0016", down=True)
    assert count(archive) == 1
    if db.engine == "postgresql":
        assert archive.opened == 1
        assert db.rows("SELECT version_num FROM alembic_version") == [("0016",)]
        monkeypatch.setattr(kept, "RECHECK_S", -1.0)
        assert count(archive) == 1
    assert archive.opened == 2
    assert db.rows("SELECT version_num FROM alembic_version") == [(SCHEMA_HEAD,)]


@pytest.mark.engines
def test_a_failure_that_is_not_the_connections_is_raised_and_the_connection_kept(
    archive: KeptArchive,
) -> None:
    from subrosa.errors import NotFound

    def refuse(conn: object) -> int:
        raise NotFound("nope: not here.")

    assert count(archive) == 1
    with pytest.raises(NotFound):
        archive.run(refuse)
    assert count(archive) == 1
    assert archive.opened == 1
