"""Postings per sealed chunk of message ids on a server (migration 0018,
subrosa.archive.pgpostings): who seals, what unseals, and the race between them.

A few dozen messages fill several chunks: the id sequence is moved between ingests of
small sessions. After every step the invariant is recomputed from the messages: each
sealed chunk's postings are exactly what its committed messages give (read through
both drivers, libpq's and psycopg's, row for row), and an unsealed chunk has none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from subrosa import libpq
from subrosa.archive.pgpostings import CHUNK, LOCK_KEY
from subrosa.pg import conninfo
from tests.conftest import Db, RunCli
from tests.pgboth import both
from tests.test_archive import _record, _transcript
from tests.test_pooler import pooled as pooled  # a fixture: pgbouncer before the cluster

pytestmark = pytest.mark.engines("postgresql")

# What a chunk's messages give, for the sealed chunks (those below how far each is
# sealed), against what is stored.
EXPECTED = f"""SELECT w.lexeme, m.id / {CHUNK} AS chunk, count(*)::int AS n,
    array_agg(m.id ORDER BY m.id DESC) AS ids
    FROM messages m JOIN sealed_chunks s ON s.chunk = m.id / {CHUNK} AND m.id < s.upto,
    unnest(tsvector_to_array(m.words)) AS w(lexeme) GROUP BY 1, 2"""
STORED = "SELECT lexeme, chunk, n, ids FROM postings"
LATE = (
    "INSERT INTO messages (id, session_pk, uuid, role, text) SELECT %s, session_pk, %s,"
    " 'user', %s FROM messages LIMIT 1"
)
WAIT_S = 60  # how long a connection may take to reach a lock wait (a hang guard only)


def _plain(url: str) -> str:
    return conninfo(url)


def _sql(url: str, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(_plain(url), autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return list(cursor.fetchall()) if cursor.description else []


def _sealed(url: str) -> list[int]:
    """The sealed chunks, having checked the invariant."""
    missing = _sql(url, f"SELECT count(*) FROM ({EXPECTED} EXCEPT {STORED}) d")
    extra = _sql(url, f"SELECT count(*) FROM ({STORED} EXCEPT {EXPECTED}) d")
    loose = _sql(
        url, "SELECT count(*) FROM postings WHERE chunk NOT IN (SELECT chunk FROM sealed_chunks)"
    )
    assert (missing, extra, loose) == ([(0,)], [(0,)], [(0,)])
    lib = libpq.load()
    if lib is not None:  # the same rows through libpq and psycopg (Both compares them)
        conn = both(url, lib)
        try:
            conn.execute(f"{STORED} ORDER BY chunk, lexeme")
        finally:
            conn.close()
    whole = f"SELECT chunk FROM sealed_chunks WHERE upto = (chunk + 1) * {CHUNK} ORDER BY 1"
    return [int(r[0]) for r in _sql(url, whole)]


def _in_part(url: str) -> dict[int, int]:
    """The chunks sealed in part (the newest), and how far: their `upto`."""
    _sealed(url)
    rows = _sql(url, f"SELECT chunk, upto FROM sealed_chunks WHERE upto < (chunk + 1) * {CHUNK}")
    return {int(chunk): int(upto) for chunk, upto in rows}


def _session(run: RunCli, name: str, *texts: str, db: str | None = None) -> None:
    """A session of `texts` ingested (into `db`, else SUBROSA_DB)."""
    _transcript(
        f"{name}.jsonl",
        *(_record(f"{name}-{i}", text, session=name) for i, text in enumerate(texts)),
    )
    run(*(("--db", db) if db else ()), "ingest")


def _next_id(url: str, first: int) -> None:
    """The next message id handed out is `first`."""
    _sql(url, "SELECT setval('messages_id_seq', %s)", [first - 1])


def _three_chunks(run: RunCli, url: str) -> None:
    """Messages in chunks 0, 1 and 3 (2 empty): 0 to 2 sealed, 3 the newest."""
    _session(run, "s-1", "the zanzibar cache", "deploy the cache", "we keep it warm")
    _next_id(url, CHUNK - 1)
    _session(run, "s-2", "the quokka deploy", "a cache of quokkas", "warm deploys")
    _next_id(url, 3 * CHUNK + 5)
    _session(run, "s-3", "the newest zanzibar", "not sealed yet")


def test_the_migration_spells_the_chunk_and_the_lock_as_pgpostings_does() -> None:
    from importlib import import_module

    made = import_module("migrations.versions.0018_pg_postings")
    assert (made.CHUNK, made.LOCK_KEY) == (CHUNK, LOCK_KEY)


def test_ingest_seals_the_complete_chunks_and_not_the_newest(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _session(run, "s-1", "the zanzibar cache", "deploy the cache")
    assert _sealed(db.url) == []  # nothing complete yet
    _next_id(db.url, CHUNK - 1)
    _session(run, "s-2", "the quokka deploy", "a cache of quokkas")  # crosses into chunk 1
    assert _sealed(db.url) == [0]
    rows = dict(
        _sql(db.url, "SELECT lexeme, ids FROM postings WHERE lexeme IN ('cache', 'quokka')")
    )
    assert rows == {"cache": [2, 1], "quokka": [CHUNK - 1]}  # newest first; 4096 is chunk 1
    _next_id(db.url, 3 * CHUNK + 5)
    _session(run, "s-3", "the newest zanzibar")
    assert _sealed(db.url) == [0, 1, 2]  # 2 holds no message: sealed, no rows
    assert _sql(db.url, "SELECT count(*) FROM postings WHERE chunk = 2") == [(0,)]
    _session(run, "s-4", "another turn")  # into the newest chunk: nothing to seal
    assert _sealed(db.url) == [0, 1, 2]


def test_a_late_writer_unseals_and_the_next_ingest_seals_again(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _three_chunks(run, db.url)
    # An id below the newest chunk's, written after it was sealed (as a batch whose
    # block of ids was taken before another writer's commits).
    _sql(db.url, LATE, [7, "late", "a late glimmerwick"])
    assert _sealed(db.url) == [1, 2]
    assert _sql(db.url, "SELECT count(*) FROM postings WHERE chunk = 0") == [(0,)]
    _session(run, "s-5", "one more turn")
    assert _sealed(db.url) == [0, 1, 2]
    assert _sql(db.url, "SELECT ids FROM postings WHERE lexeme = 'glimmerwick'") == [([7],)]


def test_an_update_of_the_text_or_a_delete_unseals(memory_dir: Path, db: Db, run: RunCli) -> None:
    _three_chunks(run, db.url)
    _sql(db.url, "UPDATE messages SET text = text || ' zymurgy' WHERE id = %s", [CHUNK])
    assert _sealed(db.url) == [0, 2]
    run("db", "upgrade")  # seals what is complete and unsealed
    assert _sealed(db.url) == [0, 1, 2]
    assert _sql(db.url, "SELECT chunk, ids FROM postings WHERE lexeme = 'zymurgy'") == [
        (1, [CHUNK])
    ]
    _sql(db.url, "DELETE FROM messages WHERE id = 1")
    assert _sealed(db.url) == [1, 2]
    # A statement touching several chunks unseals each (a session's messages deleted).
    run("db", "upgrade")
    _sql(db.url, "DELETE FROM sessions WHERE session_id = 's-2'")
    assert _sealed(db.url) == [2]
    run("db", "upgrade")
    _sql(db.url, "TRUNCATE messages CASCADE")
    assert _sealed(db.url) == []
    assert _sql(db.url, "SELECT count(*) FROM postings") == [(0,)]


def test_the_migration_seals_an_archive_and_its_downgrade_drops_all(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _three_chunks(run, db.url)
    db.migrate("0017", down=True)
    left = (
        "SELECT (SELECT count(*) FROM pg_tables WHERE tablename IN ('postings',"
        " 'sealed_chunks')), (SELECT count(*) FROM pg_proc WHERE proname IN"
        " ('subrosa_seal_chunk', 'subrosa_postings_unseal')),"
        " (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'messages_postings_%')"
    )
    assert _sql(db.url, left) == [(0, 0, 0)]
    db.migrate("0018")
    assert _sql(db.url, left) == [(2, 2, 4)]
    assert _sealed(db.url) == [0, 1, 2]
    assert _in_part(db.url) == {3: 3 * CHUNK + 5 + 2}  # the newest chunk, to its newest id
    # Stamped back with its tables there (an older subrosa's `db stamp`): made again,
    # what is sealed kept, the rest sealed.
    _sql(db.url, LATE, [9, "late", "a late glimmerwick"])
    _sql(db.url, "UPDATE alembic_version SET version_num = '0017'")
    db.migrate("0018")
    assert _sealed(db.url) == [0, 1, 2]
    assert _sql(db.url, "SELECT ids FROM postings WHERE lexeme = 'glimmerwick'") == [([9],)]


@pytest.fixture
def two(db: Db) -> Iterator[tuple[psycopg.Connection[Any], psycopg.Connection[Any]]]:
    """A writer's connection and a sealer's, to the test's database."""
    writer = psycopg.connect(_plain(db.url), autocommit=True)
    sealer = psycopg.connect(_plain(db.url), autocommit=True)
    try:
        yield writer, sealer
    finally:
        writer.close()
        sealer.close()


