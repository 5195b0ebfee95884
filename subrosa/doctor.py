"""`subrosa doctor`: each part of the set-up checked, each problem with its fix.

The one module above the halves: it composes the checks of the memory half (memory
dir, index, leaves registered), the archive half (transcript backlog), the Claude
Code half (hooks) and the database, so it sits at the top of the package rather than
in any of them. It asks the store and the halves' modules; it runs no SQL of its own.

Every check is a small function returning a Check; none of them raises, so one
broken part never hides the others.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from subrosa.errors import hide_passwords
from subrosa.memory.leaf import list_leaf_files, subfolder_note
from subrosa.memory.marker import ARCHIVE, INDEX, INDEX_FILES, foreign_index
from subrosa.paths import claude_root, project_root, sqlite_path

HOOK_EVENTS = ("SessionStart", "Stop", "SessionEnd")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    # A warning does not make `doctor` fail (e.g. no transcripts archived yet).
    severity: str = "error"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Subject:
    """What doctor looks at: one project's memory dir and one database."""

    memory_dir: Path
    db_url: str
    cwd: Path


def check_memory_dir(subject: Subject) -> Check:
    directory = subject.memory_dir
    if not directory.is_dir():
        return Check(
            "memory dir",
            False,
            f"{directory} does not exist.",
            f"mkdir -p '{directory}' (or pass --memory-dir / set SUBROSA_MEMORY_DIR).",
        )
    if not os.access(directory, os.W_OK):
        return Check(
            "memory dir",
            False,
            f"{directory} is not writable.",
            f"chmod u+w '{directory}'",
        )
    return Check("memory dir", True, f"{directory}")


def _database_ready(subject: Subject) -> bool:
    from subrosa.db import SCHEMA_HEAD, current_revision, get_engine

    path = sqlite_path(subject.db_url)
    if path is not None and not path.exists():
        return False
    try:
        return current_revision(get_engine(subject.db_url)) == SCHEMA_HEAD
    except Exception:  # noqa: BLE001 - the database check reports the cause
        return False


def check_database(subject: Subject) -> Check:
    from subrosa.db import SCHEMA_HEAD, current_revision, get_engine

    path = sqlite_path(subject.db_url)
    if path is not None and not path.exists():
        return Check(
            "database",
            True,
            f"{path} does not exist yet; the first subrosa command creates and migrates it.",
            "subrosa db upgrade",
            severity="warning",
        )
    try:
        engine = get_engine(subject.db_url)
        revision = current_revision(engine)
    except Exception as exc:  # noqa: BLE001 - report, never raise
        return Check(
            "database",
            False,
            f"cannot open {hide_passwords(subject.db_url)}: {hide_passwords(str(exc))}",
            "check --db",
        )
    where = engine.url.render_as_string(hide_password=True)
    if revision != SCHEMA_HEAD:
        return Check(
            "database",
            False,
            f"{where} is at revision {revision or 'none'}, not {SCHEMA_HEAD}.",
            "subrosa db upgrade",
        )
    return Check("database", True, f"{where} (revision {revision})")


def _settings_files(subject: Subject) -> list[Path]:
    root = project_root(subject.cwd)
    return [
        claude_root() / "settings.json",
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
    ]


