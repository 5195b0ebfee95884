"""Claude Code transcript parsing: JSONL records in, messages and session facts out.

Pure and database-free. The format is internal to Claude Code and changes between
versions, so everything here is lenient: a line that is not JSON, a record of a type
we do not know, a block we do not understand is counted as skipped, never fatal.
What is kept: `user` and `assistant` messages, their text; tool calls as the tool's
name and a compact form of its input; tool results cut to a configurable length; a
prompt typed while Claude worked, which Claude Code may write only as a queue
operation or a `queued_command` attachment (_queue_operation).
Thinking blocks and `isMeta` entries are skipped (they are not the conversation).
Whose words a text is: what Claude Code files as a `user` record but nobody typed (a
task's notice, a local command's output: _NOT_SAID) is kept as a tool's output; a
subagent's prompt as the assistant's (_prompts); what the person said inside a tool's
result (_ANSWERS) as theirs, whole.

Every piece of text is redacted before it is kept (subrosa.archive.redact); otherwise
the text is kept as written (the views, `transcript show` and `search`, make it safe
to print). A tool call's input is redacted value by value, before it is encoded as
JSON, so an escaped quote cannot hide a secret.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import msgspec

from subrosa.archive.conversation import session_label
from subrosa.archive.redact import Redactor, may_hold_secret
from subrosa.lazyre import compile_lazily
from subrosa.secrets import key_kind
from subrosa.terms import index_terms

ROLES = ("user", "assistant")


class Message(NamedTuple):
    """One archived message: the text that is stored and indexed. (A NamedTuple: the
    ingest workers send millions of these back, and tuples pickle in C.)"""

    uuid: str
    session_id: str
    role: str
    timestamp: str | None  # "YYYY-MM-DD HH:MM:SS", naive UTC
    text: str
    # What the index holds beside the words (subrosa.terms): CJK characters one per
    # token, camelCase identifiers' parts; None for most.
    terms: str | None = None


@dataclass(slots=True)
class SessionInfo:
    """What a transcript says about its session (every field optional, merged over lines)."""

    session_id: str
    cwd: str | None = None
    git_branch: str | None = None
    title: str | None = None
    summary: str | None = None


# The most entries of each kind the queue's state keeps between reads of a file (the
# newest; queue_state): forgetting one can only keep a prompt twice, never lose one, and
# the state stays a few KB (a transcript's queue rarely holds more than a handful).
STATE_ENTRIES = 64


class _Queued(NamedTuple):
    """A prompt typed while Claude worked (a queue-operation `enqueue`), cleaned."""

    text: str
    timestamp: object
    command: object  # its commandUuid, where Claude Code gives one


@dataclass
class Parsed:
    """The result of parsing some lines of one transcript."""

    messages: list[Message] = field(default_factory=list)
    sessions: dict[str, SessionInfo] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    # Lines read in spite of a flaw (bad UTF-8 bytes replaced), by kind.
    repaired: Counter[str] = field(default_factory=Counter)
    # Prompts typed during a turn, by session, not yet taken in (_queue_operation), and
    # the (session, text) of those kept from the queue and from queued_command
    # attachments, each to keep the other from keeping the same prompt twice.
    queued: dict[str, list[_Queued]] = field(default_factory=dict)
    from_queue: Counter[tuple[str, str]] = field(default_factory=Counter)
    attached: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Across the batches of one read (parse_lines' `carry`), and the reads of one file
    # (queue_state): the prompts still queued at the end of an earlier batch, kept
    # there, by session, and the (session, text) of a user record that holds one of them
    # again (its `dequeue` came later; until the turn is answered, _turn).
    kept_early: dict[str, list[_Queued]] = field(default_factory=dict)
    kept_again: dict[tuple[str, str], int] = field(default_factory=dict)
    # The texts of the prompts a `popAll` put back into the input box (kept then), by
    # session: sent as they were, or queued again, they are not kept twice.
    popped: dict[str, list[str]] = field(default_factory=dict)
    # The texts of the prompts a `remove` took into the running turn, by session, until
    # the turn is answered (_turn): what a queued_command attachment may still hold.
    # Only for queue_state.
    just_taken: dict[str, list[str]] = field(default_factory=dict)
    # The sessions where a `dequeue` or a `remove` waits for its record (a user record,
    # an attachment), and whether a user record came since (_turn).
    waiting: dict[str, bool] = field(default_factory=dict)
    # The last messages of the batch before (for _placed).
    before: list[Message] = field(default_factory=list)


def normalize_time(value: object) -> str | None:
    """An ISO-8601 time as naive UTC "YYYY-MM-DD HH:MM:SS", or None when unreadable."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    # The common shape ("2026-01-01T10:00:00.000Z") without the cost of parsing it.
    if value.endswith("Z") and value[10] == "T" and value[4] == "-" and value[13] == ":":
        return f"{value[:10]} {value[11:19]}"
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


