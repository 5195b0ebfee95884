"""Attacks from a hostile repository, a hostile web page or a crafted transcript
(docs/security.md's threat model), each tried for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from subrosa.archive import pending
from tests.conftest import RunCli

SHADOWS = ("click.py", "json.py", "msgspec.py", "sqlite3.py", "subrosa/__init__.py")


def _console_script() -> Path:
    script = Path(sys.executable).parent / "subrosa"
    if not script.is_file():
        found = shutil.which("subrosa")
        if found is None:
            pytest.skip("the `subrosa` console script is not installed beside this Python")
        script = Path(found)
    return script


def _record(uuid: str, text: str, role: str = "user", session: str = "s-1") -> str:
    return json.dumps(
        {
            "type": role,
            "uuid": uuid,
            "sessionId": session,
            "timestamp": "2026-05-01T10:00:00.000Z",
            "message": {"role": role, "content": text},
        }
    )


def _hostile_project(root: Path, marker_dir: Path) -> Path:
    """A checked-out branch whose files would run as the user if imported: each one,
    imported, leaves a file in `marker_dir`."""
    (root / ".git").mkdir(parents=True)
    for name in SHADOWS:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = marker_dir / name.replace("/", "_")
        path.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    (root / "subrosa" / "__main__.py").write_text(
        f"open({str(marker_dir / 'subrosa___main__')!r}, 'w').close()\n", encoding="utf-8"
    )
    return root


def test_session_end_runs_no_code_from_the_project(
    memory_dir: Path, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code runs the SessionEnd hook in the project; the hook and the ingest it
    starts in the background must import nothing from there (`python -m` would)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    project = _hostile_project(tmp_path / "project", markers)
    transcript = tmp_path / "transcripts" / "s-1.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(_record("u-1", "the ferrocene toolchain decision") + "\n")
    payload = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(project)}
    env = dict(os.environ, SUBROSA_BACKGROUND_INGEST="1")
    result = subprocess.run(
        [str(_console_script()), "hook", "session-end"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=project,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 60  # a wait for the background process, not a speed check
    while pending.list_pending() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pending.list_pending() == [], "the background ingest did not run"
    assert sorted(p.name for p in markers.iterdir()) == []
    # It did its work: the session is in the archive, under the session's own project.
    found = json.loads(run("search", "--json", "--all-projects", "ferrocene").stdout)
    assert [r["session_id"] for r in found] == ["s-1"]
