"""Migration 0003 on an archive that already holds messages: the schema changes at once,
the full-text index is rebuilt in place (subrosa.archive.reindex), and a kill -9 at any
point of it loses nothing: the next command continues where it stopped. Migration 0020
(two-letter prefixes) rebuilds the index by the same way, both up and down."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from alembic import command

from subrosa.db import alembic_config, dispose_all, get_engine
from subrosa.schema import is_current, state
from tests import crash
from tests.conftest import RunCli

WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]
WORDS += ["sed", "do"]


def _record(uuid: str, text: str, session: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": uuid,
            "sessionId": session,
            "timestamp": "2026-03-01T10:00:00Z",
            "cwd": "/work/app",
            "message": {"role": "user", "content": text},
        }
    )


def _write(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for session in ("s1", "s2"):
        with (folder / f"{session}.jsonl").open("w", encoding="utf-8") as handle:
            for i in range(count):
                words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(8))
                text = f"{words} n{i} useQueryCache 東京{i % 3}"
                handle.write(_record(f"{session}-{i}", text, session) + "\n")


def _downgrade(db: Path, revision: str = "0002") -> None:
    """The database as `revision` left it (0002: column `cjk`, the old index)."""
    engine = get_engine(f"sqlite:///{db}")
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
    dispose_all()


def _prefixes(db: Path) -> str:
    """The prefix option messages_fts was created with."""
    conn = sqlite3.connect(db)
    try:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()
        return str(sql[0]).split("prefix=")[1].split("'")[1]
    finally:
        conn.close()


def _index(db: Path) -> dict[str, object]:
    """What the archive's index says (FTS5's integrity-check raises when it does not
    match the messages table)."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")

        def count(match: str) -> int:
            sql = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?"
            return int(conn.execute(sql, [match]).fetchone()[0])

        return {
            "messages": conn.execute("SELECT count(*) FROM messages").fetchone()[0],
            "lorem": count("lorem"),
            "cache": count('"cache"'),  # a camelCase part, from the terms column
            "tokyo": count('terms : "東 京"'),
            "pending": conn.execute("SELECT count(*) FROM archive_reindex").fetchone()[0],
        }
    finally:
        conn.close()


def test_an_archive_from_before_is_indexed_again_in_place(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    transcripts = tmp_path / "transcripts"
    _write(transcripts, 120)
    run("ingest", str(transcripts))
    db = Path(os.environ["SUBROSA_DB"])
    fresh = _index(db)
    assert fresh == {"messages": 240, "lorem": 192, "cache": 240, "tokyo": 240, "pending": 0}
    _downgrade(db)
    old = sqlite3.connect(db)
    assert "cjk" in {row[1] for row in old.execute("PRAGMA table_info(messages)")}
    sql = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'cache'"
    assert old.execute(sql).fetchone()[0] == 0  # camelCase parts were not indexed
    old.close()
    assert not is_current(db)
    # Any command that opens the archive migrates it and indexes it again first.
    found = json.loads(run("search", "--json", "--all-projects", "cache").stdout)
    assert len(found) == 10 and found[0]["match"] == "all"
    assert _index(db) == fresh
    assert state(db) == (True, False)


def test_two_letter_prefixes_are_indexed_again_in_place(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """0020 rebuilds messages_fts with prefix='2 3'; its downgrade, with prefix='3', marks
    every message to be indexed again; the searches after the upgrade find the same
    messages, and the index is the one a fresh ingest builds."""
    transcripts = tmp_path / "transcripts"
    _write(transcripts, 120)
    run("ingest", str(transcripts))
    db = Path(os.environ["SUBROSA_DB"])
    assert _prefixes(db) == "2 3"
    fresh = _index(db)
    queries = ["lo*", "c*", "ad*", "ame*", '"sit amet" do*', "東*", "n1*"]

    def found() -> list[object]:
        results = []
        for query in queries:
            out = run("search", "--json", "--all-projects", "--limit", "50", query).stdout
            results.append([(hit["uuid"], hit["match"]) for hit in json.loads(out)])
        return results

    before = found()
    assert all(before[:6]) and len(before[0]) > 1
    _downgrade(db, "0019")
    assert _prefixes(db) == "3"
    conn = sqlite3.connect(db)
    marked = conn.execute("SELECT next_id FROM archive_reindex").fetchall()
    conn.close()
    assert marked == [(1,)]  # the downgrade rebuilds it too, from the first message
    assert not is_current(db)
    # Any command that opens the archive migrates it and indexes it again first.
    assert found() == before
    assert _prefixes(db) == "2 3"
    assert _index(db) == fresh
    assert state(db) == (True, False)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spawn", "kills", "window"),
    [(crash.run_forked, 30, (0.0, 1.0)), (crash.run_exec, 3, (0.5, 1.0))],
    ids=["forked", "python -m subrosa"],
)
def test_kill_during_the_reindex(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    workspace = crash.Workspace(tmp_path / "work")
    workspace.memory_dir.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(workspace.memory_dir))
    monkeypatch.setenv("SUBROSA_DB", str(workspace.db))
    # Small batches, so that a run commits many times (forked children inherit these).
    monkeypatch.setattr("subrosa.archive.reindex.BATCH_MESSAGES", 50)
    monkeypatch.setattr("subrosa.archive.reindex.COMMIT_CHARS", 4000)
    transcripts = workspace.root / "transcripts"
    _write(transcripts, 1500)
    run("ingest", str(transcripts))
    clean = _index(workspace.db)
    _downgrade(workspace.db)
    workspace.save()
    args = ["db", "upgrade"]

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        run(*args)  # continues where the killed run stopped
        assert _index(workspace.db) == clean

    tally = crash.trials(
        "db upgrade (migration 0003 and the re-index)",
        args,
        workspace,
        kills=kills,
        seed=12,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())
