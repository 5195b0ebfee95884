"""The sidecar: what only subrosa knows about each fact, kept beside the leaves.

`<memory dir>/.subrosa/facts.jsonl` holds, per fact, the hook, title, section,
pin, status, archive reason and date, curated position and creation time: the
things a leaf does not say. It is brought in step (under the project lock, before the
database commits) with every change to those fields, so the database can always be
rebuilt from the memory dir alone and the memory dir can live in git. Hit counts are
deliberately left out: they change on every search and are the one thing a rebuild
may lose.

One JSON object per line. `generate` (and adopt, rebuild) write it whole: one line per
fact, sorted by slug, so two machines' changes to different facts merge line by line.
The `fact` commands append a line for each fact they change instead (`append_state`):
their cost must not grow with the number of facts, and a rewrite of ten thousand
lines per `fact upsert` did. Whoever reads it takes the last line of a slug; the next
`generate` folds the appended lines back into one sorted line per fact. An append is
one write(2) of whole lines, fsynced: a process killed during it leaves the line or
nothing; a power cut may leave a torn last line, which readers skip and the next
append cuts off (`_whole_line_tail`).

Beside it, `.subrosa/last-index.txt` and `last-archive.txt` record the text subrosa
last wrote to each index file, so `generate` can tell the lines others added from its
own. This module owns every file in `.subrosa/` but the lock (subrosa.memory.project).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from subrosa.errors import InvalidInput
from subrosa.fsutil import atomic_write_text, write_if_changed
from subrosa.memory.marker import INDEX
from subrosa.paths import state_dir

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
    return state_dir(memory_dir) / STATE_FILE


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
        return state_path(memory_dir).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def sidecar_matches(memory_dir: Path, rows: list[dict[str, Any]]) -> bool:
    """True when the sidecar on disk is exactly what `rows` render as (nothing changed it
    under the database)."""
    text = _read_sidecar(memory_dir)
    return text is not None and text == render_state(rows)


def save_state(memory_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite the sidecar atomically (the caller holds the project lock)."""
    path = state_path(memory_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_state(rows)
    if _read_sidecar(memory_dir) == text:
        return
    atomic_write_text(path, text)


def append_state(memory_dir: Path, rows: list[dict[str, Any]]) -> bool:
    """Append a line for each of `rows` to the sidecar (the caller holds the project lock),
    fsynced; readers take a slug's last line. False, having written nothing, when there
    is no sidecar to append to (or no whole line in it): the caller writes it whole."""
    path = state_path(memory_dir)
    data = "".join(render_row(row) + "\n" for row in rows).encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        lead = _whole_line_tail(fd)
        if lead is None:
            return False
        os.write(fd, lead + data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


_TAIL_BYTES = 1 << 20


def _whole_line_tail(fd: int) -> bytes | None:
    """What to write before appending so the new lines start a line of their own: nothing
    when the file ends with a line end; a line end after a last line that is whole JSON
    (written by hand without one); else that last line is part of one a power cut tore
    during an append, and it is cut off. None when the last 1 MB holds no line end."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b""
    start = max(0, size - _TAIL_BYTES)
    tail = os.pread(fd, size - start, start)
    cut = tail.rfind(b"\n")
    if cut < 0 and start > 0:
        return None
    try:
        json.loads(tail[cut + 1 :])
        return b"\n"
    except ValueError:
        os.ftruncate(fd, start + cut + 1)
        return b""


def fold_state(memory_dir: Path, rows: list[dict[str, Any]]) -> str:
    """How the sidecar on disk stands to the database's `rows`: "same" (it is exactly
    what `save_state` would write), "folded" (its lines, the last of each slug taken,
    say the same, but appended lines are to be folded in) or "differs" (it was changed
    under the database: generate takes its values)."""
    text = _read_sidecar(memory_dir)
    if text is None:
        return "differs"
    if text == render_state(rows):
        return "same"
    try:
        found = _parse(text, Path())
    except InvalidInput:
        return "differs"
    wanted = {str(row["slug"]): {key: row.get(key) for key in STATE_KEYS} for row in rows}
    have = {slug: {key: row.get(key) for key in STATE_KEYS} for slug, row in found.items()}
    return "folded" if have == wanted else "differs"


def load_state(memory_dir: Path) -> dict[str, dict[str, Any]]:
    """Read the sidecar (the last line of a slug wins); a missing file is empty, a broken
    line is refused by name, a torn last line (a power cut during an append) skipped."""
    path = state_path(memory_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc}).") from None
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
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue  # no line end after it: torn by a power cut during an append
            raise InvalidInput(f"{path}: line {number} is not valid JSON.") from None
        if not isinstance(row, dict) or not isinstance(row.get("slug"), str):
            raise InvalidInput(f"{path}: line {number} has no slug.")
        rows[row["slug"]] = row
    return rows


def last_index_path(memory_dir: Path, name: str = INDEX) -> Path:
    """Where subrosa keeps the text it last wrote to index file `name`."""
    return state_dir(memory_dir) / (LAST_INDEX if name == INDEX else LAST_ARCHIVE)


def read_last_index(memory_dir: Path, name: str = INDEX) -> str | None:
    """The text subrosa last wrote to index file `name`, or None without a record."""
    try:
        return last_index_path(memory_dir, name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def save_last_index(memory_dir: Path, name: str, text: str) -> bool:
    """Record `text` as what subrosa wrote to index file `name`; True when it changed."""
    return write_if_changed(last_index_path(memory_dir, name), text)
