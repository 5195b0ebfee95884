"""`subrosa install`, the plugin layout and the skills, as a user meets them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from subrosa.claude.install import EVENTS, hook_command, is_ours, plugin_hooks_json
from subrosa.resources import skills_dir
from tests.conftest import REPO, RunCli

EXISTING = {
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
    },
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def ours(settings: dict[str, object], event: str) -> list[object]:
    groups = settings["hooks"][event]  # type: ignore[index]
    return [h for group in groups for h in group["hooks"] if is_ours(h)]


def test_install_keeps_everything_else_is_idempotent_and_uninstall_restores(
    project: Path, run: RunCli
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING, indent=4) + "\n"  # not our formatting, on purpose
    path.write_text(original)

    first = run("install").stdout
    assert "+ SessionStart" in first and "+ Stop" in first and "memory-extraction/SKILL.md" in first
    second = run("install").stdout
    assert "nothing to change" in second and "= Stop" in second

    settings = json.loads(path.read_text())
    for event in EVENTS:
        assert len(ours(settings, event)) == 1
    assert settings["permissions"] == EXISTING["permissions"] and settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]  # type: ignore[index]
    assert settings["hooks"]["Stop"][0] == EXISTING["hooks"]["Stop"][0]  # type: ignore[index]
    installed = project / ".claude" / "skills" / "memory-extraction" / "SKILL.md"
    assert installed.read_bytes() == (skills_dir() / "memory-extraction" / "SKILL.md").read_bytes()

    out = run("install", "--uninstall").stdout
    assert "- Stop" in out
    assert path.read_text() == original
    assert not (project / ".claude" / "skills").exists()


def test_uninstall_after_the_user_edited_removes_only_our_entries(
    project: Path, run: RunCli
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING))
    run("install")
    edited = json.loads(path.read_text())
    edited["env"] = {"FOO": "1"}
    path.write_text(json.dumps(edited))
    run("install", "--uninstall")
    assert json.loads(path.read_text()) == {**EXISTING, "env": {"FOO": "1"}}


def test_install_into_a_fresh_project_and_out_again(project: Path, run: RunCli) -> None:
    run("install")
    path = project / ".claude" / "settings.json"
    assert set(json.loads(path.read_text())["hooks"]) == set(EVENTS)
    run("install", "--uninstall")
    assert not path.exists()


def test_an_updated_hook_command_is_replaced_not_duplicated(project: Path, run: RunCli) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    stale = {"type": "command", "command": "/old/bin/subrosa hook stop"}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [stale]}]}}))
    assert "~ Stop" in run("install").stdout
    handlers = ours(json.loads(path.read_text()), "Stop")
    assert handlers == [{"type": "command", "command": hook_command("stop")}]


@pytest.mark.parametrize(
    "content", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}']
)
def test_a_broken_settings_json_is_refused_untouched(
    project: Path, run: RunCli, content: str
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    result = run("install", expect=2)
    assert str(path) in result.stderr and "nothing was changed" in result.stderr
    assert path.read_text() == content
    assert not (project / ".claude" / "skills").exists()


def test_dry_run_writes_nothing(project: Path, run: RunCli) -> None:
    out = run("install", "--dry-run").stdout
    assert "would update" in out and "+ SessionEnd" in out
    assert not (project / ".claude").exists()


def test_scopes(project: Path, run: RunCli, isolated_env: Path) -> None:
    run("install", "--scope", "local")
    assert (project / ".claude" / "settings.local.json").is_file()
    assert not (project / ".claude" / "settings.json").exists()
    run("install", "--scope", "user")
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    assert set(json.loads((claude_root / "settings.json").read_text())["hooks"]) == set(EVENTS)
    assert (claude_root / "skills" / "memory-extraction" / "SKILL.md").is_file()


def test_install_points_at_adopt_for_a_foreign_index(
    project: Path, memory_dir: Path, run: RunCli
) -> None:
    index = memory_dir / "MEMORY.md"
    index.write_text("# My own notes\n\n- [A](a.md) — hand written\n")
    before = index.read_bytes()
    out = run("install").stdout
    assert "subrosa adopt" in out and str(index) in out
    assert index.read_bytes() == before


def test_the_plugin_layout_matches_what_install_writes() -> None:
    assert (REPO / "hooks" / "hooks.json").read_text() == plugin_hooks_json()
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "subrosa"


def test_the_skills_have_valid_frontmatter() -> None:
    skills = sorted(p for p in skills_dir().iterdir() if (p / "SKILL.md").is_file())
    assert "memory-extraction" in [p.name for p in skills]
    for skill in skills:
        text = (skill / "SKILL.md").read_text(encoding="utf-8")
        assert text.startswith("---\n")
        meta = yaml.safe_load(text.split("---\n", 2)[1])
        assert meta.get("name", skill.name) == skill.name
        assert isinstance(meta["description"], str) and 0 < len(meta["description"]) <= 1536


def test_the_hook_command_fails_open_without_subrosa_on_the_path(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    for name in EVENTS.values():
        result = subprocess.run(
            ["/bin/sh", "-c", hook_command(name)],
            input=b"{}",
            capture_output=True,
            env={**os.environ, "PATH": str(empty)},
            timeout=30,
        )
        assert result.returncode == 0 and result.stdout == b""
        assert result.stderr.decode().count("\n") == 1 and "pipx install" in result.stderr.decode()


def test_the_hook_command_runs_subrosa_when_installed(memory_dir: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    payload = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "subrosa").exists()
    result = subprocess.run(
        ["/bin/sh", "-c", hook_command("stop")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "SUBROSA_NUDGE_EVERY": "1"},
        timeout=60,
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)["decision"] == "block"


def test_hook_help_documents_the_three_hooks(run: RunCli) -> None:
    out = run("hook", "--help").stdout
    for name in ("session-start", "stop", "session-end", "stop_hook_active", "10,000"):
        assert name in out


def test_a_symlinked_settings_json_stays_a_symlink(
    project: Path, run: RunCli, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('\ufeff{"model": "opus"}\n')  # with a BOM, as some editors write
    link = project / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    run("install")
    assert link.is_symlink()
    assert set(json.loads(dotfiles.read_text())["hooks"]) == set(EVENTS)
    run("install", "--uninstall")
    assert link.is_symlink() and dotfiles.read_text() == '{"model": "opus"}\n'


def test_install_in_a_worktree_writes_the_worktree_settings(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree = tmp_path / "wt"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    monkeypatch.chdir(worktree / "src")
    run("install")
    assert (worktree / ".claude" / "settings.json").is_file()
    assert not (main / ".claude").exists()
