"""A throwaway PostgreSQL for the tests: one cluster per test run, one database per test.

The cluster is made with the server's own `initdb` and `pg_ctl` in a private temp dir,
listens on a unix socket in that dir only (no TCP port, so nothing clashes with a server
already running on the machine) and trusts local connections. Durability is switched
off: a crash loses a test database, which is thrown away anyway. `initdb` refuses to run
as root, so under root the server's commands run as the `postgres` user that Debian's
package creates (else `nobody`) through `runuser`, and the temp dir is handed to that
user. `SUBROSA_TEST_PG_URL` names an existing server instead (an admin URL whose user
may create databases); nothing is started then.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy.engine import URL, make_url

from tests.tmpfs import tmpfs

SUPERUSER = "subrosa"
# Durability off and a little more memory: the cluster lives for one test run.
SERVER_OPTIONS = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "64MB",
    # No autoanalyze: it rewrites pg_stats whenever its launcher comes by, so two reads a
    # moment apart could differ (tests.pgboth asks libpq and psycopg the same query, the
    # column's most common lexemes included, and compares the rows: a flaky failure under
    # load). Subrosa never relies on it; the statistics change only when a test says so.
    "autovacuum": "off",
}


# A cluster dir of an earlier run is swept (_sweep()) when no server runs in it and
# nothing in it changed for this long: a run killed before its fixture's teardown (kill
# -9, a CI timeout) leaves its files behind, on a tmpfs: in memory until a reboot.
STALE_AFTER = 3600


def _sweep(parent: str | None) -> None:
    """Remove the cluster dirs of killed earlier runs under `parent` (the temp dir when
    None). A dir is left alone while its postmaster.pid names a live process (a server
    of this run's other workers, or of another run on the machine) or while anything in
    it is younger than STALE_AFTER (another worker's cluster between initdb and start)."""
    now = time.time()
    for directory in glob.glob(os.path.join(parent or tempfile.gettempdir(), "subrosa-pg-*")):
        try:
            pid = int(Path(directory, "data", "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if pid > 0:
            try:
                os.kill(pid, 0)
                continue  # a server runs there
            except ProcessLookupError:
                pass
            except PermissionError:
                continue  # alive, another user's
        paths = [directory, os.path.join(directory, "data"), os.path.join(directory, "server.log")]
        try:
            newest = max(os.stat(path).st_mtime for path in paths if os.path.exists(path))
        except (OSError, ValueError):
            continue
        if now - newest > STALE_AFTER:
            shutil.rmtree(directory, ignore_errors=True)


def find_bindir() -> Path | None:
    """The newest server's bin dir: Debian's /usr/lib/postgresql/N/bin, else initdb on PATH."""

    def major(path: str) -> int:
        match = re.search(r"/postgresql/(\d+)/bin$", path)
        return int(match.group(1)) if match else 0

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=major, reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    return None


def _server_user() -> str | None:
    """Who runs the server when we are root (initdb refuses root), else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root, and neither a postgres nor a nobody user exists")


@dataclass
class Cluster:
    """A running server (ours or an existing one) and how to reach it as an admin."""

    admin: URL
    directory: Path | None = None
    bindir: Path | None = None
    user: str | None = None
    version: str = ""
    _count: int = 0
    _strategy: str = ""

    @classmethod
    def start(cls, bindir: Path) -> Cluster:
        user = _server_user()
        # Not under pytest's tmp_path: a unix socket path must stay under ~100 bytes, and
        # the server's user must be able to reach the dir.
        # On a tmpfs where there is one (tests/tmpfs.py): on a disk, CREATE DATABASE (one
        # per test) took 0.1-0.4 s here, its checkpoint and copy waiting on the disk;
        # ~30 ms on a tmpfs. A test database lives for one test, durability is off.
        parent = tmpfs()
        _sweep(parent)
        directory = Path(tempfile.mkdtemp(prefix="subrosa-pg-", dir=parent))
        cluster = cls(
            admin=URL.create(
                "postgresql+psycopg",
                username=SUPERUSER,
                database="postgres",
                query={"host": str(directory)},
            ),
            directory=directory,
            bindir=bindir,
            user=user,
        )
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        try:
            cluster._server(
                "initdb",
                "-D",
                str(directory / "data"),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            )
            options = " ".join(f"-c {k}={v}" for k, v in SERVER_OPTIONS.items())
            cluster._server(
                "pg_ctl",
                "-D",
                str(directory / "data"),
                "-l",
                str(directory / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                f"-k {directory} {options}",
                "start",
            )
        except BaseException:
            cluster.stop()
            raise
        cluster._describe()
        return cluster

    @classmethod
    def existing(cls, url: str) -> Cluster:
        cluster = cls(admin=make_url(url))
        cluster._describe()
        return cluster

    def _describe(self) -> None:
        self.version = self._scalar("SHOW server_version")
        # PostgreSQL 15's default WAL_LOG strategy copies a database block by block
        # through the WAL (0.2-0.3 s here); FILE_COPY takes 0.1 s.
        if int(self._scalar("SHOW server_version_num")) >= 150000:
            self._strategy = " STRATEGY = FILE_COPY"

    def _server(self, program: str, *args: str) -> None:
        assert self.bindir is not None
        command = [str(self.bindir / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=120, cwd=self.directory
        )
        if result.returncode != 0:
            log = self.directory / "server.log" if self.directory else None
            tail = log.read_text()[-2000:] if log and log.exists() else ""
            raise RuntimeError(
                f"{program} failed ({result.returncode}):\n{result.stdout}{result.stderr}{tail}"
            )

    def _connect(self) -> psycopg.Connection[tuple[object, ...]]:
        # libpq reads the same URL (its drivername without SQLAlchemy's "+psycopg").
        conninfo = self.admin.set(drivername="postgresql").render_as_string(hide_password=False)
        return psycopg.connect(conninfo, autocommit=True)

    def _scalar(self, sql: str) -> str:
        with self._connect() as conn:
            row = conn.execute(sql).fetchone()
        assert row is not None
        return str(row[0])

    def execute(self, sql: str) -> None:
        """Run one statement as the admin, in the database `postgres`."""
        with self._connect() as conn:
            conn.execute(sql)

    def create_database(self, name: str | None = None) -> URL:
        """A new empty database; its URL, for the same user as the admin URL."""
        self._count += 1
        name = name or f"subrosa_test_{os.getpid()}_{self._count}"
        with self._connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"{self._strategy}')
        return self.admin.set(database=name)

    def drop_database(self, url: URL) -> None:
        with self._connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)')

    def stop(self) -> None:
        if self.directory is None:
            return
        if (self.directory / "data" / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._server(
                    "pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop"
                )
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None
