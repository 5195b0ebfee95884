"""`subrosa install`, the plugin layout and the skills, as a user meets them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from subrosa.claude.install import (
    EVENTS,
    hook_command,
    is_ours,
    plugin_hooks_json,
    this_runner,
)
from subrosa.resources import skills_dir
from tests.conftest import REPO, RunCli, write_leaf

VENV_BIN = Path(sys.executable).parent

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
    assert handlers == [{"type": "command", "command": hook_command("stop", this_runner())}]


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


def test_every_subrosa_command_a_skill_names_is_in_its_allowed_tools() -> None:
    """A skill runs `subrosa X …` through Bash; one not in its allowed-tools stops the
    agent at a permission prompt (or, unattended, fails): each is allowed. `adopt` takes
    over a person's own index: the skills tell the user to run it, never run it."""
    for skill in sorted(p for p in skills_dir().iterdir() if (p / "SKILL.md").is_file()):
        text = (skill / "SKILL.md").read_text(encoding="utf-8")
        meta = yaml.safe_load(text.split("---\n", 2)[1])
        allowed = [
            # A trailing `*`, alone in a rule, is optional: `subrosa check *` allows
            # `subrosa check` too (Claude Code's permission rules).
            tool.removeprefix("Bash(").removesuffix("*)").rstrip()
            for tool in meta.get("allowed-tools", [])
            if tool.startswith("Bash(subrosa ")
        ]
        if not allowed:
            continue
        named = set(re.findall(r"`(subrosa [a-z][a-z-]*)", text.split("---\n", 2)[2]))
        assert named, skill.name
        for command in sorted(named - {"subrosa adopt"}):
            assert any(command.startswith(prefix) for prefix in allowed), (skill.name, command)


def test_the_plugin_hook_fails_open_naming_a_command_that_installs_subrosa(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    plugin = tmp_path / "plugins" / "cache" / "subrosa"
    for name in EVENTS.values():
        result = subprocess.run(
            ["/bin/sh", "-c", hook_command(name)],
            input=b"{}",
            capture_output=True,
            # Claude Code sets CLAUDE_PLUGIN_ROOT for a plugin's hooks: the repository's copy.
            env={**os.environ, "PATH": str(empty), "CLAUDE_PLUGIN_ROOT": str(plugin)},
            timeout=30,
        )
        assert result.returncode == 0 and result.stdout == b""
        stderr = result.stderr.decode()
        assert stderr.count("\n") == 1 and f"uv tool install '{plugin}'" in stderr


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


def _install_as_a_process(project: Path, path: str) -> subprocess.CompletedProcess[str]:
    """`subrosa install` as a user runs it: this venv's script, with the PATH given."""
    return subprocess.run(
        [str(VENV_BIN / "subrosa"), "install"],
        cwd=project,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_a_venv_only_install_writes_hooks_that_run_with_an_empty_path(
    project: Path, memory_dir: Path, run: RunCli, isolated_env: Path, tmp_path: Path
) -> None:
    memory = project / ".claude" / "memory"  # the hooks find it from CLAUDE_PROJECT_DIR
    memory.mkdir(parents=True)
    leaf = write_leaf(memory, "project_codename.md", "The release is called ZEBRAFISH.")
    run("--memory-dir", str(memory), "fact", "upsert", "--leaf", str(leaf), "--hook", "ZEBRA")
    run("--memory-dir", str(memory), "generate")

    done = _install_as_a_process(project, "/usr/bin:/bin")  # subrosa only in the venv
    assert "not on your PATH" in done.stdout and str(VENV_BIN / "subrosa") in done.stdout
    assert "--scope local" in done.stderr  # an absolute path in a file shared through git
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = {event: ours(settings, event)[0]["command"] for event in EVENTS}  # type: ignore[index]
    assert all(str(VENV_BIN / "subrosa") in command for command in commands.values())

    transcript = tmp_path / "session.jsonl"
    transcript.write_text("{}\n")
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project)}
    start = _in_an_empty_environment(commands["SessionStart"], payload, project, isolated_env)
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "ZEBRA" in context
    stop = _in_an_empty_environment(commands["Stop"], payload, project, isolated_env)
    assert json.loads(stop.stdout)["decision"] == "block"