Clean = Callable[[str], str]
# Compact JSON, non-ASCII kept as is (what json.dumps(ensure_ascii=False,
# separators=(",", ":")) writes, at a fifth of its cost).
_ENCODER = msgspec.json.Encoder()


def _same(text: str) -> str:
    return text


@dataclass
class Cleaner:
    """Cleans text before it is kept: the redactor, when there is one. Called on a
    string, or with `value` on a tool call's decoded input."""

    redactor: Redactor | None = None

    def __call__(self, text: str) -> str:
        return self.redactor(text) if self.redactor is not None else text

    def value(self, value: object, encoded: str, longest: int) -> str:
        """A tool call's input (`encoded`: as compact JSON) with each string redacted
        (and cut to `longest` characters first: more is never shown) before it is
        encoded. Most inputs hold no trigger at all: their encoding is kept as is."""
        if self.redactor is None or not may_hold_secret(encoded):
            return encoded
        cleaned = self.redactor.value(value, prepare=lambda text: text[:longest])
        return _ENCODER.encode(cleaned).decode()


def cut(text: str, limit: int, clean: Clean = _same) -> str:
    """`text` cleaned and cut to `limit` characters, saying how much was left out.

    Cleaning (redaction) sees a margin past the cut, so a secret that straddles
    it is still recognized whole and no prefix of it survives.
    """
    if len(text) <= limit:
        return clean(text)
    return f"{clean(text[: limit + 512])[:limit]} [… {len(text) - limit} more characters]"


def _compact_input(value: object, limit: int, clean: Clean) -> str:
    if isinstance(value, dict) and len(value) == 1:
        ((key, only),) = value.items()
        if isinstance(only, str) and not (isinstance(key, str) and key_kind(key)):
            return cut(only, limit, clean)
    try:
        encoded = _ENCODER.encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        return "[input not readable]"
    if not isinstance(clean, Cleaner):
        return cut(encoded, limit, clean)
    total = len(encoded)
    cleaned = clean.value(value, encoded, limit + 512)
    if total <= limit:
        return cleaned
    return f"{cleaned[:limit]} [… {total - limit} more characters]"


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


# A tool's result that holds what the person said, the only place Claude Code writes it:
# their answers to AskUserQuestion, the reason they gave for refusing a tool.
_ANSWERS = (
    "User has answered your questions:",
    "The user doesn't want to proceed with this tool use.",
    "Permission for this tool use was denied.",
)
# The words that, in a refusal, come before the person's reason (2.1.332's wording).
_REASON = compile_lazily(r"(?:To tell you how to proceed, the user said|The user said):")


def _is_persons(result: str) -> bool:
    """Whether a result that starts with one of _ANSWERS holds the person's words (a
    refusal without a reason holds none: it stays the tool's output)."""
    return result.startswith(_ANSWERS[0]) or _REASON.search(result, 0, 1000) is not None


# What Claude Code files as a `user` record (or queues as a prompt) but nobody typed: a
# background task's notice to the model (2.1.49 queued a task's start as JSON), the
# output of a command run in Claude Code (a slash command's, a `!` shell command's).
# Kept as a tool's output (subrosa.archive.conversation.message_kind). The SessionEnd
# hook tells the notices from talk by the same starts (subrosa.claude.checkpoint._NOTICE).
_NOT_SAID = (
    "<task-notification>",
    '{"task_id":',
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
)
NOTICE_LABEL = "[tool result]"


def content_text(
    content: object, tool_result_chars: int, skipped: Counter[str], clean: Clean = _same
) -> str:
    """The text of a message's content (a string or a list of blocks), cleaned."""
    if isinstance(content, str):
        return clean(content)
    if not isinstance(content, list):
        skipped["content"] += 1
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(clean(block))
            continue
        if not isinstance(block, dict):
            skipped["block"] += 1
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(clean(block["text"]))
        elif kind == "tool_use":
            name = block.get("name") if isinstance(block.get("name"), str) else "tool"
            parts.append(f"[{name}] {_compact_input(block.get('input'), tool_result_chars, clean)}")
        elif kind == "tool_result":
            result = _result_text(block.get("content"))
            if result.startswith(_ANSWERS) and _is_persons(result):
                parts.append(clean(result))  # the person's words: whole, and theirs
                continue
            label = "[tool error]" if block.get("is_error") else "[tool result]"
            parts.append(f"{label} {cut(result, tool_result_chars, clean)}")
        elif kind in ("thinking", "redacted_thinking"):
            skipped["thinking"] += 1
        elif kind == "image":
            parts.append("[image]")
        else:
            skipped[f"block:{kind}"] += 1
    return "\n".join(part for part in parts if part)


