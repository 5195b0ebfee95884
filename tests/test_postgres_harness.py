"""The suite's throwaway PostgreSQL (tests/postgres.py): what it leaves behind.

Its cluster's files live on a tmpfs where there is one, so a run killed before its
teardown (kill -9, a CI timeout) would hold that memory until a reboot; the next run
sweeps such dirs, and never one a server still runs in or one being set up.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.postgres import STALE_AFTER, _sweep


def _cluster_dir(parent: Path, name: str, pid: int | None, age: float) -> Path:
    """A cluster dir as Cluster.start() leaves it, its files `age` seconds old."""
    directory = parent / f"subrosa-pg-{name}"
    data = directory / "data"
    data.mkdir(parents=True)
    (directory / "server.log").write_text("LOG:  database system is ready\n")
    if pid is not None:
        (data / "postmaster.pid").write_text(f"{pid}\n{data}\n")
    then = time.time() - age
    for path in (data / "postmaster.pid", directory / "server.log", data, directory):
        if path.exists():
            os.utime(path, (then, then))
    return directory


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def test_a_killed_runs_cluster_is_swept_and_a_live_or_young_one_is_not(tmp_path: Path) -> None:
    old = STALE_AFTER + 60
    dead = _cluster_dir(tmp_path, "dead", _dead_pid(), old)
    no_pid = _cluster_dir(tmp_path, "nopid", None, old)
    live = _cluster_dir(tmp_path, "live", os.getpid(), old)
    young = _cluster_dir(tmp_path, "young", None, 5)
    other = tmp_path / "someone-elses"
    other.mkdir()
    os.utime(other, (time.time() - old, time.time() - old))

    _sweep(str(tmp_path))

    assert not dead.exists()
    assert not no_pid.exists()
    assert live.exists(), "a dir a server still runs in was removed"
    assert young.exists(), "a dir being set up was removed"
    assert other.exists(), "a dir that is no cluster's was removed"
