"""`subrosa export` / `subrosa import`: a memory moved into another database and back,
whole, idempotent, searchable there; a bad file refused with nothing written."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from subrosa.paths import project_transcript_dir
from tests.conftest import FIXTURES, Db, RunCli, run_on_terminal, write_leaf
from tests.test_archive import BACKFILLED

LOG = FIXTURES / "transcripts" / "claude-code-log"


def _json(run: RunCli, *args: str) -> Any:
    return json.loads(run(*args, "--json").stdout)


def _archive(memory_dir: Path, run: RunCli) -> None:
    """Real transcripts ingested, and facts carrying what only subrosa knows."""
    folder = Path(project_transcript_dir())
    folder.mkdir(parents=True)
    for path in LOG.glob("*.jsonl"):
        shutil.copy(path, folder / path.name)
    run("ingest")
    write_leaf(memory_dir, "project_decorator.md", "Parameterized decorator notes.")
    write_leaf(memory_dir, "project_old.md", "An old plan.")
    run("fact", "upsert", "project_decorator.md", "--hook", "how the decorator works", "--pin")
    run("fact", "upsert", "project_old.md", "--hook", "the old plan")
    run("fact", "archive", "project_old.md", "--reason", "done")
    run("search", "decorator")  # a hit


def _rows(path: str, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


FACT_COLUMNS = (
    "project, slug, path, title, type, description, hook, body, section, pinned, status,"
    " archive_reason, archived_at, hits, position, created_at, updated_at, last_hit_at,"
    " content_hash"
)
SESSION_COLUMNS = "session_id, project, cwd, git_branch, title, summary, first_at, last_at,"
SESSION_COLUMNS += " message_count, host, username"


def _content(path: str, hit_time: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    columns = FACT_COLUMNS if hit_time else FACT_COLUMNS.replace(" last_hit_at,", "")
    return {
        "facts": _rows(path, f"SELECT {columns} FROM facts ORDER BY project, slug"),
        "sessions": _rows(path, f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY session_id"),
        "messages": _rows(
            path,
            "SELECT s.session_id, m.uuid, m.role, m.timestamp, m.text, m.terms FROM messages m"
            " JOIN sessions s ON s.id = m.session_pk ORDER BY m.uuid",
        ),
    }


def test_a_memory_moves_whole_and_is_searchable_there(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    _archive(memory_dir, run)
    exported = _json(run, "export", str(tmp_path / "me.jsonl.gz"))
    assert exported["facts"] == 2 and exported["sessions"] >= 3 and exported["messages"] > 20
    with gzip.open(tmp_path / "me.jsonl.gz", "rt", encoding="utf-8") as handle:
        first, *_, last = handle.read().splitlines()
    assert json.loads(first)["format"] == "subrosa-export"
    assert json.loads(last) == {
        "kind": "end",
        "facts": 2,
        "sessions": exported["sessions"],
        "messages": exported["messages"],
    }

    team = str(tmp_path / "team.db")
    done = _json(run, "--db", team, "import", str(tmp_path / "me.jsonl.gz"))
    assert done["facts"] == {"added": 2, "present": 0}
    assert done["sessions"] == {"added": exported["sessions"], "present": 0}
    assert done["messages"] == {"added": exported["messages"], "present": 0}
    assert _content(team) == _content(db.url)
    # The full-text index holds every imported message (FTS5 checks it against the table).
    conn = sqlite3.connect(team)
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    assert conn.execute("SELECT count(*) FROM messages_fts").fetchone() == (exported["messages"],)
    conn.close()
    mine = _json(run, "search", "parameterized", "decorator", "--all-projects")
    theirs = _json(run, "--db", team, "search", "parameterized", "decorator", "--all-projects")
    assert [(r["kind"], r.get("uuid"), r.get("slug")) for r in theirs] == [
        (r["kind"], r.get("uuid"), r.get("slug")) for r in mine
    ]

    # Again: nothing twice.
    again = _json(run, "--db", team, "import", str(tmp_path / "me.jsonl.gz"))
    assert again["facts"] == {"added": 0, "present": 2}
    assert again["messages"] == {"added": 0, "present": exported["messages"]}
    assert again["sessions"]["added"] == 0
    # Each database recorded its own search's hit (the same count; the times may be a
    # second apart): what the team's database has is left as it is.
    assert _content(team, hit_time=False) == _content(db.url, hit_time=False)


def test_import_adds_only_what_the_target_lacks(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sides already share sessions (the same transcripts ingested on each): the
    import adds the rest, and no message twice."""
    _archive(memory_dir, run)
    run("export", str(tmp_path / "me.jsonl"))
    team = str(tmp_path / "team.db")
    shared = sorted(LOG.glob("*.jsonl"))[0]
    run("--db", team, "ingest", str(shared))
    before = len(_rows(team, "SELECT id FROM messages"))
    done = _json(run, "--db", team, "import", str(tmp_path / "me.jsonl"))
    assert done["messages"]["present"] >= before > 0
    uuids = _rows(team, "SELECT uuid FROM messages")
    assert len(uuids) == len(set(uuids)) == len(_rows(db.url, "SELECT uuid FROM messages"))
    # Where each session's messages are (a project's search walks these): what an
    # ingest would have recorded, the ingested and the imported alike.
    runs = "SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2"
    assert _rows(team, runs) == _rows(team, BACKFILLED) and len(_rows(team, runs)) > 1


