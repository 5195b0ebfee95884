"""Work Claude Code 2.1.332 does beside the conversation: a Bash command run in the
background and a subagent (the Agent tool). Claude Code tells the model either has
finished with a `<task-notification>`, queued like a prompt and filed as a `user`
record or a `queued_command` attachment; a subagent's transcript
(`<session>/subagents/agent-*.jsonl`) opens with the prompt the main agent wrote for it,
as a `user` record. Nobody typed either: subrosa keeps them, as a tool's output and as
the assistant's, never as the person's words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def said(cc: ClaudeProject, *words: str) -> list[tuple[str, str]]:
    """(kind, snippet) of what `subrosa search` finds in the transcripts."""
    found = cc.subrosa_json("search", "--transcripts", *words)
    return [(h["role"], h["snippet"]) for h in found]


def shown(cc: ClaudeProject, session_id: str) -> list[dict[str, Any]]:
    return list(cc.subrosa_json("transcript", "show", session_id)["messages"])


def test_a_background_commands_notice_is_a_tools_output(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    done = cc.root / "tmp" / "done"
    api.respond_tool_use(
        "Bash",
        {"command": f"echo ALPACA; touch {done}", "description": "bg", "run_in_background": True},
    )
    api.respond_text("Started it in the background.")
    api.respond_text("The ALPACA command finished.")
    with cc.conversation() as talk:
        talk.say("run the ALPACA job in the background")
        wait_for(lambda: done.exists() or None, "the background command")
        # Claude Code takes the notice as a turn of its own, answered by the model.
        talk.result()
    path = cc.transcript(talk.session_id)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    notices = [
        r
        for r in records
        if r.get("type") == "user" and "<task-notification>" in json.dumps(r["message"])
    ]
    assert len(notices) == 1
    if cc.claude.at_least("2.1.213"):  # 2.1.63 marks it with no `origin`
        assert (notices[0].get("origin") or {}).get("kind") == "task-notification"

    cc.subrosa("ingest")
    kinds = [(m["kind"], m["text"]) for m in shown(cc, talk.session_id)]
    [notice] = [text for _, text in kinds if "<task-notification>" in text]
    assert notice.startswith("[tool result] <task-notification>")
    assert [text for kind, text in kinds if kind == "user"] == [
        "run the ALPACA job in the background"
    ]


def test_a_subagents_prompt_and_notice_are_not_the_users_words(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.allowed_tools.append("Agent")
    api.respond_tool_use(
        "Agent",
        {
            "description": "look around",
            "prompt": "Find the NARWHAL file",
            "subagent_type": "general-purpose",
        },
    )
    # The subagent runs in the background: the next answers go to it or to the main
    # agent in whatever order they ask; each is plain text, so any order ends both.
    api.respond_text("The subagent is looking.")
    api.respond_text("Found the NARWHAL in notes.txt.")
    api.respond_text("The subagent says: notes.txt.")
    with cc.conversation() as talk:
        talk.say("spawn a subagent to find the NARWHAL file")
        wait_for(
            lambda: list(cc.claude_dir.glob(f"projects/*/{talk.session_id}/subagents/*.jsonl")),
            "the subagent's transcript",
        )
        if cc.claude.at_least("2.1.198"):  # before it, subagents run in the foreground
            talk.result()  # the notice's turn: the main agent reports what it found
    [subagent] = cc.claude_dir.glob(f"projects/*/{talk.session_id}/subagents/*.jsonl")
    first = json.loads(subagent.read_text().splitlines()[0])
    assert (first["type"], first["isSidechain"], first["message"]["content"]) == (
        "user",
        True,
        "Find the NARWHAL file",
    )

    cc.subrosa("ingest")
    users = [m["text"] for m in shown(cc, talk.session_id) if m["kind"] == "user"]
    assert users == ["spawn a subagent to find the NARWHAL file"]
    assert ("assistant", "Find the **NARWHAL** **file**") in said(cc, "NARWHAL", "file")
