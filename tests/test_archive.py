"""The transcript archive as a user runs it: ingest, transcript list/show, search."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subrosa.archive import pending
from subrosa.archive.connection import connect
from subrosa.db import dispose_all
from subrosa.paths import project_transcript_dir
from subrosa.query import Filters
from subrosa.recall import search
from tests.conftest import FIXTURES as FIXTURE_ROOT
from tests.conftest import (
    Db,
    RunCli,
    run_on_terminal,
    subrosa_forked,
    subrosa_loading,
    subrosa_process,
    write_leaf,
)
from tests.test_redact import SAMPLES

FIXTURES = FIXTURE_ROOT / "transcripts" / "claude-code-log"
SUBAGENTS = FIXTURE_ROOT / "transcripts" / "bookminder-subagents"

# Every test here that uses the database runs on SQLite and on PostgreSQL.
pytestmark = pytest.mark.engines


def _record(uuid: str, text: str, role: str = "user", session: str = "s-1", **extra: Any) -> str:
    return json.dumps(
        {
            "type": role,
            "uuid": uuid,
            "sessionId": session,
            "timestamp": extra.pop("timestamp", "2026-03-01T10:00:00Z"),
            "cwd": "/work/app",
            "message": {"role": role, "content": text},
            **extra,
        },
        ensure_ascii=False,
    )


def _transcript(name: str, *records: str, project: str | None = None) -> Path:
    """A transcript in this project's Claude Code folder (or in `project`'s, beside it)."""
    directory = Path(project_transcript_dir())
    if project is not None:
        directory = directory.parent / project
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return path


def _ingest(run: RunCli, *args: str) -> dict[str, Any]:
    return json.loads(run("ingest", "--json", *args).stdout)  # type: ignore[no-any-return]


def _search(run: RunCli, *args: str) -> list[dict[str, Any]]:
    return json.loads(run("search", "--json", *args).stdout)  # type: ignore[no-any-return]


def _uuid_of(result: dict[str, Any]) -> str:
    return str(result["uuid"])


def test_real_transcripts_ingest_search_show(memory_dir: Path, run: RunCli) -> None:
    directory = Path(project_transcript_dir())
    directory.mkdir(parents=True)
    for path in FIXTURES.glob("*.jsonl"):
        shutil.copy(path, directory / path.name)
    session_dir = directory / "a42b9c92-c0e6-588e-bc6f-3d5e4f37b895" / "subagents"
    session_dir.mkdir(parents=True)
    for path in SUBAGENTS.glob("*.jsonl"):
        shutil.copy(path, session_dir / path.name)
    report = _ingest(run)
    assert report["files_read"] == 6 and report["new_messages"] > 50
    assert report["skipped"]["thinking"] >= 1

    found = _search(run, '"parameterized decorator"')
    assert found and found[0]["kind"] == "message"
    assert found[0]["session_id"] == "test_session"
    assert "**parameterized decorator**" in found[0]["snippet"]
    assert set(found[0]) >= {"kind", "score", "snippet", "session_id", "timestamp"}

    sessions = json.loads(run("transcript", "list", "--json").stdout)
    by_id = {s["session_id"]: s for s in sessions}
    assert by_id["edge_cases"]["summary"].startswith("Tested various edge cases")
    assert by_id["a42b9c92-c0e6-588e-bc6f-3d5e4f37b895"]["message_count"] > 10

    shown = run("transcript", "show", "test_sess").stdout
    assert "session test_session" in shown
    assert "user 2025-06-14 10:00:00" in shown
    assert "Hello Claude! Can you help me understand how Python decorators work?" in shown
    around = run(
        "transcript",
        "show",
        "test_session",
        "--around",
        str(found[0]["message_id"]),
        "--context",
        "1",
    ).stdout
    headers = ("\nuser ", "\nassistant ", "\ntool result ")  # a tool's output is marked
    assert sum(around.count(h) for h in headers) == 3


def test_archive_outlives_the_source_and_ingest_is_incremental(
    memory_dir: Path, run: RunCli
) -> None:
    path = _transcript("s-1.jsonl", _record("m1", "the zanzibarite deployment plan"))
    assert _ingest(run)["new_messages"] == 1
    second = _ingest(run)
    assert (second["new_messages"], second["files_read"]) == (0, 0)
    path.unlink()
    assert [r["session_id"] for r in _search(run, "zanzibarite")] == ["s-1"]


def test_ingest_shows_a_bar_in_bytes_on_a_terminal(memory_dir: Path) -> None:
    """On a terminal (a pseudo-terminal here) ingest shows its bar on stderr, counting
    the bytes read of the bytes to read; the summary goes to stdout alone."""
    pytest.importorskip("pty")
    path = _transcript("s-1.jsonl", _record("m1", "the zanzibarite deployment plan"))
    size = path.stat().st_size
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    done, shown = run_on_terminal(["ingest"], env)
    assert done.returncode == 0
    assert done.stdout.startswith(b"1 new messages from 1 of ")
    assert f"{size}/{size} bytes".encode() in shown


def test_half_a_line_waits_until_it_is_complete(memory_dir: Path, run: RunCli) -> None:
    line = _record("m2", "the quokkaflux migration is done")
    path = _transcript("s-1.jsonl", _record("m1", "first message"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line[:25])
    assert _ingest(run)["new_messages"] == 1
    assert _search(run, "quokkaflux") == []
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line[25:] + "\n")
    assert _ingest(run)["new_messages"] == 1
    assert _ingest(run)["new_messages"] == 0
    hits = _search(run, "quokkaflux")
    assert len(hits) == 1 and "migration is done" in hits[0]["snippet"]


def test_a_truncated_or_replaced_file_is_read_again(memory_dir: Path, run: RunCli) -> None:
    path = _transcript("s-1.jsonl", _record("m1", "alpha one"), _record("m2", "alpha two"))
    assert _ingest(run)["new_messages"] == 2
    path.write_text(_record("m3", "beta three") + "\n", encoding="utf-8")  # shorter
    report = _ingest(run)
    assert (report["files_restarted"], report["new_messages"]) == (1, 1)
    replacement = path.with_suffix(".tmp")
    replacement.write_text(
        _record("m1", "alpha one") + "\n" + _record("m4", "gamma four, same length!") + "\n",
        encoding="utf-8",
    )
    os.replace(replacement, path)  # another inode
    report = _ingest(run)
    assert (report["new_messages"], report["duplicate_messages"]) == (1, 1)


def test_a_last_line_without_newline_is_taken_when_whole(memory_dir: Path, run: RunCli) -> None:
    directory = Path(project_transcript_dir())
    directory.mkdir(parents=True)
    path = directory / "s-1.jsonl"
    path.write_text(_record("m1", "one") + "\n" + _record("m2", "two"), encoding="utf-8")
    assert _ingest(run)["new_messages"] == 2
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n" + _record("m3", "three") + "\n")
    assert _ingest(run)["new_messages"] == 1


def test_resumed_sessions_store_repeated_history_once(memory_dir: Path, run: RunCli) -> None:
    _transcript("s-1.jsonl", _record("m1", "shared history"), _record("m2", "original"))
    _transcript(
        "s-2.jsonl",
        _record("m1", "shared history", session="s-2"),
        _record("m3", "the fork", session="s-2"),
    )
    report = _ingest(run)
    assert (report["new_messages"], report["duplicate_messages"]) == (3, 1)
    assert len(_search(run, "shared history")) == 1


def test_a_pending_entry_s_leftover_temp_file_is_swept(memory_dir: Path) -> None:
    """A SessionEnd hook killed between writing its entry and renaming it leaves a temp
    file in the pending folder: listing the entries removes it once it is older than a
    running hook's could be, and leaves a fresh one alone."""
    entry = Path(pending.record(str(memory_dir.parent / "s.jsonl"), "s-1", ""))
    stale = entry.parent / ".a.json.0123456789ab.tmp"
    fresh = entry.parent / ".b.json.ba9876543210.tmp"
    for path in (stale, fresh):
        path.write_text('{"transcript_path": ')
    long_ago = time.time() - 3600
    os.utime(stale, (long_ago, long_ago))
    assert [data["session_id"] for _, data in pending.list_pending()] == ["s-1"]
    assert not stale.exists() and fresh.exists()


def test_pending_sessions_are_ingested_before_a_search(memory_dir: Path, run: RunCli) -> None:
    elsewhere = memory_dir.parent / "elsewhere.jsonl"
    elsewhere.write_text(_record("m1", "a glimmerwick appears") + "\n", encoding="utf-8")
    pending.record(str(elsewhere), "s-1", str(memory_dir.parent))
    pending.record(str(memory_dir.parent / "gone.jsonl"), "s-9", "")
    assert [r["session_id"] for r in _search(run, "glimmerwick")] == ["s-1"]
    assert pending.list_pending() == []
    elsewhere.write_text(
        _record("m1", "a glimmerwick appears") + "\n" + _record("m2", "and a blimpstack") + "\n",
        encoding="utf-8",
    )
    pending.record(str(elsewhere), "s-1", "")
    assert run("ingest", "--pending").stdout == ""
    assert pending.list_pending() == []
    assert len(_search(run, "blimpstack")) == 1