def _another_project(run: RunCli) -> None:
    """A session of another project (its own folder beside this one's), archived."""
    elsewhere = Path(project_transcript_dir()).parent / "-other-project"
    elsewhere.mkdir(parents=True)
    (elsewhere / "s.jsonl").write_text(
        json.dumps(
            {
                "type": "user",
                "uuid": "u-other",
                "sessionId": "s-other",
                "timestamp": "2026-03-01T10:00:00Z",
                "message": {"role": "user", "content": "another project's words"},
            }
        )
        + "\n"
    )
    run("ingest", "--all-projects")


def test_export_takes_this_project_unless_told(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    _archive(memory_dir, run)
    _another_project(run)
    mine = _json(run, "export", str(tmp_path / "mine.jsonl"))
    assert "-other-project" not in mine["projects"]
    everything = _json(run, "export", str(tmp_path / "all.jsonl"), "--all-projects")
    assert everything["projects"]["-other-project"] == {"facts": 0, "sessions": 1}
    one = _json(run, "export", str(tmp_path / "one.jsonl"), "--project", "-other-project")
    assert (one["sessions"], one["messages"], one["facts"]) == (1, 1, 0)


def _good_lines(tmp_path: Path, run: RunCli) -> list[str]:
    run("export", str(tmp_path / "good.jsonl"))
    return (tmp_path / "good.jsonl").read_text(encoding="utf-8").splitlines()


def _fact_line(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "fact")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("not json", "line 2 is not a JSON object"),
        ("not an export", 'is not a subrosa export (its first line has no "format"'),
        ("cut short", "is cut short"),
        ("bad fact type", "has an unknown type 'opinion'"),
        ("hits not a number", "has a 'hits' that is not a whole number"),
        ("message before its session", "whose session's record does not come before it"),
        ("newer version", "is format version 2"),
        ("gzip cut", "cannot be read past line"),
        ("empty", "is empty"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_written(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path, damage: str, said: str
) -> None:
    _archive(memory_dir, run)
    lines = _good_lines(tmp_path, run)
    at = _fact_line(lines)
    bad = tmp_path / "bad.jsonl"
    if damage == "not json":
        lines[1] = "{not json"
    elif damage == "not an export":
        lines[0] = json.dumps({"hello": 1})
    elif damage == "cut short":
        lines = lines[: len(lines) // 2]
    elif damage == "bad fact type":
        lines[at] = json.dumps({**json.loads(lines[at]), "type": "opinion"})
    elif damage == "hits not a number":
        lines[at] = json.dumps({**json.loads(lines[at]), "hits": "many"})
    elif damage == "message before its session":
        kinds = [json.loads(line).get("kind") for line in lines]
        lines.insert(kinds.index("session"), lines[kinds.index("message")])
    elif damage == "newer version":
        lines[0] = json.dumps({**json.loads(lines[0]), "version": 2})
    elif damage == "empty":
        lines = []
    text = "".join(line + "\n" for line in lines)
    if damage == "gzip cut":
        bad = tmp_path / "bad.jsonl.gz"
        packed = gzip.compress(text.encode())
        bad.write_bytes(packed[: len(packed) // 2])
    else:
        bad.write_text(text, encoding="utf-8")
    target = Db("sqlite", tmp_path / "target")
    (tmp_path / "target").mkdir()
    run("--db", target.url, "db", "upgrade")
    before = target.snapshot()
    result = run("--db", target.url, "import", str(bad), expect=2)
    message = result.stderr.strip()
    assert said in message and message.endswith("nothing was imported."), message
    assert len(message.splitlines()) == 1
    assert target.snapshot() == before


@pytest.mark.engines
def test_facts_import_into_and_export_from_every_engine(
    tmp_path: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A personal SQLite memory into a team's database (SQLite or PostgreSQL) and back
    into a fresh file: the same facts, sessions and messages."""
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    personal = str(tmp_path / "personal.db")
    monkeypatch.setenv("SUBROSA_DB", personal)
    _archive(memory, run)
    run("export", str(tmp_path / "me.jsonl"))
    done = _json(run, "--db", db.url, "import", str(tmp_path / "me.jsonl"))
    assert done["facts"] == {"added": 2, "present": 0}
    assert done["sessions"]["added"] > 0 and done["messages"]["added"] > 0
    assert "left_out" not in done
    facts = _json(run, "--db", db.url, "fact", "list", "--all")
    assert {(f["slug"], f["pinned"], f["status"], f["hits"]) for f in facts} == {
        ("project_decorator", True, "active", 1),
        ("project_old", False, "archived", 0),
    }
    assert _json(run, "--db", db.url, "import", str(tmp_path / "me.jsonl"))["facts"] == {
        "added": 0,
        "present": 2,
    }
    back = _json(run, "--db", db.url, "export", str(tmp_path / "back.jsonl"))
    assert back["facts"] == 2
    fresh = str(tmp_path / "fresh.db")
    run("--db", fresh, "import", str(tmp_path / "back.jsonl"))
    assert _content(fresh) == _content(personal)


def _with_a_fact_edited(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, changes: dict[str, Any]
) -> tuple[Path, int]:
    """A personal archive's export with its first fact's record edited by hand, and the
    index of that line."""
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "personal.db"))
    _archive(memory, run)
    lines = _good_lines(tmp_path, run)
    at = _fact_line(lines)
    lines[at] = json.dumps({**json.loads(lines[at]), **changes})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return bad, at


@pytest.mark.engines
@pytest.mark.parametrize(("key", "value"), [("position", 2**40), ("hits", 2**63)])
def test_a_number_no_column_holds_is_refused_and_nothing_is_written(
    tmp_path: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch, key: str, value: int
) -> None:
    """A fact's number edited past what its column holds (PostgreSQL's integer, SQLite's
    64 bits) is a bad record like any other: refused in one sentence before anything is
    written, not a driver's traceback after the sessions were committed."""
    bad, at = _with_a_fact_edited(tmp_path, run, monkeypatch, {key: value})
    run("--db", db.url, "db", "upgrade")
    before = db.snapshot()
    message = run("--db", db.url, "import", str(bad), expect=2).stderr.strip()
    assert f"line {at + 1} has a {key!r} too large" in message, message
    assert len(message.splitlines()) == 1 and message.endswith("nothing was imported.")
    assert db.snapshot() == before


@pytest.mark.parametrize(
    ("slug", "path", "said"),
    [
        ("../../evil", "../../evil.md", "that is no leaf of a memory dir"),
        ("../../evil", "project_ok.md", "that is not its path"),
        ("/etc/evil", "/etc/evil.md", "that is no leaf of a memory dir"),
        ("notes/.hidden", "notes/.hidden.md", "that is no leaf of a memory dir"),
        ("evil\n- [x](y.md)", "evil\n- [x](y.md).md", "that is no leaf of a memory dir"),
    ],
)
def test_a_fact_whose_slug_or_path_names_no_leaf_is_refused(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, slug: str, path: str, said: str
) -> None:
    """A hand-edited export's fact named `../../evil` was imported; doctor then failed
    on its leaf and asked to forget it. Its path must be a leaf's in a memory dir (or a
    subfolder note's), its slug that path without `.md`, as generate names them."""
    bad, at = _with_a_fact_edited(tmp_path, run, monkeypatch, {"slug": slug, "path": path})
    other = str(tmp_path / "other.db")
    message = run("--db", other, "import", str(bad), expect=2).stderr.strip()
    assert f"line {at + 1} has a " in message and said in message, message
    assert len(message.splitlines()) == 1 and message.endswith("nothing was imported.")


@pytest.mark.engines
def test_keys_holding_nul_import_once_into_every_engine(
    tmp_path: Path, db: Db, run: RunCli
) -> None:
    """A transcript whose session id and uuid hold NUL is archived on SQLite as it is;
    the server stores NUL as U+FFFD and looks the keys up the same way: the file
    imports (no driver traceback) and a second import adds nothing."""
    transcript = tmp_path / "nul.jsonl"
    records = [
        {"type": "user", "timestamp": "2025-07-01T12:00:00Z", "cwd": str(tmp_path),
         "sessionId": "s\x00id", "uuid": f"u\x00{i}",
         "message": {"role": "user", "content": f"a nul keyed message {i}"}}
        for i in range(2)
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    personal = str(tmp_path / "personal.db")
    run("--db", personal, "ingest", str(transcript))
    run("--db", personal, "export", "--all-projects", str(tmp_path / "nul-export.jsonl"))
    first = _json(run, "--db", db.url, "import", str(tmp_path / "nul-export.jsonl"))
    assert (first["sessions"]["added"], first["messages"]["added"]) == (1, 2)
    again = _json(run, "--db", db.url, "import", str(tmp_path / "nul-export.jsonl"))
    assert (again["sessions"]["added"], again["messages"]["added"]) == (0, 0)
    assert again["messages"]["present"] == 2


def test_import_shows_a_bar_on_a_terminal(tmp_path: Path, db: Db) -> None:
    """On a terminal (a pseudo-terminal here) import shows its bar on stderr, counting
    messages; the summary goes to stdout alone."""
    import os

    pytest.importorskip("pty")
    records: list[dict[str, Any]] = [
        {"format": "subrosa-export", "version": 1},
        {"kind": "session", "session_id": "s1", "project": "p"},
    ]
    records += [
        {
            "kind": "message",
            "session_id": "s1",
            "uuid": f"u{i}",
            "role": "user",
            "text": f"w{i}",
            "timestamp": None,
        }
        for i in range(3000)
    ]
    records.append({"kind": "end", "facts": 0, "sessions": 1, "messages": 3000})
    file = tmp_path / "x.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    env = {**os.environ, "SUBROSA_DB": db.url, "TERM": "xterm", "COLUMNS": "80"}
    env.pop("NO_COLOR", None)
    done, shown = run_on_terminal(["import", str(file)], env)
    assert done.returncode == 0
    assert done.stdout.decode() == f"0 facts, 1 sessions, 3000 messages added from {file}\n"
    assert b"3000/3000" in shown


@pytest.mark.engines
def test_sessions_are_read_back_from_every_engine(db: Db, run: RunCli, tmp_path: Path) -> None:
    """Export reads the archive's tables with SQLAlchemy Core on either engine (on
    PostgreSQL, rows a server's archive would hold), messages in the order archived."""
    from datetime import datetime

    from sqlalchemy import MetaData, Table

    from subrosa.config import resolve_db_url
    from subrosa.db import dispose_all, get_engine

    url = resolve_db_url(db.url)
    run("--db", db.url, "db", "upgrade")
    engine = get_engine(url)
    with engine.begin() as conn:
        sessions = Table("sessions", MetaData(), autoload_with=conn)
        messages = Table("messages", MetaData(), autoload_with=conn)
        for pk, sid in ((1, "s-b"), (2, "s-a")):
            conn.execute(
                sessions.insert(),
                {
                    "id": pk,
                    "session_id": sid,
                    "project": "github.com/org/repo",
                    "message_count": 1,
                    "host": "h",
                    "username": "alice",
                },
            )
        for pk, session_pk, text in ((1, 2, "first"), (2, 1, "second"), (3, 2, "third")):
            conn.execute(
                messages.insert(),
                {
                    "id": pk,
                    "session_pk": session_pk,
                    "uuid": f"u{pk}",
                    "role": "user",
                    "timestamp": datetime(2026, 3, 1, 10, 0, pk),
                    "text": text,
                },
            )
    dispose_all()
    file = tmp_path / "out.jsonl"
    done = _json(run, "--db", db.url, "export", str(file), "--project", "github.com/org/repo")
    assert (done["sessions"], done["messages"]) == (2, 3)
    records = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    assert [(r["session_id"], r["text"]) for r in records if r.get("kind") == "message"] == [
        ("s-a", "first"),
        ("s-b", "second"),
        ("s-a", "third"),
    ]
    assert records[4]["timestamp"].startswith("2026-03-01 10:00:01")
    assert {r["username"] for r in records if r.get("kind") == "session"} == {"alice"}
    fresh = str(tmp_path / "fresh.db")
    run("--db", fresh, "import", str(file))
    assert _rows(fresh, "SELECT uuid FROM messages ORDER BY id") == [("u1",), ("u2",), ("u3",)]


def test_export_into_a_missing_folder_names_the_file_not_a_temp_file(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "no-such-folder" / "mine.jsonl"
    result = run("export", str(target), expect=2)
    assert str(target) in result.stderr and ".tmp" not in result.stderr, result.stderr
    assert "No such file or directory" in result.stderr
    assert not target.parent.exists()


@pytest.mark.engines("postgresql")
def test_import_empties_the_staging_table_after_each_session(db: Db, run: RunCli) -> None:
    """`subrosa import` stores session after session in one transaction: the staging
    table of the server's ingest is emptied after each, or every session's INSERT would
    read all the ones before it again (an import of 7,792 messages took 30 s, not 2)."""
    from subrosa.archive.connection import open_archive
    from subrosa.archive.ingest import new_ingester
    from subrosa.archive.transcripts import Message, SessionInfo
    from subrosa.config import resolve_db_url

    url = resolve_db_url(db.url)
    run("--db", db.url, "db", "upgrade")
    with open_archive(url) as conn:
        ingester = new_ingester(conn)
        for s in range(3):
            messages = [
                Message(f"s{s}-m{i}", f"s-{s}", "user", "2026-03-01 10:00:00", f"text {s} {i}")
                for i in range(4)
            ]
            ingester.store_session(SessionInfo(f"s-{s}"), "p", messages, ("h", "alice"))
            staged = conn.execute("SELECT count(*) FROM messages_in").fetchone()[0]
            assert staged == 0, f"after session {s}: {staged} rows still staged"
        ingester.commit()
        assert ingester.report.new_messages == 12 and ingester.report.duplicate_messages == 0
        counts = conn.execute(
            "SELECT session_id, message_count FROM sessions ORDER BY session_id"
        ).fetchall()
        assert [tuple(row) for row in counts] == [("s-0", 4), ("s-1", 4), ("s-2", 4)]


def test_export_removes_the_temp_file_an_export_killed_long_ago_left(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """A `kill -9` during export leaves its temp file (never the target half-written);
    the next export to the same file removes such leftovers once an hour old, and
    nothing else: not a younger one (an export still at work), not another name."""
    import os
    import time

    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".me.jsonl.b5c_t8dx.tmp"  # tempfile.mkstemp's name for me.jsonl
    young = out / ".me.jsonl.zzzz1234.tmp"
    others = [out / ".other.jsonl.b5c_t8dx.tmp", out / ".me.jsonl.mine.tmp", out / "notes.tmp"]
    for path in [stale, young, *others]:
        path.write_text("x")
    hours_ago = time.time() - 7200
    for path in [stale, *others]:
        os.utime(path, (hours_ago, hours_ago))
    result = run("export", str(out / "me.jsonl"))
    assert not stale.exists() and young.exists() and all(p.exists() for p in others)
    assert f"removed {stale}" in result.stderr
    assert (out / "me.jsonl").read_text().endswith('"messages": 0}\n')


def test_an_export_of_this_project_without_sessions_says_where_to_look(
    memory_dir: Path, db: Db, run: RunCli, tmp_path: Path
) -> None:
    # Sessions filed under another key (archived before the repository had a remote:
    # docs/team.md, "Databases from before"): the export of this project writes none,
    # and says so, with how to reach them, rather than only "0 sessions".
    _another_project(run)
    said = run("export", str(tmp_path / "mine.jsonl"))
    assert "0 sessions" in said.stdout
    assert "no archived sessions of this project" in said.stderr
    assert "`transcript list --all-projects`" in said.stderr and "--project NAME" in said.stderr
    # Named, or every project: nothing to say.
    assert run("export", str(tmp_path / "all.jsonl"), "--all-projects").stderr == ""
