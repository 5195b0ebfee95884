"""Claude Code hooks: `subrosa hook session-start | stop | session-end`.

Claude Code runs these on every session start, every turn and every session end,
with one JSON object on stdin (hooks.md: `session_id`, `transcript_path`, `cwd`,
`hook_event_name`, plus `source`, `stop_hook_active` or `reason`). So:

- Standard library only (and the stdlib-only subrosa modules): importing SQLAlchemy
  alone would cost more than the whole hook. A test checks `sys.modules`.
- Fail open: whatever goes wrong (garbage on stdin, no memory dir, a read-only
  disk, a bug), exit 0, one line on stderr, nothing on stdout. Output is built in
  full before anything is printed, so a failure never leaves half a JSON document.
- Only Stop ever blocks, every N-th turn, and never while `stop_hook_active` is set
  (Claude Code is then already continuing because of a Stop hook).
"""

from __future__ import annotations

import json
import os
import sys
from stat import S_ISREG

from subrosa.claude import checkpoint, liveness
from subrosa.fsutil import JSON_CAP, read_capped
from subrosa.lazyre import compile_lazily
from subrosa.memory.marker import INDEX, read_ranking
from subrosa.paths import (
    absolute,
    auto_memory_dir,
    checkout_root,
    claude_root,
    config_file,
    expand_user,
    is_dir,
    is_file,
    join,
    parent,
    resolve_memory_dir,
    resolved,
)
from subrosa.plain import is_plain

# typing and pathlib are kept off the import path (see subrosa.claude.checkpoint and
# subrosa.paths): a path here is a str.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from subrosa.paths import StrPath

    Payload = dict[str, Any]

# hooks.md: hook output strings, additionalContext included, are capped at 10,000
# characters; past that Claude Code swaps the text for a file path and a preview.
CONTEXT_CAP = 10_000
# Claude Code loads at most this many lines of MEMORY.md itself; inject no more.
INDEX_MAX_LINES = 200
# A Stop payload carries the last assistant message; a few MiB is already absurd.
MAX_STDIN_BYTES = 8 * 1024 * 1024
DEFAULT_NUDGE_EVERY = 15
# MEMORY.md is ~23 KB when subrosa writes it and Claude Code loads 200 lines of it; a
# bigger one is not injected (and not read).
MAX_INDEX_BYTES = 1024 * 1024


class Notes:
    """Problems met along the way, reported as one line on stderr at the end."""

    def __init__(self, hook: str) -> None:
        self.hook = hook
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(message)

    def attempt(self, what: str, action: Callable[[], Any]) -> Any:
        """Run one step; a failure is noted and the hook goes on with the next step."""
        try:
            return action()
        except Exception as exc:  # fail open: one step's failure must not stop the rest
            self.add(f"{what} failed ({_describe(exc)})")
            return None

    def flush(self) -> None:
        if self.items:
            _stderr(f"subrosa hook {self.hook}: " + "; ".join(self.items))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    return f"{type(exc).__name__}: {exc}"


def _stderr(message: str) -> None:
    try:
        sys.stderr.write(" ".join(message.split()) + "\n")
        sys.stderr.flush()
    except Exception:  # stderr closed: nothing left to tell anyone
        pass


def _read_payload(notes: Notes) -> Payload | None:
    stream = sys.stdin
    if stream is None or stream.isatty():
        notes.add("expected Claude Code's JSON on stdin, got a terminal")
        return None
    raw = stream.buffer.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        notes.add(f"stdin is larger than {MAX_STDIN_BYTES} bytes; ignored")
        return None
    if not raw.strip():
        notes.add("stdin is empty; expected Claude Code's JSON")
        return None
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:  # RecursionError: `[[[[…` nested too deeply
        notes.add(f"stdin is not valid JSON ({exc})")
        return None
    if not isinstance(payload, dict):
        notes.add("stdin is JSON but not an object")
        return None
    return payload


