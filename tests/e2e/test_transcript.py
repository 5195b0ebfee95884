"""What Claude Code writes to a transcript after a Bash command, such as `checkpoint-mark`,
has run: the facts a "this session is extracted" mark has to be decided on (issue 13).

These pin Claude Code's behaviour (the version under test), not subrosa's: when a new
Claude Code version changes them, the mark's rules must be looked at again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def records_after(cc: ClaudeProject, session_id: str, offset: int) -> list[dict[str, Any]]:
    data = cc.transcript(session_id).read_bytes()
    assert len(data) > offset
    return [json.loads(line) for line in data[offset:].splitlines()]


def content_types(record: dict[str, Any]) -> list[str]:
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        return ["str"]
    return [block.get("type", "?") for block in content or []]


def test_claude_code_appends_its_own_records_after_a_bash_command(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    """The command sees the transcript at some size; the session then ends with only the
    tail of that same turn appended, and no new user prompt."""
    with cc.conversation() as talk:
        transcript = cc.transcript_dir() / f"{talk.session_id}.jsonl"
        api.respond_bash(  # the size a mark would record (the file may come late)
            f"for i in $(seq 50); do [ -e {transcript} ] && break; sleep 0.1; done; "
            f"stat -c %s {transcript}"
        )
        api.respond_bash("echo cleared")
        api.respond_text("Extraction done.")
        talk.say("Run the memory-extraction skill now.")
    size = int(api.agent_requests[1].tool_results()[0].strip())

    tail = records_after(cc, talk.session_id, size)

    # (2.1.302 also writes `api-request-blob` records with a message: not the conversation.)
    messages = [r for r in tail if "message" in r and r.get("type") in ("user", "assistant")]
    # Claude Code may write the command's own tool_use record after the command ran
    # (seen on a loaded CI machine): the tail then starts with that record.
    if messages and "stat -c" in json.dumps(messages[0]["message"].get("content")):
        messages = messages[1:]
    kinds = [(r.get("type"), *content_types(r)) for r in messages]
    assert kinds == [
        ("user", "tool_result"),  # the output of the command that saw `size`
        ("assistant", "tool_use"),  # the next command
        ("user", "tool_result"),
        ("assistant", "text"),  # the final report
    ]
    # Everything else is Claude Code's bookkeeping, without a message: request shapes,
    # the prompt snapshot (tens of KB), last-prompt, cost, the Stop hook summary.
    others = {r.get("type") for r in tail if "message" not in r}
    if cc.claude.at_least("2.1.150"):  # 2.1.63 and older write no last-prompt
        assert "last-prompt" in others
    if cc.claude.at_least("2.1.302"):  # 2.1.250 and older write none of these
        assert {"api-request", "cost-state"} <= others
        snapshot = [r for r in tail if (r.get("attachment") or {}).get("type") == "prompt_snapshot"]
        assert snapshot and len(json.dumps(snapshot[0])) > 10_000
    assert not [r for r in tail if r.get("type") == "user" and "str" in content_types(r)]


def test_a_prompt_after_the_command_is_a_user_record_with_text(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    with cc.conversation() as talk:
        transcript = cc.transcript_dir() / f"{talk.session_id}.jsonl"
        # Claude Code writes its transcript behind the turn: on a loaded machine the
        # file may not exist yet when the command runs; wait for it (5 s at most).
        api.respond_bash(
            f"for i in $(seq 50); do [ -e {transcript} ] && break; sleep 0.1; done; "
            f"stat -c %s {transcript}"
        )
        api.respond_text("Extraction done.")
        talk.say("Run the memory-extraction skill now.")
        talk.say("One more thing: staging moved to eu-west-2.")
    size = int(api.agent_requests[1].tool_results()[0].strip())

    tail = records_after(cc, talk.session_id, size)

    prompts = [r for r in tail if r.get("type") == "user" and "str" in content_types(r)]
    assert [p["message"]["content"] for p in prompts] == [
        "One more thing: staging moved to eu-west-2."
    ]
    if cc.claude.at_least("2.1.150"):  # 2.1.63 and older give prompts no promptId
        assert prompts[0].get("promptId")
