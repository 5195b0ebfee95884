"""One memory and one project, whoever asks: the hooks Claude Code runs, the commands its
Bash tool runs, from the repository root or a subfolder."""

from __future__ import annotations

import json

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic
from tests.e2e.test_session import session_start_contexts

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_hooks_get_the_project_dir_and_bash_commands_do_not(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """What Claude Code gives each of them; the memory-dir resolution has to live with it."""
    settings = cc.project / ".claude" / "settings.json"
    settings.parent.mkdir()
    record = cc.root / "hook-env.txt"
    settings.write_text(
        '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", '
        f'"command": "env > {record}"}}]}}]}}}}\n'
    )
    api.respond_bash("env")

    run = cc.run("hello")

    hook_env = dict(line.split("=", 1) for line in record.read_text().splitlines() if "=" in line)
    assert hook_env["CLAUDE_PROJECT_DIR"] == str(cc.project)
    assert hook_env.get("CLAUDE_ENV_FILE")  # where SessionStart may export variables for Bash
    [bash_env] = api.agent_requests[1].tool_results()
    assert "CLAUDE_PROJECT_DIR=" not in bash_env
    # The session id: 2.1.63 and older give it to neither (checkpoint-mark then takes the
    # live session SessionStart recorded, or the skill's --session).
    if cc.claude.at_least("2.1.150"):
        assert hook_env["CLAUDE_CODE_SESSION_ID"] == run.session_id
        assert f"CLAUDE_CODE_SESSION_ID={run.session_id}" in bash_env
    else:
        assert "CLAUDE_CODE_SESSION_ID" not in hook_env
        assert "CLAUDE_CODE_SESSION_ID=" not in bash_env


def test_bash_tool_commands_see_the_memory_the_hook_injected(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    memory = cc.project / ".claude" / "memory"
    leaf = write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa(
        "--memory-dir", str(memory), "fact", "upsert", "--leaf", str(leaf), "--hook", "ZEBRAFISH"
    )
    cc.subrosa("--memory-dir", str(memory), "generate")
    (cc.project / "src").mkdir()
    # The agent's own new leaf (written by hand here: Claude Code asks before a Bash
    # command writes under .claude/, and `-p` has nobody to ask).
    write_leaf(memory, "user_prefers_pnpm.md", "The user uses pnpm.", "user")
    api.respond_bash("subrosa fact list")
    api.respond_bash("cd src && env -u SUBROSA_MEMORY_DIR subrosa fact list")
    api.respond_bash(
        'subrosa fact upsert --leaf user_prefers_pnpm.md --hook "uses pnpm" && subrosa generate'
    )

    cc.run("hello")

    requests = api.agent_requests
    [injected] = session_start_contexts(requests[0])
    assert "ZEBRAFISH" in injected
    [at_root] = requests[1].tool_results()
    [in_subfolder] = requests[2].tool_results()
    assert "project_release_codename" in at_root
    assert "project_release_codename" in in_subfolder
    [upsert_and_generate] = requests[3].tool_results()
    assert "added user_prefers_pnpm" in upsert_and_generate
    assert "uses pnpm" in (memory / "MEMORY.md").read_text()
    assert not (cc.auto_memory_dir() / "MEMORY.md").exists()


def test_subfolder_and_worktree_sessions_use_the_repositorys_memory(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """Started in a subfolder, or in a worktree that has no .claude/memory of its own, the
    hooks find the repository's .claude/memory, and tell the session's Bash commands
    (SUBROSA_MEMORY_DIR in CLAUDE_ENV_FILE), which then see it from anywhere."""
    cc.subrosa("install", "--scope", "user")  # a subfolder's session reads no project settings
    memory = cc.project / ".claude" / "memory"
    leaf = write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa("--memory-dir", str(memory), "fact", "upsert", "--leaf", str(leaf), "--hook", "Z")
    cc.subrosa("--memory-dir", str(memory), "generate")
    (cc.project / "README").write_text("x\n")
    cc.git("add", "README")
    cc.git("commit", "-qm", "first")  # .claude/memory stays untracked: not in the worktree
    worktree = cc.root / "worktree"
    cc.git("worktree", "add", "-q", str(worktree), "-b", "feature")
    subfolder = cc.project / "src" / "api"
    subfolder.mkdir(parents=True)

    for cwd in (subfolder, worktree):
        api.clear()
        api.respond_bash('echo "dir=$SUBROSA_MEMORY_DIR"')
        api.respond_bash("cd / && subrosa fact list")
        cc.run("hello", cwd=cwd)

        first, echoed, listed = api.agent_requests[:3]
        [injected] = session_start_contexts(first)
        assert "ZEBRAFISH" in injected or "project_release_codename" in injected, cwd
        assert echoed.tool_results() == [f"dir={memory}"], cwd
        assert "project_release_codename" in listed.tool_results()[0], cwd


def test_a_session_started_in_a_subfolder_belongs_to_the_repository(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    # User scope: Claude Code started in a subfolder does not read the repository's
    # .claude/settings.json (it reads <cwd>/.claude/settings.json), so project-scope hooks
    # would not run at all there.
    cc.subrosa("install", "--scope", "user")
    subfolder = cc.project / "src" / "api"
    subfolder.mkdir(parents=True)

    run = cc.run("Remember the word KOOKABURRA.", cwd=subfolder)

    everywhere = wait_for(
        lambda: cc.subrosa_json("search", "--all-projects", "KOOKABURRA"), "the archive"
    )
    assert [h["session_id"] for h in everywhere] == [run.session_id]
    at_root = cc.subrosa_json("search", "KOOKABURRA")
    assert [h["session_id"] for h in at_root] == [run.session_id]
    in_subfolder = cc.subrosa_json("search", "KOOKABURRA", cwd=subfolder)
    assert [h["session_id"] for h in in_subfolder] == [run.session_id]


def test_doctor_in_a_subfolder_says_the_project_scope_hooks_do_not_run_there(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """`subrosa install` (project scope, the default) writes the repository's
    .claude/settings.json, which Claude Code started in a subfolder does not read: such
    a session gets no index and is not archived. `doctor` run there says so, and its
    fix (the local scope: Claude Code reads the top's settings.local.json) works."""
    cc.subrosa("install")
    memory = cc.project / ".claude" / "memory"
    write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa("generate")
    subfolder = cc.project / "src"
    subfolder.mkdir()
    checks = {c["name"]: c for c in cc.subrosa_json("doctor", expect=None)["checks"]}
    assert checks["hooks"]["ok"], "at the top the project's hooks run"

    cc.run("hello", cwd=subfolder)

    [request] = api.agent_requests
    assert "ZEBRAFISH" not in request.text(), "no subrosa hook ran in the subfolder"
    checks = {c["name"]: c for c in cc.subrosa_json("doctor", cwd=subfolder, expect=None)["checks"]}
    hooks = checks["hooks"]
    assert not hooks["ok"] and hooks["severity"] == "warning"
    assert str(subfolder) in hooks["detail"] and "--scope local" in hooks["fix"]

    cc.subrosa("install", "--scope", "local", cwd=subfolder)
    api.clear()
    cc.run("hello", cwd=subfolder)

    [request] = api.agent_requests
    assert "ZEBRAFISH" in request.text()
    checks = {c["name"]: c for c in cc.subrosa_json("doctor", cwd=subfolder, expect=None)["checks"]}
    assert checks["hooks"]["ok"], checks["hooks"]


def test_auto_memory_turned_off_for_the_repository_is_off_in_its_subfolders(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """`autoMemoryEnabled: false` in the repository's settings.local.json, which Claude
    Code reads for a session started in a subfolder too: Claude Code loads no MEMORY.md,
    so SessionStart has to inject the index there as well."""
    cc.subrosa("install", "--scope", "local")
    local = cc.project / ".claude" / "settings.local.json"
    settings = json.loads(local.read_text())
    local.write_text(json.dumps({**settings, "autoMemoryEnabled": False}))
    memory = cc.auto_memory_dir()
    write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa("generate")
    subfolder = cc.project / "src"
    subfolder.mkdir()

    for cwd in (cc.project, subfolder):
        api.clear()
        cc.run("hello", cwd=cwd)

        [request] = api.agent_requests
        assert "persistent file-based memory" not in request.text(), "auto memory is off"
        [injected] = session_start_contexts(request)
        assert "ZEBRAFISH" in injected, cwd


def test_install_gives_claude_code_the_repositorys_memory_as_its_own(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """The memory in the repository (.claude/memory, docs/team.md step 5): install sets
    `autoMemoryDirectory` in settings.local.json, so Claude Code keeps its own memory
    ("remember X") there too, its system prompt naming that folder, and loads the index
    itself: the model gets it once, and SessionStart injects nothing."""
    memory = cc.project / ".claude" / "memory"
    leaf = write_leaf(memory, "project_release_codename.md", "The release is ZEBRAFISH.")
    cc.subrosa("fact", "upsert", "--leaf", str(leaf), "--hook", "release codename ZEBRAFISH")
    cc.subrosa("generate")
    [line] = [s for s in (memory / "MEMORY.md").read_text().splitlines() if "ZEBRAFISH" in s]
    cc.subrosa("install")
    assert json.loads((cc.project / ".claude" / "settings.local.json").read_text()) == {
        "autoMemoryDirectory": str(memory)
    }

    cc.run("hello")

    [first] = api.agent_requests
    assert first.text().count(line) == 1, "the index once: loaded by Claude Code"
    assert not session_start_contexts(first)
    assert "persistent file-based memory" in first.system_text
    assert str(memory) in first.system_text
    assert str(cc.auto_memory_dir()) not in first.text()
    checks = {c["name"]: c for c in cc.subrosa_json("doctor", expect=None)["checks"]}
    assert checks["auto memory"]["ok"], checks["auto memory"]