def _text(payload: Payload, key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def _memory_dir(payload: Payload) -> str:
    """The memory dir of the session's project: the stdin `cwd` is where Claude works."""
    return resolve_memory_dir(cwd=_text(payload, "cwd"))


def _state_ready(memory_dir: str, notes: Notes) -> bool:
    """True when `.extract/` may be written: the memory dir, or at least its parent,
    exists, or it is Claude Code's auto-memory dir (`<claude root>/projects/<project>/
    memory`), which Claude Code itself creates only later (2.1: the project folder
    appears with the first transcript, and not at all for the repository root when the
    session started in a subfolder). Any other memory dir whose parent is missing is a
    misconfiguration the hook must not paper over.
    """
    if is_dir(memory_dir) or is_dir(parent(memory_dir)):
        return True
    projects = join(claude_root(), "projects")
    if parent(parent(memory_dir)) == projects and is_dir(claude_root()):
        return True
    notes.add(f"the memory dir {memory_dir} does not exist (nor its parent); nothing recorded")
    return False


def _session_state(payload: Payload, notes: Notes, skipped: str) -> tuple[str, str] | None:
    """The session's file-safe id and its project's memory dir, when `.extract/` can
    record it; else None, with the reason noted (`skipped` says what did not happen)."""
    session_id = checkpoint.safe_session_id(payload.get("session_id"))
    if session_id is None:
        notes.add(f"no session_id on stdin; {skipped}")
        return None
    memory_dir = _memory_dir(payload)
    if not _state_ready(memory_dir, notes):
        return None
    return session_id, memory_dir


def _first_to_handle(payload: Payload, notes: Notes, event: str, state: tuple[str, str]) -> bool:
    """False when another registration of this hook (the plugin and `subrosa install`
    both active) already handles this event: then this one does nothing."""
    session_id, memory_dir = state
    claimed = notes.attempt(
        "claiming the event",
        lambda: checkpoint.claim_event(
            memory_dir,
            session_id,
            event,
            _text(payload, "transcript_path"),
            _text(payload, "source") or "",
            _text(payload, "prompt_id") or "",
        ),
    )
    if claimed is False:
        notes.add("another registration of this hook handles this event; nothing done twice")
        return False
    return True  # claimed, or the claim failed: better twice than never


# --- Stop ------------------------------------------------------------------------------


def _nudge_every(notes: Notes) -> int:
    raw = os.environ.get("SUBROSA_NUDGE_EVERY", "").strip()
    if raw.isdecimal() and int(raw) > 0:
        return int(raw)
    if not raw and not _may_set_nudge_every(config_file()):
        return DEFAULT_NUDGE_EVERY  # nothing to read: skip importing the settings machinery
    try:
        from subrosa.config import load_settings

        return load_settings().nudge_every
    except Exception as exc:  # a broken config file must not break the agent
        notes.add(f"settings unreadable, nudging every {DEFAULT_NUDGE_EVERY} turns ({exc})")
        return DEFAULT_NUDGE_EVERY


def _may_set_nudge_every(path: str) -> bool:
    """Whether the settings file at `path` may set `nudge_every`: it exists and its bytes
    name the key (or hold a `\\u` escape, which a quoted TOML key may spell it with).
    Every other file leaves the default in effect, so the Stop hook, which reads
    nothing else from it, need not parse it: parsing loads tomllib and typing, a third
    more time on every turn of a user who keeps a settings file (a team's `db` URL).
    A file that cannot be read here is parsed, so its problem is reported as before."""
    try:
        data = read_capped(path, JSON_CAP, follow_links=True)  # as load_settings reads it
    except Exception:  # a FIFO, too large, unreadable: load_settings says what is wrong
        return True
    if data is None:
        return False
    return b"nudge_every" in data or b"\\u" in data or b"\\U" in data


def _one_line(value: object) -> str:
    """A path or id as one clean line: a folder name can hold a newline, an escape, a
    tag (`<system>`) or a link (`[x](y)`), and the agent reads what the hooks print."""
    text = str(value)
    if is_plain(text):
        return text
    from subrosa.text import terminal_line

    return terminal_line(text)


def nudge_reason(session_id: str, turns: int, memory_dir: StrPath) -> str:
    """What the Stop hook tells the agent when it blocks (the skill's steps, in brief)."""
    where = _one_line(memory_dir)
    return (
        f"subrosa: this session ({session_id}) has run {turns} turns. Before stopping, "
        "run the memory-extraction skill inline (not as a subagent): save each durable "
        f"fact from this session as a leaf file in {where} and register it with "
        '`subrosa fact upsert --leaf FILE --hook "ONE LINE"`. Then, even when nothing '
        "passed the durable-fact test, run `subrosa generate`, "
        f"`subrosa checkpoint-mark --session {session_id}` and `subrosa checkpoint-clear`, "
        "in that order, and stop."
    )


def stop(payload: Payload, notes: Notes) -> str | None:
    """Count the turn; every N-th one, block once with the extraction nudge."""
    if payload.get("stop_hook_active"):
        return None
    state = _session_state(payload, notes, "turn not counted")
    if state is None:
        return None
    if not _first_to_handle(payload, notes, "stop", state):
        return None
    session_id, memory_dir = state
    turns = checkpoint.count_turn(memory_dir, session_id, _text(payload, "transcript_path"))
    if turns % _nudge_every(notes):
        return None
    return json.dumps({"decision": "block", "reason": nudge_reason(session_id, turns, memory_dir)})


# --- SessionEnd ------------------------------------------------------------------------


def _neutral_dir() -> str:
    """A working directory for the background ingest that is not the project: the
    user's private data dir when it exists (the pending record was just written
    there), else the filesystem root."""
    from subrosa.paths import data_dir

    directory = data_dir()
    return directory if os.path.isdir(directory) else os.path.abspath(os.sep)


def ingest_argv() -> list[str]:
    """The background ingest's command line.

    `-P` (safe path): without it `python -m` puts the working directory first on
    sys.path, and a `click.py`, `json.py` or `subrosa/` in a checked-out branch would
    run as the user at every session end. Not `-I`: that also drops the user site
    directory, where `pip install --user` puts subrosa. The process also starts in a
    neutral directory (see `_start_background_ingest`).
    """
    return [sys.executable, "-P", "-m", "subrosa", "ingest", "--pending"]


def _start_background_ingest() -> bool:
    """Start `subrosa ingest --pending` detached, never waiting for it.

    SessionEnd hooks share a 1.5 s budget; the pending record already guarantees the
    transcript reaches the archive at the next subrosa command, so this only makes it
    sooner. Skipped when SUBROSA_BACKGROUND_INGEST=0. On POSIX it is os.posix_spawn in
    a new session (importing subprocess alone would cost more than the hook's own
    work); posix_spawn has no working-directory argument, so the hook steps into the
    neutral directory for the spawn and back.
    """
    if os.environ.get("SUBROSA_BACKGROUND_INGEST", "1").strip().lower() in ("0", "false", "no"):
        return False
    argv = ingest_argv()
    neutral = _neutral_dir()
    if hasattr(os, "posix_spawn"):
        devnull = os.devnull
        try:
            previous: str | None = os.getcwd()
        except OSError:  # the project folder was deleted under the session
            previous = None
        os.chdir(neutral)
        try:
            os.posix_spawn(
                sys.executable,
                argv,
                dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0),
                ],
                setsid=True,
            )
        finally:
            if previous is not None:
                os.chdir(previous)
        return True
    import subprocess

    flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
        subprocess, "CREATE_NEW_PROCESS_GROUP", 0
    )
    subprocess.Popen(
        argv,
        cwd=neutral,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        creationflags=flags,
    )
    return True


