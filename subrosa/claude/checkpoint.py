"""The hooks' state in `<memory dir>/.extract/`: turn counters, checkpoint marks, the
queue of sessions that ended without extraction, and the live-session pointer.

Standard library only: the hooks use this on every turn. No database and no lock:
every record is its own small JSON file, written atomically, so concurrent sessions
never write the same file (one counter, one mark, one queue entry per session) and a
reader sees a whole record or none.

    .extract/<session>.json        Stop's turn counter since the session's last mark
                                   (document 000 reserves the name)
    .extract/marks/<session>.json  checkpoint-mark: the transcript size extraction covered
    .extract/queue/<session>.json  SessionEnd: a session that ended past its mark
    .extract/live.json             SessionStart: the newest session, for checkpoint-mark
    .extract/running/<session>.json  SessionStart: a session not yet seen to end, with its
                                   Claude Code process (subrosa.claude.liveness); gone at
                                   its SessionEnd, or when a later hook finds the process
                                   gone and queues the session (`queue_vanished`)
    .extract/once/<session>/       one marker per hook event handled (`claim_event`), so a
                                   hook registered twice (plugin and `subrosa install`)
                                   acts once

A mark means "extracted": when the session ends, it is queued only if someone went on
talking after the mark (`talked_after`). Claude Code always appends past the size the
mark stamped (the mark's own tool result, the rest of the turn, its bookkeeping), so a
byte count alone would queue every session that ran the extraction.

A session killed outright (SIGKILL, the OOM killer, a crash, a power cut) runs no
SessionEnd. Its `running/` record outlives it, and the next SessionStart or SessionEnd
in the project queues it once its process is gone (`queue_vanished`). The record is
taken (renamed) before the session is queued and deleted after, so a session is queued
this way at most once: clearing the queue is final, however long its counter, mark or
claims stay in `.extract/`. A session that is merely idle keeps its process, and is not
queued while that process runs.
"""

from __future__ import annotations

import json
import os
import stat
import time

from subrosa.claude import liveness
from subrosa.errors import InvalidInput
from subrosa.fsutil import (
    JSON_CAP,
    atomic_write_text,
    is_link,
    loads_json,
    read_capped,
    refuse_link,
    remove_file,
)
from subrosa.lazyre import compile_lazily
from subrosa.paths import (
    claude_root,
    extract_dir,
    is_file,
    join,
    parent,
    project_transcript_dir,
)

# typing, dataclasses, hashlib, pathlib and contextlib are kept off the import path: each
# costs the Stop hook more than its own work (mypy treats this name like
# typing.TYPE_CHECKING); fsutil.remove_file and `try … except` stand for
# contextlib.suppress.
# Paths are str or os.PathLike (subrosa.paths).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from subrosa.paths import StrPath

LIVE = "live.json"
MARKS = "marks"
QUEUE = "queue"
ONCE = "once"
RUNNING = "running"
# The queue's `reason` for a session whose Claude Code process ended without SessionEnd.
KILLED = "killed"
# A session whose process cannot be checked (no pid recorded: a Claude Code that does not
# give CLAUDE_PID; another host or container) counts as ended once nothing was written
# to its transcript for this long. Longer than anyone leaves a terminal idle and comes
# back to it, shorter than STALE_AFTER_SECONDS and than Claude Code keeps transcripts.
QUIET_AFTER_SECONDS = 7 * 24 * 3600
# Counters and marks untouched for this long belong to sessions long gone.
STALE_AFTER_SECONDS = 14 * 24 * 3600
# Claude Code starts the hooks of one event together: a second registration of the same
# hook claims the same event within moments. The same event key claimed later than this
# is a new event (a session resumed twice with nothing said in between).
DUPLICATE_WINDOW_SECONDS = 30.0
ONCE_STALE_AFTER_SECONDS = 24 * 3600
# At most this much of a transcript is read after a mark; a longer tail is more than an
# extraction's own ending, and the session is queued without reading it.
TAIL_LIMIT_BYTES = 4 * 1024 * 1024