def _in_an_empty_environment(
    command: str, payload: dict[str, str], project: Path, home: Path
) -> subprocess.CompletedProcess[str]:
    """`command` as `env -i PATH= sh -c` runs it: an empty PATH, and only what Claude
    Code would set besides."""
    variables = {
        "PATH": "",
        "HOME": str(home),
        "CLAUDE_PROJECT_DIR": str(project),
        "SUBROSA_NUDGE_EVERY": "1",
        "SUBROSA_BACKGROUND_INGEST": "0",
    }
    return subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in variables.items()), "/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_with_subrosa_on_the_path_the_hooks_name_the_command(project: Path) -> None:
    done = _install_as_a_process(project, f"{VENV_BIN}:/usr/bin:/bin")
    assert "not on your PATH" not in done.stdout + done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    [handler] = ours(settings, "Stop")
    command = handler["command"]  # type: ignore[index]
    assert command.startswith("if command -v subrosa ") and str(VENV_BIN) not in command
    assert f"uv tool install {REPO}" in command  # where this subrosa came from: the checkout


def test_a_hook_whose_subrosa_went_away_fails_open_with_the_fix(project: Path) -> None:
    _install_as_a_process(project, "/usr/bin:/bin")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = ours(settings, "Stop")[0]["command"]  # type: ignore[index]
    gone = command.replace(str(VENV_BIN / "subrosa"), str(project / "deleted-venv" / "subrosa"))
    result = subprocess.run(
        ["env", "-i", "PATH=", "/bin/sh", "-c", gone], input=b"{}", capture_output=True
    )
    assert result.returncode == 0 and result.stdout == b""
    assert b"subrosa is no longer at" in result.stderr and b"uv tool install" in result.stderr


@pytest.mark.parametrize(
    "original",
    [
        '{"model":"opus","env":{"A":"1"}}',  # compact, no final newline
        '{"model": "opus", "env": {"A": "1"}}\n',  # one line, with spaces
        '{\n\t"model": "opus",\n\t"env": {\n\t\t"A": "1"\n\t}\n}\n',  # tabs
        '{\r\n    "model": "opus",\r\n    "env": {\r\n        "A": "1"\r\n    }\r\n}\r\n',
    ],
    ids=["compact", "one-line", "tabs", "crlf-4-spaces"],
)
def test_install_keeps_the_settings_file_style(project: Path, run: RunCli, original: str) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original.encode())
    run("install")
    written = path.read_bytes().decode()
    data = json.loads(written)
    assert data["model"] == "opus" and set(data["hooks"]) == set(EVENTS)
    # The same style, so the diff in a team's settings.json is only our entries.
    restyled = json.loads(original)
    restyled["hooks"] = data["hooks"]
    from subrosa.claude.install import render_settings

    assert written == render_settings(restyled, like=original)
    assert written.endswith("\n") == original.endswith("\n")
    assert ("\t" in written) == ("\t" in original)
    assert ("\r\n" in written) == ("\r\n" in original)
    edited = json.loads(written)
    edited["env"]["B"] = "2"
    path.write_text(render_settings(edited, like=original), newline="")
    run("install", "--uninstall")
    after = path.read_bytes().decode()
    assert json.loads(after) == {"model": "opus", "env": {"A": "1", "B": "2"}}
    assert after == render_settings(json.loads(after), like=original)


@pytest.mark.parametrize(
    ("recorded", "source"),
    [
        ({"url": "file:///home/me/src/sub%20rosa", "dir_info": {}}, "/home/me/src/sub rosa"),
        (
            {"url": "https://github.com/o/subrosa", "vcs_info": {"vcs": "git", "commit_id": "ab"}},
            "git+https://github.com/o/subrosa",
        ),
        (
            {
                "url": "https://x.example/s.git",
                "vcs_info": {"vcs": "git", "requested_revision": "v1"},
            },
            "git+https://x.example/s.git@v1",
        ),
        (
            {"url": "https://x.example/s-0.1.tar.gz", "archive_info": {}},
            "https://x.example/s-0.1.tar.gz",
        ),
        ({"nothing": 1}, None),
        (None, None),
    ],
)
def test_the_install_hint_installs_from_where_this_subrosa_came(
    recorded: object, source: str | None
) -> None:
    """pip and uv record a direct install's origin (PEP 610); the hint installs from it."""
    from subrosa.claude.install import source_of

    assert source_of(recorded) == source