def _queue_vanished(memory_dir: str, session_id: str, notes: Notes) -> None:
    """Queue the project's sessions killed outright (checkpoint.queue_vanished): a listing
    of `.extract/running/` and a look at each recorded process, a millisecond or so."""
    notes.attempt(
        "looking for sessions that ended without their hook",
        lambda: checkpoint.queue_vanished(memory_dir, besides=session_id),
    )


def session_end(payload: Payload, notes: Notes) -> str | None:
    """Hand the transcript to the archive; queue the session unless its mark covers it."""
    raw_id = payload.get("session_id")
    transcript = _text(payload, "transcript_path")
    cwd = _text(payload, "cwd")
    state = _session_state(payload, notes, "session not queued")
    if state is not None and not _first_to_handle(payload, notes, "session-end", state):
        return None
    if transcript:
        from subrosa.archive import pending

        recorded = notes.attempt(
            "recording the transcript for the archive",
            lambda: pending.record(
                transcript, raw_id if isinstance(raw_id, str) else "", cwd or ""
            ),
        )
        if recorded is not None:
            notes.attempt("starting the background ingest", _start_background_ingest)
    if state is None:
        return None
    session_id, memory_dir = state
    reason = (_text(payload, "reason") or "other")[:64]
    # Seen to end first: were this hook cut short after queueing, a later hook would
    # queue the session again, perhaps after the queue was cleared.
    notes.attempt(
        "recording the session's end", lambda: checkpoint.forget_running(memory_dir, session_id)
    )
    notes.attempt(
        "queueing the session",
        lambda: checkpoint.enqueue_if_uncovered(memory_dir, session_id, transcript, reason, cwd),
    )
    _queue_vanished(memory_dir, session_id, notes)
    notes.attempt("cleaning old hook state", lambda: checkpoint.clean_stale(memory_dir))
    return None