def test_the_background_ingest_archives_a_killed_session_beside_the_one_that_ended(
    memory_dir: Path, run: RunCli
) -> None:
    """A session killed outright (SIGKILL, the OOM killer, a power cut) runs no SessionEnd
    hook, so nothing names its transcript. The background ingest that the next session's
    end starts (`ingest --pending`) reads the ended session's project folder too, so the
    killed one is archived then, and only what changed is read."""
    ended = _transcript("s-1.jsonl", _record("m1", "a glimmerwick appears"))
    _transcript("s-2.jsonl", _record("k1", "the blimpstack before the crash", session="s-2"))
    _transcript(
        "s-9.jsonl", _record("o1", "a quillfrost elsewhere", session="s-9"), project="-other"
    )
    pending.record(str(ended), "s-1", "")
    done = json.loads(run("ingest", "--pending", "--json").stdout)
    assert done["new_messages"] == 2
    assert [r["session_id"] for r in _search(run, "blimpstack")] == ["s-2"]
    assert _search(run, "--all-projects", "quillfrost") == []  # another project's folder
    assert pending.list_pending() == []
    pending.record(str(ended), "s-1", "")  # nothing changed: nothing read again
    assert json.loads(run("ingest", "--pending", "--json").stdout)["files_read"] == 0


def test_an_ended_session_is_archived_with_its_subagents(memory_dir: Path, run: RunCli) -> None:
    """The SessionEnd hook's ingest archives what `subrosa ingest` of the folder would:
    the session's transcript and its subagents' (`<session>/subagents/*.jsonl`, Claude
    Code 2.1), which Claude Code deletes with it when it cleans old sessions up."""
    main = _transcript("s-1.jsonl", _record("m1", "look for the quillfeather bug", session="s-1"))
    subagents = main.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a1.jsonl").write_text(
        _record("a1", "the quillfeather bug is in parse.py", "assistant", session="s-1") + "\n",
        encoding="utf-8",
    )
    pending.record(str(main), "s-1", str(memory_dir.parent))
    assert run("ingest", "--pending").stdout == ""
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)
    assert [m["uuid"] for m in shown["messages"]] == ["m1", "a1"]
    assert _ingest(run)["new_messages"] == 0  # the folder's ingest finds nothing more


def test_show_puts_a_message_without_a_time_where_its_transcript_has_it(
    memory_dir: Path, run: RunCli
) -> None:
    """A record with no timestamp was shown after every other message of its session
    (time order, no time last); the transcript says where it was: after the line before
    it. A subagent's messages still come in by their time."""
    main = _transcript(
        "s-1.jsonl",
        _record("m0", "before any time", timestamp=None),
        _record("m1", "first", timestamp="2026-03-01T10:00:00Z"),
        _record("m2", "no time of its own", "assistant", timestamp=None),
        _record("m3", "third", timestamp="2026-03-01T10:05:00Z"),
    )
    subagents = main.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a1.jsonl").write_text(
        _record("a1", "the subagent", "assistant", timestamp="2026-03-01T10:02:00Z") + "\n",
        encoding="utf-8",
    )
    _ingest(run)
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)
    assert [m["uuid"] for m in shown["messages"]] == ["m0", "m1", "m2", "a1", "m3"]
    text = run("transcript", "show", "s-1").stdout
    assert text.index("no time of its own") < text.index("the subagent") < text.index("third")
    around = json.loads(
        run("transcript", "show", "s-1", "--around", "m2", "--context", "1", "--json").stdout
    )
    assert [m["uuid"] for m in around["messages"]] == ["m1", "m2", "a1"]


def test_show_json_says_how_many_messages_the_session_has(memory_dir: Path, run: RunCli) -> None:
    """The text's header says how many messages the session has; --json says it too, as
    `transcript list --json` does, also when --around shows only a few of them."""
    _transcript("s-1.jsonl", *(_record(f"m{i}", f"message {i}") for i in range(6)))
    _ingest(run)
    whole = json.loads(run("transcript", "show", "s-1", "--json").stdout)
    part = json.loads(
        run("transcript", "show", "s-1", "--around", "m3", "--context", "1", "--json").stdout
    )
    assert whole["message_count"] == part["message_count"] == 6
    assert [m["uuid"] for m in part["messages"]] == ["m2", "m3", "m4"]


# Queries FTS5 would read as its own syntax (most of them errors there).
HOSTILE_QUERIES = [
    '"unbalanced',
    "AND OR",
    "*",
    "NEAR(",
    "-x",
    "col:val",
    '"',
    "(",
    ")",
    "^",
    "a:b:c",
    "NOT",
    '"a" OR "b"',
    "text:deploy",
    "cjk:x",
    "dep**",
    '""*',
    "NEAR(a b, 2)",
    "'",
    "\\",
]


def test_no_query_is_a_syntax_error(memory_dir: Path, run: RunCli) -> None:
    _transcript("s-1.jsonl", _record("m1", "deploy x with text and col val OR AND NOT near"))
    _ingest(run)
    for query in HOSTILE_QUERIES:  # one archive for all: nothing queued, a search writes none
        assert isinstance(_search(run, "--", query), list), query


