"""The Claude Code hooks as Claude Code runs them: real processes, JSON on stdin."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subrosa.archive import pending
from subrosa.claude import checkpoint
from subrosa.claude.hooks import INDEX_MAX_LINES, render_index
from subrosa.paths import auto_memory_dir
from tests.conftest import RunCli, subrosa_loading, subrosa_process
from tests.markdown import active_markdown

HOOK_NAMES = ("session-start", "stop", "session-end")


@pytest.fixture(autouse=True)
def no_background_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detached ingest would outlive the test's tmp_path; the pending record is what
    these tests check (the transcript issue tests the ingest that drains it)."""
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "0")


def hook(name: str, payload: dict[str, Any] | str | bytes) -> subprocess.CompletedProcess[str]:
    """Run one hook as Claude Code does; it must exit 0. Output decoded as text."""
    data = json.dumps(payload) if isinstance(payload, dict) else payload
    result = subrosa_process("hook", name, input=data)
    assert result.returncode == 0, result.stderr
    return subprocess.CompletedProcess(
        result.args, 0, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def transcript(tmp_path: Path, session_id: str, text: str = '{"type": "user"}\n') -> Path:
    path = tmp_path / "transcripts" / f"{session_id}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def event(session_id: str, path: Path, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"session_id": session_id, "transcript_path": str(path), "cwd": str(cwd), **extra}


def grow(path: Path, record: dict[str, Any] | None = None) -> Path:
    """Append one record, as every turn of a real session does."""
    record = record or {"type": "assistant", "message": {"role": "assistant", "content": "ok"}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    return path


def stop_turn(session_id: str, path: Path, cwd: Path, **extra: Any) -> str:
    """One turn ends: the transcript grew, Stop runs. Its stdout."""
    return hook("stop", event(session_id, grow(path), cwd, **extra)).stdout


def prompt(text: str) -> dict[str, Any]:
    """A person's prompt as Claude Code 2.1 records it."""
    return {"type": "user", "promptId": "p", "message": {"role": "user", "content": text}}


def project_with_auto_memory(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder and its Claude Code auto-memory dir, both made."""
    project = tmp_path / "project"
    project.mkdir()
    memory = Path(auto_memory_dir(project))
    memory.mkdir(parents=True)
    return project, memory


def context_of(result: subprocess.CompletedProcess[str]) -> str:
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context: str = output["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 10_000
    return context


def test_stop_blocks_exactly_once_on_the_15th_turn(memory_dir: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, "s1")
    outputs = [stop_turn("s1", path, tmp_path) for _ in range(15)]
    assert [i for i, out in enumerate(outputs, 1) if out.strip()] == [15]
    decision = json.loads(outputs[-1])
    assert decision["decision"] == "block"
    reason = decision["reason"]
    for needle in ("memory-extraction", "s1", "subrosa generate", "checkpoint-mark --session s1"):
        assert needle in reason
    state = json.loads((memory_dir / ".extract" / "s1.json").read_text())
    assert state["turns"] == 15


def test_a_memory_dir_whose_name_holds_a_link_forms_none_in_what_the_hooks_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent reads the Stop nudge and the SessionStart header, which name the
    memory dir: a folder name cannot put a link (or an image) into them."""
    memory = tmp_path / "[docs](https:evil.example) ![i](x.png)" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [A](a.md) — a hook\n")
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    path = transcript(tmp_path, "s1")
    context = context_of(hook("session-start", event("s1", path, tmp_path)))
    header = context.split("\n\n")[0]
    assert "[docs]\\(https:evil.example) ![i]\\(x.png)" in header
    assert active_markdown(header) == []
    assert "- [A](a.md) — a hook" in context  # the index's own link stays
    reason = json.loads([stop_turn("s1", path, tmp_path) for _ in range(15)][-1])["reason"]
    assert "[docs]\\(https:evil.example)" in reason and active_markdown(reason) == []


def test_checkpoint_list_shows_a_planted_queue_entry_inert(memory_dir: Path, run: RunCli) -> None:
    """A repository may ship `.extract/queue/` (a memory dir kept in git): what the
    extraction skill reads of it in `checkpoint-list` forms no link or tag."""
    queue = memory_dir / ".extract" / "queue"
    queue.mkdir(parents=True)
    entry = {
        "session_id": "# s1",
        "transcript_path": "/t/[click](https://evil.example/x) <b>.jsonl",
        "reason": "[r](https://evil.example/r)",
        "ended_at": 0,
    }
    (queue / "s1.json").write_text(json.dumps(entry))
    listed = run("checkpoint-list").stdout
    assert active_markdown(listed) == [], listed
    assert "    /t/[click]\\(https://evil.example/x) ‹b›.jsonl" in listed
    assert listed.startswith("\\# s1  ended ")
    [kept] = json.loads(run("checkpoint-list", "--json").stdout)
    assert kept["transcript_path"] == entry["transcript_path"]


def test_a_checkpoint_mark_restarts_the_turn_count(
    memory_dir: Path, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBROSA_NUDGE_EVERY", "3")
    path = transcript(tmp_path, "s6")
    assert [stop_turn("s6", path, tmp_path) for _ in range(2)] == ["", ""]
    run("checkpoint-mark", "--session", "s6")  # extracted on turn 2
    outputs = [stop_turn("s6", path, tmp_path) for _ in range(3)]
    assert [bool(out) for out in outputs] == [False, False, True]


def test_stop_never_blocks_while_a_stop_hook_is_active(memory_dir: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, "s2")
    for _ in range(15):
        assert stop_turn("s2", path, tmp_path, stop_hook_active=True) == ""


def test_nudge_every_comes_from_the_environment_and_the_config_file(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = transcript(tmp_path, "s3")
    monkeypatch.setenv("SUBROSA_NUDGE_EVERY", "2")
    assert [bool(stop_turn("s3", path, tmp_path)) for _ in range(4)] == [
        False,
        True,
        False,
        True,
    ]
    monkeypatch.delenv("SUBROSA_NUDGE_EVERY")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("nudge_every = 1\n")
    assert stop_turn("s4", path, tmp_path)
    config.write_text("nudge_every = 'often'\n")  # broken: fail open with the default
    result = hook("stop", event("s5", grow(path), tmp_path))
    assert result.stdout == "" and "nudge_every" in result.stderr


def test_the_queue_from_session_end_to_checkpoint_clear(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    t1, t2 = transcript(tmp_path, "s1"), transcript(tmp_path, "s2")
    hook("session-end", event("s1", t1, tmp_path, reason="prompt_input_exit"))
    hook("session-end", event("s2", t2, tmp_path, reason="clear"))
    listed = json.loads(run("checkpoint-list", "--json").stdout)
    assert [(e["session_id"], e["reason"]) for e in listed] == [
        ("s1", "prompt_input_exit"),
        ("s2", "clear"),
    ]
    assert {"session_id", "transcript_path", "reason", "ended_at"} <= set(listed[0])
    assert listed[0]["transcript_path"] == str(t1)

    t3 = transcript(tmp_path, "s3")
    context = context_of(hook("session-start", event("s3", t3, tmp_path, source="startup")))
    assert "2 earlier sessions" in context and "memory-extraction" in context

    # The live session (s3, from SessionStart) is marked without an argument.
    marked = run("checkpoint-mark").stdout
    assert "s3" in marked and str(t3.stat().st_size) in marked
    hook("session-end", event("s3", t3, tmp_path, reason="other"))
    assert [e["session_id"] for e in json.loads(run("checkpoint-list", "--json").stdout)] == [
        "s1",
        "s2",
    ]

    # A mark taken after s1 ended takes it off the queue; ending again unchanged: not queued.
    run("checkpoint-mark", "--session", "s1")
    hook("session-end", event("s1", t1, tmp_path, reason="other"))
    assert [e["session_id"] for e in json.loads(run("checkpoint-list", "--json").stdout)] == ["s2"]
    # The transcript grows past the mark with the rest of the extraction's turn only
    # (tool results, the final text): still covered.
    grow(t1, {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "cleared 0"}]}})  # fmt: skip
    grow(t1)
    hook("session-end", event("s1", t1, tmp_path, reason="other"))
    assert [e["session_id"] for e in json.loads(run("checkpoint-list", "--json").stdout)] == ["s2"]
    # Someone went on talking after the mark: queued again, still once.
    grow(t1, prompt("One more thing."))
    hook("session-end", event("s1", t1, tmp_path, reason="other"))
    hook("session-end", event("s1", t1, tmp_path, reason="other"))
    ids = [e["session_id"] for e in json.loads(run("checkpoint-list", "--json").stdout)]
    assert sorted(ids) == ["s1", "s2"]

    assert "cleared 2 queued sessions" in run("checkpoint-clear").stdout
    assert json.loads(run("checkpoint-list", "--json").stdout) == []
    assert "no sessions queued" in run("checkpoint-list").stdout
    assert hook("session-start", event("s4", t3, tmp_path)).stdout == ""


def test_session_end_hands_the_transcript_to_the_archive(memory_dir: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, "s1")
    hook("session-end", event("s1", path, tmp_path, reason="other"))
    entries = pending.list_pending()
    assert [(e["transcript_path"], e["session_id"]) for _, e in entries] == [(str(path), "s1")]
    # One file per transcript path, named by its SHA-1 (the drop box's contract).
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:20]
    assert os.path.basename(entries[0][0]) == f"{digest}.json"


def test_a_session_without_a_transcript_is_not_queued(memory_dir: Path, tmp_path: Path) -> None:
    hook("session-end", event("s1", tmp_path / "never-written.jsonl", tmp_path))
    assert checkpoint.queued(memory_dir) == []


def test_checkpoint_mark_needs_a_session(memory_dir: Path, run: RunCli) -> None:
    assert "pass --session" in run("checkpoint-mark", expect=2).stderr
    assert "no transcript found" in run("checkpoint-mark", "--session", "ghost", expect=2).stderr


def test_checkpoint_mark_finds_the_transcript_where_claude_code_keeps_it(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    transcripts = Path(auto_memory_dir(project)).parent
    transcripts.mkdir(parents=True)
    (transcripts / "abc.jsonl").write_text("{}\n")
    data = json.loads(run("checkpoint-mark", "--session", "abc", "--json").stdout)
    assert data["size"] == 3 and data["transcript_path"] == str(transcripts / "abc.jsonl")
    assert checkpoint.mark_size(auto_memory_dir(project), "abc") == 3


BAD_STDIN: list[bytes] = [
    b"",
    b"   \n",
    b"garbage",
    b'{"session_id": "s1", "transcript_pa',
    b"[1, 2, 3]",
    b'"a string"',
    b"\xff\xfe\x00\x01",
    b'{"session_id": 5, "cwd": ["x"], "transcript_path": {"a": 1}}',
    b'{"session_id": "../../../etc/passwd", "stop_hook_active": false}',
]


@pytest.mark.parametrize("name", HOOK_NAMES)
def test_bad_stdin_exits_0_with_nothing_on_stdout(
    name: str, memory_dir: Path, tmp_path: Path
) -> None:
    for data in BAD_STDIN:
        result = hook(name, data)
        assert result.stdout == "", (data, result.stdout)
        assert len(result.stderr.splitlines()) <= 1, (data, result.stderr)
    assert not (tmp_path.parent / "etc").exists()
    for path in (memory_dir / ".extract").rglob("*"):
        assert memory_dir / ".extract" in path.parents


def test_unknown_hook_name_fails_open() -> None:
    result = hook("pre-tool-use", {"session_id": "s"})
    assert result.stdout == "" and "unknown hook" in result.stderr


@pytest.mark.parametrize("name", HOOK_NAMES)
def test_missing_memory_dir_and_unwritable_state_fail_open(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = transcript(tmp_path, "s1")
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(tmp_path / "nowhere" / "memory"))
    monkeypatch.setenv("SUBROSA_NUDGE_EVERY", "1")
    result = hook(name, event("s1", path, tmp_path))
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert "does not exist" in result.stderr
    # `.extract` is a file, so nothing can be written under it (works even as root).
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / ".extract").write_text("in the way")
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    result = hook(name, event("s1", path, tmp_path))
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1


def test_hook_path_imports_the_standard_library_only(memory_dir: Path, tmp_path: Path) -> None:
    """Each hook doing all it can (queue, index injection, a block, an archive record)
    loads none of the heavy dependencies, nor `typing` (~4 ms of a ~40 ms hook:
    subrosa.lazyre keeps it out)."""
    (memory_dir / "MEMORY.md").write_text("# Memory\n\n- [A](a.md) — a fact\n")
    t1 = transcript(tmp_path, "s1")
    report = tmp_path / "modules.json"
    env = {**os.environ, "SUBROSA_NUDGE_EVERY": "1"}
    heavy = {"sqlalchemy", "click", "rich", "yaml", "frontmatter", "alembic", "filelock"}
    heavy.add("typing")
    for name in ("session-end", "session-start", "stop"):
        result, loaded = subrosa_loading(
            "hook",
            name,
            report=report,
            input=json.dumps(event("s1", t1, tmp_path, reason="other")).encode(),
            env=env,
        )
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        if name != "session-end":
            assert result.stdout.strip(), name
        assert not loaded & heavy, (name, loaded & heavy)


# pathlib brings fnmatch, ntpath and urllib.parse, which brings ipaddress: ~4 ms of a
# ~30 ms hook process (subrosa.paths works on str instead); contextlib ~0.5 ms more.
NOT_ON_THE_HOOK_PATH = {"pathlib", "urllib", "ipaddress", "contextlib"}


def _hook_loading(
    name: str, stdin: bytes, env: dict[str, str], report: Path
) -> tuple[subprocess.CompletedProcess[bytes], set[str], list[list[str]]]:
    """Run `subrosa hook NAME` as a real process: what it did, every module it loaded
    (top-level names), and the processes it spawned (recorded, not started: a background
    ingest would outlive the test)."""
    script = (
        "import json, os, sys\n"
        "spawned = []\n"
        "os.posix_spawn = lambda path, argv, *rest, **named: spawned.append(argv)\n"
        "from subrosa.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"json.dump([sorted(sys.modules), spawned], open({str(report)!r}, 'w'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, "hook", name],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )
    modules, spawned = json.loads(report.read_text())
    return result, {module.split(".")[0] for module in modules}, spawned


def test_no_hook_branch_loads_pathlib_urllib_ipaddress_or_contextlib(
    memory_dir: Path, tmp_path: Path, isolated_env: Path
) -> None:
    """Every hook, down every branch it takes (a big ranked index with queued sessions,
    a resumed session, the plugin registered twice, the Stop nudge by environment and by
    settings file, SessionEnd with and without its background ingest, the fail-open
    paths), loads none of pathlib, urllib, ipaddress or contextlib."""
    (memory_dir / "MEMORY.md").write_text(_index(165) + "- [<b>Odd</b>](odd.md) — &amp;\n")
    ranked = [f"fact_{i}.md" for i in reversed(range(165))]
    (memory_dir / ".subrosa").mkdir()
    (memory_dir / ".subrosa" / "index-rank.json").write_text(json.dumps({"ranked": ranked}))
    (isolated_env / ".claude").mkdir()
    ours = {"hooks": [{"type": "command", "command": "subrosa hook session-start"}]}
    settings = {"hooks": {"SessionStart": [ours]}, "autoMemoryDirectory": "~/elsewhere"}
    (isolated_env / ".claude" / "settings.json").write_text(json.dumps(settings))
    config = tmp_path / "config.toml"
    config.write_text("nudge_every = 1\n")
    report = tmp_path / "modules.json"
    base = {**os.environ, "CLAUDE_ENV_FILE": str(tmp_path / "env.sh")}
    plugin = {**base, "CLAUDE_PLUGIN_ROOT": str(tmp_path / "plugin")}
    nudge = {**base, "SUBROSA_NUDGE_EVERY": "1"}
    by_file = {**base, "SUBROSA_CONFIG": str(config)}
    ingest = {**base, "SUBROSA_BACKGROUND_INGEST": "1"}
    missing = {**base, "SUBROSA_MEMORY_DIR": str(tmp_path / "nowhere" / "memory")}
    (tmp_path / "blocked" / ".extract").mkdir(parents=True)
    (tmp_path / "blocked" / ".extract" / "queue").write_text("in the way")
    blocked = {**base, "SUBROSA_MEMORY_DIR": str(tmp_path / "blocked")}

    def payload(session: str, **extra: Any) -> bytes:
        path = transcript(tmp_path, session, json.dumps(prompt("hello")) + "\n")
        return json.dumps(event(session, path, tmp_path, reason="other", **extra)).encode()

    runs = [
        ("session-end", payload("q1"), base, "queued"),
        ("session-end", payload("q2"), ingest, "queued, ingest started"),
        ("session-start", payload("s1", source="startup"), plugin, "index, queue, plugin"),
        ("session-start", payload("s1", source="resume"), base, "resumed"),
        ("stop", payload("s1"), nudge, "nudge by environment"),
        ("stop", payload("s2"), by_file, "nudge by settings file"),
        ("stop", payload("s3"), base, "a turn counted"),
        ("stop", b"not json", base, "bad stdin"),
        ("session-end", payload("s4"), missing, "no memory dir"),
        ("session-start", payload("s5"), missing, "no memory dir"),
        ("session-end", payload("s6"), blocked, "a step failed"),
        ("pre-tool-use", b"{}", base, "unknown hook"),
    ]
    for name, stdin, env, what in runs:
        result, loaded, spawned = _hook_loading(name, stdin, env, report)
        assert result.returncode == 0, (name, what, result.stderr)
        # (A plain settings file is read without tomllib: subrosa.tomlsubset.)
        banned = NOT_ON_THE_HOOK_PATH | {"tomllib", "typing"}
        assert not loaded & banned, (name, what, loaded & banned)
        if what == "queued, ingest started":
            assert spawned and spawned[0][-2:] == ["ingest", "--pending"], spawned
        if what == "a step failed":
            assert b"queueing the session failed" in result.stderr, result.stderr
        if what.startswith("nudge"):
            assert b'"decision": "block"' in result.stdout, (what, result.stderr)
        if what == "index, queue, plugin":
            output = json.loads(result.stdout)
            context = output["hookSpecificOutput"]["additionalContext"]
            assert "registered twice" in output["systemMessage"]
            assert "2 earlier sessions" in context and "- [Fact number 164]" in context
            assert "its auto-memory dir is" in context


def test_stop_reads_a_settings_file_only_when_it_may_set_nudge_every(
    memory_dir: Path, tmp_path: Path, isolated_env: Path
) -> None:
    """A settings file that does not name `nudge_every` (a team's `db` URL, a budget)
    cannot change it, so the Stop hook leaves it unparsed. One that names it, in any
    spelling TOML allows, is read as before: a plain one by subrosa.tomlsubset, one
    in a shape only tomllib reads (an escape) by tomllib, which loads typing."""
    config = tmp_path / "config.toml"
    report = tmp_path / "modules.json"
    env = {**os.environ, "SUBROSA_CONFIG": str(config)}
    env.pop("SUBROSA_NUDGE_EVERY", None)
    cases = [  # the file, whether it nudges, whether tomllib reads it
        ('db = "postgresql+psycopg://me@db.example.com/team"\nbudget = 20000\n', False, False),
        ("budget = 99999999\n", False, False),  # invalid, but says nothing of nudging
        ("nudge_every = 1\n", True, False),
        ('"nudge_every" = 1\n', True, False),
        ("nudge_every = 1_0\nbudget = 1\n", False, True),  # 10: the Stop hook's 1st turn
        ('"nudge\\u005fevery" = 1\n', True, True),  # a quoted key, its _ escaped
    ]
    for n, (text, nudges, by_tomllib) in enumerate(cases):
        config.write_text(text)
        path = transcript(tmp_path, f"c{n}", json.dumps(prompt("hello")) + "\n")
        stdin = json.dumps(event(f"c{n}", path, tmp_path)).encode()
        result, loaded, _ = _hook_loading("stop", stdin, env, report)
        assert result.returncode == 0, (text, result.stderr)
        assert (b'"decision": "block"' in result.stdout) is nudges, (text, result.stdout)
        assert ("tomllib" in loaded) is by_tomllib, (text, sorted(loaded))
        assert ("typing" in loaded) is by_tomllib, (text, sorted(loaded))


def _index(lines: int) -> str:
    head = ["<!-- generated by subrosa: do not edit -->", "# Memory", ""]
    body = [
        f"- [Fact number {i}](fact_{i}.md) — {'a hook that says something useful ' * 3}{i}"
        for i in range(lines)
    ]
    return "\n".join(head + body) + "\n"


def test_session_start_injects_the_index_cut_at_a_whole_line(
    memory_dir: Path, tmp_path: Path
) -> None:
    text = _index(165)
    assert 22_000 < len(text.encode()) < 25_000
    (memory_dir / "MEMORY.md").write_text(text)
    path = transcript(tmp_path, "s1")
    context = context_of(hook("session-start", event("s1", path, tmp_path, source="startup")))
    original = set(text.splitlines())
    injected = [line for line in context.splitlines() if line.startswith("- [Fact")]
    assert injected and all(line in original for line in injected)
    assert injected[0].startswith("- [Fact number 0]")
    assert "# Memory" in context and "auto-memory dir" in context
    assert f"more lines of the index are not shown: read {memory_dir / 'MEMORY.md'}" in context
    assert 9_000 < len(context) <= 10_000


def test_session_start_with_a_queue_and_a_huge_index_stays_under_the_cap(
    memory_dir: Path, tmp_path: Path
) -> None:
    (memory_dir / "MEMORY.md").write_text(_index(165))
    for sid in ("a", "b", "c"):
        hook("session-end", event(sid, transcript(tmp_path, sid), tmp_path))
    context = context_of(hook("session-start", event("d", transcript(tmp_path, "d"), tmp_path)))
    assert context.startswith("subrosa: 3 earlier sessions") and "- [Fact number 0]" in context


def _given_context(context: str) -> str:
    """The record Claude Code 2.1.332 appends for a SessionStart hook's additionalContext
    (tests/e2e/test_resume.py), one JSONL line as it writes them (no spaces)."""
    record = {"type": "attachment", "attachment": {"type": "hook_additional_context",
              "content": [context], "hookEvent": "SessionStart"}}  # fmt: skip
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_a_resumed_session_gets_the_index_once(memory_dir: Path, tmp_path: Path) -> None:
    # Claude Code replays the startup context from the transcript on --resume and
    # --continue: the hook leaves the same index out, gives a changed one again, and gives
    # it again after a compaction (the history before the boundary is gone from the model).
    (memory_dir / "MEMORY.md").write_text(_index(3) + '- [Ünïcode](u.md) — "quoted"\n')
    path = transcript(tmp_path, "s1", "")
    first = context_of(hook("session-start", event("s1", path, tmp_path, source="startup")))
    path.write_text(_given_context(first) + json.dumps(prompt("hello")) + "\n")
    for source in ("resume", "fork"):
        again = hook("session-start", event("s1", grow(path), tmp_path, source=source))
        assert "Fact number" not in again.stdout, source
    assert "Fact number 0" in context_of(
        hook("session-start", event("s1", grow(path), tmp_path, source="compact"))
    )
    (memory_dir / "MEMORY.md").write_text(_index(4))  # generate ran since
    changed = context_of(hook("session-start", event("s1", grow(path), tmp_path, source="resume")))
    assert "Fact number 3" in changed
    compacted = transcript(tmp_path, "s2", _given_context(changed))
    grow(compacted, {"type": "system", "subtype": "compact_boundary"})
    assert "Fact number 3" in context_of(
        hook("session-start", event("s2", grow(compacted), tmp_path, source="resume"))
    )
    missing = event("s3", tmp_path / "nowhere.jsonl", tmp_path, source="resume")
    assert "Fact number 0" in context_of(hook("session-start", missing))


def test_a_resumed_session_whose_transcript_is_a_fifo_does_not_hang(
    memory_dir: Path, tmp_path: Path
) -> None:
    # SessionStart on resume reads the transcript to see whether the index is there
    # already: a FIFO at that path (nothing writes to it) must not block the hook until
    # Claude Code's timeout. It cannot tell, so it gives the index.
    (memory_dir / "MEMORY.md").write_text(_index(3))
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-m", "subrosa", "hook", "session-start"],
        input=json.dumps(event("s1", fifo, tmp_path, source="resume")),
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 0, result.stderr
    assert "Fact number 0" in context_of(result)


def test_a_resumed_session_is_not_an_earlier_session_to_catch_up_on(
    memory_dir: Path, tmp_path: Path
) -> None:
    paths = {sid: transcript(tmp_path, sid) for sid in ("a", "b")}
    for sid, path in paths.items():
        hook("session-end", event(sid, path, tmp_path))

    def resume(sid: str) -> str:
        return hook("session-start", event(sid, grow(paths[sid]), tmp_path, source="resume")).stdout

    assert json.loads(resume("a"))["hookSpecificOutput"]["additionalContext"].startswith(
        "subrosa: 1 earlier session of"
    )
    checkpoint.clear_queue(memory_dir)
    hook("session-end", event("a", paths["a"], tmp_path))
    assert resume("a") == ""  # only itself queued: nothing to say
    assert [e["session_id"] for e in checkpoint.queue_listing(memory_dir)] == ["a"]


def test_session_start_leaves_the_index_to_claude_code_when_it_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, memory = project_with_auto_memory(tmp_path)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [A](a.md) — \u202eevil\u200b hook\n")
    path = transcript(tmp_path, "s1")
    sessions = iter(range(100))

    def start() -> subprocess.CompletedProcess[str]:
        """A session starts (a new one each time: one event is handled once)."""
        return hook("session-start", event(f"s{next(sessions)}", path, project))

    assert start().stdout == ""
    assert checkpoint.live_session(memory) is not None

    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    context = context_of(start())
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" in context and "- [A](a.md)" in context
    assert "\u202e" not in context and "\u200b" not in context
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY")

    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"autoMemoryEnabled": False}))
    assert "autoMemoryEnabled is false" in context_of(start())
    settings.write_text(json.dumps({"autoMemoryDirectory": str(tmp_path / "elsewhere")}))
    assert "elsewhere" in context_of(start())