MAX_ID_LENGTH = 100
_UNSAFE = compile_lazily(r"[^A-Za-z0-9_-]")


def safe_session_id(session_id: object) -> str | None:
    """A session id usable as a file name, or None when there is none.

    Claude Code's ids are UUIDs and pass unchanged; anything else has its unsafe
    characters replaced and a hash of the original appended, so two ids never
    collide and none can name a path outside `.extract/`.
    """
    if not isinstance(session_id, str) or not session_id.strip():
        return None
    cleaned = _UNSAFE.sub("_", session_id)
    if cleaned == session_id and len(cleaned) <= MAX_ID_LENGTH:
        return cleaned
    import hashlib

    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    cleaned = cleaned[: MAX_ID_LENGTH - len(digest) - 1]
    return f"{cleaned}-{digest}"


def read_json(path: StrPath, *, follow_links: bool = False) -> dict[str, Any] | None:
    """A JSON object from `path`, or None when it is missing, unreadable or not an object.

    Bounded (fsutil.read_capped): not a regular file or over JSON_CAP bytes reads as
    None, and so does a symbolic link (it or its folder) unless `follow_links` (a
    settings.json may be one; a record in `.extract/` never is)."""
    try:
        if not follow_links:
            refuse_link(parent(path))
        raw = read_capped(path, JSON_CAP, follow_links=follow_links)
        data = loads_json(raw) if raw is not None else None
    except (OSError, ValueError, InvalidInput):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: str, data: dict[str, Any], *, durable: bool = True) -> None:
    folder = parent(path)
    os.makedirs(folder, exist_ok=True)
    refuse_link(folder)  # `.extract/marks` -> elsewhere: never written through
    text = json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"
    atomic_write_text(path, text, durable=durable)


def _remove(path: str) -> None:
    """Delete one of our records, never one in a folder a link points to."""
    refuse_link(parent(path))
    remove_file(path, FileNotFoundError)


def transcript_size(transcript_path: str | None) -> int | None:
    """The transcript's size in bytes, or None when there is no such file."""
    if not transcript_path:
        return None
    try:
        return os.stat(transcript_path).st_size
    except (OSError, ValueError):
        return None


# --- once per event -------------------------------------------------------------------


def claim_event(
    memory_dir: StrPath,
    session_id: str,
    event: str,
    transcript_path: str | None,
    source: str = "",
    prompt_id: str = "",
) -> bool:
    """True for the first hook to handle this event of this session; False for a second
    registration of the same hook (the plugin and `subrosa install` both active).

    The event is named by the hook, the session, SessionStart's source, and the prompt
    id Claude Code gives (since 2.1.196) or else the transcript's size (every turn
    appends to it). The prompt id first: Claude Code before 2.1.332 writes the transcript
    behind the turn, so two Stop events in a row may see the same size, and the two
    registrations of one event may see different ones.
    The claim is a file created with O_EXCL: of two hooks started together exactly one
    creates it. A claim older than DUPLICATE_WINDOW_SECONDS is taken over (the same
    event key, later, is a new event). Claims of earlier events of the session go.
    """
    prefix = f"{event}-"
    if prompt_id:
        at = f"p{_UNSAFE.sub('_', prompt_id)[:64]}"
    else:
        size = transcript_size(transcript_path)
        at = "none" if size is None else str(size)
    name = f"{prefix}{at}-{_UNSAFE.sub('_', source)[:32]}"
    directory = join(extract_dir(memory_dir), ONCE, session_id)
    os.makedirs(directory, exist_ok=True)
    path = join(directory, name)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            try:
                age = time.time() - os.stat(path).st_mtime
            except FileNotFoundError:
                continue
            if age < DUPLICATE_WINDOW_SECONDS:
                return False
            remove_file(path, FileNotFoundError)
            continue
        break
    else:
        return False
    for other in os.listdir(directory):
        if other.startswith(prefix) and other != name:
            remove_file(join(directory, other))
    return True


