"""The re-index's writer thread (subrosa.archive.reindex, `_commit_behind`): while one
transaction's terms are stored, its messages indexed and the transaction committed by
it, the re-index computes the next transaction's terms. The index must be the one the
sequential re-index builds, segment for segment; an error in the thread must end the
re-index as it would have here, that transaction rolled back; a kill -9 or a Ctrl-C
must leave the state before a commit or after it, and the next run must finish with
the same index; a small re-index (a hook's) starts no thread.

The archive is taken back to revision 0002 and migrated again without its re-index, so
that `subrosa db upgrade` is the re-index alone; its transactions are made small
(COMMIT_CHARS), so 1,200 messages make a dozen, each but the last handed to a thread.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from subrosa.archive import reindex
from subrosa.archive.connection import connect
from subrosa.db import dispose_all, open_database
from subrosa.terms import index_terms
from tests import crash
from tests.conftest import RunCli
from tests.test_reindex import _downgrade, _index, _record, _write


class Writers:
    """How the re-index's transactions went: `handed`, those handed to a writer thread,
    and the threads that wrote them. With `sequential` each is committed in place, as
    before the thread."""

    def __init__(self) -> None:
        self.handed = 0
        self.sequential = False
        self.threads: set[str] = set()


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> Writers:
    """Transactions of 4,000 characters (about 65 messages), batches of 50 messages."""
    monkeypatch.setattr(reindex, "BATCH_MESSAGES", 50)
    monkeypatch.setattr(reindex, "COMMIT_CHARS", 4000)
    state = Writers()
    commit_behind, finish = reindex._commit_behind, reindex._finish

    def commit_or_hand(writer: Any, conn: sqlite3.Connection, work: Any) -> None:
        if state.sequential:
            reindex._finish(conn, work)
            conn.execute("COMMIT")
            return
        state.handed += 1
        commit_behind(writer, conn, work)

    def traced(conn: sqlite3.Connection, work: Any) -> None:
        state.threads.add(threading.current_thread().name)
        finish(conn, work)

    monkeypatch.setattr(reindex, "_commit_behind", commit_or_hand)
    monkeypatch.setattr(reindex, "_finish", traced)
    return state


# Texts whose terms are more than words: symbol words, emoji, CJK, characters that JSON
# escapes (the changed terms reach the thread's UPDATE as a JSON array); and none.
ODD_TEXTS = [
    'C++ and #hashtag 🎉 in 東京 with useQueryCache, "quoted" and back\\slash',
    "emoji 👍🏽 family 👨‍👩‍👧 flag 🇯🇵 naïve café Straße",
    "tab\there\u2028line separator and \\u0000 spelled out, F# and #include <stdio.h>",
    "plain words only, no terms at all",  # stored as NULL
]


def _pending_archive(
    tmp_path: Path,
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    messages: int = 600,
    odd: bool = False,
) -> tuple[crash.Workspace, dict[str, object]]:
    """A workspace saved with its archive (2 × `messages` messages, and with `odd` 30
    of ODD_TEXTS and every message's terms stale) due for a re-index and migrated
    otherwise, and what a fresh ingest's index answers."""
    space = crash.Workspace(tmp_path / "work")
    space.memory_dir.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(space.memory_dir))
    monkeypatch.setenv("SUBROSA_DB", str(space.db))
    _write(space.root / "transcripts", messages)
    if odd:
        lines = [_record(f"odd-{i}", ODD_TEXTS[i % 4], "s3") for i in range(30)]
        (space.root / "transcripts" / "s3.jsonl").write_text("\n".join(lines) + "\n")
    run("ingest", str(space.root / "transcripts"))
    fresh = _index(space.db)
    _downgrade(space.db)
    open_database(f"sqlite:///{space.db}")  # the migrations, not the re-index
    dispose_all()
    if odd:  # every message's terms to store again (0014 stored some already)
        conn = sqlite3.connect(space.db)
        with conn:
            conn.execute("UPDATE messages SET terms = 'stale'")
        conn.close()
    assert reindex.pending(sqlite3.connect(space.db)) == 1
    space.save()
    return space, fresh


def _archive(db: Path, whole: bool = True) -> dict[str, Any]:
    """What the re-index writes: every message's terms, the index's own pages (the same
    segments, byte for byte) and settings, and whether a re-index is still due. FTS5's
    integrity check first when the re-index is `whole` (before, the index holds only
    the messages before next_id: the check compares it with all of them)."""
    conn = sqlite3.connect(db)
    try:
        if whole:
            sql = "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"
            conn.execute(sql)
        queries = {
            "terms": "SELECT id, terms FROM messages ORDER BY id",
            "index": "SELECT id, block FROM messages_fts_data ORDER BY id",
            "config": "SELECT k, v FROM messages_fts_config ORDER BY k",
            "pending": "SELECT next_id FROM archive_reindex",
        }
        return {part: conn.execute(sql).fetchall() for part, sql in queries.items()}
    finally:
        conn.close()


def _reindexed(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, messages: int = 600
) -> tuple[crash.Workspace, dict[str, object], dict[str, Any]]:
    """An archive due for a re-index (_pending_archive), what a fresh ingest's index
    answers, and what a whole re-index writes; the workspace saved before it."""
    space, fresh = _pending_archive(tmp_path, run, monkeypatch, messages)
    space.restore()
    run("db", "upgrade")
    return space, fresh, _archive(space.db)


