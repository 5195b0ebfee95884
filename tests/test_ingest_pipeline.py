"""Ingest's writer thread (Ingester._commit_behind): while one transaction is indexed and
committed by it, the ingest reads and parses on, and stores what it parsed after. The
archive must be the one a sequential ingest makes, byte for byte in its index; an error
in the thread must end the ingest as it would have here; Ctrl-C must not wait on it; a
small ingest must start none.

COMMIT_BYTES (and the backlog's bound, and the read's chunk) are made small here, so a
few hundred kilobytes of transcript make a dozen transactions, each handed to a thread.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from subrosa.archive import ingest
from subrosa.archive.ingest import Ingester
from tests import crash
from tests.conftest import RunCli

WORDS = [*crash.LOREM, "eiusmod"]


def _record(uuid: str, text: str, session: str, role: str = "user", **extra: Any) -> str:
    return json.dumps(
        {
            "type": role,
            "uuid": uuid,
            "sessionId": session,
            "timestamp": f"2026-03-01T10:{len(uuid) % 60:02d}:00Z",
            "cwd": "/work/app",
            "message": {"role": role, "content": text},
            **extra,
        },
        ensure_ascii=False,
    )


def _make_transcripts(root: Path, files: int = 24, lines: int = 60) -> Path:
    """Transcripts of several sessions, some of them forks (a session whose file repeats
    another's first messages: shared messages), one with a queued prompt taken up many
    batches later, texts in several scripts."""
    rng = random.Random(7)
    folder = root / "transcripts"
    folder.mkdir(parents=True)
    for number in range(files):
        session = f"s{number}"
        records = []
        if number % 5 == 4:  # a fork of the session before it: its history first
            history = (folder / f"s{number - 1}.jsonl").read_text().splitlines()[:10]
            records += [json.dumps({**json.loads(r), "sessionId": session}) for r in history]
        for i in range(lines):
            words = [rng.choice(WORDS) for _ in range(rng.randint(5, 60))]
            if i % 7 == 0:
                words.append("数据库 東京 naïve café deployFastPath C++")
            role = "user" if i % 2 else "assistant"
            records.append(_record(f"{session}-{i}", " ".join(words), session, role))
        if number == 3:
            queued = {"type": "queue-operation", "sessionId": session}
            at = "2026-03-01T11:00:00Z"
            records.insert(
                5,
                json.dumps(
                    {
                        **queued,
                        "operation": "enqueue",
                        "timestamp": at,
                        "content": "and the QUOKKA cache",
                    }
                ),
            )
            records.insert(50, json.dumps({**queued, "operation": "dequeue", "timestamp": at}))
            records.insert(51, _record("s3-q", "and the QUOKKA cache", session))
        (folder / f"s{number}.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    return folder


class Writers:
    """How the ingest's commits went: `handed`, those handed to a writer thread. With
    `sequential` each commit is made in place instead, as before the thread; with
    `held` each thread waits until the ingest waits for it (so the backlog fills as
    far as it may: every call staged while a thread runs is in it)."""

    def __init__(self) -> None:
        self.handed = 0
        self.sequential = False
        self.held = False


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> Writers:
    """Transactions of 16 KB, batches of 2 KB, a backlog of 24 KB."""
    monkeypatch.setattr(ingest, "COMMIT_BYTES", 16 << 10)
    monkeypatch.setattr(ingest, "BACKLOG_BYTES", 24 << 10)
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 2 << 10)
    state = Writers()
    gates: dict[int, threading.Event] = {}
    commit_behind = Ingester._commit_behind
    write_behind = Ingester._write_behind
    wait_writer = Ingester._wait_writer

    def commit_or_hand(self: Ingester) -> None:
        if state.sequential:
            self.commit()
            return
        gates[id(self)] = threading.Event()
        commit_behind(self)

    def counted(self: Ingester) -> None:
        assert threading.current_thread() is not threading.main_thread()
        state.handed += 1
        if state.held:
            gates[id(self)].wait()
        write_behind(self)

    def wait(self: Ingester) -> None:
        if id(self) in gates:
            gates[id(self)].set()
        wait_writer(self)

    monkeypatch.setattr(Ingester, "_commit_behind", commit_or_hand)
    monkeypatch.setattr(Ingester, "_write_behind", counted)
    monkeypatch.setattr(Ingester, "_wait_writer", wait)
    return state


def _archive(db: Path) -> dict[str, Any]:
    """Every row ingest writes (the files' states without the time of the write), and
    the full-text index's own pages: the same segments, byte for byte."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        queries = {
            "messages": "SELECT * FROM messages ORDER BY id",
            "sessions": "SELECT * FROM sessions ORDER BY id",
            "runs": "SELECT * FROM message_runs ORDER BY session_pk, lo",
            "shared": "SELECT * FROM shared_messages ORDER BY session_pk, message_id",
            "files": 'SELECT path, project, inode, size, mtime_ns, "offset", head_hash,'
            " queue_state FROM ingested_files ORDER BY path",
            "index": "SELECT id, block FROM messages_fts_data ORDER BY id",
        }
        return {part: conn.execute(sql).fetchall() for part, sql in queries.items()}
    finally:
        conn.close()


def _transcripts_and_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int = 24
) -> Path:
    """_make_transcripts' folder, and an empty memory dir set in the environment."""
    (tmp_path / "memory").mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(tmp_path / "memory"))
    return _make_transcripts(tmp_path, files=files)


