"""The fake Messages API on its own (no Claude Code needed): the wire shapes it serves and
how it tells the agent loop's requests from side calls."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e]

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def post(api: FakeAnthropic, body: dict[str, Any], path: str = "/v1/messages") -> bytes:
    request = urllib.request.Request(
        api.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: bytes = response.read()
        return data


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_a_scripted_tool_call_streams_as_the_messages_api_does() -> None:
    with FakeAnthropic() as api:
        api.respond_bash("subrosa fact list")
        raw = post(api, {"model": "m", "stream": True, "tools": TOOLS, "messages": []})

    events = sse_events(raw)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    block = events[1][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["input"] == {}
    delta = events[2][1]["delta"]
    assert json.loads(delta["partial_json"])["command"] == "subrosa fact list"
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"


def test_side_calls_do_not_take_scripted_answers() -> None:
    with FakeAnthropic(side_text="A title") as api:
        api.respond_text("scripted")
        title = json.loads(post(api, {"model": "haiku", "messages": []}))
        probe = json.loads(post(api, {"model": "m", "max_tokens": 1, "tools": TOOLS}))
        agent = json.loads(post(api, {"model": "m", "tools": TOOLS, "messages": []}))
        after = json.loads(post(api, {"model": "m", "tools": TOOLS, "messages": []}))
        tokens = json.loads(post(api, {"messages": []}, "/v1/messages/count_tokens"))

    assert title["content"] == [{"type": "text", "text": "A title"}]
    assert probe["content"][0]["text"] == "A title"
    assert agent["content"][0]["text"] == "scripted" and agent["stop_reason"] == "end_turn"
    assert after["content"][0]["text"] == api.default_text
    assert tokens == {"input_tokens": 100}
    assert len(api.requests) == 5 and len(api.agent_requests) == 2 and api.pending == 0


def test_the_log_reads_back_tool_results_and_what_each_call_added() -> None:
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "no facts"},
                {"type": "text", "text": "a reminder"},
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": "hook said so"}]},
    ]
    with FakeAnthropic() as api:
        post(api, {"system": "sys", "tools": TOOLS, "messages": messages, "stream": True})

    [request] = api.agent_requests
    assert request.tool_results() == ["no facts"]
    assert request.new_texts() == ["no facts", "a reminder", "hook said so"]
    assert request.texts()[:2] == ["sys", "hello"]