def test_session_end_cleans_up_old_counters_but_keeps_the_queue(
    memory_dir: Path, tmp_path: Path
) -> None:
    path = transcript(tmp_path, "old")
    hook("stop", event("old", path, tmp_path))
    hook("session-end", event("old", path, tmp_path))
    counter = memory_dir / ".extract" / "old.json"
    long_ago = time.time() - checkpoint.STALE_AFTER_SECONDS - 60
    os.utime(counter, (long_ago, long_ago))
    # What a hook killed between write and rename left in the queue: it goes; the
    # queue's entries stay however old.
    left = memory_dir / ".extract" / "queue" / ".old.json.0123456789ab.tmp"
    left.write_text("{")
    os.utime(left, (long_ago, long_ago))
    os.utime(memory_dir / ".extract" / "queue" / "old.json", (long_ago, long_ago))
    hook("session-end", event("new", transcript(tmp_path, "new"), tmp_path))
    assert not counter.exists() and not left.exists()
    assert {e["session_id"] for e in checkpoint.queued(memory_dir)} == {"old", "new"}


@given(st.text(min_size=1))
def test_safe_session_ids_are_file_names_and_do_not_collide(raw: str) -> None:
    safe = checkpoint.safe_session_id(raw)
    if not raw.strip():
        assert safe is None
        return
    assert safe is not None and re.fullmatch(r"[A-Za-z0-9_-]+", safe)
    assert len(safe) <= checkpoint.MAX_ID_LENGTH
    assert checkpoint.safe_session_id(safe) == safe
    assert checkpoint.safe_session_id(raw + "x") != safe


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300)),
    st.integers(min_value=0, max_value=12_000),
)
def test_the_injected_index_fits_its_budget_and_cuts_at_whole_lines(
    lines: list[str], budget: int
) -> None:
    lines = [line.replace("\n", " ") for line in lines]
    index = Path("/memory/MEMORY.md")
    out = render_index(lines, index, "a reason", budget)
    if out is None:
        return
    assert len(out) <= budget
    header, _, rest = out.partition("\n\n")
    shown = rest.split("\n")
    if shown[-1].startswith("[… ") and shown[-1].endswith(f"read {index}.]"):
        omitted = int(shown[-1].split()[1])
        shown = shown[:-1]
        assert omitted == len(lines) - len(shown) > 0
    else:
        assert len(shown) == min(len(lines), INDEX_MAX_LINES)
    assert shown == lines[: len(shown)]


