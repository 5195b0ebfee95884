"""Atomic file writes, the bounded reads that decide whether to write, and the one file
lock every writer takes. Standard library only: the hooks use this too.

The files subrosa keeps for itself (MEMORY.md, MEMORY_archive.md, what is in
`.subrosa/` and `.extract/`) sit in a folder a repository can fill: a checked-out
branch may hold `MEMORY.md -> ~/.ssh/id_rsa` or `.subrosa/facts.jsonl -> /dev/zero`.
So they are read only in place (never through a symbolic link), only when they are
regular files, and only up to a size cap; a link is refused by name (`refuse_link`),
a write replaces a file rather than writing through what it points to, and a lock
file is opened O_NOFOLLOW (`file_lock`).
"""

from __future__ import annotations

import _thread  # threading's own lock, without threading's import (the hooks load this)
import os
import stat
import time

from subrosa.errors import InvalidInput, LockTimeout
from subrosa.paths import is_dir, is_file, join, parent, spelled

# Not typing.TYPE_CHECKING: the hooks load this module, and typing costs them more than
# the hook's own work (mypy treats this name like typing's). Nor pathlib (paths are str
# or os.PathLike here: subrosa.paths says why), nor contextlib.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from subrosa.paths import StrPath

    P = TypeVar("P", bound=StrPath)

# A file subrosa reads to decide what to write is its own and small (MEMORY.md is
# ~23 KB, the sidecar a line per fact); anything bigger is refused rather than read.
READ_CAP = 64 * 1024 * 1024
# A settings.json or a hook's JSON record: a few KB; a MiB is already absurd.
JSON_CAP = 4 * 1024 * 1024
# Windows: a junction or a symlink is a reparse point (stat.FILE_ATTRIBUTE_REPARSE_POINT).
_REPARSE_POINT = 0x400


def _create_temp(path: StrPath, perms: int) -> tuple[int, str]:
    """A new, unique temp file beside `path` (O_EXCL), open for writing, created with
    `perms` (which the umask narrows, as for any new file).

    Done by hand rather than with tempfile.mkstemp: importing tempfile pulls in
    shutil, random, bz2 and lzma, a cost the hooks pay on every turn.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    directory, name = parent(path), os.path.basename(spelled(path))
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, perms), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: no free temp file name for {name}")


def _regular_mode(path: StrPath) -> int | None:
    """The permission bits of the regular file at `path` (not following a link), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) & 0o777 if stat.S_ISREG(info.st_mode) else None