def message_key(session_id: str, timestamp: str | None, role: str, text: str) -> str:
    """A stable id for a message that has no uuid of its own."""
    digest = hashlib.sha1(f"{session_id}\0{timestamp}\0{role}\0{text}".encode()).hexdigest()
    return f"sha1:{digest}"


def _session(parsed: Parsed, session_id: str) -> SessionInfo:
    info = parsed.sessions.get(session_id)
    if info is None:
        info = parsed.sessions[session_id] = SessionInfo(session_id)
    return info


def _note_title(parsed: Parsed, record: dict[str, object], session_id: str, clean: Clean) -> bool:
    """Titles and summaries (record types seen across versions); True when one was read.
    A local command's wrapper text (a fork's name, conversation.session_label) is none."""
    for key in ("customTitle", "aiTitle", "title"):
        value = session_label(record.get(key))
        if value is not None:
            _session(parsed, session_id).title = clean(value.strip())
            return True
    value = session_label(record.get("summary"))
    if value is not None:
        _session(parsed, session_id).summary = clean(value.strip())
        return True
    return False


# A Claude Code session id (a UUID, lower case): the name of a session's own transcript.
_SESSION_ID = compile_lazily(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def own_session(default_session: str) -> str | None:
    """The session a transcript is, when its name is a session id: every record in it is
    that session's, whatever its `sessionId` says. Claude Code 2.1.63 (and older) copies
    a fork's history into the fork's file with the parent's sessionId (2.1.150 on, with
    the fork's); filed under the fork, the archive shares it with the parent (stored
    once), and the fork shows its whole conversation. None for a subagent's transcript
    (named after its parent: its records say the parent too) or a file of another name."""
    return default_session if _SESSION_ID.fullmatch(default_session) else None


def parse_record(
    record: object,
    default_session: str,
    tool_result_chars: int,
    parsed: Parsed,
    clean: Clean = _same,
    own: str | None = None,
) -> None:
    """Add what one decoded JSONL line holds to `parsed` (`own`: see own_session)."""
    if not isinstance(record, dict):
        parsed.skipped["not an object"] += 1
        return
    raw_session = record.get("sessionId")
    session_id = raw_session if isinstance(raw_session, str) and raw_session else default_session
    if own is not None:
        session_id = own
    kind = record.get("type")
    if kind not in ROLES:
        if kind == "queue-operation":
            _queue_operation(parsed, record, session_id, tool_result_chars, clean)
        elif kind == "attachment" and _is_queued_command(record):
            _queued_command(parsed, record, session_id, tool_result_chars, clean)
        elif _is_local_command(record):
            # A command the person typed (/fork, /model …) or its output, which Claude
            # Code 2.1.x files as a `system` record where other commands are `user`
            # records: kept as those are (the output labelled a tool's, _NOT_SAID).
            fields = (record.get("cwd"), record.get("gitBranch"), record.get("timestamp"))
            content = record.get("content")
            _add_message(
                parsed,
                session_id,
                "user",
                "user",
                content,
                (*fields, record.get("uuid")),
                tool_result_chars,
                clean,
            )
        elif not _note_title(parsed, record, session_id, clean):
            parsed.skipped[f"type:{kind}" if isinstance(kind, str) else "type:?"] += 1
        return
    if record.get("isMeta"):
        parsed.skipped["meta"] += 1
        return
    message = record.get("message")
    if not isinstance(message, dict):
        parsed.skipped["no message"] += 1
        return
    role = message.get("role")
    if record.get("isCompactSummary"):
        # Claude Code's summary of the history before a compaction, filed as a `user`
        # record: the model wrote it, not the person, so it is archived as the
        # assistant's. It is kept: a session continued from one whose transcript is
        # gone (Claude Code deletes old ones) holds what came before only there.
        kind = role = "assistant"
    elif record.get("isSidechain") is True and role == "user" and _prompts(message.get("content")):
        kind = role = "assistant"
    _add_message(
        parsed,
        session_id,
        kind,
        role,
        message.get("content"),
        (record.get("cwd"), record.get("gitBranch"), record.get("timestamp"), record.get("uuid")),
        tool_result_chars,
        clean,
    )


def _prompts(content: object) -> bool:
    """Whether a subagent's `user` record (isSidechain) is a prompt: text, not a tool's
    output or a notice (_NOT_SAID). Nobody typed it: the main agent wrote it (the Agent
    tool's prompt, a SendMessage), or Claude Code did (its prompt_suggestion agent's
    "[SUGGESTION MODE: ...]"); the person talks to the main session. So it is archived
    as the assistant's, as a compaction's summary is."""
    if isinstance(content, str):
        return not content.lstrip().startswith(_NOT_SAID)
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return False
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and text.lstrip().startswith(_NOT_SAID):
            return False
    return True


def _queue_operation(
    parsed: Parsed,
    record: dict[str, object],
    session_id: str,
    tool_result_chars: int,
    clean: Clean,
) -> None:
    """A prompt typed while Claude worked. Claude Code queues it (`enqueue`), then takes
    it as the next turn (`dequeue`: a user record of its own follows, which is kept),
    into the running turn (`remove`: written nowhere else before 2.1.x's queued_command
    attachments, so kept here, where the model read it), or back into the input box
    (`popAll`: kept as typed; sent after as it was, as a user record or queued again, it
    is not kept twice; edited, it is kept too). A prompt still queued when the lines end
    is kept too: what a person said is never dropped. A later read of the same file
    knows what this one kept from queue_state."""
    operation = record.get("operation")
    queue = parsed.queued.setdefault(session_id, [])
    if operation == "enqueue":
        content = record.get("content")
        text = "" if content is None else content_text(content, tool_result_chars, Counter(), clean)
        if text.strip():
            queued = _Queued(text, record.get("timestamp"), record.get("commandUuid"))
            if parsed.popped and _was_popped(parsed, session_id, text.strip()):
                # Put back by a popAll (kept then) and queued again as it was: kept already.
                parsed.kept_early.setdefault(session_id, []).append(queued)
            else:
                queue.append(queued)
        else:
            parsed.skipped["queued: empty"] += 1
    elif operation in ("dequeue", "remove"):
        content = record.get("content")
        content = clean(content) if isinstance(content, str) else content  # as it was queued
        # Those kept at the end of an earlier batch were queued before the rest.
        early = parsed.kept_early.setdefault(session_id, [])
        taken, was_early = _take((early, queue), record.get("commandUuid"), content)
        if taken is not None and was_early and operation == "dequeue":
            # Kept once already, at the end of an earlier batch: the user record this
            # `dequeue` announces follows here. (Its attachment is left out by `from_queue`.)
            key = (session_id, taken.text.strip())
            parsed.kept_again[key] = parsed.kept_again.get(key, 0) + 1
            parsed.waiting[session_id] = False
        elif taken is not None and operation == "remove":
            if not was_early:
                _keep_queued(parsed, session_id, taken, tool_result_chars, taken_in=True)
            # Its queued_command attachment may still come, before the model's reply.
            parsed.just_taken.setdefault(session_id, []).append(taken.text.strip())
            parsed.waiting.setdefault(session_id, True)  # after the tool's output (_turn)
    elif operation == "popAll":
        # The whole queue, back into the input box: kept as typed (those kept at the end
        # of an earlier batch or read already), and taken from the queue no more.
        for taken in queue:
            _keep_queued(parsed, session_id, taken, tool_result_chars)
        early = parsed.kept_early.pop(session_id, [])
        popped = parsed.popped.get(session_id, []) + [q.text.strip() for q in early + queue]
        if popped:
            parsed.popped[session_id] = popped[-STATE_ENTRIES:]
        queue.clear()
    else:
        parsed.skipped[f"queued: {operation}"] += 1


def _was_popped(parsed: Parsed, session_id: str, text: str) -> bool:
    """Whether `text` is a prompt a popAll put back into the input box (and so kept
    already); it is one no more."""
    popped = parsed.popped.get(session_id)
    if not popped or text not in popped:
        return False
    popped.remove(text)
    if not popped:
        del parsed.popped[session_id]
    return True


def _take(
    queues: tuple[list[_Queued], list[_Queued]], command: object, content: object
) -> tuple[_Queued | None, bool]:
    """The queued prompt an operation takes, from the first queue (those kept at the end
    of an earlier batch) or the second, and whether from the first: the one of its
    commandUuid, else of its text (2.1.332 repeats it in the `remove`), else the first
    queued."""
    if command is not None:
        for number, queue in enumerate(queues):
            for index, queued in enumerate(queue):
                if queued.command == command:
                    return queue.pop(index), number == 0
    if isinstance(content, str) and content.strip():
        for number, queue in enumerate(queues):
            for index, queued in enumerate(queue):
                if queued.command is None and content.strip() in queued.text:
                    return queue.pop(index), number == 0
        # Another prompt's (one queued without text, e.g. an image): taking the first
        # would pair it with the wrong one.
        return None, False
    for number, queue in enumerate(queues):
        if queue:
            return queue.pop(0), number == 0
    return None, False


def _keep_queued(
    parsed: Parsed,
    session_id: str,
    queued: _Queued,
    tool_result_chars: int,
    taken_in: bool = False,
) -> None:
    """A queued prompt kept as the user's message, unless a queued_command attachment
    already holds it (its text is cleaned already); `taken_in` by the running turn."""
    key = (session_id, queued.text.strip())
    if parsed.attached[key]:
        parsed.attached[key] -= 1
        return
    parsed.from_queue[key] += 1
    fields = (None, None, queued.timestamp, None)
    _add_message(
        parsed, session_id, "user", "user", queued.text, fields, tool_result_chars, _same, taken_in
    )


def _take_one(counts: dict[tuple[str, str], int], key: tuple[str, str]) -> None:
    """One less of `key` (gone at none: an empty dict costs the hot path nothing)."""
    if counts[key] > 1:
        counts[key] -= 1
    else:
        del counts[key]


def _is_local_command(record: dict[str, object]) -> bool:
    return (
        record.get("type") == "system"
        and record.get("subtype") == "local_command"
        and isinstance(record.get("content"), str)
    )


def _is_queued_command(record: dict[str, object]) -> bool:
    attachment = record.get("attachment")
    return isinstance(attachment, dict) and attachment.get("type") == "queued_command"


def _queued_command(
    parsed: Parsed,
    record: dict[str, object],
    session_id: str,
    tool_result_chars: int,
    clean: Clean,
) -> None:
    """Claude Code 2.1.x's record of a prompt taken into the running turn: an attachment
    whose `prompt` is the person's text (a string or content blocks), kept as the
    user's message under the record's uuid, once (the queue's own record of it too)."""
    if record.get("isMeta"):
        parsed.skipped["meta"] += 1
        return
    attachment = cast(dict[str, object], record["attachment"])
    text = content_text(attachment.get("prompt"), tool_result_chars, parsed.skipped, clean)
    key = (session_id, text.strip())
    if parsed.from_queue[key]:
        parsed.from_queue[key] -= 1
        return
    if key[1]:
        parsed.attached[key] += 1
    cwd, branch = record.get("cwd"), record.get("gitBranch")
    fields = (cwd, branch, record.get("timestamp"), record.get("uuid"))
    _add_message(parsed, session_id, "user", "user", text, fields, tool_result_chars, _same, True)


def _add_message(
    parsed: Parsed,
    session_id: str,
    kind: str,
    role: object,
    content: object,
    fields: tuple[object, object, object, object],
    tool_result_chars: int,
    clean: Clean,
    taken_in: bool = False,
) -> None:
    """A user or assistant message (from the generic dict or the decoded struct);
    `fields` are the record's cwd, gitBranch, timestamp and uuid. `taken_in`: a prompt
    typed while Claude worked, taken into the running turn (see _placed)."""
    cwd, branch, raw_time, uuid = fields
    if parsed.waiting and session_id in parsed.waiting:
        _turn(parsed, session_id, kind)
    # The text as said: an indented code block or YAML snippet keeps its first indent.
    text = content_text(content, tool_result_chars, parsed.skipped, clean)
    info = _session(parsed, session_id)
    if isinstance(cwd, str) and cwd:
        info.cwd = cwd
    if isinstance(branch, str) and branch:
        info.git_branch = branch
    stripped = text.strip()
    if not stripped:
        parsed.skipped["empty"] += 1
        return
    if parsed.kept_again and kind == "user" and (session_id, stripped) in parsed.kept_again:
        _take_one(parsed.kept_again, (session_id, stripped))  # kept from its queue record
        parsed.skipped["queued: kept before"] += 1
        return
    if (
        parsed.popped
        and kind == "user"
        and not taken_in
        and _sent_back(parsed, session_id, stripped, content)
    ):
        parsed.skipped["queued: kept before"] += 1
        return
    role = role if role in ROLES else kind
    timestamp = normalize_time(raw_time)
    if not isinstance(uuid, str) or not uuid:
        # Keyed on the stripped text and the record's own time, as archives made before
        # the text was kept as said (or labelled, or placed) were: a re-ingest finds the
        # message it already holds.
        uuid = message_key(session_id, timestamp, str(role), stripped)
    if role == "user" and stripped.startswith(_NOT_SAID):
        text = f"{NOTICE_LABEL} {text}"
    if taken_in:
        timestamp = _placed(parsed.before + parsed.messages[-_PLACED_REACH:], session_id, timestamp)
    terms = index_terms(text)
    parsed.messages.append(Message(uuid, session_id, str(role), timestamp, text, terms))


def _turn(parsed: Parsed, session_id: str, kind: str) -> None:
    """A record of a session where a `dequeue` or a `remove` waits for its record. Claude
    Code writes a dequeued prompt's user record, and the attachment of one taken into the
    running turn, before the model's reply to it. The reply to the turn before may come
    between a `dequeue` and its user record (the corpus has a dequeue, the last turn's
    text, then the user record); a `remove` comes after the tool's output the prompt
    joins. So once a user record came (for a `remove`, at once) and then the model's
    reply, what still waits can match nothing more (a slash command's record is not its
    text) and must not match a later prompt of the same words."""
    if kind == "user":
        parsed.waiting[session_id] = True
    elif parsed.waiting[session_id]:
        del parsed.waiting[session_id]
        parsed.just_taken.pop(session_id, None)
        for key in [key for key in parsed.kept_again if key[0] == session_id]:
            del parsed.kept_again[key]


def _sent_back(parsed: Parsed, session_id: str, text: str, content: object) -> bool:
    """Whether a user record sends, as it was, a prompt a popAll put back into the input
    box (kept then). Another prompt the person sends empties the box: what was put back
    and not sent is forgotten (a tool's output is no prompt)."""
    if _was_popped(parsed, session_id, text):
        return True
    if session_id in parsed.popped and not _is_tool_output(content):
        del parsed.popped[session_id]
    return False


def _is_tool_output(content: object) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


# How many of the messages before a prompt taken into the running turn _placed reads.
_PLACED_REACH = 50


def _placed(messages: list[Message], session_id: str, timestamp: str | None) -> str | None:
    """The time a prompt taken into the running turn is archived at: its own (when it was
    typed), or where that is earlier, the time of the message before it (the tool's
    output it was handed over with), among the last _PLACED_REACH of `messages`.
    Sessions are shown in time order, and the person's words belong where the model
    read them, between that output and the reply."""
    for message in reversed(messages[-_PLACED_REACH:]):
        if message.session_id == session_id and message.timestamp is not None:
            if timestamp is None or message.timestamp > timestamp:
                return message.timestamp
            return timestamp
    return timestamp


class _Message(msgspec.Struct):
    role: Any = None
    content: Any = None


_UNREAD = msgspec.Raw(b"")
_QUEUE_RECORDS = ("queue-operation", "attachment")
_RAW = ("content", "attachment")


class _Record(msgspec.Struct):
    """The fields of a transcript line we use. Decoding into this skips every other field
    without building it (four times faster than json.loads on real transcripts); a line
    whose fields have unexpected types falls back to the lenient generic path."""

    type: Any = None
    uuid: Any = None
    sessionId: Any = None  # noqa: N815 (Claude Code's spelling)
    timestamp: Any = None
    cwd: Any = None
    gitBranch: Any = None  # noqa: N815
    isMeta: Any = None  # noqa: N815
    isCompactSummary: Any = None  # noqa: N815
    isSidechain: Any = None  # noqa: N815
    message: _Message | None = None
    summary: Any = None
    # A queue-operation's (a prompt typed while Claude worked) and an attachment's. The
    # two large ones are kept undecoded (other records' `content` and `attachment` are
    # whole API requests and prompt snapshots) until a queue record asks for them.
    operation: Any = None
    commandUuid: Any = None  # noqa: N815
    content: msgspec.Raw = _UNREAD
    attachment: msgspec.Raw = _UNREAD
    customTitle: Any = None  # noqa: N815
    aiTitle: Any = None  # noqa: N815
    title: Any = None
    subtype: Any = None  # a `system` record's: local_command is a command typed


_DECODER = msgspec.json.Decoder(_Record)
_FIELDS = tuple(n for n in _Record.__struct_fields__ if n != "message" and n not in _RAW)


def _as_dict(record: _Record) -> dict[str, object]:
    """The decoded struct as the generic path's dict (the fields that are set)."""
    out: dict[str, object] = {}
    for name in _FIELDS:
        value = getattr(record, name)
        if value is not None:
            out[name] = value
    if record.type in _QUEUE_RECORDS or record.subtype == "local_command":
        for name in _RAW:
            raw = getattr(record, name)
            if raw:
                out[name] = msgspec.json.decode(raw)
    if record.message is not None:
        out["message"] = {"role": record.message.role, "content": record.message.content}
    return out


# Stands for a line the reader skipped for its length (never valid JSON itself).
LINE_TOO_LONG = b"\x00line too long"


def parse_lines(
    lines: list[bytes],
    default_session: str,
    tool_result_chars: int = 2000,
    redactor: Redactor | None = None,
    carry: Parsed | None = None,
) -> Parsed:
    """Parse complete JSONL lines (bytes, newline optional) of one transcript; every
    piece of text is cleaned (see Cleaner) before it is kept. `carry`: the Parsed of the
    batch of lines just before these, in the same read, or resume_queue's for a read that
    starts where an earlier one ended (a queued prompt is kept once)."""
    parsed = Parsed()
    if carry is not None:
        parsed.from_queue, parsed.attached = carry.from_queue, carry.attached
        parsed.kept_early, parsed.kept_again = carry.kept_early, carry.kept_again
        parsed.popped, parsed.just_taken = carry.popped, carry.just_taken
        parsed.waiting = carry.waiting
        parsed.before = carry.messages[-50:]
    clean = Cleaner(redactor)
    own = own_session(default_session)
    for line in lines:
        if not line or line.isspace():
            continue
        if line == LINE_TOO_LONG:
            parsed.skipped["line too long"] += 1
            continue
        try:
            _parse_line(line, default_session, tool_result_chars, parsed, clean, own)
        except RecursionError:
            # JSON nested thousands deep: no message of Claude Code's looks like it, and
            # one such line must not stop the run (nor the good lines around it).
            parsed.skipped["nested too deeply"] += 1
    for session_id, queue in parsed.queued.items():
        for queued in queue:  # still queued where the lines end: kept all the same
            _keep_queued(parsed, session_id, queued, tool_result_chars)
        parsed.kept_early.setdefault(session_id, []).extend(queue)
    parsed.queued.clear()
    _adopt_orphan_titles(parsed, default_session)
    return parsed


def _parse_line(
    line: bytes,
    default_session: str,
    tool_result_chars: int,
    parsed: Parsed,
    clean: Clean,
    own: str | None = None,
) -> None:
    """Add what one JSONL line holds to `parsed` (RecursionError for JSON nested too deep;
    `own`: see own_session)."""
    try:
        struct = _DECODER.decode(line)
    except msgspec.ValidationError:  # fields of unexpected types: the generic path
        try:
            generic = msgspec.json.decode(line)
        except msgspec.DecodeError:
            parsed.skipped["not json"] += 1
            return
        parse_record(generic, default_session, tool_result_chars, parsed, clean, own)
        return
    except msgspec.DecodeError:
        if line.startswith(_BOM):  # an editor's byte order mark before the first line
            _parse_line(line[len(_BOM) :], default_session, tool_result_chars, parsed, clean, own)
            return
        mended = _without_half_pairs(line)
        if mended is not None:
            parsed.repaired["half a surrogate pair, read with U+FFFD"] += 1
            _parse_line(mended, default_session, tool_result_chars, parsed, clean, own)
            return
        if _is_utf8(line):
            record = _after_torn(line)
            parsed.skipped["torn line" if record else "not json"] += 1
            if record:  # the record written after a line a crash cut short
                _parse_line(record, default_session, tool_result_chars, parsed, clean, own)
            return
        # Keep what the line says; only its bad bytes become U+FFFD (and it is counted).
        parsed.repaired["invalid UTF-8, read with U+FFFD"] += 1
        repaired = line.decode("utf-8", errors="replace").encode("utf-8")
        _parse_line(repaired, default_session, tool_result_chars, parsed, clean, own)
        return
    session = struct.sessionId if own is None else own
    if (
        struct.type in ROLES
        and not struct.isMeta
        and not struct.isCompactSummary
        and struct.message is not None
        and isinstance(session, str)
        and session
    ):
        # The common case, without building a dict first.
        message = struct.message
        kind, role = struct.type, message.role
        if struct.isSidechain is True and role == "user" and _prompts(message.content):
            kind = role = "assistant"
        _add_message(
            parsed,
            session,
            kind,
            role,
            message.content,
            (struct.cwd, struct.gitBranch, struct.timestamp, struct.uuid),
            tool_result_chars,
            clean,
        )
    else:
        parse_record(_as_dict(struct), default_session, tool_result_chars, parsed, clean, own)


_BOM = b"\xef\xbb\xbf"
# An escaped UTF-16 surrogate (`\ud83d`): Node's JSON.stringify writes half of a pair so,
# a string cut in the middle of an emoji; msgspec refuses the line.
_SURROGATE_ESCAPE = compile_lazily(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _without_half_pairs(line: bytes) -> bytes | None:
    """The line with each half of a surrogate pair (escaped, `\ud83d` alone) read as
    U+FFFD, the rest as it was; None when it holds none, or is no JSON for another
    reason. Python's json reads such an escape as a lone surrogate, which no text
    can be stored with."""
    if _SURROGATE_ESCAPE.search(line) is None:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return json.dumps(_mend_halves(value), ensure_ascii=False).encode("utf-8", "replace")


def _mend_halves(value: object) -> object:
    """`value` (decoded JSON) with every lone surrogate in its strings made U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_mend_halves(item) for item in value]
    if isinstance(value, dict):
        return {_mend_halves(k): _mend_halves(v) for k, v in value.items()}
    return value


# How many places _after_torn() tries, from the line's end: a record's nested objects
# come before its own start, each tried in vain (they end before the record's `}`).
TORN_TRIES = 64


def _after_torn(line: bytes) -> bytes | None:
    """The whole record at the end of a line that is not JSON, when the line is one a
    crash cut short with the next record appended to it (`{"type":"user","uu{"type":…}`):
    the rightmost `{"` whose rest of the line is a JSON object with a `type` (a nested
    object is always followed by its parent's `}`, so none is taken for a record).
    None when there is none, or TORN_TRIES places were tried."""
    end = len(line)
    for _ in range(TORN_TRIES):
        at = line.rfind(b'{"', 1, end)
        if at < 0:
            return None
        try:
            value = msgspec.json.decode(line[at:])
        except msgspec.DecodeError:
            end = at
            continue
        return line[at:] if isinstance(value, dict) and isinstance(value.get("type"), str) else None
    return None


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _adopt_orphan_titles(parsed: Parsed, default_session: str) -> None:
    """Summary lines carry no sessionId. When the file's messages all belong to one
    other session (the file was named after a different id), the summary is that
    session's, not a session of its own."""
    orphan = parsed.sessions.get(default_session)
    if orphan is None or any(m.session_id == default_session for m in parsed.messages):
        return
    others = {m.session_id for m in parsed.messages}
    if len(others) != 1:
        return
    target = _session(parsed, others.pop())
    target.title = target.title or orphan.title
    target.summary = target.summary or orphan.summary
    target.cwd = target.cwd or orphan.cwd
    target.git_branch = target.git_branch or orphan.git_branch
    del parsed.sessions[default_session]


class _State(msgspec.Struct, omit_defaults=True):
    """The queue's state where a read of a transcript ended (queue_state): Parsed's
    kept_early (session, text, timestamp, commandUuid), kept_again and from_queue
    (session, text, count), popped and just_taken (session, text), waiting (session,
    whether a user record came)."""

    early: list[tuple[str, str, Any, Any]] = []
    again: list[tuple[str, str, int]] = []
    from_queue: list[tuple[str, str, int]] = []
    popped: list[tuple[str, str]] = []
    just_taken: list[tuple[str, str]] = []
    waiting: list[tuple[str, bool]] = []


_STATE_DECODER = msgspec.json.Decoder(_State)


def _pairs(texts: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(session, text) for session, some in texts.items() for text in some][-STATE_ENTRIES:]


def queue_state(parsed: Parsed) -> str | None:
    """What a later read of the same transcript, starting where these lines end, must
    know of its queue to keep each prompt once (resume_queue), as compact JSON: the
    prompts kept while still queued, those put back into the input box, the user records
    a `dequeue` announced, and the counts that stop a queued_command attachment still to
    come from keeping a prompt again. Only what can still match, the newest
    STATE_ENTRIES of each: None for most transcripts. Its texts are cleaned (redacted)
    as the messages are."""
    early = [
        (session, q.text, q.timestamp, q.command)
        for session, queue in parsed.kept_early.items()
        for q in queue
    ][-STATE_ENTRIES:]
    popped, just_taken = _pairs(parsed.popped), _pairs(parsed.just_taken)
    pending = set(parsed.just_taken) | {session for session, _ in parsed.kept_again}
    # An attachment comes for a prompt still queued, put back (and queued again), or
    # just taken into the running turn; any other count can match nothing more.
    alive = {(s, text.strip()) for s, text, _, _ in early} | set(popped) | set(just_taken)
    state = _State(
        early=early,
        again=[(s, text, n) for (s, text), n in parsed.kept_again.items()][-STATE_ENTRIES:],
        from_queue=[
            (s, t, n) for (s, t), n in parsed.from_queue.items() if n > 0 and (s, t) in alive
        ],
        popped=popped,
        just_taken=just_taken,
        waiting=[(s, came) for s, came in parsed.waiting.items() if s in pending],
    )
    if not (state.early or state.again or state.from_queue or state.popped or state.just_taken):
        return None
    return _ENCODER.encode(state).decode()


def resume_queue(state: str | None) -> Parsed | None:
    """The carry (parse_lines) for a read that starts where the one that saved `state`
    (queue_state) ended; None for none, or for a state that cannot be read (then a
    prompt may be kept twice, never lost)."""
    if not state:
        return None
    try:
        saved = _STATE_DECODER.decode(state)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    carry = Parsed()
    for session, text, timestamp, command in saved.early:
        carry.kept_early.setdefault(session, []).append(_Queued(text, timestamp, command))
    carry.kept_again = {(session, text): n for session, text, n in saved.again}
    carry.from_queue.update({(session, text): n for session, text, n in saved.from_queue})
    for session, text in saved.popped:
        carry.popped.setdefault(session, []).append(text)
    for session, text in saved.just_taken:
        carry.just_taken.setdefault(session, []).append(text)
    carry.waiting = dict(saved.waiting)
    return carry