# --- SessionStart ----------------------------------------------------------------------


def _claude_settings(project_dir: str) -> list[dict[str, Any]]:
    """The settings Claude Code reads for a session started in `project_dir`, lowest
    precedence first: user, project and local, and in a subfolder the top of the
    checkout's settings.local.json (subrosa.claude.settings.settings_files)."""
    from subrosa.claude.settings import settings_files

    # Bounded (a settings.local.json linked to /dev/zero reads as nothing); links are
    # followed, as Claude Code follows them (dotfiles repositories).
    return [
        checkpoint.read_json(path, follow_links=True) or {}
        for _, path in settings_files(project_dir)
    ]


def auto_memory_target(cwd: str | None) -> tuple[str | None, str]:
    """Where Claude Code's auto memory goes for a session started in `cwd` (its own
    memory writes, and the MEMORY.md it loads), and from what: (the dir, "") or, when
    auto memory is off, (None, why)."""
    project_dir = os.environ.get("CLAUDE_PROJECT_DIR") or cwd
    if os.environ.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    ):
        return None, "auto memory is off: CLAUDE_CODE_DISABLE_AUTO_MEMORY is set"
    enabled: object = True
    configured_dir: object = None
    # Claude Code reads project settings where it was started: CLAUDE_PROJECT_DIR, else
    # (the hook or doctor run by hand) the top of the checkout around cwd (a worktree's
    # own: Claude Code started in a worktree reads the worktree's .claude/).
    settings_root = (
        os.environ.get("CLAUDE_PROJECT_DIR") or checkout_root(cwd) or absolute(cwd or ".")
    )
    for settings in _claude_settings(settings_root):
        enabled = settings.get("autoMemoryEnabled", enabled)
        configured_dir = settings.get("autoMemoryDirectory", configured_dir)
    if enabled is False:
        return None, "auto memory is off: autoMemoryEnabled is false in settings.json"
    if isinstance(configured_dir, str) and configured_dir:
        return expand_user(configured_dir), "autoMemoryDirectory"
    return auto_memory_dir(project_dir), ""


def same_dir(a: str, b: str) -> bool:
    """Whether two paths name one folder (links resolved when they can be)."""
    try:
        return resolved(a) == resolved(b)
    except OSError:
        return absolute(a) == absolute(b)


def index_not_loaded_because(memory_dir: str, cwd: str | None) -> str | None:
    """Why Claude Code will not load this MEMORY.md by itself, or None when it will."""
    auto_dir, off = auto_memory_target(cwd)
    if auto_dir is None:
        return off
    if not same_dir(memory_dir, auto_dir):
        # The value comes from a repository's .claude/settings.json: it is shown to
        # the agent, so it is sanitized like any text subrosa did not write.
        from subrosa.text import sanitize_line

        return f"its auto-memory dir is {sanitize_line(auto_dir)}"
    return None


def _clean_index_line(line: str) -> str:
    """An index line made safe to inject (subrosa.text.sanitize_index_line): the index
    may be hand-written or planted by a repository, so every line is sanitized as
    subrosa sanitizes what it writes; links to leaf files beside it are kept. A line
    subrosa generated comes back unchanged."""
    if (
        line.isascii()
        and line.isprintable()
        and not any(mark in line for mark in ("<", "&", "[", "]", "```", "~~~"))
        and not line.lstrip().lower().startswith(("system", "assistant", "human", "user"))
    ):
        return line  # plain text: nothing to escape (and no module to import)
    from subrosa.text import sanitize_index_line

    return sanitize_index_line(line)


def _index_header(index: StrPath, why: str) -> str:
    return (
        f"The memory index of this project follows, from {_one_line(index)} (Claude Code "
        f"does not load it by itself here: {_one_line(why)}). Its links name leaf files in "
        f"{_one_line(parent(index))}."
    )