# --- Stop: the per-session turn counter -------------------------------------------------


def count_turn(memory_dir: StrPath, session_id: str, transcript_path: str | None) -> int:
    """Add one turn to the session's counter and return the new count."""
    path = join(extract_dir(memory_dir), f"{session_id}.json")
    state = read_json(path) or {}
    turns = state.get("turns")
    turns = turns + 1 if isinstance(turns, int) and turns >= 0 else 1
    record = {"session_id": session_id, "turns": turns, "updated_at": time.time()}
    if transcript_path:
        record["transcript_path"] = transcript_path
    # Not fsynced: this runs on every turn, and a counter lost to a power cut only
    # delays one nudge (an empty or missing file counts from zero).
    _write_json(path, record, durable=False)
    return turns


def counter(memory_dir: StrPath, session_id: str) -> dict[str, Any] | None:
    """The session's counter record, if Stop has counted any turn."""
    return read_json(join(extract_dir(memory_dir), f"{session_id}.json"))


# --- SessionStart: the live session ----------------------------------------------------


def remember_live(
    memory_dir: StrPath, session_id: str, transcript_path: str | None, cwd: str | None
) -> None:
    """Note the session that just started, so `checkpoint-mark` needs no argument."""
    _write_json(
        join(extract_dir(memory_dir), LIVE),
        {
            "session_id": session_id,
            "transcript_path": transcript_path or "",
            "cwd": cwd or "",
            "started_at": time.time(),
        },
        durable=False,  # rewritten by every session start; checkpoint-mark --session works without
    )


def live_session(memory_dir: StrPath) -> dict[str, Any] | None:
    """The newest session SessionStart saw in this memory dir, if any."""
    data = read_json(join(extract_dir(memory_dir), LIVE))
    if data is None or safe_session_id(data.get("session_id")) is None:
        return None
    return data


# --- checkpoint-mark -------------------------------------------------------------------


def set_mark(memory_dir: StrPath, session_id: str, transcript_path: str, size: int) -> float:
    """Record that extraction covered the transcript up to `size` bytes; the session's
    queue entry, if it ended before, is covered too and goes. `session_id` is a
    `safe_session_id`, as everywhere in this module. Returns the time of the mark."""
    marked_at = time.time()
    _write_json(
        join(extract_dir(memory_dir), MARKS, f"{session_id}.json"),
        {
            "session_id": session_id,
            "transcript_path": transcript_path,
            "size": size,
            "marked_at": marked_at,
        },
    )
    _remove(join(extract_dir(memory_dir), QUEUE, f"{session_id}.json"))
    restart_count(memory_dir, session_id)
    return marked_at


