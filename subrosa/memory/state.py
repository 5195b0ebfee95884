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
own, and `.subrosa/index-rank.json` (subrosa.memory.marker.RANKING) the hot tier's
rank order, for the SessionStart hook. This module owns every file in `.subrosa/` but
the lock (subrosa.memory.project).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from subrosa.errors import InvalidInput
from subrosa.fsutil import atomic_write_text, loads_json, read_capped, write_if_changed
from subrosa.memory.marker import INDEX, ranking_path, render_ranking
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


def render_state(rows: list[dict[str, Any]]) -> str:
    """The sidecar's text for `rows` (each a dict with STATE_KEYS)."""
    lines = []
    for row in sorted(rows, key=lambda r: str(r["slug"])):
        ordered = {key: row.get(key) for key in STATE_KEYS}
        lines.append(json.dumps(ordered, ensure_ascii=False, sort_keys=False))
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
    """Rewrite the sidecar atomically (the caller holds the project lock)."""
    path = state_path(memory_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_state(rows)
    if _read_sidecar(memory_dir) == text:
        return
    atomic_write_text(path, text)


def load_state(memory_dir: Path) -> dict[str, dict[str, Any]]:
    """Read the sidecar; a missing file is empty, a broken line is refused by name."""
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
    rows: dict[str, dict[str, Any]] = {}
    # Split on "\n" only: rows are written with ensure_ascii=False, and a slug (a file
    # name) may hold U+2028 or \x85, which str.splitlines() would break a row at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
            if line.startswith("<<<<<<<"):
                raise InvalidInput(f"{path}: line {number} is a git merge conflict; resolve it.")
            continue
        try:
            row = loads_json(line)  # `[[[[…` is refused like any bad line
        except ValueError:
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
    return state_dir(memory_dir) / (LAST_INDEX if name == INDEX else LAST_ARCHIVE)


def read_last_index(memory_dir: Path, name: str = INDEX) -> str | None:
    """The text subrosa last wrote to index file `name`, or None without a record."""
    try:
        data = read_capped(last_index_path(memory_dir, name))
        return None if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError, InvalidInput):
        return None


def save_last_index(memory_dir: Path, name: str, text: str) -> bool:
    """Record `text` as what subrosa wrote to index file `name`; True when it changed."""
    return write_if_changed(last_index_path(memory_dir, name), text)


def save_ranking(memory_dir: Path, targets: list[str]) -> bool:
    """Record the hot tier's link targets in rank order; True when it changed."""
    return write_if_changed(ranking_path(memory_dir), render_ranking(targets))