@pytest.fixture(params=["exact", "rerank"])
def ranking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ranking paths: FTS5's bm25 (every phrase selective) and the rerank of the
    newest matches (a phrase in more messages than SELECTIVE)."""
    if request.param == "rerank":
        monkeypatch.setattr("subrosa.archive.search.SELECTIVE", 1)
    return str(request.param)


def test_phrases_prefixes_and_filters(memory_dir: Path, run: RunCli, ranking: str) -> None:
    _transcript(
        "s-1.jsonl",
        _record("m1", "we deploy on Tuesday", timestamp="2026-01-01T09:00:00Z"),
        _record("m2", "Tuesday we deploy", role="assistant", timestamp="2026-02-01T09:00:00Z"),
        _record("m3", "the dependency tree", timestamp="2026-03-01T09:00:00Z"),
    )
    _ingest(run)
    assert len(_search(run, "deploy Tuesday")) == 2
    assert [r["role"] for r in _search(run, '"deploy on Tuesday"')] == ["user"]
    prefixed = _search(run, "dep*")
    assert len(prefixed) == 3
    assert "**dependency**" in " ".join(r["snippet"] for r in prefixed)
    assert all(r["score"] >= 0 for r in prefixed)
    assert [r["role"] for r in _search(run, "deploy", "--role", "assistant")] == ["assistant"]
    assert len(_search(run, "dep*", "--since", "2026-01-15")) == 2
    assert len(_search(run, "dep*", "--limit", "1")) == 1
    run("search", "dep*", "--since", "last tuesday", expect=2)


def test_cjk_text_is_findable_by_any_part(memory_dir: Path, run: RunCli, ranking: str) -> None:
    _transcript(
        "s-1.jsonl",
        _record("m1", "会議は東京タワーの近くです。"),
        _record("m2", "我们需要在部署之前运行所有的测试。"),
        _record("m3", "테스트는 실제 데이터베이스를 사용해야 합니다."),
        _record("m4", "京都 is not 東京"),
    )
    _ingest(run)
    for query, expected in [
        ("東京タワー", {"m1"}),
        ("東京", {"m1", "m4"}),
        ("タワー", {"m1"}),
        ("塔", set()),
        ("部署", {"m2"}),
        ("测", {"m2"}),  # one character
        ("데이터베이스", {"m3"}),
        ("데이", {"m3"}),
        ("京 not", {"m1", "m4"}),  # "not" is a stopword: not required, but it counts
    ]:
        found = _search(run, query)
        # Every message holding the whole query first; then (second tier) those holding
        # part of it, such as another word with one of its characters.
        matches = [r["match"] for r in found]
        assert matches == sorted(matches), query
        uuids = {_uuid_of(r) for r in found if r["match"] == "all"}
        assert uuids == expected, query
        if found:
            assert "**" in found[0]["snippet"], query
    assert _uuid_of(_search(run, "京 not")[0]) == "m4"


def test_facts_are_searched_and_counted(memory_dir: Path, run: RunCli) -> None:
    write_leaf(
        memory_dir,
        "user_prefers_pnpm.md",
        "Uses pnpm, never npm.",
        fact_type="user",
        body="Run pnpm install. 東京の設定。",
    )
    run("fact", "upsert", "--leaf", "user_prefers_pnpm.md", "--hook", "pnpm only")
    _transcript("s-1.jsonl", _record("m1", "I ran pnpm install again"))
    _ingest(run)
    both = _search(run, "pnpm")
    assert {r["kind"] for r in both} == {"fact", "message"}
    assert both[0]["kind"] == "fact" and both[0]["slug"] == "user_prefers_pnpm"
    assert [r["kind"] for r in _search(run, "pnpm", "--facts")] == ["fact"]
    assert [r["kind"] for r in _search(run, "pnpm", "--transcripts")] == ["message"]
    assert [r["slug"] for r in _search(run, "東京", "--facts")] == ["user_prefers_pnpm"]
    shown = json.loads(run("fact", "show", "user_prefers_pnpm", "--json").stdout)
    assert shown["hits"] == 3 and shown["last_hit_at"]
    text = run("search", "pnpm").stdout
    assert "fact user_prefers_pnpm" in text and "message s-1" in text


def test_other_projects_only_with_all_projects(memory_dir: Path, run: RunCli) -> None:
    other = Path(project_transcript_dir()).parent / "-some-other-project"
    other.mkdir(parents=True)
    (other / "s-9.jsonl").write_text(_record("m9", "the thundersnout", session="s-9") + "\n")
    assert _ingest(run, "--all-projects")["new_messages"] == 1
    assert _search(run, "thundersnout") == []
    assert [r["project"] for r in _search(run, "thundersnout", "--all-projects")] == [
        "-some-other-project"
    ]
    # Nothing here: a person is told where else to look (stderr: stdout stays the
    # result), by the click command and by the fast path alike.
    here = run("search", "thundersnout")
    assert here.stdout == "no results\n"
    assert "--all-projects searches every project" in here.stderr
    fast = subrosa_process("search", "thundersnout")
    assert fast.returncode == 0 and fast.stdout == b"no results\n"
    assert b"--all-projects searches every project" in fast.stderr
    everywhere = run("search", "zanzibarite", "--all-projects")
    assert everywhere.stdout == "no results\n" and everywhere.stderr == ""
    assert json.loads(run("transcript", "list", "--json").stdout) == []
    assert len(json.loads(run("transcript", "list", "--json", "--all-projects").stdout)) == 1
    # A filter that matches nothing says so; "run `subrosa ingest`" would mislead.
    for flags, said in (
        (("--project", "no-such-project"), "no archived sessions of project no-such-project"),
        (("--all-projects", "--by", "nobody"), "no archived sessions from nobody"),
        ((), "no archived sessions of this project ("),
    ):
        shown = run("transcript", "list", *flags).stdout
        assert said in shown and "subrosa ingest" not in shown, shown
        # (pointing to --all-projects, unless it was given)
        assert ("--all-projects" in shown) == ("--all-projects" not in flags), shown
    # --limit leaving sessions out says so on stderr; --json stays the list alone.
    run("ingest", "--all-projects")
    (other / "s-8.jsonl").write_text(_record("m8", "a second one", session="s-8") + "\n")
    run("ingest", "--all-projects")
    cut = run("transcript", "list", "--all-projects", "--limit", "1")
    assert len(cut.stdout.splitlines()) == 1 and "--limit N shows more" in cut.stderr
    whole = run("transcript", "list", "--all-projects", "--limit", "2")
    assert "--limit N shows more" not in whole.stderr
    assert (
        len(
            json.loads(run("transcript", "list", "--all-projects", "--limit", "1", "--json").stdout)
        )
        == 1
    )


def test_a_project_among_newer_and_older_ones_finds_its_own_messages(
    memory_dir: Path, run: RunCli
) -> None:
    # This project's messages lie between other projects' ids (ingested before and
    # after them): the search skips to their id range and returns what it always did.
    here = Path(project_transcript_dir())
    here.mkdir(parents=True, exist_ok=True)
    other = here.parent / "-some-other-project"
    other.mkdir(parents=True)

    def word(n: int) -> str:  # distinct texts, not copies of one (digits would be)
        return "".join("abcdefghij"[int(c)] for c in str(n)) + "ish"

    def session(folder: Path, name: str, count: int) -> None:
        lines = [
            _record(f"{name}-{n}", f"the quokka {word(n)} of {name}", session=name)
            for n in range(count)
        ]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        run("ingest", "--all-projects")

    session(other, "old", 30)
    session(here, "mine-a", 3)
    session(other, "middle", 30)
    session(here, "mine-b", 3)
    session(other, "new", 30)
    found = _search(run, "quokka", "--limit", "20")
    assert sorted(_uuid_of(r) for r in found) == sorted(
        f"{name}-{n}" for name in ("mine-a", "mine-b") for n in range(3)
    )
    assert {r["session_id"] for r in _search(run, "quokka", "--sessions")} == {"mine-a", "mine-b"}
    assert len(_search(run, "quokka", "--all-projects", "--limit", "200")) == 96


def _letters(n: int) -> str:
    """A number spelt in letters: texts that differ only in digits are copies of one."""
    return "".join("abcdefghij"[int(c)] for c in str(n)) + "ish"


def _interleaved(run: RunCli) -> None:
    """This project's sessions among a busier project's, ingested one at a time as
    sessions end (and one of each appended to later), so this project's messages are
    runs of ids between the other's: every message says "quokka", every third also
    "wombat"."""
    here = Path(project_transcript_dir())
    here.mkdir(parents=True, exist_ok=True)
    other = here.parent / "-some-busy-project"
    other.mkdir(parents=True, exist_ok=True)

    def session(folder: Path, name: str, start: int, count: int) -> None:
        lines = [
            _record(
                f"{name}-{n}",
                f"the quokka {'wombat ' if n % 3 == 0 else ''}note {_letters(n)} of"
                f" {_letters(sum(map(ord, name)))}",
                session=name,
                timestamp=f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}Z",
            )
            for n in range(start, start + count)
        ]
        with (folder / f"{name}.jsonl").open("a") as out:
            out.write("\n".join(lines) + "\n")
        run("ingest", "--all-projects")

    for k in range(6):
        session(other, f"busy-{k}", 0, 40)
        session(here, f"mine-{k}", 0, 4)
    session(here, "mine-0", 4, 3)  # resumed: a run far from its first
    session(other, "busy-9", 0, 40)


BACKFILLED = (
    "SELECT session_pk, min(id), max(id) FROM (SELECT session_pk, id,"
    " row_number() OVER (ORDER BY id) - row_number() OVER (PARTITION BY session_pk ORDER BY id)"
    " AS island FROM messages) AS numbered GROUP BY session_pk, island ORDER BY 1, 2"
)


def test_ingest_keeps_each_sessions_runs_of_ids(memory_dir: Path, db: Db, run: RunCli) -> None:
    # What ingest records as it goes is what migration 0009 derives from the messages:
    # each run one session's ids with no other session's message among them.
    _interleaved(run)
    kept = db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2")
    assert kept == db.rows(BACKFILLED)
    assert len(kept) == 14  # 13 sessions, one resumed later
    # Re-ingesting stores nothing and adds no run.
    run("ingest", "--all-projects")
    assert db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2") == kept


def test_the_migration_derives_the_runs_of_an_archive_made_before_them(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _interleaved(run)
    kept = db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2")
    db.migrate("0008", down=True)
    db.migrate("head")
    assert db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2") == kept
    assert len(_search(run, "wombat", "--limit", "50")) == 13


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 6)), max_size=12),
    st.lists(st.integers(0, 200), max_size=40),
)
def test_the_ids_inside_runs(gaps: list[tuple[int, int]], ids: list[int]) -> None:
    # A walk keeps the ids inside a project's runs (search.inside_runs): the same, whether
    # it bisects the ids run by run or the runs id by id (fewer ids than runs).
    from subrosa.archive.search import inside_runs

    runs, at = [], 0
    for gap, length in gaps:
        runs.append((at + gap, at + gap + length))
        at += gap + length + 1
    los, his = [lo for lo, _ in runs], [hi for _, hi in runs]
    ids = sorted(set(ids))
    assert inside_runs(ids, los, his) == [i for i in ids if any(lo <= i <= hi for lo, hi in runs)]


# The ways a project's matches can be found among a busier project's, each compared
# with the default (the newest few ranked, a walk newest first).
WAYS = {
    "each-match": {"SPAN_SHARE": 0.0},  # each match's project tested, newest first
    # ... within the project's first and last id, summed from its runs (they are not
    # both among the ENDS newest and oldest messages)
    "each-match-summed": {"SPAN_SHARE": 0.0, "ENDS": 1},
    "span-by-span": {"SPAN_SHARE": 1.0, "SPAN_COST": 0},  # the index asked span by span
    # the ids walked, in batches of 7, 14, ...
    "walk": {"SPAN_SHARE": 1.0, "SPAN_COST": 10**9, "WALK_AHEAD": 0, "WALK_BATCH": 7},
    # ... of 1, 2, ... (test_the_ids_inside_runs: each id's run looked up, or not)
    "walk-small-batches": {
        "SPAN_SHARE": 1.0,
        "SPAN_COST": 10**9,
        "WALK_AHEAD": 0,
        "WALK_BATCH": 1,
    },
    "merged": {"SPAN_SHARE": 1.0, "MERGE_GAP": 10**9, "SPAN_COST": 0},  # one span, tested
    # the walk, by its runs
    "merged-walk": {"SPAN_SHARE": 1.0, "MERGE_GAP": 10**9, "SPAN_COST": 10**9},
    # a server: every match sorted from the index, the project's by its sessions
    "sorted": {"SPAN_SHARE": 1.0, "WALK_COST": 10**9},
    # ... or range by range (a large project), in one range or several
    "sorted-by-range": {"SPAN_SHARE": 0.0, "WALK_COST": 10**9},
    "sorted-by-ranges": {"SPAN_SHARE": 0.0, "WALK_COST": 10**9, "RANGE": 64},
}


def test_a_project_among_a_busier_one_finds_the_same_however_it_is_asked(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every way in WAYS answers each query as the default does, on one archive (the
    searches write nothing into it: one archive for all the ways, not one each)."""
    from subrosa.archive import pgsearch
    from subrosa.archive import search as archive_search

    _interleaved(run)
    queries = [
        ["quokka", "--limit", "50"],
        ["wombat", "--limit", "50"],
        ["quokka", "--limit", "3"],
        ["quokka", "wombat", "zzyzx"],  # never all in one: the second tier
        ["wombat", "--sessions"],
        ["quokka", "--role", "assistant"],
        ["quokka", "--since", "2026-03-01T10:00:05"],
        # Every project: a server reads an AND's newest matches range by range.
        ["quokka", "wombat", "--all-projects", "--limit", "50"],
        ["quokka", "wombat", "--all-projects", "--limit", "3"],
        ["quokka", "wombat", "--all-projects", "--role", "assistant"],
    ]
    # Here every word is in a few hundred messages at most: a server would read them
    # all by id (SELECTIVE) or sort them from its index (WALK_COST); as if they were
    # in many more, its walk newest first is what is compared. Runs are not joined.
    for module in (archive_search, pgsearch):
        monkeypatch.setattr(module, "SELECTIVE", 10)
        # The newest few matches ranked (not all): each way must find the same newest.
        monkeypatch.setattr(module, "RERANK", 5)
    monkeypatch.setattr(pgsearch, "WALK_COST", 0)
    monkeypatch.setattr(archive_search, "MERGE_GAP", 0)
    monkeypatch.setattr(archive_search, "SPAN_SHARE", 0.0)
    monkeypatch.setattr(pgsearch, "SPAN_SHARE", 0.0)
    tested = [_search(run, *query) for query in queries]
    for way, how in WAYS.items():
        with monkeypatch.context() as patch:
            for name, value in how.items():
                for module in (archive_search, pgsearch):
                    if hasattr(module, name):
                        patch.setattr(module, name, value)
            assert [_search(run, *query) for query in queries] == tested, way
    mine = [f"mine-{k}-{n}" for k in range(6) for n in range(4)]
    mine += ["mine-0-4", "mine-0-5", "mine-0-6"]
    assert sorted(_uuid_of(r) for r in tested[0]) == sorted(mine)
    wombats = [u for u in mine if int(u.rsplit("-", 1)[1]) % 3 == 0]
    assert sorted(_uuid_of(r) for r in tested[1]) == sorted(wombats)
    assert len(tested[2]) == 3
    assert {r["session_id"] for r in tested[4]} == {f"mine-{k}" for k in range(6)}
    assert tested[5] == []
    assert sorted(_uuid_of(r) for r in tested[6]) == sorted(
        u for u in mine if int(u.rsplit("-", 1)[1]) >= 5
    )


