"""A session killed outright (SIGKILL, the OOM killer, a crash, a power cut) runs no
SessionEnd; the next session of its project queues it, once, and never one whose Claude
Code still runs. The hooks run as real processes under a stand-in for Claude Code: a
process that gives its hooks CLAUDE_PID, as Claude Code 2.1 does, and lives until told."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subrosa.claude import checkpoint
from tests.conftest import RunCli, subrosa_process
from tests.test_hooks import (
    NOT_ON_THE_HOOK_PATH,
    _hook_loading,
    event,
    hook,
    prompt,
    transcript,
)

# Runs the SessionStart hook as its child with CLAUDE_PID set to itself, says so, then
# lives until its stdin closes (or it is killed).
FAKE_CLAUDE = """
import os, subprocess, sys
env = {**os.environ, "CLAUDE_PID": str(os.getpid())}
done = subprocess.run([sys.executable, "-m", "subrosa", "hook", "session-start"],
                      input=sys.argv[1].encode(), env=env, capture_output=True)
print(done.returncode, flush=True)
sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def no_background_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "0")


class Claude:
    """One stand-in Claude Code process and its session."""

    def __init__(self, session_id: str, path: Path, cwd: Path) -> None:
        self.session_id = session_id
        self.path = path
        payload = json.dumps(event(session_id, path, cwd, source="startup"))
        self.process = subprocess.Popen(
            [sys.executable, "-c", FAKE_CLAUDE, payload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "0"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[Any]:
    started: list[Claude] = []

    def start(session_id: str) -> Claude:
        path = transcript(tmp_path, session_id, json.dumps(prompt("hello")) + "\n")
        started.append(Claude(session_id, path, tmp_path))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def queued_ids(memory_dir: Path) -> list[str]:
    return [entry["session_id"] for entry in checkpoint.queued(memory_dir)]


def next_session(session_id: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Another session of the project starts (no CLAUDE_PID: a Claude Code that does not
    give it, or a hook run by hand) and ends normally."""
    path = transcript(tmp_path, session_id, json.dumps(prompt("next")) + "\n")
    started = hook("session-start", event(session_id, path, tmp_path, source="startup"))
    hook("session-end", event(session_id, path, tmp_path, reason="other"))
    return started


def test_a_killed_session_is_queued_once_by_the_next_session(
    memory_dir: Path, tmp_path: Path, claude: Any, run: RunCli
) -> None:
    killed = claude("k1")
    killed.kill()
    path = transcript(tmp_path, "n1", json.dumps(prompt("next")) + "\n")
    started = hook("session-start", event("n1", path, tmp_path, source="startup"))
    # Found at the next start, in time for its nudge.
    assert "1 earlier session" in started.stdout
    assert queued_ids(memory_dir) == ["k1"]
    listed = json.loads(run("checkpoint-list", "--json").stdout)
    assert [(e["session_id"], e["reason"], e["transcript_path"]) for e in listed] == [
        ("k1", "killed", str(killed.path))
    ]
    hook("session-end", event("n1", path, tmp_path, reason="other"))
    hook("session-start", event("n2", path, tmp_path, source="startup"))
    assert sorted(queued_ids(memory_dir)) == ["k1", "n1"]
    assert not (memory_dir / ".extract" / "running" / "k1.json").exists()


def test_a_session_whose_claude_code_runs_is_never_queued(
    memory_dir: Path, tmp_path: Path, claude: Any
) -> None:
    idle = claude("live")
    # Idle for weeks, as far as its transcript and record tell: still running.
    old = time.time() - 60 * 24 * 3600
    os.utime(idle.path, (old, old))
    os.utime(memory_dir / ".extract" / "running" / "live.json", (old, old))
    next_session("n1", tmp_path)
    next_session("n2", tmp_path)
    assert queued_ids(memory_dir) == ["n1", "n2"]
    idle.kill()
    next_session("n3", tmp_path)
    assert sorted(queued_ids(memory_dir)) == ["live", "n1", "n2", "n3"]


def test_a_cleared_entry_is_not_queued_again(
    memory_dir: Path, tmp_path: Path, claude: Any, run: RunCli
) -> None:
    killed = claude("k1")
    killed.kill()
    next_session("n1", tmp_path)
    assert sorted(queued_ids(memory_dir)) == ["k1", "n1"]
    run("checkpoint-clear")
    # Its counter, claims and transcript are still there; the next sessions leave it be.
    hook("stop", event("k1", killed.path, tmp_path))
    next_session("n2", tmp_path)
    next_session("n3", tmp_path)
    assert queued_ids(memory_dir) == ["n2", "n3"]


def test_a_killed_session_its_mark_covers_is_not_queued(
    memory_dir: Path, tmp_path: Path, claude: Any, run: RunCli
) -> None:
    killed = claude("k1")
    run("checkpoint-mark", "--session", "k1")
    killed.kill()
    next_session("n1", tmp_path)
    assert queued_ids(memory_dir) == ["n1"]
    assert not (memory_dir / ".extract" / "running" / "k1.json").exists()


def test_a_session_without_a_pid_is_queued_only_after_a_quiet_week(
    memory_dir: Path, tmp_path: Path
) -> None:
    """No CLAUDE_PID (a Claude Code that does not give it): nothing to check the process
    by, so only a transcript untouched for QUIET_AFTER_SECONDS counts as ended."""
    path = transcript(tmp_path, "old", json.dumps(prompt("hi")) + "\n")
    hook("session-start", event("old", path, tmp_path, source="startup"))
    next_session("n1", tmp_path)
    assert queued_ids(memory_dir) == ["n1"]
    quiet = time.time() - checkpoint.QUIET_AFTER_SECONDS - 3600
    os.utime(path, (quiet, quiet))
    record = memory_dir / ".extract" / "running" / "old.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "started_at": quiet}))
    os.utime(record, (quiet, quiet))
    next_session("n2", tmp_path)
    assert sorted(queued_ids(memory_dir)) == ["n1", "n2", "old"]


@pytest.mark.parametrize(
    "damage",
    ["garbage", "not an object", "wrong id", "a folder", "running is a file", "a link"],
)
def test_bad_running_records_fail_open(
    memory_dir: Path, tmp_path: Path, claude: Any, damage: str
) -> None:
    running = memory_dir / ".extract" / "running"
    killed = claude("k1")
    killed.kill()
    record = running / "bad.json"
    if damage == "garbage":
        record.write_bytes(b"\x00{not json")
    elif damage == "not an object":
        record.write_text("[1, 2]")
    elif damage == "wrong id":
        record.write_text(json.dumps({"session_id": "../../elsewhere", "pid": 99999999}))
    elif damage == "a folder":
        record.mkdir()
    elif damage == "running is a file":
        for entry in running.iterdir():
            entry.unlink()
        running.rmdir()
        running.write_text("in the way")
    elif damage == "a link":
        (tmp_path / "elsewhere").mkdir()
        for entry in running.iterdir():
            entry.rename(tmp_path / "elsewhere" / entry.name)
        running.rmdir()
        running.symlink_to(tmp_path / "elsewhere")
    path = transcript(tmp_path, "n1", json.dumps(prompt("next")) + "\n")
    for name, extra in (("session-start", {"source": "startup"}), ("session-end", {})):
        result = subrosa_process(
            "hook", name, input=json.dumps(event("n1", path, tmp_path, **extra))
        )
        assert result.returncode == 0, result.stderr
    expected = ["n1"] if damage in ("running is a file", "a link") else ["k1", "n1"]
    assert sorted(queued_ids(memory_dir)) == expected
    if damage == "a link":
        assert sorted(os.listdir(tmp_path / "elsewhere")) == ["k1.json"]  # left alone
    if damage in ("garbage", "not an object", "wrong id"):
        assert record.exists()  # kept until stale, never judged


@pytest.mark.parametrize("value", ["", "abc", "-5", "0", "1", "99999999999", "12 34"])
def test_a_bad_claude_pid_records_no_process(memory_dir: Path, tmp_path: Path, value: str) -> None:
    path = transcript(tmp_path, "s1", json.dumps(prompt("hi")) + "\n")
    result = subrosa_process(
        "hook",
        "session-start",
        input=json.dumps(event("s1", path, tmp_path, source="startup")),
        env={**os.environ, "CLAUDE_PID": value},
    )
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    record = json.loads((memory_dir / ".extract" / "running" / "s1.json").read_text())
    assert record["pid"] is None and record["session_id"] == "s1"


def test_a_claude_pid_that_is_not_an_ancestor_is_not_trusted(
    memory_dir: Path, tmp_path: Path
) -> None:
    """CLAUDE_PID left in the environment by an outer Claude Code (this hook started by
    something else) names a process that may end while the session runs."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = transcript(tmp_path, "s1", json.dumps(prompt("hi")) + "\n")
        subrosa_process(
            "hook",
            "session-start",
            input=json.dumps(event("s1", path, tmp_path, source="startup")),
            env={**os.environ, "CLAUDE_PID": str(bystander.pid)},
        )
    finally:
        bystander.kill()
        bystander.wait()
    record = json.loads((memory_dir / ".extract" / "running" / "s1.json").read_text())
    assert record["pid"] is None
    next_session("n1", tmp_path)
    assert queued_ids(memory_dir) == ["n1"]


def test_a_pid_reused_by_another_process_counts_as_gone(memory_dir: Path, tmp_path: Path) -> None:
    """The recorded start time tells the session's Claude Code from a later process that
    got its pid; a record from before the machine restarted is gone too."""
    path = transcript(tmp_path, "s1", json.dumps(prompt("hi")) + "\n")
    hook("session-start", event("s1", path, tmp_path, source="startup"))
    record = memory_dir / ".extract" / "running" / "s1.json"
    data = json.loads(record.read_text())
    if not data["boot"]:
        pytest.skip("no /proc here: a reused pid looks alive (the safe side)")
    record.write_text(json.dumps({**data, "pid": os.getpid(), "start": "1"}))
    hook("session-start", event("s2", path, tmp_path, source="startup"))
    assert queued_ids(memory_dir) == ["s1"]
    # This very process, recorded right, is alive; recorded before a restart, gone.
    with open(f"/proc/{os.getpid()}/stat") as handle:
        start = handle.read().rsplit(")", 1)[1].split()[19]
    alive = {**data, "session_id": "s3", "pid": os.getpid(), "start": start}
    (record.parent / "s3.json").write_text(json.dumps(alive))
    rebooted = {**alive, "session_id": "s4", "boot": "another-boot"}
    (record.parent / "s4.json").write_text(json.dumps(rebooted))
    hook("session-start", event("s5", path, tmp_path, source="startup"))
    assert sorted(queued_ids(memory_dir)) == ["s1", "s4"]


def test_finding_a_killed_session_loads_nothing_more(
    memory_dir: Path, tmp_path: Path, claude: Any
) -> None:
    """The hooks' rule (tests/test_hooks.py): no typing, pathlib, urllib, ipaddress or
    contextlib, down the branch that finds a killed session and queues it."""
    claude("k1").kill()
    path = transcript(tmp_path, "n1", json.dumps(prompt("next")) + "\n")
    stdin = json.dumps(event("n1", path, tmp_path, source="startup", reason="other")).encode()
    result, loaded, _ = _hook_loading(
        "session-start", stdin, dict(os.environ), tmp_path / "modules.json"
    )
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert queued_ids(memory_dir) == ["k1"]
    assert not loaded & (NOT_ON_THE_HOOK_PATH | {"typing", "tomllib"}), loaded
