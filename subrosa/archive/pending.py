"""Transcripts waiting to be archived. Standard library only (the SessionEnd hook writes here).

"Capture is dumb": when a session ends, the hook drops one small JSON file naming
the transcript into `<data dir>/pending-ingest/` (atomically, no lock, no database);
the next subrosa command that needs the archive (search, ingest, a background
ingest the hook may start) ingests those transcripts and removes the files. One
file per transcript path, so a session that ends twice leaves one entry.
"""

from __future__ import annotations

import json
import os
import time

from subrosa.errors import InvalidInput
from subrosa.fsutil import (
    JSON_CAP,
    atomic_write_text,
    loads_json,
    make_private_dir,
    read_capped,
    remove_file,
    sweep_temp_files,
)
from subrosa.paths import data_dir, join, parent

# typing, pathlib and contextlib stay off the SessionEnd hook's import path (mypy reads
# this like typing's): a path here is a str (subrosa.paths says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def pending_dir(env: dict[str, str] | None = None) -> str:
    return join(data_dir(env), "pending-ingest")


def _sha1_hex(data: bytes) -> str:
    """SHA-1 from CPython's built-in module when there is one: the same digest without
    hashlib's OpenSSL start-up, which costs the SessionEnd hook more than its own work."""
    try:
        import _sha1  # type: ignore[import-not-found]
    except ImportError:
        import hashlib

        return hashlib.sha1(data).hexdigest()
    return str(_sha1.sha1(data).hexdigest())


def _entry_name(transcript_path: str) -> str:
    return _sha1_hex(transcript_path.encode("utf-8"))[:20] + ".json"


def record(
    transcript_path: str,
    session_id: str = "",
    cwd: str = "",
    env: dict[str, str] | None = None,
) -> str:
    """Note that `transcript_path` should reach the archive."""
    directory = pending_dir(env)
    make_private_dir(parent(directory))  # the data dir: 0700, like the database in it
    make_private_dir(directory)
    path = join(directory, _entry_name(transcript_path))
    entry = {
        "transcript_path": transcript_path,
        "session_id": session_id,
        "cwd": cwd,
        "recorded_at": time.time(),
    }
    # Atomic but not fsynced: the SessionEnd hook writes this inside Claude Code's 1.5 s
    # budget, and a record lost to a power cut names a transcript that a full
    # `subrosa ingest` still finds (Claude Code keeps transcripts for weeks).
    atomic_write_text(path, json.dumps(entry), mode=0o600, durable=False)
    return path


def list_pending(env: dict[str, str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Every pending entry (unreadable ones are dropped: they can only name a transcript
    that a full `subrosa ingest` would find anyway)."""
    directory = pending_dir(env)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    if any(name.startswith(".") and name.endswith(".tmp") for name in names):
        sweep_temp_files(directory)  # a SessionEnd hook killed while writing its entry
    entries: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = join(directory, name)
        try:
            data = loads_json(read_capped(path, JSON_CAP) or b"")
        except (OSError, ValueError, InvalidInput):
            remove(path)
            continue
        if isinstance(data, dict) and isinstance(data.get("transcript_path"), str):
            entries.append((path, data))
        else:
            remove(path)
    return entries


def remove(path: str) -> None:
    """Forget a pending entry (after its transcript was ingested)."""
    remove_file(path)
