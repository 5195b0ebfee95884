"""A throwaway pgbouncer in front of a test cluster (tests/postgres.py), for the tests
of subrosa behind a connection pooler (tests/test_pooler.py, docs/team.md "Behind a
connection pooler").

It listens on 127.0.0.1 and a free port, trusts every client, and reaches the cluster
through its unix socket as the cluster's superuser. pgbouncer refuses to run as root:
under root it runs as the user that runs the cluster's server (tests/postgres.py's
`runuser`), its temp dir handed to that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from tests.postgres import SUPERUSER, Cluster

MISSING = "pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)"


def find() -> str | None:
    """The pgbouncer binary: on PATH, else Debian's /usr/sbin."""
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer",) if os.access(p, os.X_OK)), None
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Bouncer:
    """A running pgbouncer: its pool mode and a URL to reach a database through it."""

    mode: str
    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, binary: str, cluster: Cluster, mode: str, pool_size: int = 2) -> Bouncer:
        """pgbouncer in `mode` (session or transaction) before `cluster`'s databases,
        each with `pool_size` server connections at most (few: so that two clients
        share a backend in transaction mode)."""
        assert cluster.directory is not None, "a cluster this run started (its socket)"
        directory = Path(tempfile.mkdtemp(prefix="subrosa-bouncer-"))
        port = _free_port()
        (directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={cluster.directory} user={SUPERUSER}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\n"
            f"unix_socket_dir =\nauth_type = trust\nauth_file = {directory}/users.txt\n"
            f"pool_mode = {mode}\ndefault_pool_size = {pool_size}\nmax_client_conn = 100\n"
            f"logfile = {directory}/pgbouncer.log\npidfile = {directory}/pgbouncer.pid\n"
            "ignore_startup_parameters = extra_float_digits\n"
            "server_reset_query_always = 0\nlog_connections = 0\nlog_disconnections = 0\n"
        )
        (directory / "users.txt").write_text(f'"{SUPERUSER}" ""\n')
        command = [binary, str(directory / "pgbouncer.ini")]
        if os.geteuid() == 0:
            user = cluster.user or "postgres"
            entry = pwd.getpwnam(user)
            for path in (directory, *directory.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            command = ["runuser", "-u", user, "--", *command]
        # Its log goes to stderr too: a file, not a pipe nobody reads (a full pipe would
        # stop it).
        with open(directory / "stderr.log", "wb") as stderr:
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=stderr, cwd=directory
            )
        bouncer = cls(mode, port, directory, process)
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                err = (directory / "stderr.log").read_text()
                bouncer.stop()
                raise RuntimeError(f"pgbouncer exited ({process.returncode}): {err}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return bouncer
            if time.monotonic() > deadline:
                bouncer.stop()
                raise RuntimeError("pgbouncer did not listen within 20 s")
            time.sleep(0.05)

    def url(self, database: str) -> str:
        return URL.create(
            "postgresql+psycopg",
            username=SUPERUSER,
            host="127.0.0.1",
            port=self.port,
            database=database,
        ).render_as_string(hide_password=False)

    def stop(self) -> None:
        if self.process.poll() is None:
            # pgbouncer itself is told (SIGTERM: its immediate shutdown), not runuser
            # before it: runuser passes a signal on, then sleeps 2 s before it kills
            # the child (util-linux su-common.c), and exits at once when its child does.
            pid = self.directory / "pgbouncer.pid"
            try:
                os.kill(int(pid.read_text()), signal.SIGTERM)
            except (OSError, ValueError):  # no pid file (yet): through runuser, then
                self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)
