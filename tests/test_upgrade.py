"""An archive an older subrosa wrote, then this one run on it as a user's first commands
after upgrading would: nothing the person said lost, nothing kept twice. The archives
are the rows those builds wrote (tests/fixtures/upgrade/, each folder's README says how
they were made)."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from subrosa.paths import project_transcript_dir
from tests.conftest import Db, RunCli

pytestmark = pytest.mark.engines

QUEUE_0011 = Path(__file__).parent / "fixtures" / "upgrade" / "queue-0011"
PROMPT = "then look at the NUMBAT logs"


def _restore(db: Db, run: RunCli, fixture: Path, revision: str) -> Path:
    """The fixture's transcripts in this project's folder and its archive's rows in the
    test's database, at `revision` (the schema the rows were written in, or a later one
    that migrated nothing of theirs). The folder."""
    from sqlalchemy import create_engine, text

    from subrosa.config import resolve_db_url
    from subrosa.db import database_url, dispose_all

    folder = Path(project_transcript_dir())
    folder.mkdir(parents=True, exist_ok=True)
    for source in sorted((fixture / "transcripts").iterdir()):
        shutil.copyfile(source, folder / source.name)
    run("db", "upgrade")
    db.migrate(revision, down=True)
    data = json.loads((fixture / "archive.json").read_text(encoding="utf-8"))
    engine = create_engine(database_url(resolve_db_url(db.url)))
    try:
        with engine.begin() as conn:
            for table in ("sessions", "messages", "message_runs", "ingested_files"):
                columns = data[table]["columns"]
                keys = [c.strip('"') for c in columns]
                rows = [dict(zip(keys, row, strict=True)) for row in data[table]["rows"]]
                if table == "ingested_files":
                    for row in rows:
                        row["path"] = row["path"].replace("{folder}", str(folder))
                        # The same file: its inode here; size and time as then (it grew).
                        row["inode"] = os.stat(row["path"]).st_ino
                names = ", ".join(columns)
                marks = ", ".join(f":{key}" for key in keys)
                conn.execute(text(f"INSERT INTO {table} ({names}) VALUES ({marks})"), rows)
            if db.engine == "sqlite":  # ingest writes the index itself (no insert trigger)
                conn.execute(
                    text(
                        "INSERT INTO messages_fts(rowid, text, terms)"
                        " SELECT id, text, terms FROM messages"
                    )
                )
            else:  # the ids the rows hold are taken
                for table in ("sessions", "messages"):
                    conn.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
                            f" (SELECT max(id) FROM {table}))"
                        )
                    )
    finally:
        engine.dispose()
        dispose_all()
    return folder


def _said(url: str) -> Counter[tuple[str, str, str]]:
    """Every message archived in the database at `url` as (session, role, text), with
    its copies."""
    from sqlalchemy import create_engine, text

    from subrosa.config import resolve_db_url
    from subrosa.db import database_url, dispose_all

    dispose_all()
    engine = create_engine(database_url(resolve_db_url(url)))
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT s.session_id, m.role, m.text FROM messages m"
                    " JOIN sessions s ON s.id = m.session_pk"
                )
            ).all()
    finally:
        engine.dispose()
    return Counter((str(s), str(r), str(t)) for s, r, t in rows)


def _counts_agree(db: Db) -> None:
    """Each session's message count is the messages it holds (its own and shared)."""
    rows = db.rows(
        "SELECT s.session_id, s.message_count,"
        " (SELECT count(*) FROM messages m WHERE m.session_pk = s.id)"
        " + (SELECT count(*) FROM shared_messages x WHERE x.session_pk = s.id) FROM sessions s"
    )
    assert [(s, n) for s, n, held in rows if n != held] == []


def _found(run: RunCli, *words: str) -> list[dict[str, Any]]:
    out = run("search", "--json", "--all-projects", "--limit", "50", "--role", "user", *words)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_prompts_a_0011_archive_kept_twice_are_kept_once(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    folder = _restore(db, run, QUEUE_0011, "0014")
    before = _said(db.url)
    # What the 0011-era build left: the prompt twice where it waited at one ingest and was
    # taken up by the next, and where it was put back and queued again.
    assert before[("before-next-turn", "user", PROMPT)] == 2
    assert before[("requeued", "user", PROMPT)] == 3
    assert before[("twice", "user", "continue")] == 2  # typed twice: both are the person's

    run("db", "upgrade")  # what any first command after the upgrade does first
    run("ingest", str(folder))  # the sessions that went on since: their tails
    after = _said(db.url)
    sessions = sorted(p.stem for p in folder.glob("*.jsonl"))
    for session in sessions:
        held = after[(session, "user", PROMPT)]
        assert held == (0 if session == "twice" else 1), (session, held)
    assert after[("twice", "user", "continue")] == 2
    _counts_agree(db)
    # The person's words still found in every session that holds them.
    hits = _found(run, "--sessions", "NUMBAT", "logs")
    assert sorted(h["session_id"] for h in hits) == [s for s in sessions if s != "twice"]
    # Nothing else went: the archive holds what a new one ingested from the same
    # transcripts holds, text by text (which copy of a prompt it keeps may differ).
    twin = db.other("twin")
    run("--db", twin, "ingest", str(folder))
    assert after == _said(twin)
    # A later ingest adds nothing again.
    assert json.loads(run("ingest", "--json", str(folder)).stdout)["new_messages"] == 0
    assert _said(db.url) == after


def test_a_file_gone_or_changed_keeps_every_copy(memory_dir: Path, db: Db, run: RunCli) -> None:
    # The transcripts are the only witness of which copy is surplus: without them, or
    # with one rewritten since, every copy stays (a prompt may show twice; never none).
    folder = _restore(db, run, QUEUE_0011, "0014")
    (folder / "before-next-turn.jsonl").unlink()
    (folder / "requeued.jsonl").write_text("", encoding="utf-8")
    before = _said(db.url)
    run("db", "upgrade")
    after = _said(db.url)
    assert after[("before-next-turn", "user", PROMPT)] == 2
    assert after[("requeued", "user", PROMPT)] == 3
    assert after[("before-popped", "user", PROMPT)] == 1  # its file is here: repaired
    assert sum(before.values()) - sum(after.values()) == 2  # before-popped, before-running
    _counts_agree(db)
