"""Atomic file writes, the plain reads that decide whether to write, and the one file
lock every writer takes. Standard library only: the hooks use this too."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from subrosa.errors import InvalidInput, LockTimeout


def _create_temp(path: Path) -> tuple[int, str]:
    """A new, unique temp file beside `path` (O_EXCL), open for writing.

    Done by hand rather than with tempfile.mkstemp: importing tempfile pulls in
    shutil, random, bz2 and lzma, a cost the hooks pay on every turn.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temp file name for {path.name}")


def atomic_write_bytes(
    path: Path,
    data: bytes | list[bytes | memoryview],
    mode: int | None = None,
    *,
    durable: bool = True,
) -> None:
    """Write `data` (bytes, or parts written one after the other, so a large file spliced
    from slices of another is not copied first) to `path` so a crash leaves the old file
    or the new one, never a mix.

    A unique temp file in the same directory (so concurrent writers never share one),
    fsync, then os.replace, then fsync of the directory so the rename is durable.
    `durable=False` skips both fsyncs, for state that is cheap to lose and written on
    every turn (the Stop hook's counter): readers must then accept an empty file
    after a power cut.
    """
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            for part in [data] if isinstance(data, bytes) else data:
                handle.write(part)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(
    path: Path, text: str, mode: int | None = None, *, durable: bool = True
) -> None:
    """`atomic_write_bytes` for UTF-8 text (newlines written as given)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode, durable=durable)


def read_bytes_if_exists(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist (any other error is raised)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def read_text_if_exists(path: Path) -> str | None:
    """The file as UTF-8 text (bad bytes replaced), or None when it does not exist."""
    data = read_bytes_if_exists(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def holds_text(path: Path, text: str) -> bool:
    """True when `path` is a regular file holding exactly `text` (False when unreadable)."""
    try:
        return path.is_file() and path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` atomically unless the file already holds exactly it; True when written.

    An unchanged file keeps its mtime, so tools that watch it (and git) see no change.
    """
    data = text.encode("utf-8")
    if read_bytes_if_exists(path) == data:
        return False
    atomic_write_bytes(path, data)
    return True


def backup_beside(path: Path, suffix: str, limit: int = 1000) -> Path:
    """Keep a copy of `path` beside it as `<name><suffix>`. An earlier copy is never
    overwritten: the next free `<name><suffix>.N` is used, unless a copy already holds
    the same bytes (so running twice makes one copy). Returns the copy's path."""
    data = path.read_bytes()
    for n in range(1, limit):
        target = path.with_name(path.name + suffix + ("" if n == 1 else f".{n}"))
        if not target.exists():
            atomic_write_bytes(target, data)
            return target
        if target.read_bytes() == data:
            return target
    raise InvalidInput(f"{path}: too many backups beside it already.")


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sweep_temp_files(directory: Path, older_than_s: float = 600.0) -> list[Path]:
    """Remove this module's temp files (`.NAME.<hex>.tmp`) that a killed writer left.

    Only files older than `older_than_s` go, so a writer still busy with its temp file
    (one that does not hold the caller's lock) is never disturbed. Returns what was removed.
    """
    import re
    import time

    pattern = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


# --- the file lock --------------------------------------------------------------------


class _Held:
    """A lock this process holds: the descriptor holding it (or filelock's object, where
    there is no flock) and how many times it was taken."""

    def __init__(self, handle: object) -> None:
        self.handle = handle
        self.depth = 1


# Re-entrant by path, so a command that holds a memory dir's lock can call code that
# takes it again.
_held: dict[str, _Held] = {}
_held_guard = threading.RLock()
_POLL_FIRST_S, _POLL_MAX_S = 0.001, 0.05


@contextlib.contextmanager
def file_lock(path: Path | str, timeout: float, busy: str) -> Iterator[None]:
    """Hold an exclusive lock on the file at `path` (created when missing) across
    processes; raise LockTimeout(`busy`) when another process held it for `timeout`
    seconds, OSError when it cannot be taken at all. Re-entrant within the process.

    flock(2) on POSIX, by hand rather than with the filelock package: that takes exactly
    this lock on this file (so the two exclude each other), but importing it costs ~50 ms
    of CPU, more than a whole `fact upsert` may. Where there is no flock (Windows),
    filelock's lock is used. A process killed while holding the lock loses it with its
    descriptors: nothing is left to clean up.
    """
    key = os.path.abspath(path)
    with _held_guard:
        held = _held.get(key)
        if held is not None:
            held.depth += 1
    if held is None:
        held = _Held(_acquire(key, timeout, busy))
        with _held_guard:
            _held[key] = held
    try:
        yield
    finally:
        with _held_guard:
            held.depth -= 1
            last = held.depth == 0
            if last:
                del _held[key]
        if last:
            _release(held.handle)


def held_here(path: Path | str) -> bool:
    """Whether this process holds the file_lock of `path` now."""
    with _held_guard:
        return os.path.abspath(path) in _held


def _acquire(key: str, timeout: float, busy: str) -> object:
    try:
        import fcntl
    except ImportError:  # Windows
        from filelock import FileLock, Timeout

        lock = FileLock(key)
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise LockTimeout(busy) from None
        return lock
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(key, flags, 0o644)
    deadline = time.monotonic() + timeout
    pause = _POLL_FIRST_S
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(busy) from None
                time.sleep(pause)
                pause = min(pause * 2, _POLL_MAX_S)
    except BaseException:
        os.close(fd)
        raise


def _release(handle: object) -> None:
    if not isinstance(handle, int):
        handle.release()  # type: ignore[attr-defined]
        return
    import fcntl

    try:
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)
