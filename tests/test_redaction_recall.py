"""Planted secrets through the real ingest into a real database: none of them, nor any
word of them, is in the database file, its -wal or -shm, or the full-text index. And
a crafted message queued by SessionEnd is ingested by the next `search` (the bench,
bench/redaction.py, times both)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from subrosa.archive import pending
from tests.conftest import RunCli
from tests.redaction_cases import CRAFTED, PLANTS, secret_words, transcript_lines


def test_planted_secrets_cover_many_kinds_and_places() -> None:
    assert len(PLANTS) >= 40
    assert len({plant.kind for plant in PLANTS}) >= 25
    assert {plant.where for plant in PLANTS} == {"user", "assistant", "tool-input", "tool-result"}
    inputs = [p.content for p in PLANTS if p.where == "tool-input"]
    assert sum(len(i) > 1 for i in inputs) >= 5  # several keys
    assert any("\\n" in json.dumps(i) and '\\"' in json.dumps(i) for i in inputs)


def database_bytes(database: Path) -> bytes:
    """The database file, its -wal and its -shm, as they are on disk."""
    files = [database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))]
    return b"".join(path.read_bytes() for path in files if path.is_file())


def index_terms(database: Path) -> set[str]:
    """Every term the full-text indexes hold (FTS5 compresses them: a byte search of
    the file could miss one)."""
    conn = sqlite3.connect(database)
    try:
        terms: set[str] = set()
        for table in ("messages_fts", "facts_fts"):
            conn.execute(
                f"CREATE VIRTUAL TABLE temp.{table}_terms USING fts5vocab(main, {table}, 'row')"
            )
            terms |= {row[0] for row in conn.execute(f"SELECT term FROM temp.{table}_terms")}
        return terms
    finally:
        conn.close()


def test_no_planted_secret_reaches_the_database(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = tmp_path / "s-plant.jsonl"
    path.write_text(transcript_lines(), encoding="utf-8")
    report = json.loads(run("ingest", "--json", str(path)).stdout)
    assert report["new_messages"] == len(PLANTS)
    database = tmp_path / "subrosa.db"
    data = database_bytes(database)
    terms = index_terms(database)
    assert b"REDACTED:" in data and "redacted" in terms
    leaked = [p.kind for p in PLANTS if p.secret.encode() in data or secret_words(p.secret) & terms]
    assert leaked == []
    shown = run("transcript", "show", "s-plant").stdout
    assert [p.kind for p in PLANTS if p.secret in shown] == []


def crafted_message(size: int = 200_000) -> str:
    """A slice of every crafted case, `size` characters in all, around a findable word."""
    share = size // len(CRAFTED)
    return "glimmerwick " + "".join(make()[:share] for make in CRAFTED.values())


def test_a_queued_crafted_message_is_ingested_by_the_next_search(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = tmp_path / "s-crafted.jsonl"
    record = {
        "type": "user",
        "uuid": "c1",
        "sessionId": "s-crafted",
        "message": {"role": "user", "content": crafted_message()},
    }
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    pending.record(str(path), "s-crafted", str(tmp_path))  # what SessionEnd does
    found = json.loads(run("search", "--json", "glimmerwick").stdout)
    assert [r["session_id"] for r in found] == ["s-crafted"]
    assert pending.list_pending() == []
    assert json.loads(run("search", "--json", "glimmerwick").stdout) == found
