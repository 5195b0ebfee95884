"""The sidecar: what only subrosa knows about each fact, kept beside the leaves.

`<memory dir>/.subrosa/facts.jsonl` holds, per fact, the hook, title, section,
pin, status, archive reason and date, curated position and creation time: the
things a leaf does not say. It is brought in step (under the project lock, before the
database commits) with every change to those fields, so the database can always be
rebuilt from the memory dir alone and the memory dir can live in git. Hit counts are
deliberately left out: they change on every search and are the one thing a rebuild
may lose.

One JSON object per line, one line per fact. `generate` (and adopt, rebuild) write it
whole, sorted by slug, so two machines' changes to different facts merge line by line.
The `fact` commands touch only the lines of the facts they change (`update_state`):
their cost must not grow with the number of facts, and rendering ten thousand rows per
`fact upsert` did. A fact the sidecar has no line for yet gets one appended at the end
(one write(2) of whole lines, fsynced: a process killed during it leaves the line or
nothing); a fact it has gets its line replaced where it is (the file rewritten
atomically from slices of itself, no other line rendered). The next `generate` sorts
the appended lines into place. Readers take a slug's last line, and skip a last line
torn by a power cut during an append, which the next update cuts off.

Beside it, `.subrosa/last-index.txt` and `last-archive.txt` record the text subrosa
last wrote to each index file, so `generate` can tell the lines others added from its
own, and `.subrosa/index-rank.json` (subrosa.memory.marker.RANKING) the hot tier's
rank order, for the SessionStart hook. This module owns every file in `.subrosa/` but
the lock (subrosa.memory.project).

Outside the memory dir, each clone keeps the sidecar as it last agreed with the
database (`seen_path`: per memory dir and database, in the per-user data dir, never in
git). A sidecar line that still reads as it did then was not changed by git: where the
database differs, a teammate changed the fact on a shared database (or another clone
of the repository on this machine), and the database wins. Only the fields a line
changed since then (a `git pull`, a hand edit) are taken from it (`changed_since`).
Without a record (a clone's first run, another database) the sidecar wins whole, as it
always did.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from subrosa.errors import InvalidInput
from subrosa.fsutil import (
    READ_CAP,
    atomic_write_bytes,
    atomic_write_text,
    loads_json,
    read_capped,
    refuse_link,
    write_if_changed,
)
from subrosa.memory.marker import INDEX, new_file_mode, ranking_path, render_ranking
from subrosa.paths import data_dir, state_dir

STATE_FILE = "facts.jsonl"
LAST_INDEX = "last-index.txt"
LAST_ARCHIVE = "last-archive.txt"
STATE_KEYS = (
    "slug",
    "title",
    "hook",
    "section",
    "pinned",
    "status",
    "archive_reason",
    "archived_at",
    "position",
    "created_at",
)


def state_path(memory_dir: Path) -> Path:
    return Path(state_dir(memory_dir), STATE_FILE)


def render_row(row: dict[str, Any]) -> str:
    """One sidecar line (without its newline) for `row`, a dict with STATE_KEYS."""
    ordered = {key: row.get(key) for key in STATE_KEYS}
    return json.dumps(ordered, ensure_ascii=False, sort_keys=False)


def render_state(rows: list[dict[str, Any]]) -> str:
    """The sidecar's text for `rows` (each a dict with STATE_KEYS)."""
    lines = [render_row(row) for row in sorted(rows, key=lambda r: str(r["slug"]))]
    return "".join(line + "\n" for line in lines)


def _read_sidecar(memory_dir: Path) -> str | None:
    try:
        data = read_capped(state_path(memory_dir))  # never through a link, bounded
        return None if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError, InvalidInput):
        return None


def sidecar_matches(memory_dir: Path, rows: list[dict[str, Any]]) -> bool:
    """True when the sidecar on disk is exactly what `rows` render as (nothing changed it
    under the database)."""
    text = _read_sidecar(memory_dir)
    return text is not None and text == render_state(rows)