def is_link(path: StrPath) -> bool:
    """True when `path` is a symbolic link (or, on Windows, a junction)."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISLNK(info.st_mode) or bool(
        getattr(info, "st_file_attributes", 0) & _REPARSE_POINT
    )


def refuse_link(path: P) -> P:
    """`path`, unless it is a symbolic link: then InvalidInput, in one sentence.

    subrosa never reads or writes its own files through a link, which a repository
    could point anywhere (`MEMORY.md -> ~/.ssh/id_rsa`, `.subrosa -> ~/.config`).
    """
    if is_link(path):
        raise InvalidInput(
            f"{path}: is a symbolic link, and subrosa never reads or writes its own files "
            "through one; replace it with the file or folder itself (or remove it)."
        )
    return path


def read_capped(
    path: StrPath, cap: int = READ_CAP, *, follow_links: bool = False, head: bool = False
) -> bytes | None:
    """The bytes of the regular file at `path`, or None when there is no such file.

    Refused (InvalidInput naming the file) when it is a symbolic link (unless
    `follow_links`: a settings.json kept in a dotfiles repository is one), when it is
    not a regular file (a FIFO would block, `/dev/zero` never ends, a folder), or when
    it holds more than `cap` bytes (with `head`, its first `cap` bytes are returned
    instead): never read without end, never through a link.
    """
    try:
        info = os.stat(path, follow_symlinks=follow_links)
    except FileNotFoundError:
        return None
    if not follow_links:
        refuse_link(path)
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"{path}: is not a regular file; subrosa does not read it.")
    if not head and info.st_size > cap:  # refused at its stat: nothing read
        raise InvalidInput(f"{path}: is larger than {cap:,} bytes; subrosa does not read it.")
    nofollow = 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | nofollow
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:
        refuse_link(path)  # replaced by a link since the stat (O_NOFOLLOW said ELOOP)
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            raise InvalidInput(f"{path}: is not a regular file; subrosa does not read it.")
        chunks: list[bytes] = []
        size = 0
        want = cap if head else cap + 1
        while size < want:
            chunk = os.read(fd, min(want - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > cap:
        raise InvalidInput(f"{path}: is larger than {cap:,} bytes; subrosa does not read it.")
    return b"".join(chunks)


def loads_json(text: str | bytes) -> object:
    """json.loads, with a document nested too deeply for the parser (`[[[[…`, which
    raises RecursionError) refused as a ValueError like any other bad JSON."""
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def make_private_dir(directory: P) -> P:
    """Create `directory` readable by its owner only (0700), its parents as usual;
    one that exists is left as it is (doctor reports a wide one)."""
    if is_dir(directory):
        return directory
    os.makedirs(parent(directory), exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:  # made meanwhile by another process: left as it is
        return directory
    return directory


def atomic_write_bytes(
    path: StrPath,
    data: bytes | list[bytes | memoryview],
    mode: int | None = None,
    *,
    durable: bool = True,
    new_mode: int | None = None,
    unless: Callable[[], bool] | None = None,
) -> None:
    """Write `data` (bytes, or parts written one after the other, so a large file spliced
    from slices of another is not copied first) to `path` so a crash leaves the old file
    or the new one, never a mix.

    A unique temp file in the same directory (so concurrent writers never share one),
    fsync, then os.replace, then fsync of the directory so the rename is durable. When
    `unless` is given and says True just before the rename, nothing is replaced (a file
    others write without a lock, changed while the temp file was being written).
    `durable=False` skips both fsyncs, for state that is cheap to lose and written on
    every turn (the Stop hook's counter): readers must then accept an empty file
    after a power cut.

    Permissions: a file replaced keeps its mode; a new one is created with `mode`
    (else `new_mode`, which leaves a replaced file's alone; default 0666), narrowed by
    the umask like any new file, so it is never wider than asked (a backup of a 0600
    file stays 0600). A symbolic link at `path` is replaced, never written through.
    """
    existing = _regular_mode(path)
    if mode is not None:
        perms = mode
    elif existing is not None:
        perms = existing
    else:
        perms = new_mode if new_mode is not None else 0o666
    fd, tmp = _create_temp(path, perms)
    try:
        with os.fdopen(fd, "wb") as handle:
            for part in [data] if isinstance(data, bytes) else data:
                handle.write(part)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is None and existing is not None:
            os.chmod(tmp, existing)  # exactly the replaced file's mode, whatever the umask
        if unless is not None and unless():
            remove_file(tmp)
            return
        os.replace(tmp, path)
    except BaseException:
        remove_file(tmp)
        raise
    if durable:
        fsync_dir(parent(path))


def atomic_write_text(
    path: StrPath,
    text: str,
    mode: int | None = None,
    *,
    durable: bool = True,
    new_mode: int | None = None,
) -> None:
    """`atomic_write_bytes` for UTF-8 text (newlines written as given)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode, durable=durable, new_mode=new_mode)


def read_bytes_if_exists(path: StrPath) -> bytes | None:
    """One of subrosa's own files, or None when it does not exist (see `read_capped`:
    never through a link, a regular file of at most READ_CAP bytes)."""
    return read_capped(path)


def read_text_if_exists(path: StrPath) -> str | None:
    """The file as UTF-8 text (bad bytes replaced), or None when it does not exist."""
    data = read_bytes_if_exists(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def holds_text(path: StrPath, text: str) -> bool:
    """True when `path` is a regular file holding exactly `text` (False when unreadable)."""
    try:
        if not is_file(path):
            return False
        with open(path, "rb") as handle:
            return handle.read() == text.encode("utf-8")
    except OSError:
        return False


def write_if_changed(
    path: StrPath,
    text: str,
    new_mode: int | None = None,
    *,
    unless: Callable[[], bool] | None = None,
) -> bool:
    """Write `text` atomically unless the file already holds exactly it; True when written
    (a new file with `new_mode`, see atomic_write_bytes).

    An unchanged file keeps its mtime, so tools that watch it (and git) see no change.
    """
    data = text.encode("utf-8")
    if read_bytes_if_exists(path) == data:
        return False
    atomic_write_bytes(path, data, new_mode=new_mode, unless=unless)
    return True


def backup_beside(path: StrPath, suffix: str, limit: int = 1000, *, write: bool = True) -> str:
    """Keep a copy of `path` beside it as `<name><suffix>`. An earlier copy is never
    overwritten: the next free `<name><suffix>.N` is used, unless a copy already holds
    the same bytes (so running twice makes one copy). Returns the copy's path (with
    `write` False, the path it would have, and nothing is written).

    The copy has the source's mode (narrowed by the umask): a 0600 file never becomes a
    0644 backup. Neither `path` nor a copy is read through a symbolic link."""
    data = read_capped(path)
    if data is None:
        raise InvalidInput(f"{path}: no such file to back up.")
    mode = _regular_mode(path)
    for n in range(1, limit):
        name = os.path.basename(spelled(path)) + suffix + ("" if n == 1 else f".{n}")
        target = join(parent(path), name)
        if not os.path.lexists(target):
            if write:
                atomic_write_bytes(target, data, mode=mode if mode is not None else 0o600)
            return target
        if not is_link(target) and read_capped(target) == data:
            return target
    raise InvalidInput(f"{path}: too many backups beside it already.")


def remove_file(path: StrPath, ignore: type[OSError] = OSError) -> bool:
    """Delete the file at `path`; False when that failed with an error of kind `ignore`
    (any OSError by default; FileNotFoundError: only a file already gone). Stands for
    `contextlib.suppress`, whose import the hooks would pay."""
    try:
        os.unlink(path)
    except ignore:
        return False
    return True


def fsync_dir(directory: StrPath) -> None:
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


def sweep_temp_files(
    directory: StrPath, older_than_s: float = 600.0, pattern: str = r"^\..+\.[0-9a-f]{12}\.tmp$"
) -> list[str]:
    """Remove this module's temp files (`.NAME.<hex>.tmp`; another writer's: `pattern`)
    that a killed writer left.

    Only files older than `older_than_s` go, so a writer still busy with its temp file
    (one that does not hold the caller's lock) is never disturbed. Returns what was removed.
    """
    import re
    import time

    matcher = re.compile(pattern)
    cutoff = time.time() - older_than_s
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not matcher.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(entry.path)
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
_held_guard = _thread.RLock()
_POLL_FIRST_S, _POLL_MAX_S = 0.001, 0.05


def file_lock(path: StrPath, timeout: float, busy: str) -> _Lock:
    """Hold an exclusive lock on the file at `path` (created when missing) across
    processes; raise LockTimeout(`busy`) when another process held it for `timeout`
    seconds, OSError when it cannot be taken at all. Re-entrant within the process.

    flock(2) on POSIX, by hand rather than with the filelock package: that takes exactly
    this lock on this file (so the two exclude each other), but importing it costs ~50 ms
    of CPU, more than a whole `fact upsert` may. Where there is no flock (Windows),
    filelock's lock is used (hence the dependency, filelock>=3.20.1). A process killed
    while holding the lock loses it with its descriptors: nothing is left to clean up.

    The lock file is opened O_NOFOLLOW and never truncated, as filelock >= 3.20.1 opens
    its own (CVE-2025-68146: a lock path planted as a link had its target truncated):
    a link there fails with ELOOP (an OSError naming the file), its target untouched.
    """
    return _Lock(path, timeout, busy)


class _Lock:
    """file_lock's context manager: taken on entering, let go on leaving (a class, not
    contextlib.contextmanager: the hooks load this module, and contextlib's import cost
    them more than they use of it)."""

    def __init__(self, path: StrPath, timeout: float, busy: str) -> None:
        self.path, self.timeout, self.busy = path, timeout, busy

    def __enter__(self) -> None:
        self.key = key = os.path.abspath(self.path)
        with _held_guard:
            held = _held.get(key)
            if held is not None:
                held.depth += 1
        if held is None:
            held = _Held(_acquire(key, self.timeout, self.busy))
            with _held_guard:
                _held[key] = held
        self.held = held

    def __exit__(self, *exc: object) -> None:
        held = self.held
        with _held_guard:
            held.depth -= 1
            last = held.depth == 0
            if last:
                del _held[self.key]
        if last:
            _release(held.handle)


def held_here(path: StrPath) -> bool:
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


def stdout_to_devnull() -> None:
    """Point file descriptor 1 at /dev/null: its reader went away (a closed pipe), and
    what Python still holds for it must go somewhere when the process flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
