"""What an older subrosa archived as the person's words but nobody typed is relabelled.

Ingest now files by whose words a text is (subrosa.archive.transcripts): a `user`
record that holds a background task's notice or a command's output (`<task-notification>`,
2.1.49's `{"task_id": …}`, `<local-command-stdout>`, `<bash-stdout>`, …) is kept as a
tool's output, its text labelled `[tool result] `; a subagent's prompt (a `user` record
marked `isSidechain`: the main agent wrote it) and a compaction's summary
(`isCompactSummary`: the model wrote it) are the assistant's. An archive ingested before
holds them as the user's: a search for what the person said found them, ranked as said,
and `--role user` listed them. A new archive ingested from the same transcripts holds
them relabelled; this revision makes an old one hold what a new one would.

- Notices: told by their text alone, on either engine, in one statement. The label is
  put before the text as stored (nothing of it changes; the search index follows).
- Subagents' prompts and compaction summaries: told by their record, so the transcripts
  on this disk in the folders ingest has read are searched for such records (only the
  lines that hold a marker are decoded), and the messages of their uuids become the
  assistant's. A file not on this disk (deleted by Claude Code, or another machine's on a
  team's server) cannot be read: its messages keep their old role.

- The person's answers to AskUserQuestion and the reasons they gave for refusing a tool,
  which an older subrosa kept as a tool's output (`[tool result] User has answered your
  questions: …`): the label is taken off, so they are the person's words again. One
  that was cut to its first 2,000 characters stays as it is: the rest is not in the
  archive (a new archive from the transcripts holds it whole).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
import mmap
import os
import re

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# subrosa.archive.transcripts' _NOT_SAID and NOTICE_LABEL as of this revision (a
# migration stays as written: it does not import what later code may change).
NOT_SAID = (
    "<task-notification>",
    '{"task_id":',
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
)
LABEL = "[tool result] "
# What Python's str.strip() removes before the prefix is compared (ASCII whitespace).
WHITESPACE = " \t\n\r\x0b\x0c"
# The records' flags, however the JSON is spaced (Claude Code writes it compact).
MARKERS = (
    re.compile(rb'"isSidechain"\s*:\s*true'),
    re.compile(rb'"isCompactSummary"\s*:\s*true'),
)
USER = re.compile(rb'"type"\s*:\s*"user"')
# transcripts._ANSWERS and _REASON as of this revision: a tool's result that holds what
# the person said (their answers to AskUserQuestion, the reason they gave for refusing a
# tool), and how an older subrosa cut a tool's result.
ANSWERS = (
    "User has answered your questions:",
    "The user doesn't want to proceed with this tool use.",
    "Permission for this tool use was denied.",
)
REASON = re.compile(r"(?:To tell you how to proceed, the user said|The user said):")
CUT = re.compile(r" \[… \d+ more characters\]\Z")
CHUNK = 500


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def upgrade() -> None:
    bind = op.get_bind()
    starts = " OR ".join(
        f"substr(ltrim(text, :ws), 1, {len(prefix)}) = {_literal(prefix)}" for prefix in NOT_SAID
    )
    bind.execute(
        sa.text(f"UPDATE messages SET text = :label || text WHERE role = 'user' AND ({starts})"),
        {"label": LABEL, "ws": WHITESPACE},
    )
    _answers_as_said(bind)
    paths = [str(path) for (path,) in bind.execute(sa.text("SELECT path FROM ingested_files"))]
    uuids: list[str] = []
    for path in _transcripts_near(paths):
        uuids.extend(_models_words(path))
    for start in range(0, len(uuids), CHUNK):
        bind.execute(
            sa.text(
                "UPDATE messages SET role = 'assistant' WHERE role = 'user' AND uuid IN :ids"
            ).bindparams(sa.bindparam("ids", expanding=True)),
            {"ids": uuids[start : start + CHUNK]},
        )


def _answers_as_said(bind: sa.Connection) -> None:
    """The person's answers and refusal reasons an older subrosa kept as a tool's
    output: the label taken off where the text is whole (one cut to its first characters
    stays as it is; the transcript holds the rest)."""
    starts = " OR ".join(
        f"substr(text, 1, {len(LABEL + answer)}) = {_literal(LABEL + answer)}" for answer in ANSWERS
    )
    rows = bind.execute(
        sa.text(f"SELECT id, text FROM messages WHERE role = 'user' AND ({starts})")
    ).all()
    for pk, text in rows:
        said = str(text)[len(LABEL) :]
        if CUT.search(said) or not (said.startswith(ANSWERS[0]) or REASON.search(said, 0, 1000)):
            continue
        bind.execute(
            sa.text("UPDATE messages SET text = :text WHERE id = :id"), {"text": said, "id": pk}
        )


def _transcripts_near(paths: list[str]) -> list[str]:
    """The files ingest has read, and the transcripts beside them (Claude Code's layout:
    a project's folder holds its sessions, `<session>/subagents/` their subagents').
    Not only the files read: migration 0011, when it runs in the same upgrade, has just
    forgotten the files it wants read again, and their messages are in the archive all
    the same. A record of a file never ingested changes nothing (only archived messages
    are relabelled)."""
    found: dict[str, None] = dict.fromkeys(paths)
    for folder in sorted({os.path.dirname(path) for path in paths}):
        for entry in _entries(folder):
            if entry.name.endswith(".jsonl") and entry.is_file():
                found.setdefault(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                for inner in _entries(os.path.join(entry.path, "subagents")):
                    if inner.name.endswith(".jsonl") and inner.is_file():
                        found.setdefault(inner.path)
    return list(found)


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:  # gone, not a folder, unreadable
        return []


def _models_words(path: str) -> list[str]:
    """The uuids of the `user` records of the transcript at `path` that hold a
    subagent's prompt or a compaction's summary."""
    found = []
    try:
        with (
            open(path, "rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            end = len(data)
            for marker in MARKERS:
                stop = 0
                for match in marker.finditer(data, 0, end):
                    if match.start() < stop:  # on the line just read
                        continue
                    start = data.rfind(b"\n", 0, match.start()) + 1
                    stop = data.find(b"\n", match.end(), end)
                    stop = end if stop < 0 else stop
                    line = data[start:stop]
                    uuid = _uuid_if_models(line) if USER.search(line) else None
                    if uuid is not None:
                        found.append(uuid)
    except (OSError, ValueError):  # gone, unreadable, empty
        return []
    return found


def _uuid_if_models(line: bytes) -> str | None:
    """The record's uuid when it is a `user` record that ingest now keeps as the
    assistant's (transcripts._parse_line: isCompactSummary, or isSidechain with a prompt)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("type") != "user" or record.get("isMeta"):
        return None
    uuid, message = record.get("uuid"), record.get("message")
    if not isinstance(uuid, str) or not isinstance(message, dict):
        return None
    if record.get("isCompactSummary"):
        return uuid
    if record.get("isSidechain") is True and message.get("role") == "user":
        return uuid if _prompts(message.get("content")) else None
    return None


def _prompts(content: object) -> bool:
    """transcripts._prompts as of this revision: text, not a tool's output or a notice."""
    if isinstance(content, str):
        return not content.lstrip().startswith(NOT_SAID)
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return False
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and text.lstrip().startswith(NOT_SAID):
            return False
    return True


def downgrade() -> None:
    pass