def find_transcript(memory_dir: StrPath, session_id: str, known: str | None = None) -> str | None:
    """Where the session's transcript is: `known`, else as recorded by a hook (Stop's
    counter, SessionStart's running record), else where
    Claude Code keeps it for this project, else in any project."""
    recorded = counter(memory_dir, session_id) or {}
    running = read_json(join(extract_dir(memory_dir), RUNNING, f"{session_id}.json")) or {}
    candidates = [known, recorded.get("transcript_path"), running.get("transcript_path")]
    candidates.extend(
        entry.get("transcript_path")
        for entry in queued(memory_dir)
        if entry.get("session_id") == session_id
    )
    candidates.append(join(project_transcript_dir(), f"{session_id}.jsonl"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate and is_file(candidate):
            return candidate
    from pathlib import Path  # checkpoint-mark only, never a hook

    matches = sorted(Path(claude_root(), "projects").glob(f"*/{session_id}.jsonl"))
    return str(matches[0]) if matches else None


def mark_session(memory_dir: StrPath, session_id: str | None = None) -> dict[str, Any]:
    """`checkpoint-mark`: stamp the session's transcript size now (set_mark); by default
    the session this runs in (Claude Code gives its Bash commands
    `CLAUDE_CODE_SESSION_ID`), else the live session. Returns session_id,
    transcript_path, size and marked_at (ISO 8601, UTC); raises InvalidInput when there
    is no such session or transcript."""
    from subrosa.errors import InvalidInput

    known: str | None = None
    if session_id is None:
        session_id = os.environ.get("CLAUDE_CODE_SESSION_ID", "").strip() or None
    if session_id is None:
        live = live_session(memory_dir)
        if live is None:
            raise InvalidInput(
                f"{extract_dir(memory_dir)}: no live session recorded (the SessionStart hook "
                "records it); pass --session ID."
            )
        session_id = str(live["session_id"])
        known = live.get("transcript_path") or None
    key = safe_session_id(session_id)
    if key is None:
        raise InvalidInput("--session: an empty session id.")
    transcript = find_transcript(memory_dir, key, known)
    size = transcript_size(transcript)
    if transcript is None or size is None:
        raise InvalidInput(
            f"no transcript found for session {key} under {claude_root()}; check the id "
            "(the memory-extraction skill passes ${CLAUDE_SESSION_ID})."
        )
    marked_at = set_mark(memory_dir, key, transcript, size)
    return {"session_id": key, "transcript_path": transcript, "size": size,
            "marked_at": _iso(marked_at)}  # fmt: skip


def _iso(timestamp: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def restart_count(memory_dir: StrPath, session_id: str) -> None:
    """Count turns from zero again: the next nudge comes N turns after this extraction,
    not at the next multiple of N (which may be the very next turn)."""
    state = counter(memory_dir, session_id)
    if state is not None and state.get("turns"):
        _write_json(
            join(extract_dir(memory_dir), f"{session_id}.json"),
            {**state, "turns": 0, "updated_at": time.time()},
            durable=False,
        )


def mark_size(memory_dir: StrPath, session_id: str) -> int | None:
    """The transcript size the session's checkpoint mark covers, or None."""
    data = read_json(join(extract_dir(memory_dir), MARKS, f"{session_id}.json"))
    size = data.get("size") if data else None
    return size if isinstance(size, int) and size >= 0 else None


# --- SessionEnd: the queue -------------------------------------------------------------


def enqueue_if_uncovered(
    memory_dir: StrPath,
    session_id: str,
    transcript_path: str | None,
    reason: str,
    cwd: str | None,
    ended_at: float | None = None,
) -> bool:
    """Queue the ended session unless its mark covers it: the transcript did not grow
    past the mark, or what was appended is only the extraction's own ending (nobody
    went on talking: `talked_after`).

    A transcript that does not exist (a session closed before its first prompt) has
    nothing to extract and is not queued. Returns whether the session is queued.
    """
    queue_file = join(extract_dir(memory_dir), QUEUE, f"{session_id}.json")
    size = transcript_size(transcript_path)
    covered = mark_size(memory_dir, session_id)
    if (
        not size
        or (covered is not None and covered >= size)
        or (covered is not None and transcript_path and not talked_after(transcript_path, covered))
    ):
        _remove(queue_file)
        return False
    # Atomic but not fsynced: SessionEnd shares a 1.5 s budget and each fsync costs
    # milliseconds. A power cut in the seconds after a session ends can lose this
    # entry (one nudge fewer); the transcript itself is safe in the pending record.
    _write_json(
        queue_file,
        {
            "session_id": session_id,
            "transcript_path": transcript_path or "",
            "reason": reason,
            "ended_at": time.time() if ended_at is None else ended_at,
            "size": size,
            "marked_size": covered,
            "cwd": cwd or "",
        },
        durable=False,
    )
    return True


# Text a `user` record holds that no person typed as a prompt: a local command
# (`/exit`, `/cost`) and its output, or the note of an interrupted request. Such a
# record is a new exchange only when the model answers after it.
_NOT_A_PROMPT = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "[Request interrupted by user",
)
# A background task's notice to the model (Claude Code 2.1.x), queued like a prompt and
# filed as a `user` record (2.1.49 queued a task's start as JSON): nobody typed it, and
# the model's report on it is no talk. (The archive files the same texts as a tool's
# output: subrosa.archive.transcripts._NOT_SAID; this module stays off its imports.)
_NOTICE = ("<task-notification>", '{"task_id":')


def _prompt_text(message: object) -> str | None:
    """What a person said in a `user` message: its text (or "" for an image alone);
    None when it carries no prompt (tool results)."""
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    said = None
    for block in content:
        if isinstance(block, dict) and block.get("type") in ("text", "image", "document"):
            text = block.get("text")
            said = (said or "") + (text if isinstance(text, str) else "")
    return said


def talked_after(transcript_path: str, offset: int) -> bool:
    """Whether the conversation went on after byte `offset` of the transcript: a person's
    prompt (a `user` record with text, not a tool result, not Claude Code's own meta
    records such as Stop hook feedback, not a task's notice; or a queued one, a
    queue-operation `enqueue`), or a local command the model then answered.

    What Claude Code appends for the rest of the extraction's own turn is not that: the
    mark's tool result, more tool calls and results, the final text, and records
    without a message (attachments, `api-request`, `last-prompt`, `cost-state`, the
    Stop hook summary). Reads at most TAIL_LIMIT_BYTES: a longer tail counts as talk.
    Unreadable counts as talk too (the safe side: the session is queued).
    """
    try:
        with open(transcript_path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size - offset > TAIL_LIMIT_BYTES:
                return True
            handle.seek(max(offset - 1, 0))
            data = handle.read(TAIL_LIMIT_BYTES + 1)
    except (OSError, ValueError):
        return True
    if offset > 0:
        # The byte before the mark ends a line when the mark fell between records.
        data = data[1:] if data[:1] == b"\n" else data[data.find(b"\n") + 1 :]
    command_pending = False
    notice = False  # the model is answering a task's notice
    for line in data.split(b"\n"):
        queue = b'"queue-operation"' in line
        if not queue and b'"user"' not in line and b'"assistant"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a half-written last line
        if not isinstance(record, dict) or record.get("isSidechain"):
            continue
        kind = record.get("type")
        if kind == "queue-operation":
            # A prompt typed while Claude works: taken into the running turn it is
            # written nowhere else (a queued_command attachment at most).
            content = record.get("content")
            if (
                record.get("operation") == "enqueue"
                and content
                and not (isinstance(content, str) and content.lstrip().startswith(_NOTICE))
            ):
                return True
            continue
        if kind == "assistant" and notice:
            continue
        if kind == "assistant" and command_pending:
            return True
        if kind != "user" or record.get("isMeta") or record.get("isCompactSummary"):
            continue
        text = _prompt_text(record.get("message"))
        if text is None:
            continue
        notice = text.lstrip().startswith(_NOTICE)
        if notice:
            continue
        if text.lstrip().startswith(_NOT_A_PROMPT):
            command_pending = True
            continue
        return True
    return False


def queued(memory_dir: StrPath) -> list[dict[str, Any]]:
    """Every queued session, oldest first. Unreadable entries are skipped."""
    directory = join(extract_dir(memory_dir), QUEUE)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    entries = []
    for name in names:
        if name.startswith(".") or not name.endswith(".json"):
            continue
        data = read_json(join(directory, name))
        if data is None or not isinstance(data.get("session_id"), str):
            continue
        ended = data.get("ended_at")
        data["ended_at"] = ended if isinstance(ended, int | float) else 0.0
        data["_file"] = join(directory, name)
        entries.append(data)
    entries.sort(key=lambda entry: (entry["ended_at"], entry["session_id"]))
    return entries


def queue_listing(memory_dir: StrPath) -> list[dict[str, Any]]:
    """The queue as `checkpoint-list` shows it: session_id, transcript_path, reason,
    ended_at (ISO 8601, UTC), size (or None) and cwd, every text a string."""

    def listed(entry: dict[str, Any]) -> dict[str, Any]:
        def text(key: str) -> str:
            value = entry.get(key)
            return value if isinstance(value, str) else ""

        size = entry.get("size")
        return {
            "session_id": text("session_id"),
            "transcript_path": text("transcript_path"),
            "reason": text("reason"),
            "ended_at": _iso(entry["ended_at"]),
            "size": size if isinstance(size, int) else None,
            "cwd": text("cwd"),
        }

    return [listed(entry) for entry in queued(memory_dir)]


def _entry_names(memory_dir: StrPath) -> list[str]:
    """The queue's entries by file name, readable or not (not a write in progress)."""
    try:
        names = os.listdir(join(extract_dir(memory_dir), QUEUE))
    except OSError:
        return []
    return [name for name in names if name.endswith(".json") and not name.startswith(".")]


def queue_count(memory_dir: StrPath, besides: str | None = None) -> int:
    """How many sessions are queued (by file count: SessionStart needs no more), the
    session `besides` (a `safe_session_id`: the one starting, when resumed) not counted."""
    mine = f"{besides}.json" if besides else None
    return sum(1 for name in _entry_names(memory_dir) if name != mine)


def clear_queue(memory_dir: StrPath) -> int:
    """Remove every queued session present now; return how many went. An entry that
    cannot be read (left empty by a power cut: SessionEnd does not fsync it) goes too:
    queue_count counts it, and SessionStart names this as what dismisses the queue."""
    directory = join(extract_dir(memory_dir), QUEUE)
    names = _entry_names(memory_dir)
    if names:
        refuse_link(directory)  # `.extract/queue` -> elsewhere: nothing removed there
    # Any OSError: a folder named like an entry is not one, and stays.
    return sum(remove_file(join(directory, name)) for name in names)


# --- sessions not yet seen to end --------------------------------------------------------


def remember_running(
    memory_dir: StrPath,
    session_id: str,
    transcript_path: str | None,
    cwd: str | None,
    process: dict[str, Any],
) -> None:
    """SessionStart: the session runs, in the Claude Code `process`
    (liveness.claude_process). Rewritten by a resume, /clear or compaction."""
    _write_json(
        join(extract_dir(memory_dir), RUNNING, f"{session_id}.json"),
        {
            **process,
            "session_id": session_id,
            "transcript_path": transcript_path or "",
            "cwd": cwd or "",
            "started_at": time.time(),
        },
        # Not fsynced: SessionStart's latency is the user's, and a record lost to a power
        # cut in the seconds after a start loses one queue entry, not the transcript.
        durable=False,
    )


def forget_running(memory_dir: StrPath, session_id: str) -> None:
    """SessionEnd: the session ended with its hook; nothing is left to notice."""
    _remove(join(extract_dir(memory_dir), RUNNING, f"{session_id}.json"))


def _last_activity(record: dict[str, Any], path: str) -> float:
    """When the session last did something: its transcript's mtime, or its start."""
    times = [record.get("started_at"), _mtime(path), _mtime(record.get("transcript_path"))]
    return max([t for t in times if isinstance(t, int | float)] or [0.0])


def _mtime(path: object) -> float | None:
    if not isinstance(path, str) or not path:
        return None
    try:
        return os.stat(path).st_mtime
    except (OSError, ValueError):
        return None


def _remove_if_older(path: str, now: float, age: float) -> None:
    try:
        if now - os.lstat(path).st_mtime > age:
            os.unlink(path)
    except OSError:
        pass


def queue_vanished(
    memory_dir: StrPath, besides: str | None = None, now: float | None = None
) -> list[str]:
    """Queue the sessions that ended without their SessionEnd (killed outright): those
    whose recorded Claude Code process is gone, and those whose process cannot be
    checked once quiet for QUIET_AFTER_SECONDS. A session whose process runs is never
    queued, however long idle. `besides` (the session running this hook) is skipped.
    Each record is taken by a rename before its session is queued (two hooks at once
    queue it once) and deleted after, whatever happened. Returns the sessions queued
    (not those a mark covers: enqueue_if_uncovered)."""
    directory = join(extract_dir(memory_dir), RUNNING)
    if is_link(directory):
        return []  # a link to elsewhere: nothing there is ours
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    now = time.time() if now is None else now
    where: dict[str, str] | None = None
    found: list[str] = []
    for name in names:
        path = join(directory, name)
        session_id = name[:-5]
        if name.startswith("."):  # a claim or a temp file whose writer died
            _remove_if_older(path, now, ONCE_STALE_AFTER_SECONDS)
            continue
        if not name.endswith(".json") or session_id == besides:
            continue
        record = read_json(path)
        if record is None or record.get("session_id") != session_id:
            _remove_if_older(path, now, STALE_AFTER_SECONDS)  # not ours to judge
            continue
        where = where or liveness.here()
        verdict = liveness.judge(record, where)
        last = _last_activity(record, path)
        if verdict == liveness.ALIVE or (
            verdict == liveness.UNKNOWN and now - last < QUIET_AFTER_SECONDS
        ):
            continue
        claim = join(directory, f".{session_id}.{os.getpid()}.claim")
        try:
            os.rename(path, claim)
        except OSError:
            continue  # another hook took it first
        try:
            transcript = record.get("transcript_path")
            cwd = record.get("cwd")
            if enqueue_if_uncovered(
                memory_dir,
                session_id,
                transcript if isinstance(transcript, str) and transcript else None,
                KILLED,
                cwd if isinstance(cwd, str) else None,
                ended_at=last,
            ):
                found.append(session_id)
        finally:
            remove_file(claim)
    return found


# --- housekeeping ----------------------------------------------------------------------


def clean_stale(memory_dir: StrPath, now: float | None = None) -> int:
    """Delete counters and marks untouched for STALE_AFTER_SECONDS (never queue entries:
    those wait for the user). Returns how many files went."""
    now = time.time() if now is None else now
    removed = _clean_claims(join(extract_dir(memory_dir), ONCE), now)
    base = extract_dir(memory_dir)
    for directory in (base, join(base, MARKS), join(base, QUEUE)):
        if is_link(directory):
            continue  # a link to elsewhere: nothing there is ours to delete
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        # .tmp: the leftovers of a writer that crashed between write and rename (in the
        # queue only those: its entries wait for the user however old).
        kept = (".tmp",) if os.path.basename(directory) == QUEUE else (".json", ".tmp")
        for name in names:
            if not name.endswith(kept) or name == LIVE:
                continue
            path = join(directory, name)
            try:
                info = os.stat(path)  # one stat a file: SessionEnd runs this over them all
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime > STALE_AFTER_SECONDS:
                    os.unlink(path)
                    removed += 1
            except OSError:
                pass
    return removed


def _clean_claims(directory: str, now: float) -> int:
    """Delete the event claims (`claim_event`) of sessions quiet for a day."""
    removed = 0
    try:
        sessions = os.listdir(directory)
    except OSError:
        return 0
    for session in sessions:
        folder = join(directory, session)
        try:
            if now - os.stat(folder).st_mtime <= ONCE_STALE_AFTER_SECONDS:
                continue
            for name in os.listdir(folder):
                os.unlink(join(folder, name))
                removed += 1
            os.rmdir(folder)
        except OSError:
            pass
    return removed
