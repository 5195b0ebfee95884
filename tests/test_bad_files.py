"""No bad file stops the work (issue 17): a database that is not a readable subrosa
database is one sentence naming it and what to do (exit 2, no traceback) on every
command; a transcript line ingest cannot decode is counted, never the end of the run."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.conftest import RunCli, subrosa_forked, subrosa_process, write_leaf

COMMANDS = [
    ["generate"],
    ["adopt"],
    ["rebuild", "--yes"],
    ["fact", "list"],
    ["fact", "upsert", "--leaf", "alpha.md", "--hook", "h"],
    ["stale"],
    ["search", "zebra"],
    ["search", "--json", "zebra"],
    ["ingest"],
    ["transcript", "list"],
    ["transcript", "show", "s1"],
    ["db", "status"],
    ["db", "upgrade"],
]


def _good_database(run: RunCli, memory_dir: Path, tmp_path: Path) -> Path:
    """A real database with facts and an archive, checkpointed into its one file."""
    write_leaf(memory_dir, "alpha.md")
    run("generate")
    transcript = tmp_path / "s1.jsonl"
    record = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "zebra " * 2000},
    }
    transcript.write_text("".join(json.dumps(dict(record, uuid=f"u{n}")) + "\n" for n in range(60)))
    run("ingest", str(transcript))
    path = Path(os.environ["SUBROSA_DB"])
    from subrosa.db import dispose_all

    dispose_all()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def _damage(path: Path, how: str) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 3])
    elif how == "empty file":
        path.write_bytes(b"")
    elif how == "random bytes":
        path.write_bytes(os.urandom(len(data)))
    elif how == "damaged inside":
        # Every page but the first three overwritten: the header and the schema still
        # read, the tables do not.
        page = int.from_bytes(data[16:18], "big")
        path.write_bytes(data[: 3 * page] + os.urandom(len(data) - 3 * page))
    elif how == "another program's":
        path.unlink()
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE recipes (name TEXT)")
        conn.commit()
        conn.close()


@pytest.mark.parametrize(
    "how", ["truncated", "empty file", "random bytes", "damaged inside", "another program's"]
)
def test_a_database_that_is_not_subrosas_is_one_sentence_on_every_command(
    how: str, memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = _good_database(run, memory_dir, tmp_path)
    _damage(path, how)
    damaged = path.read_bytes()
    for command in COMMANDS:
        # Real processes: `search` has a standard-library fast path of its own, and
        # subrosa.cli.main sends generate, upsert and ingest down fast paths too.
        done = subrosa_forked(*command, cwd=tmp_path)
        err = done.stderr.decode()
        if done.returncode == 0:  # a command that did not need the damaged part
            assert "Traceback" not in err, (command, err)
            continue
        lines = err.strip().splitlines()
        assert done.returncode == 2, (command, err)
        assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: "), (command, err)
        assert "not a readable subrosa database" in lines[0] and "subrosa rebuild" in lines[0]
    if how != "damaged inside":
        assert path.read_bytes() == damaged  # nothing was written into it
    doctor = subrosa_forked("doctor", cwd=tmp_path)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr.decode()


def test_each_way_of_not_being_a_database_is_refused_at_once(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = _good_database(run, memory_dir, tmp_path)
    for how in ("truncated", "empty file", "random bytes", "another program's"):
        _damage(path, how)
        done = subrosa_process("generate", cwd=tmp_path)  # a fresh interpreter: all of it
        assert done.returncode == 2, (how, done.stderr)
        path.unlink()
        path = _good_database(run, memory_dir, tmp_path)


def test_a_new_database_is_never_an_empty_file(memory_dir: Path, run: RunCli) -> None:
    run("db", "status")
    path = Path(os.environ["SUBROSA_DB"])
    assert not path.exists()  # looking creates nothing
    run("generate")
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_db_status_creates_nothing_and_doctor_then_is_content(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    status = json.loads(run("db", "status", "--json").stdout)
    assert status["exists"] is False and status["revision"] is None
    assert "does not exist yet" in run("db", "status").stdout
    assert not Path(os.environ["SUBROSA_DB"]).exists()
    checks = {
        c["name"]: c for c in json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
    }
    assert checks["database"]["ok"]


def test_doctor_accepts_an_ordinary_755_database_folder(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "alpha.md")
    run("generate")
    path = Path(os.environ["SUBROSA_DB"])
    path.parent.chmod(0o755)
    checks = {
        c["name"]: c for c in json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
    }
    assert checks["permissions"]["ok"], checks["permissions"]
    path.parent.chmod(0o777)
    checks = {
        c["name"]: c for c in json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
    }
    assert (
        not checks["permissions"]["ok"] and "writable by others" in checks["permissions"]["detail"]
    )
    path.parent.chmod(0o700)
    path.chmod(0o644)
    checks = {
        c["name"]: c for c in json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
    }
    assert (
        not checks["permissions"]["ok"] and "readable by others" in checks["permissions"]["detail"]
    )


# ---------------------------------------------------------------- ingest


def _record(session: str, uuid: str, text: str) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": session,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": text},
    }


def test_undecodable_lines_are_counted_and_the_good_files_all_ingested(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    folder = tmp_path / "transcripts"
    (folder / "project-a" / "s1" / "subagents").mkdir(parents=True)
    (folder / "project-b").mkdir()
    deep = json.dumps(_record("s1", "deep", "x")).replace('"x"', "[" * 5000 + "]" * 5000)
    bad_utf8 = json.dumps(_record("s1", "bad", "café QQQ")).encode().replace(b"QQQ", b"\xff\xfe!")
    lines = [
        json.dumps(_record("s1", "u1", "first zebra")).encode(),
        deep.encode(),
        bad_utf8,
        json.dumps(_record("s1", "u2", "after the bad lines, okapi")).encode(),
    ]
    (folder / "project-a" / "s1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    good = {
        folder / "project-a" / "s1" / "subagents" / "agent-1.jsonl": ("s1", "giraffe"),
        folder / "project-b" / "s2.jsonl": ("s2", "narwhal"),
        folder / "s3.jsonl": ("s3", "quokka"),
    }
    for path, (session, word) in good.items():
        path.write_text(json.dumps(_record(session, f"u-{word}", word)) + "\n")
    done = json.loads(run("ingest", str(folder), "--json").stdout)
    assert done["files_seen"] == 4 and done["files_read"] == 4
    assert done["skipped"] == {"nested too deeply": 1}
    assert done["repaired"] == {"invalid UTF-8, read with U+FFFD": 1}
    for word in ("zebra", "okapi", "giraffe", "narwhal", "quokka", "café"):
        found = json.loads(run("search", "--json", word).stdout)
        assert found, word
    again = json.loads(run("ingest", str(folder), "--json").stdout)
    assert again["new_messages"] == 0


def test_a_lone_surrogate_escape_loses_only_itself(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    """Node's JSON.stringify writes half of a surrogate pair (a string cut in the middle
    of an emoji) as an escape, `\\ud83d`, which msgspec refuses: the whole record was
    skipped as "not json". It is read with U+FFFD in that place, as bad UTF-8 is."""
    path = tmp_path / "s8.jsonl"
    lines = [
        json.dumps(_record("s8", "u1", "my prompt about the wombat \ud83d")),
        json.dumps(_record("s8", "u2", "a pair \ud83d\ude00 and a lone low \ude00 end")),
        json.dumps(_record("s8", "u3", "a backslash then u: \\ud83d stays text")),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    done = json.loads(run("ingest", str(path), "--json").stdout)
    assert done["new_messages"] == 3 and done["skipped"] == {}
    assert done["repaired"] == {"half a surrogate pair, read with U+FFFD": 2}
    shown = json.loads(run("transcript", "show", "s8", "--json").stdout)["messages"]
    assert [m["text"] for m in shown] == [
        "my prompt about the wombat \ufffd",
        "a pair \U0001f600 and a lone low \ufffd end",
        "a backslash then u: \\ud83d stays text",
    ]
    assert json.loads(run("search", "--json", "wombat").stdout)[0]["uuid"] == "u1"


def test_the_last_unfinished_line_nested_deep_is_not_fatal(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    path = tmp_path / "s9.jsonl"
    tail = "[" * 5000
    path.write_text(json.dumps(_record("s9", "u1", "zebra")) + "\n" + tail)
    done = json.loads(run("ingest", str(path), "--json").stdout)
    assert done["new_messages"] == 1


def test_a_lone_surrogate_a_program_sent_is_read_with_u_fffd(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # JavaScript's JSON.stringify writes a lone surrogate (a string sliced between the
    # two halves of an emoji, sent through `--input-format stream-json`) as `\ud83d`:
    # valid JSON that msgspec refuses. The prompt is the user's: kept, the half read as
    # U+FFFD (tests/e2e/test_transcript.py sends one through Claude Code).
    path = tmp_path / "s1.jsonl"
    text = "half an emoji \ud83d here, the rest kept: wombat \U0001f600 \\ud800 literal"
    lines = [json.dumps(_record("s1", "u1", text)), json.dumps(_record("s1", "u2", "\udc00"))]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    done = json.loads(run("ingest", str(path), "--json").stdout)
    assert done["skipped"] == {} and done["new_messages"] == 2
    assert done["repaired"] == {"half a surrogate pair, read with U+FFFD": 2}
    shown = json.loads(run("transcript", "show", "s1", "--json").stdout)
    assert [m["text"] for m in shown["messages"]] == [
        text.replace("\ud83d", "\ufffd"),
        "\ufffd",
    ]
