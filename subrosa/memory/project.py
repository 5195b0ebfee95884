"""A project: one memory dir, the key its facts are stored under, and its lock.

The key is the project's name on every machine when the memory dir lives in a
repository with a remote or a configured name (subrosa.identity), else its path.

Kept apart from the store so that commands which only need a path don't import
SQLAlchemy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from subrosa.errors import InvalidInput
from subrosa.fsutil import file_lock, refuse_link
from subrosa.identity import facts_key
from subrosa.memory.marker import INDEX_FILES, LOCK_FILE
from subrosa.paths import state_dir

LOCK_TIMEOUT_S = 60.0


class Project:
    """A memory dir, and the key its facts are stored under (a value: equal when the
    memory dirs are; a plain class, as dataclasses cost a `fact upsert` ~15 ms)."""

    __slots__ = ("memory_dir", "origin", "_key")

    def __init__(self, memory_dir: Path, origin: str | None = None) -> None:
        self.memory_dir = memory_dir
        self.origin = origin  # where it was named (subrosa.paths.memory_dir_origin)
        self._key: str | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Project) and other.memory_dir == self.memory_dir

    def __hash__(self) -> int:
        return hash(self.memory_dir)

    def __repr__(self) -> str:
        return f"Project(memory_dir={self.memory_dir!r})"

    @property
    def key(self) -> str:
        """The key its facts are filed under: the name of the repository holding the memory
        dir when it has one, the same on every machine (subrosa.identity.facts_key), else
        the memory dir's resolved path; found once (registering thousands of facts asked
        for it once each)."""
        if self._key is None:
            self._key = facts_key(self.memory_dir)
        return self._key

    @property
    def path_key(self) -> str:
        """The key its facts were filed under before projects had names (the memory dir's
        resolved path); store.mutation moves rows still filed under it."""
        return str(self.memory_dir.resolve())

    def require_dir(self) -> None:
        """Refuse a memory dir that does not exist (every use case that writes checks it,
        and the commands that only read, so that they create nothing) or is no folder."""
        if self.memory_dir.exists() and not self.memory_dir.is_dir():
            named = f" ({self.origin})" if self.origin else ""
            raise InvalidInput(
                f"{self.memory_dir}: is a file, not a folder, so it cannot be the memory "
                f"dir{named}; point at yours with --memory-dir DIR or SUBROSA_MEMORY_DIR."
            )
        if not self.memory_dir.is_dir():
            raise InvalidInput(
                f"{self.memory_dir}: no such memory directory; create it (mkdir -p "
                f"{self.memory_dir}) or point at yours with --memory-dir DIR or "
                "SUBROSA_MEMORY_DIR (`subrosa doctor` shows which one is used)."
            )

    @contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S, *, dry_run: bool = False) -> Iterator[None]:
        """Serialize writers of this memory dir's index and sidecar across processes.

        Every writer comes here first, so here subrosa refuses to go on when one of its
        own files is a symbolic link (`.subrosa` or anything in it, the lock, the sidecar,
        MEMORY.md, MEMORY_archive.md): nothing is then read or written through one.

        A `dry_run` writes nothing, so in a memory dir whose lock file does not exist yet
        (no subrosa process ever wrote there) it takes no lock and creates no `.subrosa/`:
        it only reads, and there is no writer of subrosa's to wait for."""
        directory = Path(state_dir(self.memory_dir))
        for name in INDEX_FILES:
            refuse_link(self.memory_dir / name)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in os.scandir(directory):
                refuse_link(Path(entry.path))
        if dry_run and not (directory / LOCK_FILE).is_file():
            yield
            return
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(
                f"{self.memory_dir}: cannot write subrosa's state here ({exc.strerror})."
            ) from None
        busy = (
            f"{directory / LOCK_FILE}: another subrosa process held the lock for "
            f"{timeout:.0f} s; try again."
        )
        held = ExitStack()
        try:
            held.enter_context(file_lock(directory / LOCK_FILE, timeout, busy))
        except OSError as exc:
            raise InvalidInput(
                f"{directory / LOCK_FILE}: cannot take the lock ({exc.strerror})."
            ) from None
        with held:
            yield
