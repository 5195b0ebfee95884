"""Transcript parsing (pure): what is kept, what is skipped and counted, leniency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.archive.redact import Redactor
from subrosa.archive.transcripts import normalize_time, parse_lines
from subrosa.cjk import cjk_index_text, cjk_runs
from tests.conftest import FIXTURES, corpus


def _line(record: object) -> bytes:
    return json.dumps(record).encode()


def _user(content: object, **extra: object) -> bytes:
    record = {
        "type": "user",
        "uuid": extra.pop("uuid", "u1"),
        "sessionId": "s1",
        "timestamp": "2026-01-02T03:04:05.678Z",
        "cwd": "/work/app",
        "gitBranch": "main",
        "message": {"role": "user", "content": content},
        **extra,
    }
    return _line(record)


def test_strings_blocks_tools_and_results() -> None:
    lines = [
        _user("plain text"),
        _line(
            {
                "type": "assistant",
                "uuid": "a1",
                "sessionId": "s1",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "private musing", "signature": "x"},
                        {"type": "text", "text": "Running it."},
                        {"type": "tool_use", "name": "Bash", "input": {"command": "pnpm test"}},
                    ],
                },
            }
        ),
        _user(
            [{"type": "tool_result", "tool_use_id": "t", "content": "x" * 50, "is_error": True}],
            uuid="u2",
        ),
    ]
    parsed = parse_lines(lines, "file-session", tool_result_chars=10)
    texts = [m.text for m in parsed.messages]
    assert texts[0] == "plain text"
    assert texts[1] == "Running it.\n[Bash] pnpm test"
    assert texts[2] == "[tool error] xxxxxxxxxx [… 40 more characters]"
    assert "private musing" not in "".join(texts)
    assert parsed.skipped["thinking"] == 1
    first = parsed.messages[0]
    assert (first.session_id, first.role, first.timestamp) == ("s1", "user", "2026-01-02 03:04:05")
    info = parsed.sessions["s1"]
    assert (info.cwd, info.git_branch) == ("/work/app", "main")


def test_meta_unknown_and_broken_lines_are_skipped_and_counted() -> None:
    lines = [
        _user("caveat", isMeta=True),
        _line({"type": "attachment", "attachment": {}}),
        _line({"type": "file-history-snapshot"}),
        b"not json at all",
        b'{"type": "user", "message": {"content": "half',
        b"42",
        b"[1, 2]",
        _line({"type": "user", "message": "not an object"}),
        _line({"type": "assistant", "message": {"content": 7}}),
        b"",
    ]
    parsed = parse_lines(lines, "s")
    assert parsed.messages == []
    assert parsed.skipped["meta"] == 1
    assert parsed.skipped["type:attachment"] == 1
    assert parsed.skipped["not json"] == 2
    assert parsed.skipped["not an object"] == 2


def test_a_compaction_summary_is_archived_as_the_assistants_not_the_users() -> None:
    # Claude Code 2.1.332 after /compact (tests/e2e/test_resume.py): the summary is a
    # `user` record with isCompactSummary, not meta. The model wrote it; a continued
    # session whose first file is gone holds the history only there (a recall question,
    # h4-para-10, is answered by one), so it is kept, as the assistant's.
    summary = "This session is being continued from a previous conversation. ZEBRA summary"
    lines = [
        _user("Prompt ZEBRA.", uuid="u1"),
        _line({"type": "system", "subtype": "compact_boundary", "uuid": "b1", "sessionId": "s1"}),
        _user(summary, uuid="u2", isCompactSummary=True),
        _user([{"type": "text", "text": summary}], uuid="u3", isCompactSummary=True),
        _user("Prompt after.", uuid="u4"),
    ]
    parsed = parse_lines(lines, "s1")
    assert [(m.role, m.text) for m in parsed.messages] == [
        ("user", "Prompt ZEBRA."),
        ("assistant", summary),
        ("assistant", summary),
        ("user", "Prompt after."),
    ]


def test_summary_titles_and_missing_uuids() -> None:
    lines = [
        _line({"type": "summary", "summary": "Fixed the flaky deploy", "leafUuid": "x"}),
        _line({"type": "custom-title", "customTitle": "Deploy day", "sessionId": "s1"}),
        _user("no uuid here", uuid=""),
        _user("no uuid here", uuid=""),
    ]
    parsed = parse_lines(lines, "file-named-differently")
    # The summary (no sessionId) belongs to the only session the file holds.
    assert set(parsed.sessions) == {"s1"}
    assert parsed.sessions["s1"].title == "Deploy day"
    assert parsed.sessions["s1"].summary == "Fixed the flaky deploy"
    keys = {m.uuid for m in parsed.messages}
    assert len(keys) == 1 and keys.pop().startswith("sha1:")


def test_secrets_are_redacted_before_the_cut() -> None:
    """A key straddling the tool-result cut must not leave a prefix of itself."""
    secret = "AKIAQWERTYUIOPASDFGH"
    result = "a" * 14 + " " + secret + " and more"
    lines = [_user([{"type": "tool_result", "content": result}])]
    redactor = Redactor()
    parsed = parse_lines(lines, "s", tool_result_chars=25, redactor=redactor)
    assert "AKIA" not in parsed.messages[0].text
    assert redactor.counts["aws-access-key"] == 1


def test_times() -> None:
    assert normalize_time("2026-01-02T03:04:05Z") == "2026-01-02 03:04:05"
    assert normalize_time("2026-01-02T05:04:05+02:00") == "2026-01-02 03:04:05"
    assert normalize_time("yesterday") is None
    assert normalize_time(12) is None


def test_cjk_index_text() -> None:
    assert cjk_runs("東京タワー and 서울") == ["東京タワー", "서울"]
    # Runs apart only by spaces on one line are one run (migration 0017); anything
    # else between them keeps them apart.
    assert cjk_index_text("行く 東京 ok") == "行 く 東 京"
    text = cjk_index_text("行く、東京 ok 大阪")
    assert text is not None and text.split(" zzcjkbreak ") == ["行 く", "東 京", "大 阪"]
    assert cjk_index_text("plain ascii") is None


def _conversation_records(path: Path) -> int:
    """How many lines of `path` are user or assistant records that are not meta."""
    count = 0
    for line in path.read_bytes().split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") in ("user", "assistant"):
            count += not record.get("isMeta")
    return count


def _assert_real_transcripts_parse(files: list[Path]) -> None:
    """Every file parses; each one has messages, or holds no conversation at all (a
    summary-only file, an empty file)."""
    assert files
    total = 0
    for path in files:
        parsed = parse_lines(path.read_bytes().split(b"\n"), path.stem)
        total += len(parsed.messages)
        if not parsed.messages:
            assert _conversation_records(path) == 0, path
        assert all(m.role in ("user", "assistant") and m.text for m in parsed.messages)
    assert total > 0


def test_vendored_transcripts_parse() -> None:
    _assert_real_transcripts_parse(sorted((FIXTURES / "transcripts").rglob("*.jsonl")))


def test_real_transcripts_parse() -> None:
    _assert_real_transcripts_parse(sorted(corpus("transcripts").rglob("*.jsonl")))


def test_a_real_forks_command_caveat_is_no_title() -> None:
    """A real fork whose custom title is the caveat Claude Code wraps local commands in
    (cut, with " (Fork)" added): no title; its messages, commands included, are kept."""
    transcripts = corpus("transcripts")
    forks = [
        p
        for p in transcripts.rglob("*.jsonl")
        if b'"customTitle":"<local-command' in p.read_bytes()
    ]
    if not forks:
        pytest.skip("the corpus holds no fork named after a command caveat")
    for path in forks:
        parsed = parse_lines(path.read_bytes().splitlines(), path.stem)
        assert all(
            info.title is None or "<local-command" not in info.title
            for info in parsed.sessions.values()
        )
        assert any(m.text.startswith("<command-name>") for m in parsed.messages)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
record_keys = st.sampled_from(
    ["type", "message", "content", "role", "uuid", "sessionId", "timestamp", "isMeta", "text"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60),
            json_values.map(lambda v: json.dumps(v).encode()),
            st.dictionaries(record_keys, json_values, max_size=6).map(
                lambda d: json.dumps({"type": "user", **d}).encode()
            ),
        ),
        max_size=8,
    )
)
def test_any_input_parses_without_raising(lines: list[bytes]) -> None:
    parsed = parse_lines(lines, "s", redactor=Redactor())
    assert all(isinstance(m.text, str) and m.text for m in parsed.messages)


def test_fixture_dir_exists() -> None:
    assert Path(FIXTURES / "transcripts").is_dir()


def _queue(operation: str, content: object = None, at: str = "03:04:06", **extra: object) -> bytes:
    record: dict[str, object] = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": f"2026-01-02T{at}.000Z",
        "sessionId": "s1",
        **extra,
    }
    if content is not None:
        record["content"] = content
    return _line(record)


def _assistant(text: str, uuid: str) -> bytes:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return _line({"type": "assistant", "uuid": uuid, "sessionId": "s1", "message": message})


def test_a_prompt_typed_while_claude_works_is_kept_where_it_was_taken_in() -> None:
    # Claude Code (corpus: 2.0.x-2.1.63) files a prompt typed during a turn as a
    # queue-operation `enqueue`. Taken into the running turn (`remove`) it is written
    # nowhere else: the person's own words (68% of the corpus's queued prompts). Taken
    # as the next turn (`dequeue`) it comes again as a user record: kept once.
    lines = [
        _user("Play the audio.", uuid="u1"),
        _queue("enqueue", "warum meldet sich jarvis nicht mehr?"),
        _queue("enqueue", "und lauter bitte", at="03:04:07"),
        _queue("remove"),
        _assistant("Jarvis played it; here is why it was silent.", "a1"),
        _queue("dequeue", at="03:04:09"),
        _user("und lauter bitte", uuid="u2"),
        _queue("enqueue", "1、插图没有对应；2、不能重复", at="03:04:10"),
        _queue("popAll", at="03:04:11"),  # pulled back into the input box: kept as typed
        _queue("enqueue", "one more thing", at="03:04:12"),  # the file ends: kept
    ]
    parsed = parse_lines(lines, "s1")
    said = [(m.role, m.text, m.timestamp) for m in parsed.messages]
    assert said == [
        ("user", "Play the audio.", "2026-01-02 03:04:05"),
        ("user", "warum meldet sich jarvis nicht mehr?", "2026-01-02 03:04:06"),
        ("assistant", "Jarvis played it; here is why it was silent.", None),
        ("user", "und lauter bitte", "2026-01-02 03:04:05"),
        ("user", "1、插图没有对应；2、不能重复", "2026-01-02 03:04:10"),
        ("user", "one more thing", "2026-01-02 03:04:12"),
    ]
    # The same lines read again give the same ids (an ingest from the start stores nothing twice).
    again = parse_lines(lines, "s1")
    assert [m.uuid for m in again.messages] == [m.uuid for m in parsed.messages]
    assert len({m.uuid for m in parsed.messages}) == len(parsed.messages)


def test_a_queued_prompt_claude_code_files_as_an_attachment_is_kept_once() -> None:
    # Claude Code 2.1.332 writes a prompt taken into the running turn as an `attachment`
    # record of type `queued_command` (its `prompt` a string or content blocks), beside
    # its queue operations: the person's words, kept once, under the record's uuid.
    attachment = {
        "type": "attachment",
        "uuid": "q1",
        "sessionId": "s1",
        "timestamp": "2026-01-02T03:04:08.000Z",
        "attachment": {"type": "queued_command", "prompt": "also check the ZEBRA cache"},
    }
    blocks = dict(
        attachment,
        uuid="q2",
        attachment={"type": "queued_command", "prompt": [{"type": "text", "text": "and YAK"}]},
    )
    other = dict(attachment, uuid="q3", attachment={"type": "skill_listing", "content": "x"})
    lines = [
        _user("Prompt.", uuid="u1"),
        _queue("enqueue", "also check the ZEBRA cache"),
        _queue("remove"),
        _line(attachment),
        _line(blocks),
        _line(other),
        _assistant("Checked.", "a1"),
    ]
    parsed = parse_lines(lines, "s1")
    assert [(m.role, m.text) for m in parsed.messages] == [
        ("user", "Prompt."),
        ("user", "also check the ZEBRA cache"),
        ("user", "and YAK"),
        ("assistant", "Checked."),
    ]
    assert parsed.messages[2].uuid == "q2"
    assert parsed.skipped["type:attachment"] == 1
    # The attachment first, the queue's removal after: still once.
    lines = [_line(attachment), _queue("enqueue", "also check the ZEBRA cache"), _queue("remove")]
    assert [m.uuid for m in parse_lines(lines, "s1").messages] == ["q1"]


def test_a_queued_prompt_is_redacted_like_any_other() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    lines = [_queue("enqueue", f"use {token} for it"), _queue("remove")]
    [message] = parse_lines(lines, "s1", redactor=Redactor()).messages
    assert token not in message.text and "[REDACTED" in message.text


# --- What Claude Code 2.1.332 writes that is not the person's words (qa2) -------------
# The records below are trimmed from transcripts the real CLI wrote (tests/e2e), or from
# the corpus where the CLI cannot be driven there (an answer to AskUserQuestion).

_NOTICE = (
    "<task-notification>\n<task-id>bv9xmfzqx</task-id>\n<tool-use-id>toolu_fake000022"
    "</tool-use-id>\n<output-file>/tmp/claude-0/p/s1/tasks/bv9xmfzqx.output</output-file>\n"
    '<status>completed</status>\n<summary>Background command "bg" completed (exit code 0)'
    "</summary>\n</task-notification>"
)


def _attachment(uuid: str, at: str, **attachment: object) -> bytes:
    return _line(
        {
            "type": "attachment",
            "uuid": uuid,
            "sessionId": "s1",
            "timestamp": f"2026-01-02T{at}.000Z",
            "attachment": {"timestamp": f"2026-01-02T{at}.000Z", **attachment},
        }
    )


def test_a_task_notification_is_a_tools_output_not_the_users_words() -> None:
    # Claude Code tells the model a background task (a Bash command run in the
    # background, an Agent) has finished with a <task-notification>, queued like a
    # prompt: taken as a turn of its own it is a `user` record (2.1.1 onwards; 2.1.332
    # marks it origin.kind "task-notification", promptSource "system"); taken into the
    # running turn, a queue `remove` and, in 2.1.332, a queued_command attachment with
    # commandMode "task-notification". 2.1.49 queued a background task's start as JSON
    # (10 of the corpus's 107 queued "prompts"). Nobody typed either: each is kept,
    # once, as a tool's output (what the task reported), never as the user's words.
    subagent = _NOTICE.replace("bv9xmfzqx", "af0cc4604")
    older = _NOTICE.replace("bv9xmfzqx", "bz0wqe2p4")
    started = (
        '{"task_id":"b5fdd2a","tool_use_id":"call_c0483929f41749b8a53efca5",'
        '"description":"Run simplified audio diagnostic","task_type":"local_bash"}'
    )
    lines = [
        _user("run ALPACA in background", uuid="u1"),
        _queue("enqueue", _NOTICE),
        _queue("dequeue"),
        _user(
            _NOTICE,
            uuid="u2",
            origin={"kind": "task-notification", "producer": "session-task"},
            promptSource="system",
            turnOrigin="task_notification",
        ),
        _queue("enqueue", subagent, at="03:04:07"),
        _attachment(
            "q1",
            "03:04:07",
            type="queued_command",
            prompt=subagent,
            commandMode="task-notification",
            origin={"kind": "task-notification", "producer": "session-task"},
        ),
        _queue("remove", subagent, at="03:04:08", reason="absorbed_mid_turn"),
        _queue("enqueue", older, at="03:04:09"),  # 2.1.x before the attachments
        _queue("remove", at="03:04:10"),
        _queue("enqueue", started, at="03:04:11"),  # 2.1.49: a task's start, as JSON
        _queue("remove", at="03:04:12"),
        _user("is ALPACA done?", uuid="u3"),
    ]
    parsed = parse_lines(lines, "s1")
    from subrosa.archive.conversation import message_kind

    kinds = [(message_kind(m.role, m.text), m.text) for m in parsed.messages]
    assert kinds == [
        ("user", "run ALPACA in background"),
        ("tool result", f"[tool result] {_NOTICE}"),
        ("tool result", f"[tool result] {subagent}"),
        ("tool result", f"[tool result] {older}"),
        ("tool result", f"[tool result] {started}"),
        ("user", "is ALPACA done?"),
    ]


def test_prompts_taken_in_after_a_tools_output_are_shown_after_it() -> None:
    # Claude Code 2.1.332, two prompts typed while a Bash command slept: their
    # queued_command attachments follow the tool's output in the file but carry the time
    # they were typed, before it. `transcript show` orders a session by time, so each is
    # archived at the time of what precedes it where it is later: the person's words
    # read where the model took them in, between the output and the reply.
    lines = [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "first queued HYENA", at="03:04:06", commandUuid="c1"),
        _queue("enqueue", "second queued JACKAL", at="03:04:07", commandUuid="c2"),
        _user(
            [{"tool_use_id": "t1", "type": "tool_result", "content": "slept"}],
            uuid="u2",
            timestamp="2026-01-02T03:04:10.825Z",
        ),
        _attachment(
            "q1", "03:04:06", type="queued_command", prompt="first queued HYENA", source_uuid="c1"
        ),
        _queue("remove", "first queued HYENA", at="03:04:11", commandUuid="c1"),
        _queue("remove", "second queued JACKAL", at="03:04:11", commandUuid="c2"),
        _attachment(
            "q2", "03:04:07", type="queued_command", prompt="second queued JACKAL", source_uuid="c2"
        ),
        _queue("enqueue", "still waiting", at="03:04:12"),  # never taken in: its own time
    ]
    parsed = parse_lines(lines, "s1")
    assert [(m.text, m.timestamp) for m in parsed.messages] == [
        ("Sleep a little.", "2026-01-02 03:04:05"),
        ("[tool result] slept", "2026-01-02 03:04:10"),
        ("first queued HYENA", "2026-01-02 03:04:10"),
        ("second queued JACKAL", "2026-01-02 03:04:10"),
        ("still waiting", "2026-01-02 03:04:12"),
    ]
    # Without attachments (before 2.1.x) the queue's `remove` places it the same way.
    older = [lines[0], lines[1], lines[3], _queue("remove", at="03:04:11")]
    assert [m.timestamp for m in parse_lines(older, "s1").messages] == [
        "2026-01-02 03:04:05",
        "2026-01-02 03:04:10",
        "2026-01-02 03:04:10",
    ]


def test_a_subagents_prompt_is_the_assistants_not_the_users() -> None:
    # A subagent's transcript (<session>/subagents/agent-*.jsonl, isSidechain) opens with
    # the prompt the main agent wrote for it (the Agent tool's input); Claude Code's own
    # side agents (prompt_suggestion, 36 records in the corpus) are prompted with its
    # own text. Neither is the person's: archived as the assistant's, as a compaction's
    # summary is. The subagent's tool output stays a tool's output.
    side = {"isSidechain": True, "agentId": "af0cc46049c1a9c89"}
    lines = [
        _user("Find the NARWHAL file", uuid="s1u", parentUuid=None, **side),
        _user(
            [{"type": "text", "text": "[SUGGESTION MODE: Suggest what the user might type]"}],
            uuid="s2u",
            parentUuid="p",
            **side,
        ),
        _user(
            [{"tool_use_id": "t", "type": "tool_result", "content": "subagent BEAVER"}],
            uuid="s3u",
            **side,
        ),
        _line(
            {
                "type": "assistant",
                "uuid": "s4a",
                "sessionId": "s1",
                "isSidechain": True,
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Found."}]},
            }
        ),
        _user(_NOTICE, uuid="s5u", **side),  # the subagent's own background task
        _user("spawn a subagent", uuid="u1", isSidechain=False),
    ]
    parsed = parse_lines(lines, "s1")
    assert [(m.role, m.text) for m in parsed.messages] == [
        ("assistant", "Find the NARWHAL file"),
        ("assistant", "[SUGGESTION MODE: Suggest what the user might type]"),
        ("user", "[tool result] subagent BEAVER"),
        ("assistant", "Found."),
        ("user", f"[tool result] {_NOTICE}"),
        ("user", "spawn a subagent"),
    ]


def test_the_persons_answer_inside_a_tool_result_is_theirs_and_kept_whole() -> None:
    # AskUserQuestion (corpus, Claude Code 2.0.57-2.1.41): what the person typed or
    # picked comes back as the tool's result, the only place it is written. A tool
    # that is refused with a reason (2.1.332's wording) carries the reason the same way.
    # Kept whole (not cut to tool_result_chars) and as the user's words.
    answer = "Ich verstehe deine Optionen nicht: " + "bedeutet minimal nur Voice? " * 90
    asked = (
        f'User has answered your questions: "Wie detailliert soll der Context sein?"="{answer}". '
        "You can now continue with the user's answers in mind."
    )
    refused = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
        "if it was a file edit, the new_string was NOT written to the file). To tell you how to "
        "proceed, the user said:\nnot that file, edit the MONGOOSE config instead"
    )
    denied = (
        "Permission for this tool use was denied. The tool use was rejected (eg. if it was a "
        "file edit, the new_string was NOT written to the file). The user said:\nuse curl"
    )
    stop = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. "
        "if it was a file edit, the new_string was NOT written to the file). STOP what you are "
        "doing and wait for the user to tell you how to proceed."
    )

    def result(text: str, uuid: str, error: bool = False) -> bytes:
        block = {"tool_use_id": "t", "type": "tool_result", "content": text, "is_error": error}
        return _user([block], uuid=uuid)

    lines = [
        result(asked, "u1"),
        result(refused, "u2", error=True),
        result(denied, "u3", error=True),
        result(stop, "u4", error=True),
        result("x" * 3000, "u5"),
    ]
    parsed = parse_lines(lines, "s1", tool_result_chars=2000)
    assert [m.text for m in parsed.messages] == [
        asked,
        refused,
        denied,
        f"[tool error] {stop}",
        f"[tool result] {'x' * 2000} [… 1000 more characters]",
    ]


def test_a_local_commands_output_is_not_the_users_words() -> None:
    # What Claude Code prints for a command run in it (/compact's "Compacted", a `!`
    # shell command's output) it files as a `user` record: it is kept as a tool's
    # output. The command the person typed stays theirs.
    lines = [
        _user(
            "<command-name>/compact</command-name>\n            <command-message>compact"
            "</command-message>\n            <command-args>keep the GIRAFFE bits</command-args>",
            uuid="u1",
        ),
        _user("<local-command-stdout>Compacted </local-command-stdout>", uuid="u2"),
        _user("<local-command-stderr>Error: no such MCP server</local-command-stderr>", uuid="u3"),
        _user("<bash-input>ls</bash-input>", uuid="u4"),
        _user("<bash-stdout>README.md</bash-stdout><bash-stderr></bash-stderr>", uuid="u5"),
    ]
    parsed = parse_lines(lines, "s1")
    from subrosa.archive.conversation import message_kind

    assert [message_kind(m.role, m.text) for m in parsed.messages] == [
        "user",
        "tool result",
        "tool result",
        "user",
        "tool result",
    ]
    assert parsed.messages[1].text == (
        "[tool result] <local-command-stdout>Compacted </local-command-stdout>"
    )


def test_a_queued_prompt_is_kept_once_however_the_lines_are_batched() -> None:
    # Ingest parses a file batch by batch, each with the one before as `carry`: a prompt
    # queued in one batch and taken up in a later one (by an attachment, a `remove`, or
    # a `dequeue` and its user record) is kept once, wherever the batches split.
    lines = [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "first queued HYENA", at="03:04:06"),
        _queue("enqueue", "second queued JACKAL", at="03:04:07"),
        _queue("enqueue", "third queued OKAPI", at="03:04:08"),
        _user([{"tool_use_id": "t1", "type": "tool_result", "content": "slept"}], uuid="u2"),
        _attachment("q1", "03:04:06", type="queued_command", prompt="first queued HYENA"),
        _queue("remove", "first queued HYENA", at="03:04:11"),
        _queue("remove", at="03:04:11"),  # 2.0.x: no text, no attachment
        _assistant("Both done.", "a1"),
        _queue("dequeue", at="03:04:12"),
        _user("third queued OKAPI", uuid="u3"),
    ]
    whole = [m.text for m in parse_lines(lines, "s1").messages]
    assert whole == [
        "Sleep a little.",
        "[tool result] slept",
        "first queued HYENA",
        "second queued JACKAL",
        "Both done.",
        "third queued OKAPI",
    ]
    for cut in range(1, len(lines)):
        first = parse_lines(lines[:cut], "s1")
        second = parse_lines(lines[cut:], "s1", carry=first)
        texts = [m.text for m in first.messages + second.messages]
        assert sorted(texts) == sorted(whole), cut


# --- A prompt queued while an ingest runs (qstate) ------------------------------------
# Ingest reads a grown file from where the last ingest stopped. A prompt still queued
# there was kept then; the queue's state saved with the offset (queue_state) lets the
# next read (resume_queue) know it, so taking it up later keeps nothing twice.

_TAKEN_UP = {
    "dequeue and its user record": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "next turn OKAPI", at="03:04:06"),
        _assistant("Slept.", "a1"),
        _queue("dequeue", at="03:04:09"),
        _user("next turn OKAPI", uuid="u2"),
        _assistant("OKAPI answered.", "a2"),
    ],
    "remove and its queued_command attachment (2.1.332)": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "also check the ZEBRA cache", at="03:04:06", commandUuid="c1"),
        _queue("enqueue", "and the YAK one", at="03:04:07", commandUuid="c2"),
        _user([{"tool_use_id": "t1", "type": "tool_result", "content": "slept"}], uuid="u2"),
        _attachment("q1", "03:04:06", type="queued_command", prompt="also check the ZEBRA cache"),
        _queue("remove", "also check the ZEBRA cache", at="03:04:11", commandUuid="c1"),
        _queue("remove", "and the YAK one", at="03:04:11", commandUuid="c2"),
        _attachment("q2", "03:04:07", type="queued_command", prompt="and the YAK one"),
        _assistant("The ZEBRA cache is warm, the YAK one cold.", "a1"),
    ],
    "remove without text (2.0.x)": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "and louder please", at="03:04:06"),
        _queue("remove", at="03:04:08"),
        _assistant("Louder.", "a1"),
    ],
    "popAll, then sent as a user record": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "then deploy WOMBAT", at="03:04:06"),
        _queue("popAll", "then deploy WOMBAT", at="03:04:07"),
        _assistant("Slept.", "a1"),
        _user("then deploy WOMBAT", uuid="u2", timestamp="2026-01-02T03:04:09.000Z"),
        _assistant("Deployed.", "a2"),
    ],
    "popAll, then queued again (the corpus's shape)": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "1、插图没有对应；2、不能重复", at="03:04:06"),
        _queue("popAll", "1、插图没有对应；2、不能重复", at="03:04:07"),
        _queue("enqueue", "1、插图没有对应；2、不能重复", at="03:04:08"),
        _assistant("Slept.", "a1"),
        _queue("dequeue", at="03:04:09"),
        _user("1、插图没有对应；2、不能重复", uuid="u2"),
    ],
    "popAll, then another prompt taken (2.0.x)": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "stale ANT", at="03:04:06"),
        _queue("popAll", at="03:04:07"),
        _queue("enqueue", "fresh BEE", at="03:04:08"),
        _assistant("Slept.", "a1"),
        _queue("dequeue", at="03:04:09"),
        _user("fresh BEE", uuid="u2"),
    ],
    "two dequeues, the last turn's reply, then their user records (the corpus's shape)": [
        _user("jixu ", uuid="u1"),
        _queue("enqueue", "继续", at="03:04:06"),
        _queue("enqueue", "继续生成剩余的73个插图", at="03:04:07"),
        _queue("dequeue", at="03:04:09"),
        _queue("dequeue", at="03:04:09"),
        _assistant("我需要了解你想继续什么任务。", "a1"),
        _user("继续", uuid="u2"),
        _user("继续生成剩余的73个插图", uuid="u3"),
        _assistant("让我先检查一下插图目录。", "a2"),
    ],
    "queued, never taken up": [
        _user("Sleep a little.", uuid="u1"),
        _queue("enqueue", "never taken IBEX", at="03:04:06"),
        _assistant("Slept.", "a1"),
        _assistant("Still here.", "a2"),
    ],
}


def _read_in_parts(lines: list[bytes], cuts: tuple[int, ...]) -> list[str]:
    """The texts kept when the file is read by separate ingests ending at `cuts`."""
    from subrosa.archive.transcripts import queue_state, resume_queue

    texts: list[str] = []
    state: str | None = None
    bounds = [0, *cuts, len(lines)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        parsed = parse_lines(lines[start:end], "s1", carry=resume_queue(state))
        texts += [m.text for m in parsed.messages]
        state = queue_state(parsed)
    return texts


@pytest.mark.parametrize("case", list(_TAKEN_UP))
def test_a_prompt_queued_while_an_ingest_runs_is_kept_once(case: str) -> None:
    lines = _TAKEN_UP[case]
    whole = [m.text for m in parse_lines(lines, "s1").messages]
    assert len(whole) == len(set(whole)), whole  # each said once, each kept once
    cuts = [(cut,) for cut in range(1, len(lines))]
    cuts += [(a, b) for a in range(1, len(lines)) for b in range(a + 1, len(lines))]
    for parts in cuts:
        assert sorted(_read_in_parts(lines, parts)) == sorted(whole), parts


def test_a_prompt_put_back_into_the_input_box_is_kept_once() -> None:
    # popAll returns the queue to the input box: kept as typed there. Sent as it was
    # (a user record) or queued again, it is the same words: kept once. Edited, both.
    texts = [
        m.text for m in parse_lines(_TAKEN_UP["popAll, then sent as a user record"], "s1").messages
    ]
    assert texts == ["Sleep a little.", "then deploy WOMBAT", "Slept.", "Deployed."]
    edited = [
        _queue("enqueue", "then deploy WOMBAT", at="03:04:06"),
        _queue("popAll", "then deploy WOMBAT", at="03:04:07"),
        _user("then deploy WOMBAT to staging", uuid="u2"),
        _user("then deploy WOMBAT", uuid="u3"),  # said again later: kept
    ]
    texts = [m.text for m in parse_lines(edited, "s1").messages]
    assert texts == ["then deploy WOMBAT", "then deploy WOMBAT to staging", "then deploy WOMBAT"]


def test_the_queue_state_is_small_and_only_there_when_needed() -> None:
    from subrosa.archive.transcripts import queue_state, resume_queue

    plain = parse_lines([_user("hello", uuid="u1"), _assistant("hi", "a1")], "s1")
    assert queue_state(plain) is None
    # Prompts taken up and done with leave nothing behind.
    for case in (
        "dequeue and its user record",
        "remove and its queued_command attachment (2.1.332)",
        "remove without text (2.0.x)",
        "popAll, then sent as a user record",
    ):
        assert queue_state(parse_lines(_TAKEN_UP[case], "s1")) is None, case
    # A slash command queued while an ingest ran, then run: Claude Code's record of it is
    # the command's, not the text queued. Once the model replied nothing waits for it.
    command = [_queue("enqueue", "/create-checkpoint ", at="03:04:06")]
    ran = [
        _queue("dequeue", at="03:04:07"),
        _user("<command-name>/create-checkpoint</command-name>", uuid="u2"),
    ]
    first = parse_lines(command, "s1")
    assert queue_state(parse_lines(ran, "s1", carry=resume_queue(queue_state(first)))) is not None
    answered = parse_lines([*ran, _assistant("Checkpoint made.", "a1")], "s1", carry=first)
    assert queue_state(answered) is None
    # A thousand prompts queued and never taken: the newest are remembered, a few KB.
    waiting = [_queue("enqueue", f"prompt number {n}", at="03:04:06") for n in range(1000)]
    state = queue_state(parse_lines(waiting, "s1"))
    assert state is not None and len(state) < 16_000
    carry = resume_queue(state)
    assert carry is not None
    assert [q.text for q in carry.kept_early["s1"]][-1] == "prompt number 999"
    # Unreadable (a database edited by hand): read on without it, nothing raised.
    for bad in ("", "not json", "[1, 2]", '{"early": [[1, 2, 3, 4]]}', '{"again": "x"}'):
        assert resume_queue(bad) is None


@st.composite
def _a_session_with_a_queue(draw: st.DrawFn) -> tuple[list[bytes], list[str]]:
    """A transcript as Claude Code (2.0.x, or 2.1.332 with its attachments) writes it,
    with prompts queued and taken up each way, and what the person said in it."""
    lines: list[bytes] = []
    queue: list[str] = []
    said: list[str] = []
    attachments = draw(st.booleans())
    actions = ("say", "reply", "enqueue", "enqueue", "next", "turn", "popAll")
    for n, action in enumerate(draw(st.lists(st.sampled_from(actions), max_size=14))):
        if action == "say":
            said.append(f"said {n}")
            lines.append(_user(said[-1], uuid=f"u{n}"))
        elif action == "reply":
            lines.append(_assistant(f"reply {n}", f"a{n}"))
        elif action == "enqueue":
            said.append(f"queued {n}")
            queue.append(said[-1])
            lines.append(_queue("enqueue", said[-1]))
        elif action == "next" and queue:
            lines += [_queue("dequeue"), _user(queue.pop(0), uuid=f"u{n}")]
        elif action == "turn" and queue:
            text = queue.pop(0)
            if not attachments:
                lines.append(_queue("remove"))
            else:
                both = [
                    _queue("remove", text, commandUuid=f"c{n}"),
                    _attachment(f"q{n}", "03:04:06", type="queued_command", prompt=text),
                ]
                lines += both if draw(st.booleans()) else both[::-1]
            lines.append(_assistant(f"took {n}", f"a{n}"))
        elif action == "popAll" and queue:
            popped, queue = queue, []
            lines += [_queue("popAll", text) for text in popped]
            then = draw(st.sampled_from(["queued again", "sent", "dropped"]))
            for text in popped if then != "dropped" else []:
                if then == "queued again":
                    queue.append(text)
                    lines.append(_queue("enqueue", text))
                else:
                    lines.append(_user(text, uuid=f"u{n}-{text}"))
    return lines, said


@settings(max_examples=300, deadline=None)
@given(_a_session_with_a_queue(), st.data())
def test_what_the_person_said_is_kept_once_however_many_ingests_read_it(
    session: tuple[list[bytes], list[str]], data: st.DataObject
) -> None:
    from collections import Counter

    lines, said = session
    whole = [m.text for m in parse_lines(lines, "s1").messages]
    assert Counter(t for t in whole if t.startswith(("said", "queued"))) == Counter(said)
    if len(lines) > 1:
        cuts = data.draw(st.lists(st.integers(1, len(lines) - 1), max_size=3, unique=True))
        assert sorted(_read_in_parts(lines, tuple(sorted(cuts)))) == sorted(whole)