def test_sessions_ending_at_once_are_all_queued(memory_dir: Path, tmp_path: Path) -> None:
    ids = [f"parallel-{i}" for i in range(8)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "subrosa", "hook", "session-end"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in ids
    ]
    for process, sid in zip(processes, ids, strict=True):  # all of them go at once
        assert process.stdin is not None
        process.stdin.write(json.dumps(event(sid, transcript(tmp_path, sid), tmp_path)).encode())
        process.stdin.close()
    for process in processes:
        assert process.stdout is not None and process.stderr is not None
        out = process.stdout.read()
        process.stderr.read()
        assert process.wait(timeout=60) == 0 and out == b""
        process.stdout.close()
        process.stderr.close()
    assert sorted(e["session_id"] for e in checkpoint.queued(memory_dir)) == sorted(ids)
    assert len(pending.list_pending()) == len(ids)


def test_session_end_starts_a_detached_ingest_that_drains_the_record(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook returns (stdout closed) without waiting; the ingest it started empties
    the pending record on its own. Runs once the transcript archive is installed."""
    pytest.importorskip("subrosa.cli.transcripts")
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "1")
    path = transcript(tmp_path, "bg")
    assert hook("session-end", event("bg", path, tmp_path)).stdout == ""
    deadline = time.monotonic() + 60  # a wait for the background process, not a speed check
    while pending.list_pending() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pending.list_pending() == []


def test_non_ascii_index_survives_an_ascii_locale(
    memory_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (memory_dir / "MEMORY.md").write_text("# 메모리\n\n- [배포 일정](deploy.md) — 화요일 배포\n")
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    monkeypatch.setenv("LC_ALL", "C")
    context = context_of(hook("session-start", event("s1", transcript(tmp_path, "s1"), tmp_path)))
    assert "- [배포 일정](deploy.md) — 화요일 배포" in context


def test_session_start_keeps_a_spelling_joiner_and_no_hidden_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A ZWNJ in a Persian word and the ZWJs of an emoji are the user's spelling; a
    # payload hidden in invisible characters needs runs of them, or joiners where no
    # script uses one: those go from the context a session starts with.
    project, memory = project_with_auto_memory(tmp_path)
    payload = "".join("\u200c" if bit == "1" else "\u200d" for bit in "0110100001101001")
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n"
        "- [A](a.md) — می\u200cخواهم 👨\u200d👩\u200d👧\n"
        f"- [B](b.md) — an innocent{payload} hook, p\u200da\u200cs\u200ds \u200dعلی{payload}رضا\n"
    )
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    done = hook("session-start", event("s1", transcript(tmp_path, "s1"), project))
    context = context_of(done)
    assert "- [A](a.md) — می\u200cخواهم 👨\u200d👩\u200d👧" in context
    assert "- [B](b.md) — an innocent hook, pass علیرضا" in context
    assert not re.search("[\u200c\u200d]{2}", context)


def test_checkpoint_clear_dismisses_an_unreadable_queue_entry(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    # SessionEnd writes its queue entry without an fsync: a power cut can leave it empty.
    # SessionStart counts it (by file name); checkpoint-clear, which it names as what
    # dismisses the queue, must then remove it too, or the nudge never goes.
    path = transcript(tmp_path, "s1")
    hook("session-end", event("s1", path, tmp_path, reason="other"))
    queue = memory_dir / ".extract" / "queue"
    (queue / "s2.json").write_bytes(b"")
    (queue / "s3.json").write_bytes(b"\xff{not json")
    nudge = hook("session-start", event("s4", path, tmp_path, source="startup")).stdout
    assert "3 earlier sessions" in nudge and "checkpoint-clear` alone dismisses" in nudge
    assert "cleared 3 queued sessions" in run("checkpoint-clear").stdout
    assert list(queue.iterdir()) == []
    assert hook("session-start", event("s5", path, tmp_path, source="startup")).stdout == ""