def test_a_handler_of_the_users_that_runs_subrosa_is_theirs(project: Path, run: RunCli) -> None:
    # Uninstall deleted `subrosa hook stop; notify-send done` whole, the person's
    # notify-send with it: any command naming `subrosa hook NAME` counted as ours. Only
    # a command that runs it and nothing else is; theirs stays byte for byte, and install
    # adds no second one beside it (the hook would run twice).
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {"type": "command", "command": "subrosa hook stop; notify-send done"}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}, indent=2))
    before = path.read_bytes()
    installed = run("install").stdout
    assert "= Stop: subrosa hook stop (run by a handler of yours, left)" in installed
    assert "+ SessionStart" in installed and "+ SessionEnd" in installed
    data = json.loads(path.read_text())
    assert data["hooks"]["Stop"] == [{"hooks": [theirs]}]
    assert ours(data, "Stop") == []
    run("install", "--uninstall")
    assert path.read_bytes() == before


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("uninstall", [False, True])
def test_a_read_only_settings_json_is_refused_untouched(
    project: Path, run: RunCli, isolated_env: Path, scope: str, uninstall: bool
) -> None:
    """A person who made settings.json read-only did not want it changed: a rename over
    it would succeed (POSIX lets it), so install and uninstall refuse, naming the file,
    and write nothing at all (not the skills, not the memory dir, not the record)."""
    if uninstall:
        run("install", "--scope", scope)
    if scope == "user":
        path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    else:
        path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not uninstall:
        path.write_text('{"model": "opus"}\n')
    before = path.read_bytes()
    path.chmod(0o444)
    around = _everything_under(Path(isolated_env).parent)
    args = ["install", "--scope", scope, *(["--uninstall"] if uninstall else [])]
    result = run(*args, expect=2)
    assert str(path) in result.stderr and "read-only" in result.stderr
    assert path.read_bytes() == before and (path.stat().st_mode & 0o777) == 0o444
    assert _everything_under(Path(isolated_env).parent) == around
    assert run(*args, "--dry-run", expect=2).stderr == result.stderr