def render_index(
    lines: list[str], index: StrPath, why: str, budget: int, more: int = 0
) -> str | None:
    """The index's lines under a header, cut at a whole line so the result is at most
    `budget` characters (and INDEX_MAX_LINES lines), with a pointer to the rest (`more`
    lines after `lines` are only counted). None when not even one line fits. (An index
    without a ranking: display order.)"""
    total = len(lines) + more
    header = _index_header(index, why)

    def pointer(rest: int) -> str:
        return f"[… {rest} more lines of the index are not shown: read {_one_line(index)}.]"

    def fit(room: int) -> list[str]:
        shown: list[str] = []
        used = 0
        for line in lines[:INDEX_MAX_LINES]:
            if used + len(line) + 1 > room:
                break
            shown.append(line)
            used += len(line) + 1
        return shown

    room = budget - len(header) - 1  # "\n\n" before the lines, minus the last line's "\n"
    shown = fit(room)
    if len(shown) < total:
        shown = fit(room - len(pointer(total)) - 1)
    if not shown:
        return None
    body = header + "\n\n" + "\n".join(shown)
    if len(shown) < total:
        body += "\n" + pointer(total - len(shown))
    return body


# The link target of an index line (`- [Title](target) — hook`): what the ranking names.
_FACT_LINE = compile_lazily(r"\s*[-*+] \[.*?\]\(([^()\s]+)\)")


def render_ranked(
    lines: list[str], ranking: list[str], index: StrPath, why: str, budget: int
) -> str | None:
    """The index cut to `budget` characters by rank, not by place: the facts `generate`
    ranked first (pinned first) are kept, the rest left to MEMORY.md itself and `subrosa
    search`, and a last line says how many. What is kept is shown in MEMORY.md's order,
    under its header and section headings. Lines `generate` did not rank (appended since
    by Claude Code or a person) come after every ranked one. None when nothing fits."""
    whole = len(_index_header(index, why)) + 1 + sum(len(line) + 1 for line in lines)
    if whole <= budget and len(lines) <= INDEX_MAX_LINES:
        return render_index(lines, index, why, budget)
    # The preamble ends at the first fact, or at the section heading before it (that
    # heading belongs to its facts: shown only when one of them is).
    first = next(
        (
            n
            for n, line in enumerate(lines)
            if _FACT_LINE.match(line) or (n and line.lstrip().startswith("##"))
        ),
        len(lines),
    )
    preamble = lines[:first]
    while preamble and not preamble[-1].strip():
        preamble.pop()
    items: list[tuple[int, str | None, str]] = []  # (display place, heading, line)
    heading: str | None = None
    for line in lines[first:]:
        if line.lstrip().startswith("#"):
            heading = line
        elif line.strip():
            items.append((len(items), heading, line))
    rank_of = {target: place for place, target in enumerate(ranking)}

    def rank(item: tuple[int, str | None, str]) -> tuple[int, int]:
        match = _FACT_LINE.match(item[2])
        return rank_of.get(match.group(1) if match else "", len(ranking)), item[0]

    def render(chosen: set[int]) -> list[str]:
        out = [_index_header(index, why), "", *preamble]
        opened: object = False
        for place, section, line in items:
            if place not in chosen:
                continue
            if section != opened:
                out += ["", section] if section is not None else [""]
                opened = section
            out.append(line)
        if len(chosen) < len(items):
            left = len(items) - len(chosen)
            facts = "fact" if left == 1 else "facts"
            out.append(
                f"[… {left} more {facts} of the index, ranked lower, are not shown here for "
                f"room: read {_one_line(index)}, or run `subrosa search WORDS`.]"
            )
        return out

    def fits(lines_out: list[str]) -> bool:
        return len(lines_out) - 3 <= INDEX_MAX_LINES and len("\n".join(lines_out)) <= budget

    # Greedy by rank on each line's cost (its heading's too, the first time), with room
    # kept for the last line; then checked on the real text, dropping from the bottom
    # of the ranking in the rare case the estimate was short.
    ranked = sorted(items, key=rank)
    used = len("\n".join(render(set())))
    count = len(preamble)
    opened: set[str | None] = set()
    chosen: set[int] = set()
    for place, section, line in ranked:
        extra, more = len(line) + 1, 1
        if section not in opened:
            extra += 1 + (len(section) + 1 if section is not None else 0)
            more += 1 + (section is not None)
        if used + extra <= budget and count + more <= INDEX_MAX_LINES:
            chosen.add(place)
            opened.add(section)
            used += extra
            count += more
    for place, _, _ in reversed(ranked):
        if not chosen or fits(render(chosen)):
            break
        chosen.discard(place)
    if not chosen:
        return None
    return "\n".join(render(chosen))