def test_a_project_searched_among_the_newest_matches_a_probe_sent(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a server a unit's probe sends its newest matches' ids; a project whose runs are
    # known takes its own among them when they are enough (pgsearch._newest_known()):
    # the same results as each match tested, the newest of them.
    from subrosa.archive import pgsearch
    from subrosa.archive import search as archive_search

    _interleaved(run)
    here = Path(project_transcript_dir())
    (here / "late.jsonl").write_text(
        "\n".join(
            _record(
                f"late-{n}",
                f"the quokka {'wombat ' * (n % 2)}late {_letters(n)}",
                session="late",
                timestamp=f"2026-03-02T10:00:{n:02d}Z",
            )
            for n in range(12)
        )
        + "\n"
    )
    run("ingest", "--all-projects")
    for module in (archive_search, pgsearch):
        monkeypatch.setattr(module, "SELECTIVE", 10)
        monkeypatch.setattr(module, "RERANK", 5)
    queries = [["quokka"], ["quokka", "--limit", "3"], ["wombat", "quokka"], ["quokka", "zzyzx"]]
    monkeypatch.setattr(archive_search, "SPAN_SHARE", 0.0)
    monkeypatch.setattr(pgsearch, "SPAN_SHARE", 0.0)
    tested = [_search(run, *query) for query in queries]
    monkeypatch.setattr(archive_search, "SPAN_SHARE", 1.0)
    monkeypatch.setattr(pgsearch, "SPAN_SHARE", 1.0)
    assert [_search(run, *query) for query in queries] == tested
    assert {_uuid_of(r) for r in tested[1]} <= {f"late-{n}" for n in range(12)}


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_seeded_secrets_never_reach_the_database_file(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    records = []
    for i, (kind, (text, _secret)) in enumerate(sorted(SAMPLES.items())):
        records.append(_record(f"u{i}", f"{kind}: {text}"))
        records.append(
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": f"a{i}",
                    "sessionId": "s-1",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "name": "Bash", "input": {"command": text}},
                            {"type": "tool_result", "content": [{"type": "text", "text": text}]},
                        ],
                    },
                }
            )
        )
    records.append(json.dumps({"type": "summary", "summary": SAMPLES["openai-key"][0]}))
    _transcript("s-1.jsonl", *records)
    report = _ingest(run)
    assert report["redacted"] >= 3 * len(SAMPLES)
    assert set(report["redacted_by_kind"]) == set(SAMPLES)
    data = b"".join(p.read_bytes() for p in tmp_path.glob("subrosa.db*") if p.is_file())
    assert b"REDACTED:" in data
    for kind, (_text, secret) in SAMPLES.items():
        assert secret.encode() not in data, kind


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_search_runs_without_sqlalchemy_and_agrees_with_click(
    memory_dir: Path, run: RunCli
) -> None:
    _transcript("s-1.jsonl", _record("m1", "the wobbleframe is ready"))
    _ingest(run)
    slow = _search(run, "wobbleframe")
    code = (
        "import sys\n"
        "from subrosa.cli import main\n"
        "sys.argv = ['subrosa', 'search', '--json', 'wobbleframe']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'sqlalchemy' not in sys.modules and 'click' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == slow
    whole = subrosa_process("search", "--json", "wobbleframe")
    assert json.loads(whole.stdout) == slow


def _pnpm(memory_dir: Path, run: RunCli) -> None:
    """One fact and one archived message, both about pnpm."""
    write_leaf(memory_dir, "user_prefers_pnpm.md", "Uses pnpm, never npm.", fact_type="user")
    run("fact", "upsert", "--leaf", "user_prefers_pnpm.md", "--hook", "pnpm only")
    _transcript("s-1.jsonl", _record("m1", "I ran pnpm install again"))
    _ingest(run)


def _hits(tmp_path: Path) -> list[int]:
    conn = connect(tmp_path / "subrosa.db")
    try:
        return [row[0] for row in conn.execute("SELECT hits FROM facts ORDER BY id")]
    finally:
        conn.close()


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_search_path_imports_the_standard_library_only(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """`subrosa search` on a current database, counting a fact's hit, loads neither
    click nor SQLAlchemy, nor filelock (the hit's lock is taken with flock itself), nor
    what ingest needs."""
    _pnpm(memory_dir, run)
    report = tmp_path / "modules.json"
    heavy = {"sqlalchemy", "click", "rich", "yaml", "frontmatter", "alembic", "filelock"}
    heavy |= {"msgspec", "ahocorasick_rs"}
    for args in (["search", "pnpm"], ["search", "--json", "--all-projects", "--limit=5", "pnpm"]):
        result, loaded = subrosa_loading(*args, report=report)
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        assert b"user_prefers_pnpm" in result.stdout and b"s-1" in result.stdout
        assert not loaded & heavy, (args, loaded & heavy)
    assert _hits(tmp_path) == [2]


# What `subrosa search` answered on SQLite does not load (~5 ms of a ~100 ms process;
# typing ~7 ms more of a ~53 ms one: its NamedTuple is subrosa.tuples'; and contextlib).
NOT_ON_THE_SEARCH_PATH = {"pathlib", "urllib", "ipaddress", "typing", "contextlib"}


@pytest.mark.engines("sqlite")  # the fast path's own branch: a file
def test_no_search_branch_loads_pathlib_urllib_ipaddress_typing_or_contextlib(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """`subrosa search` on a current SQLite database, down each of its branches (a
    fact's hit counted under its project's lock, --json, --sessions, --since and
    --role, a project named, a memory dir filed under its repository's remote or under
    the name the settings file gives its folder), and the fast path's decision to leave
    a search to the click command (an ended session waiting to be ingested, a database
    not made yet), load neither pathlib nor urllib.parse nor the ipaddress it imports,
    nor typing, nor contextlib (but for the settings file's tomllib)."""
    _pnpm(memory_dir, run)
    report = tmp_path / "modules.json"
    cases = [
        ["search", "pnpm"],
        ["search", "--json", "--all-projects", "--limit=5", "pnpm"],
        ["search", "--sessions", "--json", "pnpm"],
        ["search", "--since", "2020-01-01", "--role", "user", "--transcripts", "pnpm"],
        ["search", "--project", "github.com/org/repo", "pnpm"],
    ]
    for args in cases:
        result, loaded = subrosa_loading(*args, report=report)
        assert result.returncode == 0, (args, result.stderr)
        assert b"pnpm" in result.stdout or b"no results" in result.stdout, args
        assert not loaded & NOT_ON_THE_SEARCH_PATH, (args, loaded & NOT_ON_THE_SEARCH_PATH)
    assert _hits(tmp_path) == [2]  # both searches that found the fact counted a hit, locked
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text('[remote "origin"]\n\turl = git@h.example:o/r\n')
    result, loaded = subrosa_loading("search", "pnpm", report=report)
    assert result.returncode == 0 and b"h.example/o/r" in result.stderr, result.stderr
    assert not loaded & NOT_ON_THE_SEARCH_PATH, loaded & NOT_ON_THE_SEARCH_PATH
    shutil.rmtree(tmp_path / ".git")
    settings_file = tmp_path / "home" / ".config" / "subrosa" / "config.toml"
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    # A plain settings file is read without tomllib (subrosa.tomlsubset), so without
    # the typing it imports; one it does not read goes to tomllib, typing and all.
    settings_file.write_text(f'# mine\nbudget = 20000\n[projects]\n"{tmp_path}" = "acme"\n')
    result, loaded = subrosa_loading("search", "pnpm", report=report)
    assert result.returncode == 0 and b"project acme was" in result.stderr, result.stderr
    assert not loaded & (NOT_ON_THE_SEARCH_PATH | {"tomllib"}), loaded & NOT_ON_THE_SEARCH_PATH
    settings_file.write_text(f'projects = {{ "{tmp_path}" = "acme" }}\n')  # an inline table
    result, loaded = subrosa_loading("search", "pnpm", report=report)
    assert result.returncode == 0 and b"project acme was" in result.stderr, result.stderr
    assert "tomllib" in loaded and "typing" in loaded
    rest = NOT_ON_THE_SEARCH_PATH - {"typing", "contextlib"}
    assert not loaded & rest, loaded & NOT_ON_THE_SEARCH_PATH
    settings_file.unlink()
    # Deciding to leave it to click: fastsearch.main's None, before click loads.
    script = (
        "import json, sys\n"
        "from subrosa.cli import fastsearch\n"
        "code = fastsearch.main(sys.argv[1:])\n"
        f"json.dump([code, sorted(sys.modules)], open({str(report)!r}, 'w'))\n"
    )
    pending.record(str(_transcript("s-2.jsonl", _record("m2", "pnpm again"))), "s-2", "")
    for env in ({}, {"SUBROSA_DB": str(tmp_path / "not-made-yet.db")}):
        done = subprocess.run(
            [sys.executable, "-c", script, "search", "pnpm"],
            capture_output=True,
            env={**os.environ, **env},
            timeout=60,
        )
        code, modules = json.loads(report.read_text())
        assert code is None, (env, done.stderr)
        loaded = {module.split(".")[0] for module in modules}
        assert not loaded & NOT_ON_THE_SEARCH_PATH, (env, loaded & NOT_ON_THE_SEARCH_PATH)


@pytest.mark.engines("postgresql")
def test_search_on_a_server_loads_neither_click_nor_sqlalchemy(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """On a current server, `subrosa search` takes the fast path too (libpq itself:
    not psycopg, click, SQLAlchemy or ingest's modules), finds what the click command
    finds, and what psycopg finds when told to take it, and counts the fact's hit; with
    an ended session waiting, the click command runs."""
    _pnpm(memory_dir, run)
    report = tmp_path / "modules.json"
    heavy = {"sqlalchemy", "click", "rich", "alembic", "msgspec", "ahocorasick_rs", "psycopg"}
    args = ["search", "--json", "pnpm"]
    result, loaded = subrosa_loading(*args, report=report)
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert not loaded & heavy, loaded & heavy
    assert not loaded & NOT_ON_THE_SEARCH_PATH, loaded & NOT_ON_THE_SEARCH_PATH
    assert json.loads(result.stdout) == json.loads(run(*args).stdout)
    env = {**os.environ, "SUBROSA_PG_DRIVER": "psycopg"}
    through_psycopg, loaded = subrosa_loading(*args, report=report, env=env)
    assert "psycopg" in loaded and "click" not in loaded
    assert json.loads(through_psycopg.stdout) == json.loads(result.stdout)
    assert [r["slug"] for r in json.loads(result.stdout) if r["kind"] == "fact"] == [
        "user_prefers_pnpm"
    ]
    # The fast path's hit is committed, as the click command's is: three searches, three.
    assert json.loads(run("fact", "show", "user_prefers_pnpm", "--json").stdout)["hits"] == 3
    pending.record(str(tmp_path / "gone.jsonl"), "s-9", "")
    result, loaded = subrosa_loading(*args, report=report)
    assert result.returncode == 0, result.stderr
    assert "click" in loaded


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_a_busy_project_lock_skips_the_hit_not_the_search(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """Hits are written under the project lock; while another writer holds it, search
    answers at once and that project's hits are left alone."""
    from subrosa.memory.project import Project

    _pnpm(memory_dir, run)
    with Project(memory_dir).lock():
        fast = subrosa_process("search", "--json", "pnpm")  # another process
        assert fast.returncode == 0, fast.stderr
        assert json.loads(fast.stdout)[0]["slug"] == "user_prefers_pnpm"
        assert _search(run, "pnpm")[0]["slug"] == "user_prefers_pnpm"  # this one
    assert _hits(tmp_path) == [0]
    assert subrosa_process("search", "pnpm").returncode == 0
    _search(run, "pnpm")
    assert _hits(tmp_path) == [2]


@contextlib.contextmanager
def _held_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test's SQLite file held by another program's write transaction (a `sqlite3`
    shell, a backup tool) for as long as the test runs; every subrosa connection made
    in this process, or in a child forked from it, waits 0.2 s for it, not 30."""
    import subrosa.db
    import subrosa.schema

    short = 200
    pragmas = tuple(
        f"PRAGMA busy_timeout = {short}" if p.startswith("PRAGMA busy_timeout") else p
        for p in subrosa.schema.CONNECTION_PRAGMAS
    )
    monkeypatch.setattr(subrosa.schema, "CONNECTION_PRAGMAS", pragmas)
    monkeypatch.setattr(subrosa.db, "CONNECTION_PRAGMAS", pragmas)
    monkeypatch.setattr(subrosa.schema, "BUSY_TIMEOUT_MS", short)
    monkeypatch.setattr(subrosa.db, "BUSY_TIMEOUT_MS", short)
    dispose_all()
    other = sqlite3.connect(tmp_path / "subrosa.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()
        dispose_all()


@pytest.mark.engines("sqlite")  # a lock only an SQLite file has
def test_a_database_locked_by_another_program_is_said_in_one_sentence(
    memory_dir: Path, run: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that waited its busy timeout out says so, naming the file: exit 1, no
    traceback, on the click commands and on the fast paths alike."""
    _pnpm(memory_dir, run)
    _transcript("s-2.jsonl", _record("m2", "a new message to archive", session="s-2"))
    database = str(tmp_path / "subrosa.db")
    with _held_database(tmp_path, monkeypatch):
        for result in (
            run("ingest", expect=1),  # the click command
            run("rebuild", "--yes", expect=1),
        ):
            assert result.stderr.startswith(f"Error: {database}: "), result.stderr
            assert "locked" in result.stderr and len(result.stderr.splitlines()) == 1
        for args in (("ingest",), ("fact", "pin", "user_prefers_pnpm")):  # the fast paths
            proc = subrosa_forked(*args)
            err = proc.stderr.decode()
            assert proc.returncode == 1, err
            assert err.startswith(f"Error: {database}: ") and len(err.splitlines()) == 1, err
    assert run("ingest").stdout.startswith("1 new message")  # nothing was half-written


@pytest.mark.engines("sqlite")  # a lock only an SQLite file has
def test_a_locked_database_skips_the_hit_not_the_search(
    memory_dir: Path, run: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a hit is the only write a search makes, and a ranking hint: while
    another program holds the database it is skipped, as a busy project lock's is,
    and the results are printed."""
    _pnpm(memory_dir, run)
    with _held_database(tmp_path, monkeypatch):
        fast = subrosa_forked("search", "--json", "pnpm")  # the fast path
        assert fast.returncode == 0, fast.stderr.decode()
        assert json.loads(fast.stdout)[0]["slug"] == "user_prefers_pnpm"
        assert _search(run, "pnpm")[0]["slug"] == "user_prefers_pnpm"  # the click command
    assert _hits(tmp_path) == [0]
    _search(run, "pnpm")
    assert _hits(tmp_path) == [1]


@pytest.mark.engines("sqlite")  # two database files, one per process
def test_a_file_of_many_sessions_is_stored_alike_whatever_the_hash_seed(
    memory_dir: Path, tmp_path: Path
) -> None:
    # The sessions of a batch were stored in a set's order: which session's messages got
    # the lower ids changed with PYTHONHASHSEED, so two ingests of one file differed.
    sessions = [f"s-{n}" for n in range(12)]
    _transcript(
        "many.jsonl",
        *(
            _record(f"m-{n}-{s}", f"message {n} of {s}", session=s)
            for n in range(3)
            for s in sessions
        ),
    )
    stored = []
    for seed in ("1", "2", "3"):
        database = tmp_path / f"seed-{seed}.db"
        env = os.environ | {"PYTHONHASHSEED": seed, "SUBROSA_DB": str(database)}
        proc = subprocess.run(
            [sys.executable, "-m", "subrosa", "ingest", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        with sqlite3.connect(database) as conn:
            stored.append(conn.execute("SELECT id, uuid FROM messages ORDER BY id").fetchall())
    assert len(stored[0]) == 36
    assert stored[0] == stored[1] == stored[2]


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_a_read_only_memory_dir_is_searched_without_counting(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    from tests.test_hostile_input import _read_only, _restore_write

    _pnpm(memory_dir, run)
    prefix = _read_only(memory_dir)
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-m", "subrosa", "search", "--json", "pnpm"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _restore_write(memory_dir)
    if prefix and "mount" in proc.stderr:
        pytest.skip(f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert [r["kind"] for r in json.loads(proc.stdout)] == ["fact", "message"]
    assert _hits(tmp_path) == [0]


@pytest.mark.engines("sqlite")  # reads the file, or a path only SQLite has
def test_a_search_never_recreates_a_memory_dir_that_went(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    _pnpm(memory_dir, run)
    memory_dir.rename(tmp_path / "moved")
    fast = subrosa_process("search", "--json", "--all-projects", "pnpm")
    assert fast.returncode == 0, fast.stderr
    assert json.loads(fast.stdout)[0]["slug"] == "user_prefers_pnpm"
    assert _search(run, "--all-projects", "pnpm")[0]["slug"] == "user_prefers_pnpm"
    assert not memory_dir.exists()
    assert _hits(tmp_path) == [0]


def test_demo_searches_the_facts(run: RunCli) -> None:
    out = run("demo").stdout
    assert "$ subrosa search pnpm" in out
    assert "fact user_prefers_pnpm" in out
    # Each command shown is one a reader can paste: quoted, and the SLUG spelling.
    assert "$ subrosa fact upsert user_prefers_pnpm --hook 'pnpm only, never npm or yarn'" in out


@pytest.fixture
def archive_db(tmp_path: Path) -> sqlite3.Connection:
    from subrosa.archive.ingest import Ingester, Source
    from subrosa.db import open_database

    path = tmp_path / "fuzz.db"
    open_database(f"sqlite:///{path}")
    source = tmp_path / "s.jsonl"
    source.write_text(
        "\n".join(
            _record(f"m{i}", text)
            for i, text in enumerate(
                ["deploy the app", "東京 and 서울", "col:val AND OR", 'NEAR(x) "quoted"']
            )
        )
        + "\n"
    )
    conn = connect(path)
    Ingester(conn).ingest([Source(str(source), "p")])
    return conn


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=40))
def test_any_query_returns_a_list(archive_db: sqlite3.Connection, query: str) -> None:
    assert isinstance(search(archive_db, query, Filters(), 5), list)


def test_repeats_are_left_out_of_table_and_index_alike(tmp_path: Path) -> None:
    from subrosa.archive.ingest import Ingester, Source
    from subrosa.db import open_database

    path = tmp_path / "dups.db"
    open_database(f"sqlite:///{path}")
    first = tmp_path / "a.jsonl"
    first.write_text(
        "\n".join([_record("m1", "alpha one"), _record("m2", "beta two"), _record("m1", "alpha")])
        + "\n"
    )
    second = tmp_path / "b.jsonl"
    second.write_text("\n".join([_record("m2", "beta two"), _record("m3", "gamma three")]) + "\n")
    conn = connect(path)
    report = Ingester(conn).ingest([Source(str(first), "p"), Source(str(second), "p")])
    assert (report.new_messages, report.duplicate_messages) == (3, 2)
    rows = conn.execute("SELECT id, uuid, text FROM messages ORDER BY id").fetchall()
    assert [(uuid, text) for _, uuid, text in rows] == [
        ("m1", "alpha one"),
        ("m2", "beta two"),
        ("m3", "gamma three"),
    ]
    # The index holds exactly the stored rows (FTS5 checks it against the table).
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    hits = conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'gamma OR beta'"
    ).fetchall()
    assert sorted(hit[0] for hit in hits) == [rows[1][0], rows[2][0]]
    # Foreign keys are off only inside the ingest's own transactions.
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_ingest_raises_the_index_buffer_of_an_older_archive(tmp_path: Path) -> None:
    """FTS5's hashsize is stored in the index: an archive tuned by an older ingest (8 MB)
    gets FTS_HASH_BYTES at its next ingest, and its index stays whole."""
    from subrosa.archive.ingest import FTS_HASH_BYTES, Ingester, Source
    from subrosa.db import open_database

    path = tmp_path / "older.db"
    open_database(f"sqlite:///{path}")
    conn = connect(path)
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('hashsize', ?)", (8 << 20,))
    conn.commit()
    source = tmp_path / "a.jsonl"
    source.write_text(_record("m1", "alpha one") + "\n")
    Ingester(conn).ingest([Source(str(source), "p")])
    stored = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'hashsize'").fetchone()
    assert stored[0] == FTS_HASH_BYTES == 32 << 20
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


def test_a_limit_past_the_rerank_window_is_honoured(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`search --limit N` returns N results when N messages match, even past the window
    of newest matches ranked here (RERANK; 1,000, made 10 here) and with a common
    phrase (SELECTIVE made 1, so the rerank path runs). Each text its own (copies of one
    text would be one result): its number spelled in letters."""
    monkeypatch.setattr("subrosa.archive.search.RERANK", 10)
    monkeypatch.setattr("subrosa.archive.search.SELECTIVE", 1)
    spelled = ["".join("abcdefghij"[int(d)] for d in str(n)) for n in range(40)]
    records = (_record(f"m{n}", f"deploy step {word}") for n, word in enumerate(spelled))
    _transcript("s-1.jsonl", *records)
    _ingest(run)
    assert len(_search(run, "deploy", "--transcripts", "--limit", "25")) == 25
    assert len(_search(run, "deploy", "--transcripts", "--limit", "500")) == 40
    assert len(_search(run, "deploy", "--transcripts", "--limit", "5")) == 5


def test_a_limit_past_the_windows_is_honoured_when_copies_fold(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies of one text are one result, so windows of `--limit` messages can hold
    fewer than `--limit` results while more match: the windows widen until they do
    (RERANK, RERANK_SOME made 10 here; the newest matches are 30 copies of an error)."""
    monkeypatch.setattr("subrosa.archive.search.RERANK", 10)
    monkeypatch.setattr("subrosa.archive.search.RERANK_SOME", 10)
    monkeypatch.setattr("subrosa.archive.search.RERANK_BEST", 10)
    monkeypatch.setattr("subrosa.archive.search.SELECTIVE", 1)
    spelled = ["".join("abcdefghij"[int(d)] for d in str(n)) for n in range(40)]
    distinct = [_record(f"m{n}", f"{w} deploy step {w}") for n, w in enumerate(spelled)]
    copies = [_record(f"c{n}", f"deploy failed: exit {n}") for n in range(30)]
    _transcript("s-1.jsonl", *distinct, *copies)
    more = [
        _record(f"o{n}", f"{w} deploy in another session {w}", session=f"s-{n + 2}")
        for n, w in enumerate(spelled[:12])
    ]
    _transcript("a.jsonl", *more)  # archived first: the copies are the newest matches
    _ingest(run)
    found = _search(run, "deploy", "--transcripts", "--limit", "25")
    assert len(found) == 25
    assert len(_search(run, "deploy", "--transcripts", "--limit", "500")) == 40 + 1 + 12
    sessions = _search(run, "deploy", "--sessions", "--limit", "13")
    assert len(sessions) == 13


def test_transcripts_under_walks_as_os_walk_does(tmp_path: Path) -> None:
    """transcripts_under is os.walk by hand (one scandir per folder, for a no-op
    re-ingest of thousands of files): the same files in the same order, hidden (but
    `.claude`) and symlinked folders left out, links and FIFOs named .jsonl listed as
    os.walk lists them."""
    from subrosa.archive.ingest import transcripts_under

    top = tmp_path / "t"
    for folder in ("a/b/c", ".hidden", "z", "a/subagents", "a/.git", "h/.claude/projects/p"):
        (top / folder).mkdir(parents=True)
    for name in (
        *("1", "a/2", "a/b/3", "a/b/c/4", ".hidden/5", "z/6", "a/subagents/7", "a/.git/8"),
        "h/.claude/projects/p/9",
    ):
        (top / f"{name}.jsonl").write_text("{}\n")
    (top / "a" / "notes.txt").write_text("x")
    (top / "a" / "linked").symlink_to(top / "z", target_is_directory=True)
    (top / "a" / "link.jsonl").symlink_to(top / "1.jsonl")
    (top / "a" / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(top / "a" / "fifo.jsonl")
    walked = []
    for root, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d == ".claude")
        walked += [os.path.join(root, f) for f in sorted(files) if f.endswith(".jsonl")]
    assert transcripts_under(top) == walked
    assert len(walked) == 10


def test_ingest_of_a_copied_home_folder_finds_its_sessions_in_their_projects(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """`subrosa ingest ~/old-laptop` (a home folder copied from another machine): its
    transcripts are in `.claude/projects/<project>/`, a hidden folder. Ingest enters
    `.claude` (no other hidden folder: `.subrosa/facts.jsonl` is no transcript), and each
    session keeps the project it had there, as under this machine's own Claude folder;
    a transcript elsewhere in the copy joins the current project, as before."""
    old = tmp_path / "old-laptop"
    projects = old / ".claude" / "projects"
    (projects / "-home-ana-tool").mkdir(parents=True)
    (projects / "-home-ana-site" / "s-2" / "subagents").mkdir(parents=True)
    (old / ".subrosa").mkdir()
    (old / "notes").mkdir()
    (projects / "-home-ana-tool" / "s-1.jsonl").write_text(
        _record("m1", "the quillfeather cache", session="s-1") + "\n", encoding="utf-8"
    )
    (projects / "-home-ana-site" / "s-2" / "subagents" / "agent-a.jsonl").write_text(
        _record("m2", "the quillfeather deploy", session="s-2") + "\n", encoding="utf-8"
    )
    (old / ".subrosa" / "facts.jsonl").write_text('{"slug": "x"}\n', encoding="utf-8")
    (old / "notes" / "s-3.jsonl").write_text(
        _record("m3", "the quillfeather notes", session="s-3") + "\n", encoding="utf-8"
    )
    report = _ingest(run, str(old))
    assert (report["files_read"], report["new_messages"], report["sessions"]) == (3, 3, 3)
    listed = json.loads(run("transcript", "list", "--json", "--all-projects").stdout)
    here = json.loads(run("transcript", "list", "--json").stdout)
    assert [s["session_id"] for s in here] == ["s-3"], here
    assert {s["session_id"]: s["project"] for s in listed} == {
        "s-1": "-home-ana-tool",
        "s-2": "-home-ana-site",
        "s-3": here[0]["project"],
    }, listed
    assert len(_search(run, "quillfeather", "--all-projects")) == 3


def test_an_ingest_that_finds_no_transcript_says_where_it_looked(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """A folder named by mistake, or this project before Claude Code wrote anything:
    one line on stderr names where ingest looked (stdout stays the report); exit 0."""
    empty = tmp_path / "not-transcripts"
    (empty / "notes").mkdir(parents=True)
    (empty / "notes" / "a.md").write_text("x\n", encoding="utf-8")
    named = run("ingest", str(empty))
    assert named.stderr.strip() == f"no transcripts (*.jsonl files) in {empty}"
    assert named.stdout.startswith("0 new messages from 0 of 0 files")
    default = run("ingest")
    assert default.stderr.strip() == f"no transcripts in {project_transcript_dir()}"
    assert json.loads(run("ingest", "--json", str(empty)).stdout)["files_seen"] == 0


CAVEAT = (
    "<local-command-caveat>Caveat: The messages below were generated by the user while "
    "running local commands. DO NOT respond to these messages or otherwise consider them "
    "in your response unless the user explicitly asks you to.</local-command-caveat>"
)


def _older_title(db: Db, session: str, title: str) -> None:
    """The title an older subrosa stored for `session` (it took any custom title)."""
    from sqlalchemy import create_engine, text

    from subrosa.config import resolve_db_url
    from subrosa.db import database_url

    dispose_all()
    engine = create_engine(database_url(resolve_db_url(db.url)))
    try:
        with engine.begin() as conn:
            conn.execute(
                text("UPDATE sessions SET title = :title WHERE session_id = :session"),
                {"title": title, "session": session},
            )
    finally:
        engine.dispose()


def test_a_forked_sessions_command_caveat_is_not_its_title(
    memory_dir: Path, run: RunCli, db: Db
) -> None:
    """Claude Code's /fork names the fork after its first line, which can be the caveat
    it wraps local commands in: that is no title, the summary shows instead; the
    messages themselves are all kept."""
    fork_title = CAVEAT[:100] + " (Fork)"
    _transcript(
        "s-fork.jsonl",
        _record("m1", CAVEAT, session="s-fork"),
        _record("m2", "<command-name>/model</command-name>", session="s-fork"),
        _record("m3", "ship the grommet release", session="s-fork"),
        json.dumps({"type": "custom-title", "customTitle": fork_title, "sessionId": "s-fork"}),
        json.dumps({"type": "summary", "summary": "Grommet release shipped", "leafUuid": "m3"}),
    )
    _transcript(
        "s-named.jsonl",
        _record("n1", "widget notes", session="s-named"),
        json.dumps({"type": "custom-title", "customTitle": "Grommets", "sessionId": "s-named"}),
        json.dumps({"type": "ai-title", "aiTitle": CAVEAT, "sessionId": "s-named"}),
    )
    _ingest(run)

    def check() -> None:
        sessions = json.loads(run("transcript", "list", "--json").stdout)
        listed = {s["session_id"]: s for s in sessions}
        assert listed["s-fork"]["title"] is None
        assert listed["s-fork"]["summary"] == "Grommet release shipped"
        assert listed["s-named"]["title"] == "Grommets"  # a later caveat does not replace it
        text_list = run("transcript", "list").stdout
        assert "Caveat" not in text_list and "Grommet release shipped" in text_list
        found = run("search", "--sessions", "grommet").stdout
        assert "Caveat" not in found and "Grommet release shipped" in found
        (session,) = _search(run, "--sessions", "grommet")
        assert session["title"] is None
        shown = run("transcript", "show", "s-fork").stdout
        assert "title: Grommet release shipped" in shown
        assert shown.count("Caveat:") == 1  # the message itself is kept, as it was typed
        assert "/model" in shown

    check()
    _older_title(db, "s-fork", fork_title)
    check()


def _runs_check(run: RunCli, expect: int | None = None) -> dict[str, Any]:
    """Doctor's "search runs" check (`--json`)."""
    checks = json.loads(run("doctor", "--json", expect=expect).stdout)["checks"]
    (runs,) = [c for c in checks if c["name"] == "search runs"]
    return runs  # type: ignore[no-any-return]


def test_doctor_finds_messages_outside_their_runs_and_db_upgrade_derives_them_again(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    # Runs lost (a defect, a hand-edited database): a small project's search would miss
    # those messages. Doctor counts them; `db upgrade` derives the runs again, as 0009 did.
    _interleaved(run)
    kept = db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2")
    assert _runs_check(run)["ok"]
    db.rows(
        "DELETE FROM message_runs WHERE session_pk IN (SELECT id FROM sessions"
        " WHERE session_id IN ('mine-0', 'busy-3'))"
    )
    runs = _runs_check(run, expect=1)
    assert not runs["ok"] and runs["detail"].startswith("47 archived message(s) lie outside")
    assert "derived each session's runs of ids again: 47" in run("db", "upgrade").stdout
    assert db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2") == kept
    assert _runs_check(run)["ok"]
    assert "derived" not in run("db", "upgrade").stdout  # nothing to mend: nothing written
    # A run reaching over another session's messages: a small project's search keeps
    # what lies inside its runs untested, so those would be found in this project.
    db.rows(
        "UPDATE message_runs SET hi = hi + 5 WHERE session_pk = (SELECT id FROM sessions"
        " WHERE session_id = 'mine-0') AND lo = (SELECT min(r.lo) FROM message_runs r"
        " JOIN sessions s ON s.id = r.session_pk WHERE s.session_id = 'mine-0')"
    )
    runs = _runs_check(run, expect=1)
    assert not runs["ok"] and runs["detail"].startswith("5 archived message(s) lie outside")
    assert "derived each session's runs of ids again: 5" in run("db", "upgrade").stdout
    assert db.rows("SELECT session_pk, lo, hi FROM message_runs ORDER BY 1, 2") == kept


def test_migration_0011_reads_again_the_transcripts_holding_queued_prompts(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    # Before 0011 ingest skipped queue records: a prompt typed while Claude worked was
    # lost. The migration forgets the ingest state of the files holding one, so the next
    # ingest adds the prompt, and nothing else twice.
    queued = {"type": "queue-operation", "sessionId": "q", "timestamp": "2026-03-01T10:00:01Z"}
    _transcript(
        "q.jsonl",
        _record("ask", "build the zanzibar report", session="q"),
        json.dumps(queued | {"operation": "enqueue", "content": "and mail it to the quokka"}),
        json.dumps(queued | {"operation": "remove"}),
        _record("done", "Built the report.", role="assistant", session="q"),
    )
    _transcript("plain.jsonl", _record("p", "a plain zanzibar session", session="plain"))
    _ingest(run)
    assert len(_search(run, "quokka")) == 1
    # As an archive ingested before 0011 holds it: the prompt missing.
    db.rows("DELETE FROM messages WHERE text = 'and mail it to the quokka'")
    db.migrate("0010", down=True)
    files = "SELECT path FROM ingested_files ORDER BY path"
    assert [Path(p).name for (p,) in db.rows(files)] == ["plain.jsonl", "q.jsonl"]
    db.migrate("head")
    assert [Path(p).name for (p,) in db.rows(files)] == ["plain.jsonl"]
    report = _ingest(run)
    assert (report["new_messages"], report["files_read"]) == (1, 1)
    assert sorted(r["uuid"] for r in _search(run, "zanzibar")) == ["ask", "p"]
    assert len(_search(run, "quokka")) == 1


ANSWER = 'User has answered your questions: "Which store?"="zanzibar, the sqlite one"'


def test_migration_0013_relabels_what_nobody_typed_as_a_new_archive_holds_it(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    # Before 0013 ingest kept a command's output and a task's notice as the user's words,
    # a subagent's prompt and a compaction's summary too, and the person's answer to
    # AskUserQuestion as a tool's output. An old archive migrated holds them as a new one
    # ingested from the same transcripts does.
    main = _transcript(
        "r.jsonl",
        _record("ask", "find the zanzibar files", session="r"),
        _record(
            "cmd", "<local-command-stdout>Set model to zanzibar</local-command-stdout>", session="r"
        ),
        _record("note", "\n<task-notification>zanzibar task done</task-notification>", session="r"),
        _record(
            "sum",
            "Summary: the person asked for the zanzibar files.",
            session="r",
            isCompactSummary=True,
        ),
        _record("done", "Found the zanzibar files.", role="assistant", session="r"),
        _record(
            "answer", [{"type": "tool_result", "tool_use_id": "q", "content": ANSWER}], session="r"
        ),  # type: ignore[arg-type]
    )
    subagents = main.parent / "r" / "subagents"
    subagents.mkdir(parents=True)
    result = [{"type": "tool_result", "tool_use_id": "t", "content": "zanzibar.txt"}]
    (subagents / "agent-1.jsonl").write_text(
        "".join(
            line + "\n"
            for line in (
                _record("sub-ask", "Search for zanzibar", session="r", isSidechain=True),
                _record("sub-out", result, session="r", isSidechain=True),  # type: ignore[arg-type]
                _record(
                    "sub-done", "zanzibar.txt", role="assistant", session="r", isSidechain=True
                ),
            )
        ),
        encoding="utf-8",
    )
    _ingest(run)
    held = "SELECT uuid, role, text FROM messages ORDER BY uuid"
    new = db.rows(held)
    assert {uuid: role for uuid, role, _ in new} == {
        "ask": "user",
        "cmd": "user",
        "note": "user",
        "sum": "assistant",
        "done": "assistant",
        "sub-ask": "assistant",
        "sub-out": "user",
        "sub-done": "assistant",
        "answer": "user",
    }
    labelled = {uuid: text for uuid, _, text in new if text.startswith("[tool result] ")}
    assert sorted(labelled) == ["cmd", "note", "sub-out"]
    # As an archive ingested before 0013 holds them.
    db.rows("UPDATE messages SET text = substr(text, 15) WHERE uuid IN ('cmd', 'note')")
    db.rows("UPDATE messages SET role = 'user' WHERE uuid IN ('sum', 'sub-ask')")
    db.rows("UPDATE messages SET text = '[tool result] ' || text WHERE uuid = 'answer'")
    assert db.rows(held) != new
    db.migrate("0012", down=True)
    db.migrate("head")
    assert db.rows(held) == new
    assistant = {r["uuid"] for r in _search(run, "zanzibar", "--role", "assistant")}
    assert assistant == {"sum", "done", "sub-ask", "sub-done"}


def test_a_queued_prompt_read_across_a_batch_boundary_is_archived_once(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ingest reads a file in batches (4 MB; Claude Code 2.1.332 writes each request's
    # whole body into the transcript, so a long session spans many). A prompt typed
    # while Claude works is queued in one batch and taken up in a later one (into the
    # running turn: a queued_command attachment; as the next turn: a user record): it
    # is archived once, not once from each batch.
    from subrosa.archive import ingest

    monkeypatch.setattr(ingest, "CHUNK_BYTES", 512)
    session = {"sessionId": "s-1"}

    def queue(operation: str, at: str, **extra: Any) -> str:
        record = {"type": "queue-operation", "operation": operation, **session, **extra}
        return json.dumps({**record, "timestamp": f"2026-03-01T10:00:{at}Z"})

    tool_output = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "slept " * 200}],
    }
    attachment = {
        "type": "attachment",
        "uuid": "q1",
        **session,
        "timestamp": "2026-03-01T10:00:01Z",
        "attachment": {"type": "queued_command", "prompt": "also the QUOKKA cache"},
    }
    _transcript(
        "s-1.jsonl",
        _record("u1", "Sleep a little."),
        queue("enqueue", "01", content="also the QUOKKA cache"),
        queue("enqueue", "02", content="then the WALLABY logs"),
        json.dumps({"type": "user", "uuid": "u2", **session, "message": tool_output}),
        json.dumps(attachment),
        queue("remove", "05", content="also the QUOKKA cache"),
        _record("a1", "Slept; the cache is warm.", role="assistant"),
        json.dumps({"type": "user", "uuid": "u3", **session, "message": tool_output}),
        queue("dequeue", "09"),
        _record("u4", "then the WALLABY logs", timestamp="2026-03-01T10:00:09Z"),
    )
    assert _ingest(run)["new_messages"] == 6
    shown = json.loads(run("transcript", "show", "s-1", "--json").stdout)
    said = [m["text"] for m in shown["messages"] if m["kind"] == "user"]
    assert said == ["Sleep a little.", "also the QUOKKA cache", "then the WALLABY logs"]


def test_two_scopes_are_refused_and_an_unknown_message_named(memory_dir: Path, run: RunCli) -> None:
    # `--all-projects --project X` was one scope silently (the other dropped); an
    # empty listing of every project suggested --all-projects; --around named only
    # numbers, though it takes a uuid too.
    _transcript("s-1.jsonl", _record("m1", "the zanzibarite deployment plan"))
    _ingest(run)
    both = "--all-projects and --project name two scopes: give one of them."
    for command in (["search", "zanzibarite"], ["transcript", "list"]):
        refused = run(*command, "--all-projects", "--project", "x", expect=2)
        assert both in refused.stderr, refused.stderr
    listed = run("transcript", "list", "--all-projects", "--by", "nobody").stdout
    assert listed.strip() == "no archived sessions from nobody in any project"
    shown = run("transcript", "show", "s-1", "--around", "no-such-uuid", expect=2)
    assert "no-such-uuid: no message of session s-1 has this number or uuid" in shown.stderr


def test_an_empty_project_name_or_paths_with_pending_are_refused(
    memory_dir: Path, run: RunCli
) -> None:
    """`--project ''` (an unset variable in a script) searched this project without a
    word, and `ingest --pending PATH` read only the ended sessions, PATH never: each is
    refused in one sentence (exit 2), nothing read."""
    path = _transcript("s-1.jsonl", _record("m1", "a glimmerwick appears"))
    for args in (
        ["search", "--project", "", "glimmerwick"],
        ["transcript", "list", "--project", " "],
    ):
        result = run(*args, expect=2)
        assert "--project" in result.stderr and "empty" in result.stderr, args
    for args in (["ingest", "--pending", str(path)], ["ingest", "--pending", "--all-projects"]):
        result = run(*args, expect=2)
        assert "--pending" in result.stderr, args
    assert _ingest(run)["new_messages"] == 1  # nothing was read before
