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
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from subrosa.errors import InvalidInput, LockTimeout
from subrosa.fsutil import refuse_link
from subrosa.identity import facts_key
from subrosa.memory.marker import INDEX_FILES
from subrosa.paths import state_dir

LOCK_TIMEOUT_S = 60.0
# `.subrosa/lock`: every writer of a memory dir takes it (memory/recall.py with fcntl).
LOCK_FILE = "lock"


@dataclass(frozen=True)
class Project:
    """A memory dir, and the key its facts are stored under."""

    memory_dir: Path

    @cached_property
    def key(self) -> str:
        """The key its facts are filed under: the name of the repository holding the memory
        dir when it has one, the same on every machine (subrosa.identity.facts_key), else
        the memory dir's resolved path."""
        return facts_key(self.memory_dir)

    @property
    def path_key(self) -> str:
        """The key its facts were filed under before projects had names (the memory dir's
        resolved path); store.mutation moves rows still filed under it."""
        return str(self.memory_dir.resolve())

    def require_dir(self) -> None:
        """Refuse a memory dir that does not exist (every use case that writes checks it)."""
        if not self.memory_dir.is_dir():
            raise InvalidInput(
                f"{self.memory_dir}: no such memory directory; create it (mkdir -p "
                f"{self.memory_dir}) or point at yours with --memory-dir DIR or "
                "SUBROSA_MEMORY_DIR (`subrosa doctor` shows which one is used)."
            )

    @contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Serialize writers of this memory dir's index and sidecar across processes.

        Every writer comes here first, so here subrosa refuses to go on when one of its
        own files is a symbolic link (`.subrosa` or anything in it, the lock, the sidecar,
        MEMORY.md, MEMORY_archive.md): nothing is then read or written through one."""
        directory = state_dir(self.memory_dir)
        for name in INDEX_FILES:
            refuse_link(self.memory_dir / name)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in os.scandir(directory):
                refuse_link(Path(entry.path))
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(
                f"{self.memory_dir}: cannot write subrosa's state here ({exc.strerror})."
            ) from None
        from filelock import FileLock, Timeout

        # One lock object per path in this process (is_singleton), so a command that
        # holds the lock can call store.mutation(), which takes it again, without
        # deadlocking: filelock counts re-entries of the same object.
        lock = FileLock(str(directory / LOCK_FILE), is_singleton=True)
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise LockTimeout(
                f"{directory / 'lock'}: another subrosa process held the lock for "
                f"{timeout:.0f} s; try again."
            ) from None
        except OSError as exc:
            raise InvalidInput(
                f"{directory / 'lock'}: cannot take the lock ({exc.strerror})."
            ) from None
        try:
            yield
        finally:
            lock.release()