def index_context(memory_dir: str, why: str, budget: int) -> str | None:
    """MEMORY.md within `budget` characters, with a pointer to the rest: by the ranking
    `generate` left beside it when there is one, else cut at a whole line."""
    index = join(memory_dir, INDEX)
    # Never through a link (`MEMORY.md -> ~/.ssh/id_rsa` in a repository), never more
    # than MAX_INDEX_BYTES: a 512 MB file is refused at its stat, not read.
    data = read_capped(index, MAX_INDEX_BYTES)
    if data is None:
        return None
    raw = data.decode("utf-8", errors="replace").splitlines()
    while raw and not raw[-1].strip():
        raw.pop()
    # Only what can be shown is sanitized (a hostile 1 MiB index cost a second): the
    # first INDEX_MAX_LINES lines, up to one too long to ever fit; the rest are counted.
    lines: list[str] = []
    for line in raw[:INDEX_MAX_LINES]:
        if len(line) > 2 * budget:
            break
        lines.append(_clean_index_line(line))
    more = len(raw) - len(lines)
    while not more and lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    # A ranking describes an index generate wrote (never over INDEX_MAX_LINES lines).
    ranking = read_ranking(memory_dir) if not more else None
    if ranking is None:
        return render_index(lines, index, why, budget, more)
    return render_ranked(lines, ranking, index, why, budget)


def queue_nudge(memory_dir: str, count: int) -> str:
    """The SessionStart line about sessions that ended without extraction."""
    sessions = "session" if count == 1 else "sessions"
    return (
        f"subrosa: {count} earlier {sessions} of this project ended without memory "
        "extraction (`subrosa checkpoint-list` shows them). To catch up, run the "
        "memory-extraction skill on them (`subrosa transcript show SESSION` prints a "
        "session), finishing with `subrosa generate`, `subrosa checkpoint-mark` and "
        "`subrosa checkpoint-clear`; `subrosa checkpoint-clear` alone dismisses them."
    )


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def export_memory_dir(memory_dir: str) -> bool:
    """Tell the session's Bash commands which memory dir the hooks use: an `export
    SUBROSA_MEMORY_DIR=…` line in `$CLAUDE_ENV_FILE`, which Claude Code (2.1) sources
    before each of them. They get no CLAUDE_PROJECT_DIR, and may run in a subfolder or
    elsewhere; with this they act on the memory this session's hooks act on. Returns
    whether a line was written."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file:
        return False
    line = f"export SUBROSA_MEMORY_DIR={_shell_quote(memory_dir)}\n"
    try:
        with open(env_file, encoding="utf-8", errors="replace") as handle:
            if line in handle.read(1024 * 1024):
                return False
    except FileNotFoundError:
        pass
    with open(env_file, "a", encoding="utf-8") as handle:
        handle.write(line)
    return True


def installed_twice(project_dir: str | None) -> str | None:
    """For the plugin's own hooks: a warning for the user when `subrosa install` also put
    subrosa's hooks into a settings.json (each hook still acts once: `claim_event`)."""
    if not os.environ.get("CLAUDE_PLUGIN_ROOT"):
        return None
    from subrosa.claude.settings import registrations

    found = registrations(project_dir or None)
    if not found.hooks:
        return None
    scope, path = found.hooks[0].scope, found.hooks[0].path
    return (
        "subrosa: its hooks are registered twice, by this plugin and by `subrosa install` "
        f"in {_one_line(path)}. Each still acts once, but keep one: "
        f"`subrosa install --uninstall --scope {scope}`, or disable the plugin."
    )


# SessionStart sources whose session goes on with the history of its transcript, earlier
# hook contexts included (2.1.332: a resumed or forked session's first request carries
# the context its startup hook gave, replayed, beside the one given now).
REPLAYED_SOURCES = ("resume", "fork")
# Where Claude Code's transcript says the history before it was compacted away (a
# `"subtype":"compact_boundary"` record; inside a JSON string the quotes would be escaped).
COMPACT_BOUNDARY = b'"compact_boundary"'