@pytest.mark.parametrize("one_update", [True, False], ids=["update from", "row by row"])
def test_the_pipelined_reindex_builds_the_index_the_sequential_one_does(
    tmp_path: Path,
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    writers: Writers,
    one_update: bool,
) -> None:
    """Also as an SQLite before 3.33 (no `UPDATE … FROM`) does it: a row at a time."""
    if one_update and not reindex._ONE_UPDATE:
        pytest.skip(f"SQLite {sqlite3.sqlite_version} has no UPDATE … FROM")
    monkeypatch.setattr(reindex, "_ONE_UPDATE", one_update)
    space, fresh = _pending_archive(tmp_path, run, monkeypatch, odd=True)
    space.restore()
    assert "re-indexed 1230 archived messages" in run("db", "upgrade").output
    piped = _archive(space.db)
    assert writers.handed >= 10 and "reindex writer" in writers.threads
    writers.sequential, writers.threads = True, set()
    space.restore()
    assert "re-indexed 1230 archived messages" in run("db", "upgrade").output
    assert writers.threads == {"MainThread"}
    plain = _archive(space.db)
    for part, rows in plain.items():
        assert piped[part] == rows, part
    assert plain["pending"] == [] and plain["index"]
    assert _index(space.db) == fresh
    # Every message's terms as subrosa.terms computes them (through the JSON array).
    conn = sqlite3.connect(space.db)
    stored = conn.execute("SELECT text, terms FROM messages").fetchall()
    conn.close()
    assert all(terms == index_terms(text) for text, terms in stored)
    assert {terms for text, terms in stored if text in ODD_TEXTS} == {
        index_terms(text) for text in ODD_TEXTS
    }
    assert [index_terms(text) is None for text in ODD_TEXTS] == [False, False, False, True]


@pytest.mark.parametrize("any_thread", [True, False], ids=["any thread", "held"])
def test_the_progress_counts_every_message_once(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers, any_thread: bool
) -> None:
    # On a connection held to the thread that opened it (subrosa.schema.connect's
    # default) the first writer thread is refused before any SQL: that transaction is
    # written in place, and so are the rest, no thread handed any.
    space, fresh, whole = _reindexed(tmp_path, run, monkeypatch)
    space.restore()
    writers.handed, writers.threads = 0, set()
    told: list[tuple[int, int]] = []
    conn = connect(space.db, any_thread=any_thread)
    try:
        assert reindex.reindex(conn, lambda done, total: told.append((done, total))) == 1200
    finally:
        conn.close()
    assert writers.handed == (12 if any_thread else 1)
    assert writers.threads == ({"reindex writer", "MainThread"} if any_thread else {"MainThread"})
    assert sum(done for done, _ in told) == 1200 and {total for _, total in told} == {1200}
    assert _archive(space.db) == whole
    assert _index(space.db) == fresh


@pytest.mark.parametrize("failing", [1, 3])
def test_a_writer_error_ends_the_reindex_as_in_place(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers, failing: int
) -> None:
    # The index statement of the `failing`-th transaction fails (a damaged database, as
    # SQLite says it): the same error, exit code and message as when the transaction is
    # committed in place, that transaction rolled back, the ones before it kept.
    space, fresh, clean = _reindexed(tmp_path, run, monkeypatch)
    writers.handed = 0
    index = reindex._index
    calls: list[int] = []

    def failing_index(conn: sqlite3.Connection, first: int, end: int) -> None:
        calls.append(1)
        if len(calls) == failing:
            raise sqlite3.DatabaseError("database disk image is malformed")
        index(conn, first, end)

    monkeypatch.setattr(reindex, "_index", failing_index)
    space.restore()
    piped = run("db", "upgrade", expect=2)
    assert writers.handed == failing  # the failing transaction was the thread's
    assert "reindex writer" not in [thread.name for thread in threading.enumerate()]
    piped_archive = _archive(space.db, whole=False)
    writers.sequential = True
    calls.clear()
    space.restore()
    plain = run("db", "upgrade", expect=2)
    assert "not a readable subrosa database (database disk image is malformed)" in plain.output
    assert piped.output == plain.output
    assert piped_archive == _archive(space.db, whole=False)
    assert piped_archive["pending"] == [(1 + 100 * (failing - 1),)]  # 100 a transaction
    # The next run goes on from there and builds the index the whole run built.
    monkeypatch.setattr(reindex, "_index", index)
    writers.sequential = False
    run("db", "upgrade")
    assert _archive(space.db) == clean
    assert _index(space.db) == fresh


def test_a_small_reindex_starts_no_thread(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An archive whose messages fit in one transaction (a hook opening an archive due
    # for a re-index): indexed in place, no thread started, no second connection.
    space, fresh = _pending_archive(tmp_path, run, monkeypatch, messages=100)
    space.restore()
    started = crash.threads_started(monkeypatch)
    monkeypatch.setattr(reindex, "_read_only", None)  # called, it would fail
    assert "re-indexed 200 archived messages" in run("db", "upgrade").output
    assert "reindex writer" not in started
    assert _index(space.db) == fresh


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill -9", "Ctrl-C"])
def test_an_interrupted_pipelined_reindex_resumes(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers, how: str
) -> None:
    # A kill -9, or a Ctrl-C (the thread's statement interrupted, its transaction rolled
    # back, click's "Aborted!"), at a random point: the database as one commit or
    # another left it, and the next run ends with the index the uninterrupted run
    # built, page for page.
    space, fresh, clean = _reindexed(tmp_path, run, monkeypatch, messages=1500)

    def after(*_: object) -> None:
        assert crash.integrity(space.db) == "ok"
        run("db", "upgrade")
        assert _archive(space.db) == clean

    args = ["db", "upgrade"]
    if how == "kill -9":
        tally = crash.trials("db upgrade", args, space, kills=20, seed=13, after_kill=after)
        print(tally.line())
    else:
        errors = tmp_path / "stderr"
        crash.interruptions(args, space, interrupts=8, seed=5, errors=errors, after=after)
    assert _index(space.db) == fresh