def _seal(conn: psycopg.Connection[Any], chunk: int) -> bool:
    row = conn.execute("SELECT subrosa_seal_chunk(%s)", [chunk]).fetchone()
    assert row is not None
    return bool(row[0])


def test_a_writer_holding_a_chunk_makes_the_sealer_skip_it(
    memory_dir: Path, db: Db, run: RunCli, two: tuple[psycopg.Connection[Any], ...]
) -> None:
    """The writer wrote into chunk 0 (sealed) and 1 (unsealed) and has not committed:
    its trigger holds the chunk's shared lock, so the sealer's try fails; the writer's
    commit leaves the chunk unsealed, and the next seal sees its message."""
    writer, sealer = two
    _three_chunks(run, db.url)
    _sql(db.url, LATE, [CHUNK + 100, "early", "an early bird"])  # chunk 1 unsealed
    for chunk, uuid in ((0, "w0"), (1, "w1")):
        before = _sealed(db.url)
        with writer.transaction():
            writer.execute(LATE, [chunk * CHUNK + 11, uuid, f"written into {uuid}"])
            assert _seal(sealer, chunk) is False
            assert _sealed(db.url) == before  # what is committed: the writer's unseal is not
        assert chunk not in _sealed(db.url)
        assert _seal(sealer, chunk) is True
        assert chunk in _sealed(db.url)
    assert _sql(db.url, "SELECT chunk FROM postings WHERE lexeme = 'w1'") == [(1,)]


