"""`subrosa doctor` finds each problem and names its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import RunCli, write_leaf


def _checks(run: RunCli, expect: int) -> dict[str, dict[str, object]]:
    data = json.loads(run("doctor", "--json", expect=expect).stdout)
    return {c["name"]: c for c in data["checks"]}


def test_fresh_setup_reports_without_creating_anything(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(missing))
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    checks = _checks(run, expect=1)
    assert checks["memory dir"]["ok"] is False and "mkdir" in str(checks["memory dir"]["fix"])
    assert checks["database"]["severity"] == "warning"
    assert not (tmp_path / "db.sqlite").exists() and not missing.exists()


def test_healthy_and_broken_project(memory_dir: Path, run: RunCli, tmp_path: Path) -> None:
    write_leaf(memory_dir, "a.md")
    run("fact", "upsert", "--leaf", "a.md", "--hook", "a")
    checks = _checks(run, expect=0)
    assert checks["database"]["ok"] and checks["leaves"]["ok"] and checks["permissions"]["ok"]
    assert checks["hooks"]["ok"] is False and checks["hooks"]["severity"] == "warning"

    write_leaf(memory_dir, "unregistered.md")
    (memory_dir / "MEMORY.md").write_text("- [x](a.md) — mine\n", encoding="utf-8")
    os.chmod(tmp_path / "subrosa.db", 0o644)
    checks = _checks(run, expect=1)
    assert "1 leaf file(s) not registered" in str(checks["leaves"]["detail"])
    assert "subrosa adopt" in str(checks["index"]["fix"])
    assert "readable by others" in str(checks["permissions"]["detail"])
    text = run("doctor", expect=1).stdout
    assert "fix: subrosa adopt" in text


def test_index_over_its_cap_and_unindexed_leaf(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "a.md")
    run("fact", "upsert", "--leaf", "a.md", "--hook", "a")
    run("generate")
    assert _checks(run, expect=0)["index"]["ok"]
    with (memory_dir / "MEMORY.md").open("a", encoding="utf-8") as handle:
        handle.write("padding line\n" * 250)
    write_leaf(memory_dir, "b.md")
    index = _checks(run, expect=1)["index"]
    assert "over the 200-line" in str(index["detail"]) and "1 orphan files" in str(index["detail"])
    assert index["fix"] == "subrosa generate"


def test_a_leaf_generate_cannot_read_is_named_with_a_fix_that_works(
    memory_dir: Path, run: RunCli
) -> None:
    write_leaf(memory_dir, "a.md")
    (memory_dir / "latin1.md").write_bytes(b"---\ndescription: caf\xe9\ntype: user\n---\n")
    run("generate")  # skips the leaf it cannot read; "run generate" again would loop
    leaves = _checks(run, expect=1)["leaves"]
    assert "latin1.md: is not UTF-8 text" in str(leaves["detail"]), leaves
    assert "not registered" not in str(leaves["detail"])
    assert "mend the unreadable leaf" in str(leaves["fix"]), leaves


def test_leaves_wait_for_a_database_that_cannot_be_opened(
    memory_dir: Path, run: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_leaf(memory_dir, "a.md")
    (tmp_path / "garbage.db").write_bytes(b"garbage\n")
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "garbage.db"))
    checks = _checks(run, expect=1)
    assert checks["database"]["ok"] is False
    assert str(checks["database"]["detail"]).count("garbage.db") == 1, checks["database"]
    # generate cannot open it either: the fix says what comes first.
    assert "once the database check passes" in str(checks["leaves"]["fix"])


def test_a_server_database_is_not_called_private(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUBROSA_DB", "postgresql://me@127.0.0.1:1/team?connect_timeout=1")
    permissions = _checks(run, expect=1)["permissions"]
    assert permissions["ok"] and "private" not in str(permissions["detail"]), permissions
