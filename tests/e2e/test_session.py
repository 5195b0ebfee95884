"""A session in the real Claude Code: the index reaches the model, the transcript reaches
the archive, the Stop hook nudges once at turn 15."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.claude_code import ClaudeProject, wait_for, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic, Request

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# How Claude Code 2.1 frames a SessionStart hook's additionalContext in the request.
SESSION_START_PREFIX = "SessionStart hook additional context:"
# How older Claude Code wraps a SessionStart context: 2.1.63 and 2.0.77 in a system
# reminder, 1.0.128 in a tag of its own (without the prefix).
REMINDER = ("<system-reminder>\n", "\n</system-reminder>")
OLD_TAG = ("<session-start-hook>", "</session-start-hook>")


def session_start_contexts(request: Request) -> list[str]:
    """The SessionStart contexts this request brings to the model, as texts of their own
    (2.1.332: a system message; older: see REMINDER and OLD_TAG), from the prefix on."""
    found = []
    for text in request.texts():
        text = text.removeprefix(REMINDER[0]).removesuffix(REMINDER[1])
        if text.startswith(OLD_TAG[0]) and text.endswith(OLD_TAG[1]):
            text = SESSION_START_PREFIX + " " + text[len(OLD_TAG[0]) : -len(OLD_TAG[1])]
        if text.startswith(SESSION_START_PREFIX):
            found.append(text)
    return found


def project_memory(cc: ClaudeProject, facts: dict[str, str]) -> Path:
    """`<project>/.claude/memory` holding one leaf per {filename: hook}, generated."""
    memory = cc.project / ".claude" / "memory"
    for filename, hook in facts.items():
        leaf = write_leaf(memory, filename, f"About {hook}.")
        cc.subrosa(
            "--memory-dir", str(memory), "fact", "upsert", "--leaf", str(leaf), "--hook", hook
        )
    cc.subrosa("--memory-dir", str(memory), "generate")
    return memory


def index_lines(memory: Path, word: str) -> list[str]:
    return [line for line in (memory / "MEMORY.md").read_text().splitlines() if word in line]


def search_hits(cc: ClaudeProject, word: str) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = cc.subrosa_json("search", "--transcripts", word)
    return hits


def test_installed_hooks_inject_the_index_and_archive_the_session(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    memory = project_memory(cc, {"project_release_codename.md": "release codename ZEBRAFISH"})
    [line] = index_lines(memory, "ZEBRAFISH")
    api.respond_text("Noted, the mascot is a PLATYPUS.")

    run = cc.run("Please remember the word AARDVARK.")

    assert run.stdout.strip() == "Noted, the mascot is a PLATYPUS."
    [first] = api.agent_requests
    injected = session_start_contexts(first)
    assert len(injected) == 1, "the SessionStart context reached the model once"
    assert line in injected[0] and str(memory / "MEMORY.md") in injected[0]

    # SessionEnd handed the transcript to the archive (a background ingest; `search`
    # drains what is left): both sides of the conversation are found, in this session.
    for word, role in (("AARDVARK", "user"), ("PLATYPUS", "assistant")):
        hits = wait_for(lambda w=word: search_hits(cc, w), f"{word} in the archive")
        assert [(h["session_id"], h["role"]) for h in hits] == [(run.session_id, role)]


def test_index_in_the_auto_memory_dir_is_loaded_by_claude_code_not_injected_again(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    memory = cc.auto_memory_dir()
    leaf = write_leaf(memory, "user_drinks_tea.md", "The user drinks OOLONG tea.", "user")
    cc.subrosa(
        "--memory-dir",
        str(memory),
        "fact",
        "upsert",
        "--leaf",
        str(leaf),
        "--hook",
        "drinks OOLONG tea",
    )
    cc.subrosa("--memory-dir", str(memory), "generate")
    [line] = index_lines(memory, "OOLONG")

    cc.run("hello")

    [first] = api.agent_requests
    assert first.text().count(line) == 1, "Claude Code loads its auto memory itself, once"
    assert not session_start_contexts(first)
    loaded = next(t for t in first.texts() if line in t)
    assert str(memory / "MEMORY.md") in loaded  # Claude Code names the file it loaded


def stop_feedback(request: Request) -> list[str]:
    """The Stop hook feedback this request brings to the model (new in this call)."""
    return [t for t in request.new_texts() if "Stop hook feedback" in t and "subrosa" in t]


def test_a_long_session_is_nudged_once_at_turn_15(cc: ClaudeProject, api: FakeAnthropic) -> None:
    cc.subrosa("install")
    with cc.conversation() as talk:
        for turn in range(1, 18):
            talk.say(f"Prompt number {turn}.")
    assert talk.returncode == 0, talk.stderr

    requests = api.agent_requests
    # 17 prompts, and one more call: the model answering the nudge after turn 15.
    assert len(requests) == 18
    prompts = [
        next((t for t in r.new_texts() if t.startswith("Prompt number")), None) for r in requests
    ]
    assert prompts[:15] == [f"Prompt number {n}." for n in range(1, 16)]
    assert prompts[15] is None and prompts[16:] == ["Prompt number 16.", "Prompt number 17."]

    nudged = [i for i, r in enumerate(requests) if stop_feedback(r)]
    assert nudged == [15], "exactly one nudge, right after the 15th turn"
    [feedback] = stop_feedback(requests[15])
    assert talk.session_id in feedback and "memory-extraction" in feedback
    assert "checkpoint-mark" in feedback
    # The whole conversation, as the model last saw it, holds that one nudge only.
    history = [t for t in requests[-1].texts() if "Stop hook feedback" in t]
    assert len(history) == 1


def test_a_pinned_fact_last_in_display_order_is_injected(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    cc.subrosa("install")
    memory = cc.project / ".claude" / "memory"
    for n in range(150):
        write_leaf(memory, f"project_fact_{n:03d}.md", f"Project fact number {n:03d}, " + "x" * 40)
    write_leaf(memory, "zz_guardrail.md", "Never deploy on Fridays: GUARDRAIL-PINNED.", "feedback")
    cc.subrosa("--memory-dir", str(memory), "generate")  # registers every leaf on disk
    cc.subrosa("--memory-dir", str(memory), "fact", "pin", "--leaf", "zz_guardrail.md")
    cc.subrosa(
        "--memory-dir", str(memory), "fact", "move", "zz_guardrail", "--after", "project_fact_149"
    )
    cc.subrosa("--memory-dir", str(memory), "generate")
    index = (memory / "MEMORY.md").read_text()
    assert len(index) > 10_000 and index.rstrip().splitlines()[-1].count("GUARDRAIL-PINNED") == 1

    cc.run("hello")

    [first] = api.agent_requests
    [injected] = session_start_contexts(first)
    assert "GUARDRAIL-PINNED" in injected


def test_odd_unicode_and_a_long_paste_are_archived_as_typed(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    # Combining marks, a ZWJ sequence, right-to-left text and overrides, CRLF, a
    # separator, a BOM, a tag character, C0 controls, and half an emoji (a lone
    # surrogate, which a program driving Claude Code through stream-json can send and
    # Claude Code writes as `\ud83d`); then a 330 KB paste (over the 128 KB a single
    # argument may have: stream-json too).
    odd = (
        "café e\u0301 👩‍👩‍👧 שלום \u202eevil\u202c tab\there\r\nCRLF\u2028LS \ufeffBOM "
        "ZW\u200bSP 𝔘 日本語 \U000e0041 nul\x00 esc\x1b[31m half \ud83d an emoji, NUMBAT"
    )
    paste = "Here is my log:\n" + "".join(f"line {n}: {'lorem ipsum ' * 9}\n" for n in range(3000))
    cc.subrosa("install")
    with cc.conversation() as talk:
        talk.say(odd)
        talk.say(paste + "What is wrong? WOMBAT")
    assert talk.returncode == 0, talk.stderr

    cc.subrosa("ingest")
    shown = cc.subrosa_json("transcript", "show", talk.session_id)
    said = [m["text"] for m in shown["messages"] if m["role"] == "user"]
    assert said == [odd.replace("\ud83d", "\ufffd"), paste + "What is wrong? WOMBAT"]
    for word in ("NUMBAT", "WOMBAT", "שלום", "café"):
        hits = cc.subrosa_json("search", "--transcripts", "--role", "user", word)
        assert [h["session_id"] for h in hits] == [talk.session_id], word