def _waits_for_a_chunk(url: str, chunk: int) -> None:
    """Until a connection waits for `chunk`'s lock (pg_locks: two int4 keys)."""
    deadline = time.monotonic() + WAIT_S
    asked = (
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid"
        " AND objid = %s::oid AND objsubid = 2 AND NOT granted"
    )
    while _sql(url, asked, [LOCK_KEY, chunk]) == [(0,)]:
        assert time.monotonic() < deadline, "the writer never waited for the lock"
        time.sleep(0.01)


def test_a_writer_whose_trigger_waits_for_the_sealer_unseals_after_it(
    memory_dir: Path, db: Db, run: RunCli, two: tuple[psycopg.Connection[Any], ...]
) -> None:
    """The sealer holds chunk 1's lock (sealed, not committed); a writer's insert into
    chunk 1 reaches its trigger and waits; once the sealer commits, the trigger sees
    the chunk sealed and unseals it: the writer's message is in no sealed postings."""
    writer, sealer = two
    _three_chunks(run, db.url)
    _sql(db.url, LATE, [CHUNK + 100, "early", "an early bird"])
    assert 1 not in _sealed(db.url)
    failed: list[BaseException] = []

    def write() -> None:
        try:
            writer.execute(LATE, [CHUNK + 12, "waited", "a writer that waited"])
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failed.append(exc)

    with sealer.transaction():
        assert _seal(sealer, 1) is True
        thread = threading.Thread(target=write)
        thread.start()
        _waits_for_a_chunk(db.url, 1)
    thread.join()
    assert not failed
    assert _sealed(db.url) == [0, 2]
    assert _seal(sealer, 1) is True
    assert _sealed(db.url) == [0, 1, 2]
    assert _sql(db.url, "SELECT ids FROM postings WHERE lexeme = 'waited'") == [([CHUNK + 12],)]


