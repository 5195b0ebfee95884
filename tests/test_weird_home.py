"""HOME = `…/we ird'#%();@/home`: every command works (issue 18).

Such a HOME once broke every database command with a traceback: the URL was built by
string, and SQLite read `#` as the start of a fragment. Here nothing is pointed
elsewhere: the database, the settings, Claude Code's folders, the memory dir and the
project all sit where the defaults put them, under that HOME. Click commands run in
this process (quick); the hooks, the fast path of `search` and the background ingest
run as real processes, as Claude Code and a shell would run them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from subrosa.archive import pending
from subrosa.claude.install import EVENTS, hook_command, this_runner
from subrosa.cli.app import cli
from subrosa.paths import auto_memory_dir, project_transcript_dir, sqlite_path
from tests.conftest import write_leaf

WEIRD = "we ird'#%();@"


@pytest.fixture
def weird_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME under a folder named WEIRD, every location left to its default."""
    home = tmp_path / WEIRD / "home"
    home.mkdir(parents=True)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    return home


def _cli(*args: str, ok: tuple[int, ...] = (0,)) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code in ok, (args, result.exit_code, result.output, result.stderr)
    assert "Traceback" not in result.output + result.stderr, args
    return result


def _process(*args: str, payload: dict[str, Any] | None = None) -> str:
    data = json.dumps(payload).encode() if payload is not None else None
    result = subprocess.run(
        [sys.executable, "-m", "subrosa", *args],
        input=data,
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert result.returncode == 0, (args, result.stderr)
    assert b"Traceback" not in result.stderr, (args, result.stderr)
    return result.stdout.decode("utf-8")


def _message(uuid: str, text: str, session: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": uuid,
            "sessionId": session,
            "timestamp": "2026-05-01T10:00:00.000Z",
            "message": {"role": "user", "content": text},
        }
    )


def test_every_command_works_under_a_weird_home(
    weird_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / WEIRD / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    memory = Path(auto_memory_dir(project))  # ~/.claude/projects/<project>/memory
    memory.mkdir(parents=True)
    assert WEIRD in str(memory)
    write_leaf(memory, "alpha.md", description="The alpha fact.")
    write_leaf(memory, "beta.md", description="The beta fact.")
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Alpha](alpha.md) — alpha, by hand\n")

    # The memory half.
    _cli("adopt")
    assert (memory / "MEMORY.md.pre-subrosa").is_file()
    _cli("fact", "upsert", "--leaf", "beta.md", "--hook", "beta")
    _cli("fact", "pin", "--leaf", "alpha.md")
    _cli("fact", "unpin", "--leaf", "alpha.md")
    _cli("fact", "move", "beta", "--before", "alpha")
    _cli("fact", "show", "alpha")
    _cli("fact", "link", "--all")
    _cli("fact", "archive", "--leaf", "beta.md", "--reason", "done")
    assert [f["slug"] for f in json.loads(_cli("fact", "list", "--json").stdout)] == ["alpha"]
    _cli("generate")
    _cli("check")
    _cli("rebuild", "--yes")
    _cli("stale")
    _cli("stale", "--apply")

    # The database, where the default puts it.
    status = json.loads(_cli("db", "status", "--json").stdout)
    database = weird_home / ".local" / "share" / "subrosa" / "subrosa.db"
    assert status["current"] is True and sqlite_path(status["url"]) == str(database)
    _cli("db", "upgrade")

    # The Claude Code half: hooks as Claude Code runs them, the background ingest too.
    transcripts = Path(project_transcript_dir(project))
    session = "5f0c6a2e-0000-4000-8000-00000000abcd"
    transcript = transcripts / f"{session}.jsonl"
    transcript.write_text(_message("u1", "the quillwort migration plan", session) + "\n")
    event = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project)}
    context = _process("hook", "session-start", payload={**event, "source": "startup"})
    assert context == "" or "alpha" in context
    _process("hook", "stop", payload=event)
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "1")
    _process("hook", "session-end", payload={**event, "reason": "exit"})
    deadline = time.monotonic() + 60  # a wait for the background process, not a speed check
    while pending.list_pending() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pending.list_pending() == [], "the background ingest did not drain the record"
    _cli("checkpoint-list")
    _cli("checkpoint-mark", "--session", session)
    _cli("checkpoint-clear")

    # The archive half: the fast path (a real process), the click commands.
    _cli("ingest")
    found = json.loads(_process("search", "--json", "quillwort"))
    assert [r["session_id"] for r in found] == [session]
    assert json.loads(_cli("search", "--json", "quillwort").stdout) == found
    _cli("search", "alpha")
    assert session in _cli("transcript", "list").stdout
    assert "quillwort" in _cli("transcript", "show", session).stdout

    # Set-up, with subrosa on the PATH as an installed command is (without, the hooks
    # would name this venv's subrosa by its absolute path: tests/test_install.py).
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    for scope in ("user", "project", "local"):
        _cli("install", "--scope", scope)
    settings = (project / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert WEIRD not in settings  # the hook commands hold no path for a shell to misread
    commands = [
        handler["command"]
        for groups in json.loads(settings)["hooks"].values()
        for group in groups
        for handler in group["hooks"]
    ]
    runner = this_runner()
    assert sorted(commands) == sorted(hook_command(name, runner) for name in EVENTS.values())
    checks = json.loads(_cli("doctor", "--json", ok=(0, 1)).stdout)["checks"]
    failed = {c["name"]: c["detail"] for c in checks if not c["ok"] and c["severity"] == "error"}
    assert failed == {}
    for scope in ("user", "project", "local"):
        _cli("install", "--scope", scope, "--uninstall")
    _cli("demo")

    # Nothing was created at a path cut short at `#`, `?`, `%` or `'`.
    names = {p.name for p in tmp_path.rglob("*")}
    assert not {name for name in names if name.startswith("we ird") and name != WEIRD}
    assert database.is_file() and (database.stat().st_mode & 0o777) == 0o600
