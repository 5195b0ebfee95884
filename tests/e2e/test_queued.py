"""A prompt sent while Claude Code works (Claude Code 2.1.332): it queues it and hands it
to the model within the running turn, beside the tool's output. The transcript holds
it only as a queue operation and a `queued_command` attachment, never as a user record:
subrosa must archive it, once, where the model took it in."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject, Conversation, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic
from tests.e2e.test_resume import records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def while_bash_runs(
    cc: ClaudeProject, api: FakeAnthropic, talk: Conversation, seconds: int, answer: str
) -> None:
    """A first prompt whose turn runs a Bash command for `seconds` (then `answer`),
    returning once the command has started: what is sent next is typed while it runs."""
    marker = cc.root / "tmp" / "running"
    api.respond_bash(f"touch {marker}; sleep {seconds}; echo slept")
    api.respond_text(answer)
    talk.send("Sleep a little.")
    wait_for(lambda: marker.exists() or None, "the command to start")


def test_a_prompt_sent_while_a_tool_runs_is_archived_once(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    with cc.conversation() as talk:
        while_bash_runs(cc, api, talk, 3, "Slept. About the ZEBRA cache: it is warm.")
        talk.send("also check the ZEBRA cache")
        talk.result()
    # What Claude Code did with it: the second request carries it beside the tool's
    # output; the transcript has no user record of it.
    assert "also check the ZEBRA cache" in "\n".join(api.agent_requests[1].new_texts())
    written = records(cc.transcript(talk.session_id))
    users = [json.dumps(r["message"]) for r in written if r.get("type") == "user"]
    assert not [u for u in users if "ZEBRA" in u]
    kinds = {(r.get("type"), (r.get("attachment") or {}).get("type")) for r in written}
    assert ("queue-operation", None) in kinds
    if cc.claude.at_least("2.1.150"):  # 2.1.63 writes the queue operations only
        assert ("attachment", "queued_command") in kinds

    cc.subrosa("ingest")
    found = cc.subrosa_json("search", "ZEBRA", "cache", "--json")
    said = [r for r in found if r.get("role") == "user"]
    assert [r["snippet"] for r in said] == ["also check the **ZEBRA** **cache**"]
    shown = cc.subrosa("transcript", "show", talk.session_id).stdout
    assert shown.count("also check the ZEBRA cache") == 1
    assert shown.index("slept") < shown.index("also check the ZEBRA") < shown.index("warm")


def test_two_prompts_sent_while_a_tool_runs_are_shown_after_its_output(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    # Each is a queued_command attachment after the tool's output, carrying the time it
    # was typed (before the output): `transcript show` orders by time, so subrosa places
    # them at the output's time. Fails on 8025873 (both shown before the output).
    with cc.conversation() as talk:
        while_bash_runs(cc, api, talk, 4, "Answer to both: HYENA and JACKAL.")
        talk.send("first queued HYENA")
        time.sleep(1.2)  # a second apart, as a person types them (not a timed assertion)
        talk.send("second queued JACKAL")
        talk.result()
    written = records(cc.transcript(talk.session_id))
    attached = [r for r in written if (r.get("attachment") or {}).get("type") == "queued_command"]
    output = next(
        n
        for n, r in enumerate(written)
        if r.get("type") == "user" and "tool_result" in json.dumps(r["message"])
    )
    assert all(written.index(r) > output for r in attached)
    if cc.claude.at_least("2.1.213"):  # 2.1.150 stamps them when they were taken in
        assert all(r["timestamp"] < written[output]["timestamp"] for r in attached)

    cc.subrosa("ingest")
    shown = cc.subrosa_json("transcript", "show", talk.session_id)
    texts = [m["text"] for m in shown["messages"]]
    assert texts[-4:] == [
        "[tool result] slept",
        "first queued HYENA",
        "second queued JACKAL",
        "Answer to both: HYENA and JACKAL.",
    ]


def test_a_prompt_an_ingest_found_waiting_is_archived_once(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    # `subrosa ingest` runs while the prompt waits in the queue (a user's ingest, the
    # SessionEnd ingest of another session): it keeps the prompt then. After the turn
    # the transcript holds it taken up (the `remove`, the queued_command attachment);
    # the next ingest reads the file on from its offset and does not keep it again.
    # Fails on 44426c5 (the prompt archived twice).
    prompt = "then read the OCELOT logs"
    with cc.conversation() as talk:
        while_bash_runs(cc, api, talk, 8, "Slept. The OCELOT logs are clean.")
        talk.send(prompt)
        transcript = cc.transcript(talk.session_id)

        def queued() -> bool:
            written = records(transcript) if transcript.exists() else []
            return any(
                r.get("operation") == "enqueue" and r.get("content") == prompt for r in written
            )

        wait_for(queued, "the prompt to be queued")
        first = cc.subrosa_json("ingest", "--json")
        assert not _taken_up(records(transcript)), "the ingest ran too late to test this"
        assert first["new_messages"] >= 2  # the first prompt, and the one waiting
        talk.result()
    assert _taken_up(records(transcript))
    cc.subrosa("ingest")
    shown = cc.subrosa_json("transcript", "show", talk.session_id)
    texts = [m["text"] for m in shown["messages"]]
    assert texts.count(prompt) == 1, texts
    found = cc.subrosa_json("search", "OCELOT", "logs", "--role", "user", "--json")
    assert [r["snippet"] for r in found] == ["then read the **OCELOT** **logs**"]


def _taken_up(written: list[dict[str, Any]]) -> bool:
    """Whether the transcript holds a queued prompt taken into the running turn."""
    return any(
        r.get("operation") == "remove"
        or (r.get("attachment") or {}).get("type") == "queued_command"
        for r in written
    )
