"""Where the suite's throwaway files go: a tmpfs (/dev/shm) when the machine has one
to write to, so their commits, renames and fsyncs cost no disk I/O (tests/conftest.py
puts each test's tmp_path there, tests/postgres.py the test cluster's files).
Standard library only: conftest.py reads it before any test runs."""

from __future__ import annotations

import os

SHM = "/dev/shm"


def tmpfs(room: int = 0) -> str | None:
    """The tmpfs's path when there is one this process may write to with at least
    `room` bytes free; None otherwise (the temp dir is used)."""
    try:
        free = os.statvfs(SHM)
    except OSError:
        return None
    if not os.access(SHM, os.W_OK | os.X_OK) or free.f_bavail * free.f_frsize < room:
        return None
    return SHM
