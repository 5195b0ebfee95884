"""A session taken up again in the real Claude Code: resumed (`--resume ID`), continued
(`--continue`), forked (`--resume ID --fork-session`) and compacted (`/compact`). What
Claude Code does to the transcript file, which SessionStart `source` it sends, and what
subrosa makes of it: the archive holds every message once under its session, the index
reaches the model again, the extraction queue holds the session once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic, Request
from tests.e2e.test_session import SESSION_START_PREFIX, project_memory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOOK = "release codename ZEBRAFISH"


def records(transcript: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]


def prompts(transcript: Path) -> list[tuple[str, str, str]]:
    """(sessionId, uuid, text) of each prompt a person typed, in file order."""
    return [
        (r["sessionId"], r["uuid"], r["message"]["content"])
        for r in records(transcript)
        if r.get("type") == "user"
        and not r.get("isMeta")
        and isinstance(r["message"]["content"], str)
        and r["message"]["content"].startswith("Prompt ")
    ]


def injected(request: Request) -> list[str]:
    """The SessionStart contexts subrosa's hook brought into this request."""
    return [t for t in request.texts() if t.startswith(SESSION_START_PREFIX) and HOOK in t]


def archived(cc: ClaudeProject, session_id: str) -> list[tuple[str, str]]:
    """(role, text) of the session's messages as `transcript show` gives them."""
    shown = cc.subrosa_json("transcript", "show", session_id)
    return [(m["role"], m["text"]) for m in shown["messages"]]


def hits(cc: ClaudeProject, word: str) -> list[tuple[str, str]]:
    found = cc.subrosa_json("search", "--transcripts", word)
    return [(h["session_id"], h["role"]) for h in found]


def queued(cc: ClaudeProject) -> list[str]:
    return [entry["session_id"] for entry in cc.subrosa_json("checkpoint-list")]


def conversation(*words: str) -> list[tuple[str, str]]:
    """The archive's view of prompts `Prompt WORD.` each answered `Answer WORD.`."""
    return [m for w in words for m in (("user", f"Prompt {w}."), ("assistant", f"Answer {w}."))]


def say(cc: ClaudeProject, api: FakeAnthropic, word: str, **how: Any) -> str:
    api.respond_text(f"Answer {word}.")
    return cc.run(f"Prompt {word}.", **how).session_id


def test_a_resumed_or_continued_session_is_one_session_archived_once(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    project_memory(cc, {"project_release_codename.md": HOOK})
    sid = say(cc, api, "AARDVARK")
    api.clear()
    say(cc, api, "BADGER", resume=sid)
    [resumed] = api.agent_requests
    api.clear()
    assert say(cc, api, "CHEETAH", continue_last=True) == ""  # --continue: the newest session
    [continued] = api.agent_requests

    # Claude Code appends to the same file, under the same session id; nothing is copied.
    [transcript] = cc.transcript_dir().glob("*.jsonl")
    assert transcript.stem == sid
    said = prompts(transcript)
    assert [(s, t) for s, _, t in said] == [
        (sid, f"Prompt {w}.") for w in ("AARDVARK", "BADGER", "CHEETAH")
    ]
    assert len({u for _, u, _ in said}) == 3
    # The hook runs again (source "resume") and its index reaches the model once per
    # request: the first run's context is not replayed beside it.
    for request in (resumed, continued):
        assert len(injected(request)) == 1
        # The session queued at its first end is this one, not an earlier one to catch up.
        assert "ended without memory extraction" not in request.text()

    # The archive: every message once, under the one session, in order.
    wait_for(lambda: hits(cc, "CHEETAH"), "the continued turn in the archive")
    assert archived(cc, sid) == conversation("AARDVARK", "BADGER", "CHEETAH")
    for word in ("AARDVARK", "BADGER", "CHEETAH"):  # its prompt and its answer, once each
        assert sorted(hits(cc, word)) == [(sid, "assistant"), (sid, "user")]
    # Queued once, not once per process that ran it.
    assert queued(cc) == [sid]