def already_in_context(transcript: str | None, context: str) -> bool:
    """Whether the conversation the transcript holds since its last compaction already
    carries `context` (a SessionStart context given before, which Claude Code replays
    on resume): its JSON-escaped text appears after the last compact boundary. False
    when it cannot tell (no transcript, unreadable): then the context is given again."""
    if not transcript:
        return False
    import mmap

    needle = json.dumps(context, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    try:
        # Non-blocking: a FIFO at the path would block a plain open until a writer came.
        with open(os.open(transcript, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            found = os.fstat(handle.fileno())
            if not S_ISREG(found.st_mode) or not found.st_size:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                start = data.rfind(COMPACT_BOUNDARY)
                return data.find(needle, max(start, 0)) >= 0
    except (OSError, ValueError):
        return False


def session_start(payload: Payload, notes: Notes) -> str | None:
    """Remember the live session and tell its Bash commands the memory dir; inject the
    queue nudge and, when needed, the index."""
    memory_dir = _memory_dir(payload)
    session_id = checkpoint.safe_session_id(payload.get("session_id"))
    cwd = _text(payload, "cwd")
    output: dict[str, Any] = {}
    warning = notes.attempt(
        "looking for a second registration",
        lambda: installed_twice(os.environ.get("CLAUDE_PROJECT_DIR") or cwd),
    )
    if warning:
        output["systemMessage"] = warning
    if session_id is not None and _state_ready(memory_dir, notes):
        state = (session_id, memory_dir)
        if not _first_to_handle(payload, notes, "session-start", state):
            return json.dumps(output) if output else None
        notes.attempt(
            "remembering the live session",
            lambda: checkpoint.remember_live(
                memory_dir, session_id, _text(payload, "transcript_path"), cwd
            ),
        )
        notes.attempt(
            "recording the session's process",
            lambda: checkpoint.remember_running(
                memory_dir,
                session_id,
                _text(payload, "transcript_path"),
                cwd,
                liveness.claude_process(),
            ),
        )
        _queue_vanished(memory_dir, session_id, notes)
    notes.attempt("exporting the memory dir", lambda: export_memory_dir(memory_dir))
    parts: list[str] = []
    # A resumed session was queued when it last ended: it is this session, not an
    # earlier one to catch up on (its next end queues it again unless it is extracted).
    count = checkpoint.queue_count(memory_dir, besides=session_id)
    if count:
        parts.append(queue_nudge(memory_dir, count))
    if is_file(join(memory_dir, INDEX)):
        why = notes.attempt(
            "checking Claude Code's auto memory", lambda: index_not_loaded_because(memory_dir, cwd)
        )
        if why:
            room = CONTEXT_CAP - sum(len(part) + 2 for part in parts)
            index = notes.attempt("reading MEMORY.md", lambda: index_context(memory_dir, why, room))
            if index and _text(payload, "source") in REPLAYED_SOURCES:
                transcript = _text(payload, "transcript_path")
                seen = notes.attempt(
                    "reading the transcript", lambda: already_in_context(transcript, index)
                )
                if seen:
                    index = None
            if index:
                parts.append(index)
    if parts:
        context = "\n\n".join(parts)[:CONTEXT_CAP]
        output["hookSpecificOutput"] = {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    return json.dumps(output) if output else None


HOOKS: dict[str, Callable[[Payload, Notes], str | None]] = {
    "session-start": session_start,
    "stop": stop,
    "session-end": session_end,
}


def run_hook(argv: list[str]) -> int:
    """Run one hook; always exit 0 (a hook must never break the agent)."""
    name = argv[0] if argv else ""
    notes = Notes(name or "?")
    output: str | None = None
    try:
        handler = HOOKS.get(name)
        if handler is None:
            notes.add(f"unknown hook {name!r}; expected one of {', '.join(HOOKS)}")
        else:
            payload = _read_payload(notes)
            if payload is not None:
                output = handler(payload, notes)
    except BaseException as exc:  # fail open, whatever it was
        notes.add(f"failed open ({_describe(exc)})")
        output = None
    notes.flush()
    if output:
        try:
            # ASCII JSON (non-ASCII escaped as \uXXXX), as bytes: right whatever locale the
            # hook's shell has.
            sys.stdout.buffer.write(output.encode("ascii") + b"\n")
            sys.stdout.flush()
        except Exception:  # Claude Code stopped listening; nothing to do about it
            pass
    return 0