def _subrosa_events(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: set[str] = set()
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if "subrosa" in json.dumps(groups):
            found.add(event)
    return found


def check_hooks(subject: Subject) -> Check:
    found: set[str] = set()
    where: list[str] = []
    for path in _settings_files(subject):
        events = _subrosa_events(path)
        if events:
            found |= events
            where.append(str(path))
    missing = [event for event in HOOK_EVENTS if event not in found]
    if missing:
        return Check(
            "hooks",
            False,
            f"subrosa's {', '.join(missing)} hook(s) are not in any settings.json "
            "(a plugin install is not detected here).",
            "subrosa install (or enable the subrosa plugin)",
            severity="warning",
        )
    return Check("hooks", True, f"installed in {', '.join(where)}")


def check_index(subject: Subject) -> Check:
    index = subject.memory_dir / INDEX
    if not index.exists():
        return Check("index", True, "no MEMORY.md yet", "subrosa generate", severity="warning")
    if foreign_index(subject.memory_dir) is not None:
        return Check(
            "index",
            False,
            f"{index} was not written by subrosa.",
            "subrosa adopt (it keeps a backup), then subrosa generate",
        )
    from subrosa.memory.witness import load

    verdict = load().witness(subject.memory_dir)
    size = verdict["memory_md"]
    summary = f"{size['lines']} lines, {size['bytes']:,} bytes"
    if not verdict["ok"]:
        problems = [
            f"{len(verdict[key])} {key.replace('_', ' ')}"
            for key in ("orphan_files", "orphan_links", "duplicate_refs")
            if verdict[key]
        ]
        if size["lines"] > size["max_lines"] or size["bytes"] > size["max_bytes"]:
            problems.insert(
                0, f"over the {size['max_lines']}-line / {size['max_bytes']:,}-byte cap"
            )
        if verdict.get("unlinked_archive"):
            problems.append(f"{ARCHIVE} not linked")
        return Check("index", False, f"{summary}: " + ", ".join(problems) + ".", "subrosa generate")
    if verdict.get("secrets"):
        kinds = sorted({str(item.get("kind")) for item in verdict["secrets"]})
        return Check(
            "index",
            False,
            f"{summary}: {len(verdict['secrets'])} secret(s) in the index files "
            f"({', '.join(kinds)}), which are meant for git.",
            "take the secret out of the leaf's description or the fact's hook "
            "(`subrosa fact upsert --leaf FILE --hook TEXT`), then subrosa generate",
        )
    return Check("index", True, f"{summary}; every leaf referenced exactly once")


def check_leaves_registered(subject: Subject) -> Check:
    from subrosa.db import get_engine, session_scope
    from subrosa.memory import store

    on_disk = {p.stem for p in list_leaf_files(subject.memory_dir)}
    if not _database_ready(subject):
        return Check(
            "leaves",
            not on_disk,
            f"{len(on_disk)} leaf file(s); the database is not ready to compare.",
            "subrosa generate",
            severity="warning",
        )
    try:
        with session_scope(get_engine(subject.db_url)) as session:
            registered = store.registered_slugs(session, store.Project(subject.memory_dir))
    except Exception as exc:  # noqa: BLE001 - the database check reports the cause
        return Check("leaves", False, f"cannot read facts: {exc}", "see the database check")
    # Notes in subfolders are registered through the index links (`notes/x`).
    root = subject.memory_dir.resolve()
    on_disk |= {
        slug
        for slug in registered
        if "/" in slug and subfolder_note(subject.memory_dir, slug + ".md", root) is not None
    }
    unregistered = sorted(on_disk - registered)
    gone = sorted(registered - on_disk)
    if unregistered or gone:
        parts = []
        if unregistered:
            parts.append(f"{len(unregistered)} leaf file(s) not registered ({unregistered[0]}…)")
        if gone:
            parts.append(f"{len(gone)} fact(s) whose leaf is gone ({gone[0]}…)")
        fix = "subrosa generate" if unregistered else ""
        if gone:
            fix += (" and " if fix else "") + "restore the leaf, or `subrosa rebuild` to forget it"
        return Check("leaves", False, "; ".join(parts) + ".", fix)
    return Check("leaves", True, f"{len(on_disk)} leaves, all registered")


def check_backlog(subject: Subject) -> Check:
    from subrosa.archive.pending import list_pending

    pending = list_pending()
    if pending:
        return Check(
            "transcript backlog",
            False,
            f"{len(pending)} ended session(s) not archived yet.",
            "subrosa ingest",
            severity="warning",
        )
    return Check("transcript backlog", True, "nothing waiting")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def check_permissions(subject: Subject) -> Check:
    problems: list[str] = []
    db = sqlite_path(subject.db_url)
    if db is not None and db.exists():
        # The files hold the data (SQLite gives -wal and -shm the database's mode); an
        # ordinary 755 folder only lets others see their names. A folder others may
        # write to is a problem: they could swap the database.
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            if path.exists() and _mode(path) & 0o077:
                problems.append(f"{path} is readable by others (mode {_mode(path):o})")
        if _mode(db.parent) & 0o022:
            problems.append(f"{db.parent} is writable by others (mode {_mode(db.parent):o})")
    for name in INDEX_FILES:
        path = subject.memory_dir / name
        if path.exists() and not os.access(path, os.W_OK):
            problems.append(f"{path} is not writable")
    if problems:
        fix = f"chmod 600 '{db}'*; chmod go-w '{db.parent}'" if db is not None else "chmod u+w"
        return Check("permissions", False, "; ".join(problems) + ".", fix)
    return Check("permissions", True, "database private to you; index files writable")


CHECKS: tuple[Callable[[Subject], Check], ...] = (
    check_memory_dir,
    check_database,
    check_hooks,
    check_index,
    check_leaves_registered,
    check_backlog,
    check_permissions,
)


def run_checks(subject: Subject) -> list[Check]:
    """Every check, in order; a check that crashes is reported, not raised."""
    results = []
    for check in CHECKS:
        try:
            results.append(check(subject))
        except Exception as exc:  # noqa: BLE001 - doctor must finish
            results.append(Check(check.__name__.removeprefix("check_"), False, repr(exc)))
    return results