def _everything_under(root: Path) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(
    "before",
    [
        {"hooks": {}, "model": "opus"},
        {"model": "opus", "hooks": {"Stop": []}},
        {"hooks": {"SessionStart": [], "PreToolUse": []}, "mcpServers": {}, "env": {}},
    ],
)
def test_uninstall_after_an_edit_keeps_the_empty_containers_that_were_there(
    project: Path, run: RunCli, before: dict[str, Any]
) -> None:
    """Only what install added goes: an empty `hooks` or event list the file held before
    stays, in its place (the bytes from before cannot come back: the file was edited)."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(before, indent=2) + "\n")
    run("install")
    edited = json.loads(path.read_text())
    edited["permissions"] = {"allow": []}
    path.write_text(json.dumps(edited, indent=2) + "\n")
    run("install", "--uninstall")
    expected = {**before, "permissions": {"allow": []}}
    assert path.read_text() == json.dumps(expected, indent=2) + "\n"


def test_uninstall_takes_out_the_containers_install_made_even_after_a_second_install(
    project: Path, run: RunCli
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus"}\n')
    run("install")
    edited = json.loads(path.read_text())
    edited["env"] = {"A": "1"}
    stale = {"type": "command", "command": "/old/bin/subrosa hook stop"}
    edited["hooks"]["Stop"] = [{"hooks": [stale]}]  # an older subrosa's: replaced
    path.write_text(json.dumps(edited))
    assert "~ Stop" in run("install").stdout
    run("install", "--uninstall")
    assert json.loads(path.read_text()) == {"model": "opus", "env": {"A": "1"}}


def test_without_the_install_record_uninstall_takes_out_what_only_held_ours(
    project: Path, run: RunCli, isolated_env: Path
) -> None:
    """An install made before install remembered what it created (or a lost data dir):
    the containers that held only subrosa's entries go, as they always did."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus", "hooks": {"Stop": []}}')
    run("install")
    for record in (isolated_env / ".local" / "share" / "subrosa" / "installs").iterdir():
        record.unlink()
    run("install", "--uninstall")
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_install_in_a_subfolder_says_sessions_started_there_do_not_run_the_hooks(
    project: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code started in a subfolder reads that folder's .claude/settings.json, not
    # the top's (tests/e2e/test_memory_dir.py); its settings.local.json it does read.
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    result = run("install")
    assert (project / ".claude" / "settings.json").is_file()
    assert f"started in {project / 'src'}" in result.stderr
    assert "--scope local" in result.stderr
    assert "started in" not in run("install", "--scope", "local").stderr
    monkeypatch.chdir(project)
    assert "started in" not in run("install").stderr


# --- Claude Code's auto memory pointed at the project's .claude/memory -------------------


@pytest.fixture
def team_memory(project: Path) -> Path:
    """A project that keeps its memory in the repository (docs/team.md, step 5)."""
    memory = project / ".claude" / "memory"
    memory.mkdir(parents=True)
    return memory


def _local(project: Path) -> Path:
    return project / ".claude" / "settings.local.json"


def test_install_points_claude_codes_auto_memory_at_the_projects_memory_dir(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    """Claude Code's own memory ("remember X") goes to its auto-memory dir, which
    subrosa never sees: install names .claude/memory in settings.local.json (a path of
    this machine: never settings.json), keeping the file's keys and style, and uninstall
    gives the file back byte for byte."""
    local = _local(project)
    original = '{\n    "model": "opus"\n}'  # four spaces, no final newline: kept
    local.write_text(original)
    out = run("install").stdout
    assert f"updated {local}" in out and f"+ autoMemoryDirectory: {team_memory}" in out
    assert local.read_text() == (
        f'{{\n    "model": "opus",\n    "autoMemoryDirectory": {json.dumps(str(team_memory))}\n}}'
    )
    assert "autoMemoryDirectory" not in (project / ".claude" / "settings.json").read_text()
    from subrosa.claude.hooks import index_not_loaded_because

    # Claude Code now loads the index itself, so SessionStart injects none: one copy.
    assert index_not_loaded_because(str(team_memory), str(project)) is None
    assert "nothing to change" in run("install").stdout

    out = run("install", "--uninstall").stdout
    assert "- autoMemoryDirectory" in out
    assert local.read_text() == original
    assert not (project / ".claude" / "settings.json").exists()


def test_a_settings_local_json_install_created_goes_with_uninstall(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    run("install")
    assert json.loads(_local(project).read_text()) == {"autoMemoryDirectory": str(team_memory)}
    run("install", "--uninstall")
    assert not _local(project).exists()
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["memory"]


def test_the_local_scope_writes_hooks_and_the_memory_dir_into_one_file(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    out = run("install", "--scope", "local").stdout
    data = json.loads(_local(project).read_text())
    assert set(data["hooks"]) == set(EVENTS) and data["autoMemoryDirectory"] == str(team_memory)
    assert out.count(f"+ autoMemoryDirectory: {team_memory}") == 1
    run("install", "--scope", "local", "--uninstall")
    assert not _local(project).exists()


def test_uninstall_of_the_project_scope_leaves_the_local_scopes_hooks(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    """Both scopes installed: each uninstall takes out its own part of the file."""
    run("install", "--scope", "local")
    run("install")
    run("install", "--uninstall")
    data = json.loads(_local(project).read_text())
    assert set(data["hooks"]) == set(EVENTS) and "autoMemoryDirectory" not in data
    run("install", "--scope", "local", "--uninstall")
    assert not _local(project).exists()


def test_uninstall_after_an_edit_takes_out_only_the_setting_install_added(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    local = _local(project)
    local.write_text('{"model": "opus"}\n')
    run("install")
    edited = json.loads(local.read_text())
    edited["env"] = {"A": "1"}
    local.write_text(json.dumps(edited) + "\n")
    run("install", "--uninstall")
    assert json.loads(local.read_text()) == {"model": "opus", "env": {"A": "1"}}


def test_dry_run_shows_the_memory_setting_and_writes_nothing(
    project: Path, team_memory: Path, run: RunCli, isolated_env: Path
) -> None:
    around = _everything_under(isolated_env.parent)
    out = run("install", "--dry-run").stdout
    assert f"would update {_local(project)}" in out
    assert f"+ autoMemoryDirectory: {team_memory}" in out
    assert _everything_under(isolated_env.parent) == around


@pytest.mark.parametrize("where", ["user", "project", "local"])
def test_an_auto_memory_dir_set_elsewhere_is_left_with_one_warning(
    project: Path, team_memory: Path, run: RunCli, where: str
) -> None:
    """Someone chose where Claude Code's memory goes: install does not move it, and
    says in one line that Claude Code's own memory writes do not reach subrosa's."""
    path = {
        "user": Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json",
        "project": project / ".claude" / "settings.json",
        "local": _local(project),
    }[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"autoMemoryDirectory": "~/notes"}\n')
    result = run("install", "--scope", "local" if where == "project" else "project")
    assert "autoMemoryDirectory" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if "autoMemoryDirectory" in line]
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and "~/notes" in lines[0] and str(team_memory) in lines[0]
    data = [json.loads(p.read_text()) for p in project.joinpath(".claude").glob("*.json")]
    assert sum("autoMemoryDirectory" in d for d in data) == (where != "user")


def test_an_auto_memory_dir_already_set_to_the_memory_dir_is_left(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    user = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"autoMemoryDirectory": str(team_memory)}))
    result = run("install")
    assert "autoMemoryDirectory" not in result.stdout + result.stderr
    assert not _local(project).exists()


def test_the_user_scope_and_a_private_memory_dir_set_no_auto_memory_dir(
    project: Path, run: RunCli, isolated_env: Path
) -> None:
    run("install")  # no .claude/memory: the memory dir is Claude Code's own already
    assert not _local(project).exists()
    (project / ".claude" / "memory").mkdir()
    run("install", "--scope", "user")  # every project's: cannot name this one's folder
    assert not _local(project).exists()
    user = json.loads((Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").read_text())
    assert "autoMemoryDirectory" not in user


def test_a_read_only_settings_local_json_is_refused_untouched(
    project: Path, team_memory: Path, run: RunCli, isolated_env: Path
) -> None:
    local = _local(project)
    local.write_text('{"model": "opus"}\n')
    local.chmod(0o444)
    around = _everything_under(isolated_env.parent)
    result = run("install", expect=2)
    assert str(local) in result.stderr and "read-only" in result.stderr
    assert _everything_under(isolated_env.parent) == around


def test_install_says_when_git_would_commit_the_machines_memory_path(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """settings.local.json now names a path of this machine: committed (a team commits
    `.claude/`), every clone would get the lead's path. Claude Code has git ignore the
    file only when it writes it itself, so install says so when git does not."""
    repo = tmp_path / "repo"
    (repo / ".claude" / "memory").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    result = run("install")
    [line] = [line for line in result.stderr.splitlines() if "git" in line and "ignore" in line]
    assert str(repo / ".claude" / "settings.local.json") in line and ".gitignore" in line
    run("install", "--uninstall")
    (repo / ".gitignore").write_text(".claude/settings.local.json\n")
    result = run("install")
    assert "autoMemoryDirectory" in result.stdout and "ignore" not in result.stderr


def test_a_settings_local_json_broken_since_does_not_keep_the_hooks_in(
    project: Path, team_memory: Path, run: RunCli
) -> None:
    run("install")
    _local(project).write_text("{not json")
    result = run("install", "--uninstall")
    assert not (project / ".claude" / "settings.json").exists()
    assert _local(project).read_text() == "{not json"
    assert "autoMemoryDirectory was left in place" in result.stderr


def test_a_worktree_points_claude_code_at_the_memory_it_shares(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worktree without a .claude/memory of its own shares the main repository's
    (as Claude Code's auto-memory dir is shared): its settings.local.json names that,
    and doctor run in the worktree reads the worktree's settings, as Claude Code does."""
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (main / ".claude" / "memory").mkdir(parents=True)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "db.sqlite"))
    monkeypatch.chdir(worktree)
    run("install")
    assert json.loads(_local(worktree).read_text()) == {
        "autoMemoryDirectory": str(main / ".claude" / "memory")
    }
    assert not (main / ".claude" / "settings.local.json").exists()
    checks = {
        c["name"]: c for c in json.loads(run("doctor", "--json", expect=None).stdout)["checks"]
    }
    assert checks["auto memory"]["ok"], checks["auto memory"]