def test_an_import_seals_after_it_commits(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    _session(run, "s-1", "the zanzibar cache", "deploy the cache", "we keep it warm")
    run("export", str(tmp_path / "me.jsonl"))
    target = db.other("target")
    run("--db", target, "db", "upgrade")
    _next_id(target, CHUNK - 1)  # the import's ids cross into chunk 1
    assert "3 messages added" in run("--db", target, "import", str(tmp_path / "me.jsonl")).stdout
    assert _sealed(target) == [0]
    assert _sql(target, "SELECT ids FROM postings WHERE lexeme = 'zanzibar'") == [([CHUNK - 1],)]


def test_doctor_warns_when_complete_chunks_are_left_unsealed(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    import json

    def check() -> dict[str, Any]:
        data = json.loads(run("doctor", "--json", expect=None).stdout)
        found: dict[str, Any] = next(c for c in data["checks"] if c["name"] == "postings")
        return found

    _three_chunks(run, db.url)
    assert check()["ok"] is True
    assert check()["detail"] == "3 of 3 complete chunks of 4,096 message ids sealed"
    _next_id(db.url, 7 * CHUNK)  # 3 to 6 complete, sealed by the ingest
    _session(run, "s-4", "the newest")
    for chunk in range(4):
        _sql(db.url, LATE, [chunk * CHUNK + 20, f"late-{chunk}", "late"])
    found = check()
    assert found["ok"] is False and found["severity"] == "warning"
    assert found["detail"].startswith("3 of 7 complete chunks")
    assert "subrosa db upgrade" in found["fix"]
    run("db", "upgrade")
    assert check()["ok"] is True
    assert _sealed(db.url) == list(range(7))


def test_behind_a_pooler_ingest_seals(
    pooled: tuple[Any, str, str],  # noqa: F811 (the fixture imported above)
    run: RunCli,
) -> None:
    """Each seal is one statement in a transaction of its own: it works in session and
    transaction mode alike."""
    _, url, direct = pooled
    _session(run, "s-1", "the zanzibar cache", "deploy the cache")
    _next_id(direct, 2 * CHUNK - 1)
    _session(run, "s-2", "the quokka deploy", "a cache of quokkas")
    assert _sealed(direct) == [0, 1]


def test_the_newest_chunk_is_sealed_up_to_its_newest_message(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    """Once PARTIAL ids or more are past its seal, an ingest seals the newest chunk up to
    its newest message; the next messages, past that, leave it sealed so far; a write
    below it unseals it; the next ingest that finds it PARTIAL behind seals it again."""
    from subrosa.archive.pgpostings import PARTIAL

    _three_chunks(run, db.url)
    assert _in_part(db.url) == {}  # 3 * CHUNK + 5 .. + 6: fewer than PARTIAL ids
    _next_id(db.url, 3 * CHUNK + PARTIAL)
    _session(run, "s-4", "a turn far into the chunk", "and its answer")
    top = 3 * CHUNK + PARTIAL + 1
    assert _in_part(db.url) == {3: top + 1}
    assert _sql(db.url, "SELECT ids FROM postings WHERE lexeme = 'answer'") == [([top],)]
    _session(run, "s-5", "the next turn")  # past the seal: kept, not extended
    assert _in_part(db.url) == {3: top + 1}
    assert _sql(db.url, "SELECT count(*) FROM postings WHERE lexeme = 'next'") == [(0,)]
    _sql(db.url, LATE, [3 * CHUNK + 100, "late", "a late glimmerwick"])  # below it
    assert _in_part(db.url) == {}
    assert _sql(db.url, "SELECT count(*) FROM postings WHERE chunk = 3") == [(0,)]
    _next_id(db.url, 3 * CHUNK + 2 * PARTIAL)
    _session(run, "s-6", "much later")
    assert _in_part(db.url) == {3: 3 * CHUNK + 2 * PARTIAL + 1}
    assert _sealed(db.url) == [0, 1, 2]
    held = _sql(db.url, "SELECT lexeme FROM postings WHERE chunk = 3 ORDER BY 1")
    assert {"glimmerwick", "next", "answer", "later"} <= {row[0] for row in held}