def _ingest_into(
    db: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, *args: str, expect: int = 0
) -> Any:
    monkeypatch.setenv("SUBROSA_DB", str(db))
    return run("ingest", "--json", *args, expect=expect)


def test_the_pipelined_ingest_stores_what_the_sequential_one_does(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers
) -> None:
    folder = _transcripts_and_memory(tmp_path, monkeypatch)
    writers.held = True
    # A file named twice (the folder holds it too, last): read once, its state then
    # known, while the first read of it still waits in the backlog (a backlog without
    # bound, here: all that is read after the first commit waits in it).
    monkeypatch.setattr(ingest, "BACKLOG_BYTES", 1 << 30)
    first = [str(folder), str(folder / "s23.jsonl")]
    piped = _ingest_into(tmp_path / "piped.db", run, monkeypatch, *first)
    assert writers.handed >= 8
    writers.sequential = True
    # The same files (the same paths, inodes and times) into an archive of their own.
    plain = _ingest_into(tmp_path / "plain.db", run, monkeypatch, *first)
    assert json.loads(piped.stdout) == json.loads(plain.stdout)
    assert json.loads(piped.stdout)["files_read"] == 24
    # Grown files, read from their offsets, new ones, and copies of some (their
    # messages stored already): again with the thread, and without.
    with (folder / "s2.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(_record("s2-late", "a later line " * 50, "s2") + "\n")
    _make_transcripts(tmp_path / "more", files=6)
    later = [str(folder), str(tmp_path / "more" / "transcripts")]
    monkeypatch.setattr(ingest, "BACKLOG_BYTES", 24 << 10)
    handed = writers.handed
    plain_again = _ingest_into(tmp_path / "plain.db", run, monkeypatch, *later)
    assert writers.handed == handed
    writers.sequential = False
    piped_again = _ingest_into(tmp_path / "piped.db", run, monkeypatch, *later)
    assert writers.handed > handed
    assert json.loads(piped_again.stdout) == json.loads(plain_again.stdout)
    piped_archive, plain_archive = _archive(tmp_path / "piped.db"), _archive(tmp_path / "plain.db")
    for part, rows in plain_archive.items():
        assert piped_archive[part] == rows, part
    assert plain_archive["shared"] and plain_archive["index"]


@pytest.mark.parametrize("failing", [1, 3])
def test_an_error_in_the_writer_thread_ends_the_ingest_as_it_would_in_place(
    tmp_path: Path,
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    writers: Writers,
    failing: int,
) -> None:
    # The index of the `failing`-th transaction fails (a damaged database, as SQLite
    # says it): the same error, exit code and message as when the commit is made in
    # place, that transaction rolled back, the ones before it kept.
    folder = _transcripts_and_memory(tmp_path, monkeypatch)
    index_new = Ingester._index_new
    calls: list[int] = []

    def failing_index(self: Ingester) -> None:
        calls.append(1)
        if len(calls) == failing:
            raise sqlite3.DatabaseError("database disk image is malformed")
        index_new(self)

    monkeypatch.setattr(Ingester, "_index_new", failing_index)
    writers.held = failing > 1  # and the backlog full when it fails
    piped = _ingest_into(tmp_path / "piped.db", run, monkeypatch, str(folder), expect=2)
    assert writers.handed  # the failing commit was the thread's
    assert "ingest writer" not in [thread.name for thread in threading.enumerate()]
    writers.sequential = True
    calls.clear()
    plain = _ingest_into(tmp_path / "plain.db", run, monkeypatch, str(folder), expect=2)
    assert "not a readable subrosa database (database disk image is malformed)" in plain.output
    assert piped.output == plain.output.replace("plain.db", "piped.db")
    assert _archive(tmp_path / "piped.db") == _archive(tmp_path / "plain.db")
    kept = _archive(tmp_path / "plain.db")
    assert len(kept["files"]) < 24 and (len(kept["files"]) > 0) == (failing > 1)
    # The next ingest reads what was rolled back, and stores it once.
    monkeypatch.setattr(Ingester, "_index_new", index_new)
    report = json.loads(_ingest_into(tmp_path / "piped.db", run, monkeypatch, str(folder)).stdout)
    assert report["files_read"] == 24 - len(kept["files"])
    conn = sqlite3.connect(tmp_path / "piped.db")
    assert conn.execute("SELECT count(*) = count(DISTINCT uuid) FROM messages").fetchone() == (1,)
    conn.close()


def test_a_small_ingest_starts_no_thread(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hook's ingest after a turn reads a few lines: below COMMIT_BYTES no commit is
    # handed to a thread (nor is there a backlog).
    folder = _transcripts_and_memory(tmp_path, monkeypatch, files=3)
    started = crash.threads_started(monkeypatch)
    _ingest_into(tmp_path / "a.db", run, monkeypatch, str(folder))
    with (folder / "s1.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(_record("s1-new", "one more line", "s1") + "\n")
    report = json.loads(_ingest_into(tmp_path / "a.db", run, monkeypatch, str(folder)).stdout)
    assert report["new_messages"] == 1
    assert "ingest writer" not in started


def _interrupted_setup(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, files: int, lines: int
) -> tuple[Path, crash.Workspace, dict[str, Any]]:
    """A corpus, a workspace saved with its archive made and empty (to restore before
    each interrupted run), and the archive a whole ingest of the corpus gives."""
    folder = _make_transcripts(tmp_path, files=files, lines=lines)
    space = crash.Workspace(tmp_path / "work")
    space.memory_dir.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(space.memory_dir))
    monkeypatch.setenv("SUBROSA_DB", str(space.db))
    (tmp_path / "empty").mkdir()
    run("ingest", str(tmp_path / "empty"))  # the archive, made
    assert space.db.exists()
    space.save()
    run("ingest", str(folder))
    return folder, space, _archive(space.db)


@pytest.mark.slow
def test_ctrl_c_during_a_pipelined_ingest_ends_it_and_leaves_a_whole_archive(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers
) -> None:
    folder, space, clean = _interrupted_setup(tmp_path, run, monkeypatch, files=60, lines=120)

    def after() -> None:
        partial = _archive(space.db)  # the index's integrity check passes
        assert len(partial["messages"]) <= len(clean["messages"])
        run("ingest", str(folder))
        again = _archive(space.db)
        assert [r[1:] for r in again["messages"]] == [r[1:] for r in clean["messages"]]

    args = ["ingest", str(folder)]
    crash.interruptions(args, space, interrupts=8, seed=3, errors=tmp_path / "stderr", after=after)


@pytest.mark.slow
def test_kill_during_a_pipelined_ingest(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers
) -> None:
    # As tests/test_crash.py's test_kill_during_ingest, with a writer thread per 16 KB.
    folder, space, clean = _interrupted_setup(tmp_path, run, monkeypatch, files=40, lines=100)
    space.restore()

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(space.db) == "ok"
        partial = _archive(space.db)
        uuids = [row[2] for row in partial["messages"]]
        assert len(uuids) == len(set(uuids)) <= len(clean["messages"])
        run("ingest", str(folder))
        again = _archive(space.db)
        assert [r[1:] for r in again["messages"]] == [r[1:] for r in clean["messages"]]

    tally = crash.trials(
        "ingest", ["ingest", str(folder)], space, kills=20, seed=11, after_kill=after_kill
    )
    print(tally.line())


def test_a_connection_held_to_its_thread_commits_in_place(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, writers: Writers
) -> None:
    # An Ingester on a connection opened by subrosa.schema.connect (held to the thread
    # that opened it): the writer thread refuses it before any SQL, the commit is made
    # in place, and the ingest goes on without the thread.
    from subrosa.schema import connect

    folder = _transcripts_and_memory(tmp_path, monkeypatch)
    (tmp_path / "empty").mkdir()
    _ingest_into(tmp_path / "held.db", run, monkeypatch, str(tmp_path / "empty"))
    conn = connect(tmp_path / "held.db")
    try:
        sources = ingest.discover([folder], "-work-app")
        report = Ingester(conn).ingest(sources)
    finally:
        conn.close()
    assert writers.handed == 1 and report.files_read == 24
    writers.sequential = True
    _ingest_into(tmp_path / "plain.db", run, monkeypatch, str(folder))
    held, plain = _archive(tmp_path / "held.db"), _archive(tmp_path / "plain.db")
    for part in ("messages", "runs", "shared", "index"):
        assert held[part] == plain[part], part


def test_a_ctrl_c_before_the_writer_thread_starts_leaves_none_to_wait_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that lands while the writer is being started, before its thread runs:
    nothing is handed, so the ingest's abort does not wait for a thread that never ran
    (it did: an ingest hung after a Ctrl-C in .ci/run's Ctrl-C trials)."""
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    writer = ingest.CommitBehind(conn, "writer")

    def interrupted(self: threading.Thread) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", interrupted)
        with pytest.raises(KeyboardInterrupt):
            writer.start(lambda: None)
    assert not writer.running and not writer.finished
    writer.wait()  # at once: nothing to wait for
    # And SIGINT is not left blocked behind it: a later Ctrl-C still interrupts.
    import signal

    if hasattr(signal, "pthread_sigmask"):
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    # The writer still works afterwards.
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE t (x)")
    writer.start(lambda: None)
    writer.wait()
    assert not conn.in_transaction
    conn.close()