def save_state(memory_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite the sidecar atomically (the caller holds the project lock). A line of a
    fact the database does not hold whose leaf is still on disk is kept (_unregistered)."""
    path = state_path(memory_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_state(rows + _unregistered(memory_dir, rows))
    if _read_sidecar(memory_dir) == text:
        return
    atomic_write_text(path, text, new_mode=new_file_mode(memory_dir))


def _unregistered(memory_dir: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sidecar's rows of facts missing from `rows` whose leaf is still on disk: a leaf
    that cannot be registered for now (not UTF-8, over 1 MiB) on a new database or after
    a rebuild. What only subrosa knew of it (hook, pin, status, place) waits there until
    the leaf is mended; a fact forgotten has no leaf left, so its line goes."""
    text = _read_sidecar(memory_dir)
    if not text:
        return []
    try:
        state = _parse(text, state_path(memory_dir))
    except InvalidInput:
        return []
    known = {str(row["slug"]) for row in rows}
    return [
        row
        for slug, row in state.items()
        if slug not in known and memory_dir.joinpath(f"{slug}.md").is_file()
    ]


def update_state(
    memory_dir: Path, rows: list[dict[str, Any]], new: frozenset[str] = frozenset()
) -> bool:
    """Bring the sidecar's lines of `rows` in step (the caller holds the project lock):
    each row's line replaced where it is, or appended when the sidecar has none. The
    slugs in `new` (facts the database did not have: the sidecar has no line for them,
    or one a later line may outrank) are appended without looking: a new fact costs the
    same however many the sidecar holds. False, having written nothing, when there is
    no sidecar: the caller writes it whole."""
    path = state_path(memory_dir)

    appended = [(render_row(row) + "\n").encode("utf-8") for row in rows if row["slug"] in new]
    known = [row for row in rows if row["slug"] not in new]
    if not known:
        return _append_lines(path, b"".join(appended))
    data = read_capped(path)  # never through a link, bounded
    if data is None:
        return False
    body = _whole_lines(data)
    canonical = _canonical(body)
    spliced: list[tuple[int, int, bytes]] = []
    for row in known:
        line = (render_row(row) + "\n").encode("utf-8")
        at = _line_of(body, str(row["slug"]), canonical)
        if at is None:
            appended.append(line)
        else:
            spliced.append((*at, line))
    if not spliced and body == data:
        return _append_lines(path, b"".join(appended))
    parts: list[bytes | memoryview] = []
    view, done = memoryview(body), 0
    for start, end, line in sorted(spliced):
        parts += [view[done:start], line]
        done = end
    atomic_write_bytes(path, [*parts, view[done:], *appended])
    return True


def append_state_lines(memory_dir: Path, data: bytes) -> None:
    """Append whole sidecar lines as written (`subrosa adopt --from` brings another
    folder's over); a sidecar that does not exist yet is created with them. The caller
    holds the project lock."""
    path = state_path(memory_dir)
    if not _append_lines(path, data):
        path.parent.mkdir(parents=True, exist_ok=True)
        old = read_capped(path) or b""
        atomic_write_bytes(path, [_whole_lines(old), data], new_mode=new_file_mode(memory_dir))


def _line_of(body: bytes, slug: str, canonical: bool) -> tuple[int, int] | None:
    """Where the line for `slug` is in `body` (start, end), or None. Only when every line
    is one subrosa wrote (`canonical`: each starts with its slug, spelled as json.dumps
    spells it, so a slug's line is found by that start alone); otherwise None, and the
    line is appended, to win as a slug's last line does."""
    if not canonical:
        return None
    head = b'{"slug": ' + json.dumps(slug, ensure_ascii=False).encode("utf-8") + b", "
    at = body.rfind(b"\n" + head) + 1
    if at == 0 and not body.startswith(head):
        return None
    return at, body.index(b"\n", at) + 1


def _canonical(body: bytes) -> bool:
    """Every line of `body` (which ends with a line end) starts as subrosa writes one."""
    start = b'{"slug": "'
    return body.count(b"\n" + start) + body.startswith(start) == body.count(b"\n")


def _append_lines(path: Path, data: bytes) -> bool:
    """Append whole lines, fsynced, after cutting a torn last line (or ending a whole one
    written without its newline); False when there is no file. Never through a link,
    only to a regular file, and not past READ_CAP (what every reader would refuse)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return False
    except OSError:
        refuse_link(path)  # O_NOFOLLOW said ELOOP: one sentence naming the link
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"{path}: is not a regular file; subrosa does not read it.")
        size = info.st_size
        if size + len(data) > READ_CAP:
            return False  # the caller writes it whole
        if size and os.pread(fd, 1, size - 1) != b"\n":
            tail = os.pread(fd, min(size, _TAIL_BYTES), max(0, size - _TAIL_BYTES))
            whole = _whole_lines(tail)
            if b"\n" not in tail and size > _TAIL_BYTES:
                return False  # no line end in the last MiB: the caller writes it whole
            if len(whole) < len(tail):
                os.ftruncate(fd, size - len(tail) + len(whole))
            else:
                data = whole[len(tail) :] + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


_TAIL_BYTES = 1 << 20


def _whole_lines(data: bytes) -> bytes:
    """`data` ending with a line end: a last line that is whole JSON (written by hand
    without its newline) gets one; a part of a line a power cut tore during an append
    is cut off."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n") + 1
    try:
        json.loads(data[cut:])
        return data + b"\n"
    except ValueError:
        return data[:cut]


# -- what this clone last saw ---------------------------------------------------------

SEEN_DIR = "seen"
# Fields that change together: an archive's status, reason and date.
_TOGETHER = {"status": ("status", "archive_reason", "archived_at")}
_TOGETHER["archive_reason"] = _TOGETHER["archived_at"] = _TOGETHER["status"]


def sqlite_database(path: str | os.PathLike[str]) -> str:
    """How the seen record names an SQLite file (the same through sqlite3 and SQLAlchemy)."""
    return "sqlite:" + os.path.realpath(path)


