"""The demo's example data and the throwaway place it runs in.

At the top of the package because the demo touches both halves: example leaves for
the memory half, an example Claude Code session for the archive half. `subrosa demo`
(subrosa.cli.demo) then drives the real commands over them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from subrosa.fsutil import read_text_if_exists
from subrosa.memory.marker import INDEX

EXAMPLES = Path(__file__).resolve().parent / "examples"
SESSION = EXAMPLES / "demo_session.jsonl"

# Each example leaf and the hook its index line carries.
HOOKS = {
    "feedback_no_mocks_in_tests.md": "Tests run the real CLI on real SQLite; no mocks",
    "user_prefers_pnpm.md": "pnpm only, never npm or yarn",
    "project_release_train.md": "Ship every 2nd Tuesday; freeze the Friday before",
    "reference_status_dashboard.md": "Health: Grafana svc-overview; alerts in #ops-alerts",
    "project_migration_spike.md": "Postgres search spike: Done 2026-09-01, stay on FTS5",
}


@dataclass(frozen=True)
class Workspace:
    """A memory dir holding the example leaves, and a database file beside it."""

    memory_dir: Path
    db: Path

    def index_text(self) -> str | None:
        """MEMORY.md as the demo left it, or None when no step wrote it."""
        return read_text_if_exists(self.memory_dir / INDEX)


@contextmanager
def workspace(target: Path | None) -> Iterator[Workspace]:
    """The example leaves copied into `target`/memory (kept afterwards), or into a
    temporary directory that is removed, with the database's connections closed, when
    the demo ends. Nothing in the user's real memory or database is touched."""
    workdir = target or Path(tempfile.mkdtemp(prefix="subrosa-demo-"))
    memory_dir = workdir / "memory"
    memory_dir.mkdir(parents=True, exist_ok=True)
    for leaf in sorted(EXAMPLES.glob("*.md")):
        shutil.copy2(leaf, memory_dir / leaf.name)
    try:
        yield Workspace(memory_dir, workdir / "subrosa.db")
    finally:
        if target is None:
            from subrosa.db import dispose_all

            dispose_all()
            shutil.rmtree(workdir, ignore_errors=True)
