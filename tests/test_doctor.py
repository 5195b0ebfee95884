"""`subrosa doctor` finds each problem and names its fix."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from subrosa.paths import auto_memory_dir
from tests.conftest import Db, RunCli, write_leaf


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


def test_a_server_doctor_cannot_reach_is_not_said_to_grant_access(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member whose server is down, or whose password is wrong, is told where the URL
    and the password come from (SUBROSA_DB here, not --db), and the permissions line
    does not claim what nobody could check."""
    monkeypatch.setenv("SUBROSA_DB", "postgresql://me:s3cret-pw@127.0.0.1:1/team?connect_timeout=1")
    checks = _checks(run, expect=1)
    fix = str(checks["database"]["fix"])
    assert "SUBROSA_DB" in fix and "~/.pgpass" in fix, checks["database"]
    detail = str(checks["permissions"]["detail"])
    assert "grants access" not in detail and "not checked" in detail, checks["permissions"]
    assert "s3cret-pw" not in json.dumps(checks)


def test_a_password_given_as_a_query_parameter_is_never_printed(
    memory_dir: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq takes `?password=` as well as `user:password@`; SQLAlchemy's hide_password
    hides only the latter, so doctor, and the error of any command, printed it."""
    monkeypatch.setenv(
        "SUBROSA_DB", "postgresql://me@127.0.0.1:1/team?connect_timeout=1&password=s3cret-pw"
    )
    for args in (("doctor",), ("doctor", "--json"), ("search", "anything")):
        result = run(*args, expect=1)
        assert "s3cret-pw" not in result.stdout + result.stderr, args
        assert "password=***" in result.stdout + result.stderr, args


def _claude_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, says: str) -> None:
    """A `claude` on PATH (alone there: the real one, if any, is not reached) that
    answers --version as `says`; anything else fails."""
    bin_dir = tmp_path / "claude-bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = "--version" ] || exit 3\nprintf \'%s\\n\' {shlex.quote(says)}\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")


@pytest.mark.parametrize(
    ("says", "auto_memory_off", "ok", "severity", "detail"),
    [
        ("2.1.332 (Claude Code)", False, True, "error", "Claude Code 2.1.332 ("),
        ("2.1.196 (Claude Code)", False, True, "error", "Claude Code 2.1.196 ("),
        ("2.1.150 (Claude Code)", False, False, "warning", "sends Stop no prompt id"),
        ("2.0.77 (Claude Code)", False, False, "error", "loads no auto memory"),
        ("2.0.77 (Claude Code)", True, False, "warning", "sends Stop no prompt id"),
        ("1.0.128 (Claude Code)", False, False, "error", "loads no auto memory"),
        ("1.0.128 (Claude Code)", True, False, "warning", "loads no plugins and no skills"),
        ("claude: command failed", False, False, "warning", "did not say its version"),
    ],
)
def test_claude_code_version_against_what_subrosa_needs(
    tmp_path: Path,
    db: Db,
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    says: str,
    auto_memory_off: bool,
    ok: bool,
    severity: str,
    detail: str,
) -> None:
    """doctor asks the `claude` on PATH its version. Before 2.1.59 Claude Code loads no
    auto memory, and SessionStart leaves an index in the auto-memory dir to it: no
    session would see the memory (an error, with both fixes). Turning auto memory off
    makes the hook inject it; what is left is the older versions' smaller losses."""
    memory = Path(auto_memory_dir(str(tmp_path)))
    memory.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    monkeypatch.setenv("SUBROSA_DB", db.url)
    if auto_memory_off:
        settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text('{"autoMemoryEnabled": false}\n', encoding="utf-8")
    _claude_on_path(tmp_path, monkeypatch, says)
    data = json.loads(run("doctor", "--json", expect=None).stdout)
    check = {c["name"]: c for c in data["checks"]}["claude code"]
    assert (check["ok"], check["severity"]) == (ok, severity), check
    assert detail in str(check["detail"]), check
    if detail == "loads no auto memory":
        assert data["ok"] is False
        assert '"autoMemoryEnabled": false' in str(check["fix"]) and "claude update" in str(
            check["fix"]
        )


def test_no_claude_on_path_is_not_a_problem(
    memory_dir: Path, run: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    check = _checks(run, expect=0)["claude code"]
    assert check["ok"] is True and "no `claude` on PATH" in str(check["detail"])


def test_hooks_the_project_scope_installed_do_not_run_for_a_session_in_a_subfolder(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code started in a subfolder reads that folder's .claude/settings.json and
    # the top's settings.local.json, not the top's settings.json (tests/e2e/test_memory_dir.py).
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.chdir(repo)
    run("install")
    assert _checks(run, expect=0)["hooks"]["ok"]

    monkeypatch.chdir(repo / "src")
    hooks = _checks(run, expect=0)["hooks"]
    assert hooks["ok"] is False and hooks["severity"] == "warning"
    assert f"started in {repo / 'src'} runs none" in str(hooks["detail"])
    assert str(hooks["fix"]).startswith("subrosa install --scope local")

    run("install", "--scope", "local")
    assert _checks(run, expect=0)["hooks"]["ok"]


def test_a_memory_dir_claude_codes_own_memory_does_not_reach_is_named_with_the_fix(
    tmp_path: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory kept in the repository (.claude/memory) while Claude Code's auto
    memory still writes to its own dir: two memories, the second never seen by
    subrosa. A warning naming the fix; `subrosa install` sets autoMemoryDirectory."""
    repo = tmp_path / "repo"
    memory = repo / ".claude" / "memory"
    memory.mkdir(parents=True)
    (repo / ".git").mkdir()
    monkeypatch.setenv("SUBROSA_DB", db.url)
    monkeypatch.chdir(repo)
    check = _checks(run, expect=0)["auto memory"]
    assert (check["ok"], check["severity"]) == (False, "warning")
    assert str(memory) in str(check["detail"]) and auto_memory_dir(str(repo)) in str(
        check["detail"]
    )
    assert "subrosa install" in str(check["fix"]) and "autoMemoryDirectory" in str(check["fix"])

    run("install")
    check = _checks(run, expect=0)["auto memory"]
    assert check["ok"] is True, check


def test_auto_memory_in_the_memory_dir_or_off_is_fine(
    tmp_path: Path, db: Db, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Path(auto_memory_dir(str(tmp_path)))
    memory.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_DB", db.url)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(memory))
    assert _checks(run, expect=0)["auto memory"]["ok"] is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(elsewhere))
    check = _checks(run, expect=0)["auto memory"]
    assert check["ok"] is False and '"autoMemoryDirectory": ' in str(check["fix"])
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    assert _checks(run, expect=0)["auto memory"]["ok"] is True