def seen_path(memory_dir: Path, database: str) -> Path:
    """Where this clone keeps the sidecar as it last agreed with `database`: the data
    dir, keyed by the memory dir's real path and the database (never committed, and
    another database starts without a record)."""
    key = f"{os.path.realpath(memory_dir)}\0{database}".encode("utf-8", "surrogateescape")
    return Path(data_dir(), SEEN_DIR, hashlib.sha256(key).hexdigest()[:32] + ".jsonl")


def load_seen(memory_dir: Path, database: str) -> dict[str, dict[str, Any]] | None:
    """The sidecar's rows as this clone last saw them agree with `database`, or None
    without a usable record (the sidecar then wins whole)."""
    path = seen_path(memory_dir, database)
    try:
        data = read_capped(path)
        return None if data is None else _parse(data.decode("utf-8"), path)
    except (OSError, UnicodeDecodeError, InvalidInput):
        return None


def record_seen(
    memory_dir: Path,
    database: str,
    rows: list[dict[str, Any]] | None = None,
) -> None:
    """After a commit that left the sidecar in step with the database: the whole sidecar
    as it is now (`rows` None), or only the lines of `rows`, the facts a command wrote
    (other lines may hold a pull not taken yet), appended: the last line of a slug wins,
    as in the sidecar, so a `fact` command's cost does not grow with the record, and the
    next whole record (generate) drops the lines outranked. A record that cannot be written is
    removed, so the sidecar wins as it did without one."""
    path = seen_path(memory_dir, database)
    try:
        if rows is None:
            data = read_capped(state_path(memory_dir))
            path.parent.mkdir(parents=True, exist_ok=True)
            if read_capped(path) != (data or b""):
                atomic_write_bytes(path, [data or b""])
        elif rows:  # no record yet: nothing to append to
            _append_lines(path, b"".join((render_row(r) + "\n").encode("utf-8") for r in rows))
    except (OSError, InvalidInput):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def changed_since(
    row: dict[str, Any], seen: dict[str, dict[str, Any]] | None, current: dict[str, Any]
) -> dict[str, Any]:
    """What of sidecar `row` to take over a fact whose values are `current`: the whole row
    without a record (`seen` None) or a line the record lacks; else `current` with only
    the fields the line changed since this clone last saw it, and that the database
    did not change since (a teammate's later change on a shared database stays: the
    pulled line predates it)."""
    if seen is None or str(row.get("slug")) not in seen:
        return row
    before = seen[str(row["slug"])]
    taken = dict(current)
    for key in STATE_KEYS:
        fields = _TOGETHER.get(key, (key,))
        moved_on = any(current.get(field) != before.get(field) for field in fields)
        if row.get(key) != before.get(key) and not moved_on:
            for field in fields:
                taken[field] = row.get(field)
    return taken


def load_state(memory_dir: Path) -> dict[str, dict[str, Any]]:
    """Read the sidecar (the last line of a slug wins); a missing file is empty, a broken
    line is refused by name, a torn last line (a power cut during an append) skipped."""
    path = state_path(memory_dir)
    try:
        data = read_capped(path)  # a link, a FIFO or a huge file is refused by name
        if data is None:
            return {}
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{path}: cannot be read ({exc}); restore it from git (git checkout -- FILE)."
        ) from None
    return _parse(text, path)


def _parse(text: str, path: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    # Split on "\n" only: rows are written with ensure_ascii=False, and a slug (a file
    # name) may hold U+2028 or \x85, which str.splitlines() would break a row at.
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
            if line.startswith("<<<<<<<"):
                raise InvalidInput(f"{path}: line {number} is a git merge conflict; resolve it.")
            continue
        try:
            row = loads_json(line)  # `[[[[…` is refused like any bad line
        except ValueError:
            if number == len(lines):
                continue  # no line end after it: torn by a power cut during an append
            raise InvalidInput(
                f"{path}: line {number} is not valid JSON; fix that line, or restore the file "
                "from git (git checkout -- FILE)."
            ) from None
        if not isinstance(row, dict) or not isinstance(row.get("slug"), str):
            raise InvalidInput(
                f"{path}: line {number} has no slug; fix that line, or restore the file from "
                "git (git checkout -- FILE)."
            )
        rows[row["slug"]] = row
    return rows


def last_index_path(memory_dir: Path, name: str = INDEX) -> Path:
    """Where subrosa keeps the text it last wrote to index file `name`."""
    return Path(state_dir(memory_dir), LAST_INDEX if name == INDEX else LAST_ARCHIVE)


def read_last_index(memory_dir: Path, name: str = INDEX) -> str | None:
    """The text subrosa last wrote to index file `name`, or None without a record."""
    try:
        data = read_capped(last_index_path(memory_dir, name))
        return None if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError, InvalidInput):
        return None


def save_last_index(memory_dir: Path, name: str, text: str) -> bool:
    """Record `text` as what subrosa wrote to index file `name`; True when it changed."""
    return write_if_changed(last_index_path(memory_dir, name), text, new_file_mode(memory_dir))


def save_ranking(memory_dir: Path, targets: list[str]) -> bool:
    """Record the hot tier's link targets in rank order; True when it changed."""
    targets_text = render_ranking(targets)
    return write_if_changed(ranking_path(memory_dir), targets_text, new_file_mode(memory_dir))
