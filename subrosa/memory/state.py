"""The sidecar: what only subrosa knows about each fact, kept beside the leaves.

`<memory dir>/.subrosa/facts.jsonl` holds, per fact, the hook, title, section,
pin, status, archive reason and date, curated position and creation time: the
things a leaf does not say. It is rewritten (atomically, under the project lock)
after every change to those fields, so the database can always be rebuilt from the
memory dir alone and the memory dir can live in git. One JSON object per line,
sorted by slug, so two machines' changes to different facts merge line by line.
Hit counts are deliberately left out: they change on every search and are the one
thing a rebuild may lose.

Beside it, `.subrosa/last-index.txt` and `last-archive.txt` record the text subrosa
last wrote to each index file, so `generate` can tell the lines others added from its
own. This module owns every file in `.subrosa/` but the lock (subrosa.memory.project).
"""

from __future__ import annotations

import json
import json.decoder
from collections.abc import Callable
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


_LINE_START = '{"slug": "'
# The JSON string reader json.loads uses (C), untyped in the stubs.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _line_slug(line: str) -> str | None:
    """The slug a sidecar line is about, or None when the line is not a JSON object
    with one. Lines subrosa wrote start with it: read without parsing the rest."""
    if line.startswith(_LINE_START):
        try:
            return _scanstring(line, len(_LINE_START))[0]
        except ValueError:
            return None
    try:
        row = json.loads(line)
    except ValueError:
        return None
    slug = row.get("slug") if isinstance(row, dict) else None
    return slug if isinstance(slug, str) else None


def patch_state(memory_dir: Path, rows: dict[str, dict[str, Any] | None]) -> bool:
    """Replace the sidecar's lines of the slugs in `rows` (None: remove it), keeping the
    other lines as they are, sorted by slug, atomically (the caller holds the project
    lock). So a change to one fact costs one line, not a render of every fact. False,
    having written nothing, when the sidecar is missing or holds a line that is not a
    fact's (a merge conflict, a broken line): the caller rewrites it whole."""
    text = _read_sidecar(memory_dir)
    if text is None:
        return False
    lines: dict[str, str] = {}
    for line in text.split("\n"):
        if not line.strip():
            continue
        slug = _line_slug(line)
        if slug is None:
            return False
        lines[slug] = line
    for slug, row in rows.items():
        if row is None:
            lines.pop(slug, None)
        else:
            lines[slug] = render_row(row)
    patched = "".join(lines[slug] + "\n" for slug in sorted(lines))
    if patched != text:
        atomic_write_text(state_path(memory_dir), patched)
    return True


def load_state(memory_dir: Path) -> dict[str, dict[str, Any]]:
    """Read the sidecar; a missing file is empty, a broken line is refused by name."""
    path = state_path(memory_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc}).") from None
    rows: dict[str, dict[str, Any]] = {}
    # Split on "\n" only: rows are written with ensure_ascii=False, and a slug (a file
    # name) may hold U+2028 or \x85, which str.splitlines() would break a row at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
            if line.startswith("<<<<<<<"):
                raise InvalidInput(f"{path}: line {number} is a git merge conflict; resolve it.")
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
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
