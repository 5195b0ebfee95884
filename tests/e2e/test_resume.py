"""A session taken up again in the real Claude Code: resumed (`--resume ID`), continued
(`--continue`), forked (`--resume ID --fork-session`) and compacted (`/compact`). What
Claude Code does to the transcript file, which SessionStart `source` it sends, and what
subrosa makes of it: the archive holds every message once under its session (and a
fork's `transcript show` its whole conversation), the index reaches the model again, the
extraction queue holds the session once."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for
from tests.e2e.fake_anthropic import FakeAnthropic, Request
from tests.e2e.test_session import project_memory

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOOK = "release codename ZEBRAFISH"


def records(transcript: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]


def session_files(cc: ClaudeProject) -> list[Path]:
    """The project's session transcripts: not the `agent-*.jsonl` of the subagents that
    Claude Code 2.0 warms up beside every session, nor the empty file it makes for the
    new session id a `--resume` or `--continue` process gets (it writes to the old one)."""
    return [
        p
        for p in cc.transcript_dir().glob("*.jsonl")
        if not p.name.startswith("agent-") and p.stat().st_size
    ]


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


def injected(request: Request) -> int:
    """How many times the request carries the index line subrosa's SessionStart hook
    injects (a text of its own, `SessionStart hook additional context: ...`; after a
    compaction, inside the environment section of the first message)."""
    return request.text().count(HOOK)


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
    [transcript] = session_files(cc)
    assert transcript.stem == sid
    said = prompts(transcript)
    assert [(s, t) for s, _, t in said] == [
        (sid, f"Prompt {w}.") for w in ("AARDVARK", "BADGER", "CHEETAH")
    ]
    assert len({u for _, u, _ in said}) == 3
    # The hook runs again (source "resume") and its index reaches the model once per
    # request: the first run's context is not replayed beside it.
    for request in (resumed, continued):
        assert injected(request) == 1
        # The session queued at its first end is this one, not an earlier one to catch up.
        assert "ended without memory extraction" not in request.text()

    # The archive: every message once, under the one session, in order.
    wait_for(lambda: hits(cc, "CHEETAH"), "the continued turn in the archive")
    assert archived(cc, sid) == conversation("AARDVARK", "BADGER", "CHEETAH")
    for word in ("AARDVARK", "BADGER", "CHEETAH"):  # its prompt and its answer, once each
        assert sorted(hits(cc, word)) == [(sid, "assistant"), (sid, "user")]
    # Queued once, not once per process that ran it.
    assert queued(cc) == [sid]


def forked(cc: ClaudeProject, api: FakeAnthropic) -> tuple[str, str]:
    """A session (AARDVARK), then a fork of it (DINGO); their ids."""
    cc.subrosa("install")
    project_memory(cc, {"project_release_codename.md": HOOK})
    sid = say(cc, api, "AARDVARK")
    api.clear()
    fork = say(cc, api, "DINGO", resume=sid, fork=True, session_id=str(uuid.uuid4()))
    wait_for(lambda: hits(cc, "DINGO"), "the fork's turn in the archive")
    return sid, fork


def test_a_fork_copies_the_history_with_its_uuids_and_the_archive_keeps_each_message_once(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    sid, fork = forked(cc, api)
    [request] = api.agent_requests  # the fork's

    # A new file under the fork's id: the parent's records copied, keeping their uuids,
    # with the fork's sessionId; the parent's file is left as it was.
    # (2.1.63 and older copy them with the parent's sessionId.)
    parent_said, fork_said = prompts(cc.transcript(sid)), prompts(cc.transcript(fork))
    assert [(s, t) for s, _, t in parent_said] == [(sid, "Prompt AARDVARK.")]
    copied_as = fork if cc.claude.at_least("2.1.150") else sid
    assert [(s, t) for s, _, t in fork_said] == [
        (copied_as, "Prompt AARDVARK."),
        (fork, "Prompt DINGO."),
    ]
    assert fork_said[0][1] == parent_said[0][1]
    # The hook ran (source "fork"): the index reached the model (twice: see below).
    assert injected(request) >= 1
    # The archive: the copied history is stored once, under the session it began in; a
    # search lists each message once.
    assert archived(cc, sid) == conversation("AARDVARK")
    assert sorted(hits(cc, "AARDVARK")) == [(sid, "assistant"), (sid, "user")]
    assert sorted(hits(cc, "DINGO")) == [(fork, "assistant"), (fork, "user")]
    # Both ended without extraction: both are queued, each once (the fork's transcript
    # repeats the parent's history: extracting both reads it twice).
    assert sorted(queued(cc)) == sorted([sid, fork])


def test_a_fork_gets_the_index_once(
    cc: ClaudeProject, api: FakeAnthropic, request: pytest.FixtureRequest
) -> None:
    if cc.claude.at_least("2.1.213"):  # 2.1.150 and older get it once
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="at a fork's SessionStart its transcript does not exist yet (Claude "
                "Code copies the history after the hook ran), so the hook cannot see that "
                "the copied history already carries the index and gives it again",
            )
        )
    forked(cc, api)
    [request] = api.agent_requests

    assert injected(request) == 1


def test_transcript_show_of_a_fork_shows_the_whole_conversation(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    # (2.1.63 copies the history with the parent's sessionId: the file's name says whose.)
    _, fork = forked(cc, api)

    assert archived(cc, fork) == conversation("AARDVARK", "DINGO")


def test_a_compacted_session_keeps_its_history_and_gets_the_index_again(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    project_memory(cc, {"project_release_codename.md": HOOK})
    summary = "Summary so far: the person wrote Prompt AARDVARK and got Answer AARDVARK."
    with cc.conversation() as talk:
        # Two exchanges: with one, Claude Code 2.1.214 and older find "Not enough messages
        # to compact." and does not compact.
        for word in ("AARDVARK", "ALPACA"):
            api.respond_text(f"Answer {word}.")
            talk.say(f"Prompt {word}.")
        api.respond_text(summary)  # the compaction's own request takes the next answer
        talk.say("/compact")
        api.clear()
        api.respond_text("Answer BADGER.")
        talk.say("Prompt BADGER.")
    assert talk.returncode == 0, talk.stderr
    sid = talk.session_id
    [after] = api.agent_requests
    api.clear()
    say(cc, api, "CHEETAH", resume=sid)
    [resumed] = api.agent_requests

    # The same file: the history stays, then a compact boundary and the summary as a
    # `user` record marked isCompactSummary, then the next prompt.
    [transcript] = session_files(cc)
    kept = records(transcript)
    [boundary] = [n for n, r in enumerate(kept) if r.get("subtype") == "compact_boundary"]
    [summary_at] = [n for n, r in enumerate(kept) if r.get("isCompactSummary")]
    said = {t: n for s, _, t in prompts(transcript) for n in [0]}
    assert list(said) == [f"Prompt {w}." for w in ("AARDVARK", "ALPACA", "BADGER", "CHEETAH")]
    texts = [json.dumps(r.get("message")) for r in kept]
    first = next(n for n, t in enumerate(texts) if "Prompt AARDVARK." in t)
    badger = next(n for n, t in enumerate(texts) if "Prompt BADGER." in t)
    assert first < boundary < summary_at < badger
    assert summary in texts[summary_at]
    assert {r.get("sessionId") for r in kept if r.get("sessionId")} == {sid}
    # After the compaction the model gets the summary, not the history, and the index
    # once: the SessionStart hook ran again (source "compact"), and Claude Code puts its
    # context in the environment section. Resumed later, the same.
    for request in (after, resumed):
        assert "Prompt AARDVARK." not in [m.get("content") for m in request.messages]
        assert summary in request.text()
        assert injected(request) == 1

    # The archive: what was said, once each, and the summary (the model's text, which
    # Claude Code files as a `user` record) as the assistant's, not the person's.
    wait_for(lambda: hits(cc, "CHEETAH"), "the resumed turn in the archive")
    messages = archived(cc, sid)
    assert [m for m in messages if m[1].startswith(("Prompt", "Answer"))] == conversation(
        "AARDVARK", "ALPACA", "BADGER", "CHEETAH"
    )
    assert [m[0] for m in messages if summary in m[1]] == ["assistant"]
    assert sorted(hits(cc, "AARDVARK")) == [(sid, "assistant"), (sid, "assistant"), (sid, "user")]
    assert queued(cc) == [sid]


def test_a_session_archived_after_its_fork_keeps_its_whole_conversation(
    cc: ClaudeProject, api: FakeAnthropic, tmp_path: Path
) -> None:
    sid, fork = forked(cc, api)
    # Another archive, filled in the other order (`subrosa ingest` reads a folder's files
    # by name, and the fork's id may sort first).
    other = {"SUBROSA_DB": f"sqlite:///{tmp_path / 'other.db'}"}
    cc.subrosa("ingest", str(cc.transcript(fork)), env=other)
    cc.subrosa("ingest", str(cc.transcript(sid)), env=other)

    shown = cc.subrosa_json("transcript", "show", sid, env=other)
    assert [(m["role"], m["text"]) for m in shown["messages"]] == conversation("AARDVARK")
