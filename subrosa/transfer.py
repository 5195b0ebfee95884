"""`subrosa export` and `subrosa import`: a memory moved into another database and back
(a personal SQLite file into a team's server, a server's project into a file).

The file is JSON lines, gzip-compressed when its name ends in `.gz` (import tells by
its first bytes), one record a line, in this order:

    {"format": "subrosa-export", "version": 1, "exported_at": "...", "engine": "sqlite"}
    {"kind": "project", "name": "github.com/org/repo", "facts": 12, "sessions": 40}
    {"kind": "fact", "project": ..., "slug": ..., "hook": ..., "pinned": ..., "hits": ...}
    {"kind": "session", "session_id": ..., "project": ..., "host": ..., "username": ...}
    {"kind": "message", "session_id": ..., "uuid": ..., "role": ..., "text": ...}
    {"kind": "end", "facts": 12, "sessions": 40, "messages": 5123}

Every session comes before the messages, and the messages come in the order they were
archived (search ranks ties by it: the target then ranks as the source did). The `end`
record makes a cut file (a full disk, a copy stopped half-way) one that import refuses.
JSON lines because a file of any size is written and read one record at a time, by
subrosa or by `zcat | jq`.

Import reads the file once, checking each record before it is used: the sessions and
messages are written as they come (subrosa.archive.exchange, through ingest's own
write path) in one transaction, committed only once the end record proved the file
whole, and rolled back at a bad record (refused in one sentence naming its line) or
a cut file, so nothing is written; then the facts, held until then (they are few),
in one transaction (subrosa.memory.exchange). Everything is keyed as
the target keys it (a fact by project and slug, a session by its id, a message by its
uuid) and what the target has already is left alone: importing twice, or into a
database that already holds some of the sessions, adds nothing twice.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from subrosa.errors import InvalidInput

FORMAT = "subrosa-export"
VERSION = 1
GZIP_MAGIC = b"\x1f\x8b"
# The largest number a fact's position or hits may be: PostgreSQL's `integer` (the
# columns' type); a larger one would fail in the facts' write, after the sessions'.
MAX_INTEGER = 2**31 - 1
# Sessions and messages written per call of the archive's batch writer.
BATCH_MESSAGES = 2000

Progress = Callable[[int, int], None]  # (messages just written, messages in all)


# ---------------------------------------------------------------- export


@dataclass
class Exported:
    """What `subrosa export` wrote."""

    file: str
    projects: dict[str, dict[str, int]]
    facts: int = 0
    sessions: int = 0
    messages: int = 0
    bytes: int = 0
    removed_leftovers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def export_file(db_url: str, path: Path, projects: list[str] | None) -> Exported:
    """Write the facts, sessions and messages of `projects` (None: all) to `path`,
    atomically: the file appears whole or not at all."""
    from subrosa.archive.exchange import (
        count_messages,
        count_sessions,
        read_messages,
        read_sessions,
    )
    from subrosa.db import open_database
    from subrosa.memory.exchange import count_facts, read_facts

    engine = open_database(db_url)
    facts = count_facts(engine, projects)
    with engine.connect() as conn:
        sessions = count_sessions(conn, projects)
        expected = count_messages(conn, projects)
    names = sorted(set(facts) | set(sessions))
    report = Exported(
        str(path), {n: {"facts": facts.get(n, 0), "sessions": sessions.get(n, 0)} for n in names}
    )
    report.removed_leftovers = sweep_leftovers(path)
    with _atomic(path) as out:
        header = {"format": FORMAT, "version": VERSION, "engine": engine.dialect.name}
        header["exported_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _put(out, {**header, "messages": expected})  # for an import's progress bar
        for name in names:
            _put(out, {"kind": "project", "name": name, **report.projects[name]})
        for fact in read_facts(engine, projects):
            _put(out, {"kind": "fact", **fact})
            report.facts += 1
        with engine.connect() as conn:
            for session in read_sessions(conn, projects):
                _put(out, {"kind": "session", **session})
                report.sessions += 1
            for message in read_messages(conn, projects):
                _put(out, {"kind": "message", **message})
                report.messages += 1
        counts = {"facts": report.facts, "sessions": report.sessions}
        _put(out, {"kind": "end", **counts, "messages": report.messages})
    report.bytes = path.stat().st_size
    return report


def _put(out: IO[bytes], record: dict[str, Any]) -> None:
    out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")


# An export killed (kill -9, a power cut) leaves its temp file beside the target, which
# it never touched: tempfile.mkstemp's `.NAME.XXXXXXXX.tmp`, as large as what was written.
# The next export to the same file removes such files once they are this old: an
# export at work writes to its own all the time, so an hour without a write is one
# that is gone (or stopped for an hour: it then fails at its rename, the target whole).
LEFTOVER_AGE_S = 3600.0


def sweep_leftovers(path: Path) -> list[str]:
    """Remove the temp files of exports to `path` killed over an hour ago; what went."""
    import re

    from subrosa.fsutil import sweep_temp_files

    directory = path.parent if str(path.parent) else Path(".")
    pattern = rf"^\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp$"
    return sweep_temp_files(directory, LEFTOVER_AGE_S, pattern)


@contextmanager
def _atomic(path: Path) -> Iterator[IO[bytes]]:
    """A file written beside `path` (gzip when its name ends in .gz), fsynced and
    renamed over it when the block ends; removed when it raises."""
    from subrosa.fsutil import fsync_dir

    if path.is_dir():
        raise InvalidInput(f"{path}: is a directory; name a file to export to.")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # the temp file's name would say nothing to the user
        raise InvalidInput(
            f"{path}: cannot write a file in {directory} ({exc.strerror}); "
            "name a file in a folder you can write."
        ) from exc
    try:
        with os.fdopen(fd, "wb") as raw:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
                    yield packed  # type: ignore[misc]
            else:
                yield raw
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temp, path)
        fsync_dir(directory)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------- reading a file


@dataclass
class _Checked:
    """What the first reading of a file found (everything is valid by then)."""

    projects: list[str] = field(default_factory=list)
    facts: int = 0
    sessions: int = 0
    messages: int = 0
    expected: int = 0  # the messages the header announces (for a progress bar)


def _open(path: Path) -> IO[bytes]:
    """The file for reading, through gzip when it starts as gzip does."""
    with path.open("rb") as probe:
        packed = probe.read(2) == GZIP_MAGIC
    if packed:
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for every non-blank line of the file."""
    try:
        handle = _open(path)
    except IsADirectoryError:
        raise InvalidInput(f"{path}: is a directory, not an export file.") from None
    with handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):  # noqa: B007
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise _bad(path, number, "is not a JSON object") from None
                if not isinstance(record, dict):
                    raise _bad(path, number, "is not a JSON object")
                yield number, record
        except (EOFError, gzip.BadGzipFile, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise InvalidInput(
                f"{path}: cannot be read past line {number} ({exc}); nothing was imported."
            ) from None


def _bad(path: Path, number: int, why: str) -> InvalidInput:
    return InvalidInput(f"{path}: line {number} {why}; nothing was imported.")


_TEXT = (str,)
_MAYBE_TEXT = (str, type(None))


def _need(record: dict[str, Any], key: str, kinds: tuple[type, ...]) -> str | None:
    """Why `record[key]` is unusable, or None."""
    if key not in record:
        return f"has no {key!r}"
    value = record[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        return f"has a {key!r} that is not {' or '.join(_KIND_NAMES[k] for k in kinds)}"
    return None


_KIND_NAMES = {str: "text", int: "a whole number", bool: "true or false", type(None): "null"}


def _time(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        return f"has a {key!r} that is not a time"
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return f"has a {key!r} that is not a time ({value[:40]!r})"
    return None


def _place_problem(slug: str, path: str) -> str | None:
    """Why a fact's leaf path cannot be in a memory dir, or its slug is not that path
    without `.md` (as generate names a leaf's or a subfolder note's fact), or None:
    a slug like `../../evil` named no leaf, and doctor then asked to forget it."""
    from subrosa.memory.leaf import is_leaf_path

    if not is_leaf_path(path):
        return f"has a path {path[:80]!r} that is no leaf of a memory dir"
    if slug != path[: -len(".md")]:
        return f"has a slug {slug[:80]!r} that is not its path {path[:80]!r} without .md"
    return None


def _fact_problem(record: dict[str, Any]) -> str | None:
    from subrosa.config import FACT_TYPES

    for key in ("project", "slug", "path", "title", "type", "status", "content_hash"):
        problem = _need(record, key, _TEXT)
        if problem or not record[key]:
            return problem or f"has an empty {key!r}"
    for key in ("description", "hook", "body"):
        problem = _need(record, key, _TEXT)
        if problem:
            return problem
    for key in ("section", "archive_reason"):
        problem = _need(record, key, _MAYBE_TEXT) if key in record else None
        if problem:
            return problem
    for key in ("position", "hits"):
        problem = _need(record, key, (int,))
        if problem or record[key] < 0:
            return problem or f"has a negative {key!r}"
        if record[key] > MAX_INTEGER:
            return f"has a {key!r} too large ({record[key]}; at most {MAX_INTEGER})"
    if not isinstance(record.get("pinned"), bool):
        return "has no 'pinned' true or false"
    problem = _place_problem(record["slug"], record["path"])
    if problem:
        return problem
    if record["type"] not in FACT_TYPES:
        return f"has an unknown type {record['type']!r}"
    if record["status"] not in ("active", "archived"):
        return f"has an unknown status {record['status']!r}"
    for key in ("created_at", "updated_at"):
        if record.get(key) is None:
            return f"has no {key!r}"
    return next(
        (
            p
            for k in ("created_at", "updated_at", "archived_at", "last_hit_at")
            if (p := _time(record, k))
        ),
        None,
    )


def _session_problem(record: dict[str, Any]) -> str | None:
    for key in ("session_id", "project"):
        problem = _need(record, key, _TEXT)
        if problem or not record[key]:
            return problem or f"has an empty {key!r}"
    for key in ("cwd", "git_branch", "title", "summary", "host", "username"):
        problem = _need(record, key, _MAYBE_TEXT) if key in record else None
        if problem:
            return problem
    return _time(record, "first_at") or _time(record, "last_at")


def _message_problem(record: dict[str, Any], sessions: set[str]) -> str | None:
    for key in ("session_id", "uuid", "role", "text"):
        problem = _need(record, key, _TEXT)
        if problem or (key != "text" and not record[key]):
            return problem or f"has an empty {key!r}"
    if record["session_id"] not in sessions:
        return "is a message whose session's record does not come before it"
    return _need(record, "timestamp", _MAYBE_TEXT) or _time(record, "timestamp")


def _check_header(path: Path, number: int, record: dict[str, Any]) -> None:
    if record.get("format") != FORMAT:
        raise InvalidInput(
            f"{path}: is not a subrosa export (its first line has no "
            f'"format": "{FORMAT}"); nothing was imported.'
        )
    if record.get("version") != VERSION:
        raise _bad(
            path,
            number,
            f"is format version {record.get('version')!r}, which this subrosa does not "
            f"read (it reads {VERSION}: upgrade subrosa)",
        )


def checked_records(path: Path, checked: _Checked) -> Iterator[dict[str, Any]]:
    """The file's facts, sessions and messages, each checked before it is yielded; a
    bad one raises InvalidInput (one sentence naming the line), and so does a file that
    ends before its end record (raised when the last record has been read, so a
    reader that writes as it goes must roll back: import does). `checked` counts them."""
    sessions: set[str] = set()
    end: dict[str, Any] | None = None
    number = 0
    header_seen = False
    for number, record in _records(path):
        if not header_seen:
            _check_header(path, number, record)
            header_seen = True
            expected = record.get("messages")
            checked.expected = expected if isinstance(expected, int) else 0
            continue
        if end is not None:
            raise _bad(path, number, "follows the file's end record")
        kind = record.get("kind")
        if kind == "project":
            problem = _need(record, "name", _TEXT)
            if problem:
                raise _bad(path, number, problem)
            checked.projects.append(record["name"])
            continue
        if kind == "fact":
            problem = _fact_problem(record)
            checked.facts += 1
        elif kind == "session":
            problem = _session_problem(record)
            if not problem and checked.messages:
                problem = "is a session record after the messages"
            sessions.add(record.get("session_id") or "")
            checked.sessions += 1
        elif kind == "message":
            problem = _message_problem(record, sessions)
            checked.messages += 1
        elif kind == "end":
            end, problem = record, None
        else:
            problem = f"has an unknown kind {kind!r}"
        if problem:
            raise _bad(path, number, problem)
        if end is None:
            yield record
    if number == 0:
        raise InvalidInput(f"{path}: is empty; nothing was imported.")
    found = {"facts": checked.facts, "sessions": checked.sessions, "messages": checked.messages}
    if end is None or any(end.get(k) != v for k, v in found.items()):
        raise InvalidInput(
            f"{path}: is cut short (its end record is missing or counts other records than "
            "it holds); export it again; nothing was imported."
        )


def check_file(path: Path) -> _Checked:
    """Read the whole file and refuse it (InvalidInput) unless every record is one
    import can write."""
    checked = _Checked()
    for _ in checked_records(path, checked):
        pass
    return checked


# ---------------------------------------------------------------- import


@dataclass
class Imported:
    """What `subrosa import` did; `--json` prints it."""

    file: str
    projects: list[str]
    facts: dict[str, int] = field(default_factory=lambda: {"added": 0, "present": 0})
    sessions: dict[str, int] = field(default_factory=lambda: {"added": 0, "present": 0})
    messages: dict[str, int] = field(default_factory=lambda: {"added": 0, "present": 0})
    # Sessions and messages the target cannot hold yet (an archive on a server), and why.

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def import_file(db_url: str, path: Path, progress: Progress | None = None) -> Imported:
    """Write what the file at `path` holds and the database at `db_url` does not have
    yet, reading the file once: the sessions and messages in one transaction as they
    come, committed only when the whole file proved good (a bad record, or a cut
    file, rolls it back: nothing is written), then the facts (held: they are few)."""
    from subrosa.archive.exchange import archive_writer
    from subrosa.db import open_database
    from subrosa.memory.exchange import write_facts

    checked = _Checked()
    facts: list[dict[str, Any]] = []
    report = Imported(str(path), checked.projects)
    with archive_writer(db_url) as write:
        for batch in _session_batches(checked_records(path, checked), facts):
            written = write(batch)
            report.sessions["added"] += written.sessions
            report.messages["added"] += written.messages
            report.messages["present"] += written.present
            if progress is not None:
                total = max(checked.expected, checked.messages)
                progress(sum(len(b.messages) for b in batch), total)
    report.sessions["present"] = checked.sessions - report.sessions["added"]
    added, present = write_facts(open_database(db_url), facts)
    report.facts = {"added": added, "present": present}
    return report


def _session_batches(
    records: Iterator[dict[str, Any]], facts: list[dict[str, Any]]
) -> Iterator[list[Any]]:
    """The records' messages in their order, in batches of BATCH_MESSAGES, each as runs
    of one session's messages; sessions without messages in a last batch of their own.
    The facts met on the way are added to `facts`."""
    from subrosa.archive.exchange import MESSAGE_KEYS, SESSION_KEYS, SessionBatch

    sessions: dict[str, dict[str, Any]] = {}
    untouched: dict[str, None] = {}
    batch: list[SessionBatch] = []
    size = 0
    for record in records:
        kind = record.get("kind")
        if kind == "fact":
            facts.append({k: v for k, v in record.items() if k != "kind"})
        elif kind == "session":
            sessions[record["session_id"]] = {k: record.get(k) for k in SESSION_KEYS}
            untouched[record["session_id"]] = None
        elif kind == "message":
            session = sessions[record["session_id"]]
            untouched.pop(record["session_id"], None)
            if not batch or batch[-1].session is not session:
                batch.append(SessionBatch(session, []))
            batch[-1].messages.append({k: record.get(k) for k in MESSAGE_KEYS})
            size += 1
            if size >= BATCH_MESSAGES:
                yield batch
                batch, size = [], 0
    if batch:
        yield batch
    if untouched:
        yield [SessionBatch(sessions[s], []) for s in untouched]
