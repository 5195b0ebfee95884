"""The repository as a Claude Code plugin: it validates, and `--plugin-dir` runs its hooks."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.claude_code import ClaudeCode, ClaudeProject, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic
from tests.e2e.test_session import session_start_contexts, stop_feedback

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def validate(cc: ClaudeProject, repo_root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    if not cc.claude.at_least("2.0.77"):  # checked: 2.0.77 has it, 1.0.128 not
        pytest.skip(f"Claude Code {cc.claude.version} has no `claude plugin validate`")
    return subprocess.run(
        [str(cc.claude.binary), "plugin", "validate", *flags, str(repo_root)],
        cwd=repo_root,
        env=cc.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repository_validates_as_a_plugin(cc: ClaudeProject, repo_root: Path) -> None:
    done = validate(cc, repo_root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    if cc.claude.at_least("2.1.326"):  # before, it does not list what the plugin provides
        for part in ("SessionStart", "Stop", "SessionEnd", "subrosa:memory-extraction"):
            assert part in done.stdout


def test_the_repository_validates_strictly(cc: ClaudeProject, repo_root: Path) -> None:
    if not cc.claude.at_least("2.1.150"):  # checked: 2.1.63 has no --strict, 2.1.150 has
        pytest.skip(f"Claude Code {cc.claude.version} has no `plugin validate --strict`")
    done = validate(cc, repo_root, "--strict")
    assert done.returncode == 0, done.stdout + done.stderr


def plugin_cli(cc: ClaudeProject, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(cc.claude.binary), "plugin", *args],
        cwd=cwd,
        env=cc.env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"claude plugin {' '.join(args)}\n{done.stdout}{done.stderr}"
    return done


def clean_clone(repo_root: Path, target: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked and new, nothing
    ignored: no .venv), so the test sees what a user's `git clone` gives Claude Code."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo_root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = repo_root / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_marketplace_adds_and_installs_the_plugin_offline(
    cc: ClaudeProject, api: FakeAnthropic, repo_root: Path
) -> None:
    clone = clean_clone(repo_root, cc.root / "subrosa")
    memory = memory_project(cc)

    # As the README says, from inside the clone (`.` alone is refused by Claude Code).
    plugin_cli(cc, "marketplace", "add", "./", cwd=clone)
    plugin_cli(cc, "install", "subrosa@subrosa", cwd=cc.project)
    installed = json.loads(plugin_cli(cc, "list", "--json", cwd=cc.project).stdout)
    [listed] = [plugin for plugin in installed if plugin["id"] == "subrosa@subrosa"]
    assert listed["enabled"] is True and listed["version"] == "0.1.0"

    run = cc.run("hello", env={"SUBROSA_NUDGE_EVERY": "1"})  # no --plugin-dir: installed

    first, after_stop = api.agent_requests
    [injected] = session_start_contexts(first)
    assert "ZEBRAFISH" in injected
    assert run.session_id in stop_feedback(after_stop)[0]
    queue = cc.subrosa_json("--memory-dir", str(memory), "checkpoint-list")
    assert [q["session_id"] for q in queue] == [run.session_id]


def test_the_plugin_without_the_command_says_how_to_install_it(
    claude_code: ClaudeCode, api: FakeAnthropic, repo_root: Path, tmp_path: Path
) -> None:
    """No `subrosa` on the PATH: the session runs anyway, and the debug log names the
    command that installs it from the plugin's own folder."""
    empty = tmp_path / "no-subrosa-bin"
    empty.mkdir()
    cc = ClaudeProject(claude_code, api, tmp_path / "e2e", empty)
    debug = tmp_path / "debug.txt"
    cc.run("hello", "--debug-file", str(debug), plugin_dirs=(repo_root,))
    skipped = [line for line in debug.read_text().splitlines() if "hook skipped" in line]
    assert skipped and f"uv tool install '{repo_root}'" in skipped[0]


def memory_project(cc: ClaudeProject) -> Path:
    memory = cc.project / ".claude" / "memory"
    leaf = write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa(
        "--memory-dir", str(memory), "fact", "upsert", "--leaf", str(leaf), "--hook", "ZEBRAFISH"
    )
    cc.subrosa("--memory-dir", str(memory), "generate")
    return memory


def test_plugin_dir_runs_every_hook(cc: ClaudeProject, api: FakeAnthropic, repo_root: Path) -> None:
    memory = memory_project(cc)  # no `subrosa install`: the plugin alone

    run = cc.run("hello", plugin_dirs=(repo_root,), env={"SUBROSA_NUDGE_EVERY": "1"})

    first, after_stop = api.agent_requests
    [injected] = session_start_contexts(first)
    assert "ZEBRAFISH" in injected  # SessionStart
    assert run.session_id in stop_feedback(after_stop)[0]  # Stop, nudging every turn
    queue = cc.subrosa_json("--memory-dir", str(memory), "checkpoint-list")
    assert [q["session_id"] for q in queue] == [run.session_id]  # SessionEnd


def test_plugin_and_install_together_inject_once_and_nudge_at_15(
    cc: ClaudeProject, api: FakeAnthropic, repo_root: Path
) -> None:
    memory_project(cc)
    cc.subrosa("install")

    with cc.conversation(plugin_dirs=(repo_root,)) as talk:
        for turn in range(1, 16):
            talk.say(f"Prompt number {turn}.")
    assert talk.returncode == 0, talk.stderr

    first = api.agent_requests[0]
    assert first.text().count("ZEBRAFISH") == 1, "the index is injected once"
    nudged = [i for i, r in enumerate(api.agent_requests) if stop_feedback(r)]
    assert nudged == [15], "one nudge, after the 15th turn"
    # The plugin's SessionStart told the user (a systemMessage, not for the model).
    responses = [json.dumps(e) for e in talk.events if e.get("subtype") == "hook_response"]
    assert any("registered twice" in r for r in responses), responses
    assert "registered twice" not in first.text()


def test_plugin_and_install_together_still_tell_bash_the_memory_dir(
    cc: ClaudeProject, api: FakeAnthropic, repo_root: Path
) -> None:
    """Whichever registration's SessionStart acts, its CLAUDE_ENV_FILE reaches Bash."""
    memory = memory_project(cc)
    cc.subrosa("install")
    api.respond_bash('echo "dir=$SUBROSA_MEMORY_DIR"')

    cc.run("hello", plugin_dirs=(repo_root,))

    assert api.agent_requests[1].tool_results() == [f"dir={memory}"]
