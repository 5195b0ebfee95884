"""The memory-extraction skill as the agent runs it: through Claude Code's Skill and Bash
tools, each command's output read back from the next request the model gets."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.e2e.claude_code import ClaudeProject, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LEAF = """---
name: feedback-no-mocks
description: Tests run the real CLI on real SQLite files; the user rejects mocks.
metadata:
  type: feedback
---

Never mock our own code in tests (said on 2026-11-30).
"""


def heredoc(path: Path, text: str) -> str:
    return f"cat > {shlex.quote(str(path))} <<'LEAF'\n{text}LEAF"


def queued(cc: ClaudeProject) -> list[str]:
    return [entry["session_id"] for entry in cc.subrosa_json("checkpoint-list")]


def test_the_skill_loads_and_its_commands_run_through_the_bash_tool(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    memory = cc.auto_memory_dir()  # the default memory dir: hooks and commands agree on it
    old = write_leaf(
        memory, "user_prefers_pnpm.md", "The user installs packages with pnpm.", "user"
    )
    cc.subrosa(
        "--memory-dir", str(memory), "fact", "upsert", "--leaf", str(old), "--hook", "uses pnpm"
    )
    # Generated before the session: Claude Code writes a MEMORY.md of its own at start when
    # its auto-memory dir has leaves and no index, which `generate` would then refuse.
    cc.subrosa("--memory-dir", str(memory), "generate")
    leaf = memory / "feedback_no_mocks.md"
    sid = "0b7e3c1e-5f0a-4d8e-9a53-6f4d2b9c1a01"
    steps = [
        heredoc(leaf, LEAF),
        f'subrosa fact upsert --leaf {leaf} --hook "no mocks: real CLI, real SQLite"',
        "subrosa fact list",
        "subrosa generate",
        f"subrosa checkpoint-mark --session {sid}",
        "subrosa checkpoint-clear",
        "subrosa check",
    ]
    api.respond_tool_use("Skill", {"skill": "memory-extraction"})
    for command in steps:
        api.respond_bash(command)
    api.respond_text("Saved 1 new fact; the witness passes.")

    cc.run("Flush session memory, please.", session_id=sid)

    requests = api.agent_requests
    assert len(requests) == 2 + len(steps)
    # The Skill tool loaded SKILL.md, with Claude Code's ${CLAUDE_SESSION_ID} filled in.
    skill = "\n".join(requests[1].new_texts())
    assert "# Memory extraction" in skill and f"--session {sid}" in skill
    results = [r.tool_results() for r in requests[2:]]
    assert all(len(r) == 1 for r in results), results
    _, upsert, listing, generate, mark, clear, check = (r[0] for r in results)
    assert "added feedback_no_mocks" in upsert
    assert "user_prefers_pnpm" in listing and "feedback_no_mocks" in listing
    assert "wrote MEMORY.md: 2 facts" in generate
    assert f"marked {sid}" in mark and str(cc.transcript(sid)) in mark
    assert "cleared 0 queued sessions" in clear
    assert "Exit code" not in check and "ok" in check.lower()
    # ...and on disk, as a later session will find it.
    assert "no mocks: real CLI, real SQLite" in (memory / "MEMORY.md").read_text()
    slugs = [f["slug"] for f in cc.subrosa_json("--memory-dir", str(memory), "fact", "list")]
    assert slugs == ["user_prefers_pnpm", "feedback_no_mocks"]


def extract_then(cc: ClaudeProject, api: FakeAnthropic, *more_prompts: str) -> str:
    """A session that runs the extraction's last steps through the Bash tool (mark, clear,
    a final report), then goes on with `more_prompts`; returns its id once it ended."""
    cc.subrosa("install")
    with cc.conversation() as talk:
        api.respond_bash(f"subrosa generate && subrosa checkpoint-mark --session {talk.session_id}")
        api.respond_bash("subrosa checkpoint-clear")
        api.respond_text("Extraction done: nothing new passed the durable-fact test.")
        talk.say("Run the memory-extraction skill now.")
        for prompt in more_prompts:
            talk.say(prompt)
    assert talk.returncode == 0, talk.stderr
    assert "marked " + talk.session_id in api.agent_requests[1].tool_results()[0]
    return talk.session_id


def test_a_session_that_ends_right_after_its_extraction_is_not_queued(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    extract_then(cc, api)

    assert queued(cc) == []
    api.clear()
    cc.run("A new day.")
    [first] = api.agent_requests
    assert "ended without memory extraction" not in first.text()


def test_a_session_that_goes_on_talking_after_its_extraction_is_queued(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    sid = extract_then(cc, api, "One more thing: the staging database moved to eu-west-2.")

    assert queued(cc) == [sid]
    api.clear()
    cc.run("A new day.")
    [first] = api.agent_requests
    assert "1 earlier session of this project ended without memory extraction" in first.text()
