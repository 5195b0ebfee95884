"""Concurrent ingest bench: 1, 4 and 8 processes ingesting one project at once.

    python bench/concurrency.py --pg URL     # URL: an admin URL of a PostgreSQL server
    python bench/concurrency.py              # SQLite only
    python bench/concurrency.py --pg URL --turn 4 --rtt 0.5

Three shapes of the writes. By default each process ingests whole transcripts, one
batch each: the bulk of `subrosa ingest --all-projects` or `subrosa import`. With
--turn N the transcripts grow N lines at a time and are ingested after each step, as
the Stop hook's background ingest does after each turn of a live session: how a team's
members write in a day. With --rtt MS each statement to the server waits MS more, as
over the network between a member's machine and the team server (this machine has
the server and every writer on its own cores, no network between them: writers that
only wait on the server's CPU cannot go past cores / cores busy at 1, printed last).

The same sessions (SESSIONS transcripts of MESSAGES messages of ~300 characters,
different sessions, one project) are split among P processes, P = 1, 4, 8, each of
which ingests its share through subrosa.archive.ingest (the code `subrosa ingest`
runs) into one fresh database per run: an SQLite file (ingests take turns under its
ingest lock) and, with --pg, a new database on the server (ingests run side by side).
Printed per engine and P: messages/s over the whole run (first start to last end), the
p50/p95 time of one batch (a transcript's lines parsed, redacted and stored in one
transaction), and what the database holds afterwards against what was written: lost
(a uuid written but not stored, or a session's count short) and duplicated (a uuid
stored twice, or a count too high). Target: 0 and 0 everywhere, and PostgreSQL's
throughput at 8 processes >= 2x its throughput at 1.

Also printed: the CPU time of one message in the ingesting processes (client) and,
when the server runs on this machine, in the server (all its processes, read from
/proc), and how many cores that kept busy (CPU per message x messages/s). The run
starts by measuring how many cores this machine gives at all (one busy loop per
core for a second: a machine shared with other work gives less than its count), and
ends with the ceiling that sets on the speed-up: cores available / cores busy at 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SESSIONS = 48
MESSAGES = 400
PROCESSES = (1, 4, 8)
WORDS = [
    "the",
    "cache",
    "deploy",
    "error",
    "test",
    "build",
    "config",
    "server",
    "client",
    "query",
    "index",
    "commit",
    "branch",
    "merge",
    "review",
    "function",
    "class",
    "module",
    "import",
    "async",
    "await",
    "retry",
    "timeout",
    "socket",
    "thread",
    "lock",
    "queue",
    "worker",
    "schema",
    "migration",
    "table",
    "column",
    "row",
    "value",
    "token",
    "parser",
    "lexer",
    "docker",
]


def write_sessions(folder: Path) -> int:
    """SESSIONS transcripts in `folder` (one project); the number of messages."""
    rng = random.Random(7)
    for s in range(SESSIONS):
        lines = []
        for i in range(MESSAGES):
            role = "user" if i % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(45)) + f" n{s}x{i}"
            record = {
                "type": role,
                "uuid": f"s{s:03d}-m{i:04d}",
                "sessionId": f"session-{s:03d}",
                "timestamp": f"2026-03-01T{10 + i // 60 % 12:02d}:{i % 60:02d}:00Z",
                "cwd": "/work/app",
                "message": {"role": role, "content": text},
            }
            lines.append(json.dumps(record))
        (folder / f"session-{s:03d}.jsonl").write_text("\n".join(lines) + "\n")
    return SESSIONS * MESSAGES


def add_round_trip(rtt: float) -> None:
    """Make each statement sent to the server wait `rtt` seconds more, as it would on a
    network between a member's machine and the team server (a LAN: ~0.2-0.5 ms): the
    client waits, the server does nothing more. In this process only."""
    import psycopg

    def slowed(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            time.sleep(rtt)
            return method(*args, **kwargs)

        return call

    # A connection's execute is its cursor's: each statement waits once.
    for cls, name in ((psycopg.Cursor, "execute"), (psycopg.Cursor, "copy")):
        setattr(cls, name, slowed(getattr(cls, name)))


def worker(db: str, files: list[str], out: str, turn: int = 0, rtt: float = 0.0) -> None:
    """Ingest `files` (one project) into `db`, timing each batch; the times to `out`.
    It starts when `out`.go appears: Python's start-up is not what is measured.

    With `turn` > 0 each transcript grows by `turn` lines at a time and is ingested
    after each step, as the Stop hook's background ingest does after each turn of a
    live session: one batch (and, on SQLite, one turn of the ingest lock) per step."""
    from subrosa.archive.connection import archive_lock, open_archive
    from subrosa.archive.ingest import Source, new_ingester

    if not db.startswith("sqlite"):
        import psycopg  # noqa: F401  (loaded before the clock starts, as the rest)

        if rtt:
            add_round_trip(rtt)

    times: list[float] = []
    steps: list[tuple[str, list[bytes]]] = []
    if turn:
        grown = Path(out).parent / Path(out).stem
        grown.mkdir(exist_ok=True)
        for name in files:
            lines = Path(name).read_bytes().splitlines(keepends=True)
            target = str(grown / Path(name).name)
            Path(target).write_bytes(b"")
            steps += [(target, lines[i : i + turn]) for i in range(0, len(lines), turn)]
    Path(out + ".ready").touch()
    while not Path(out + ".go").exists():
        time.sleep(0.002)
    cpu = time.process_time()
    new = 0
    with open_archive(db) as conn:
        if not turn:
            with archive_lock(db):
                ingester = new_ingester(conn)
                # A batch's store: _store_read on SQLite (its ingest stages the calls for
                # its writer thread), _store_batch on PostgreSQL (a transaction each).
                name = "_store_read" if isinstance(conn, sqlite3.Connection) else "_store_batch"
                store = getattr(ingester, name)

                def timed(*args: Any) -> None:
                    start = time.perf_counter()
                    store(*args)
                    ingester.commit()  # SQLite commits every 32 MB: a batch ends with it
                    times.append(time.perf_counter() - start)

                setattr(ingester, name, timed)
                new = ingester.ingest([Source(f, "-work-app") for f in files]).new_messages
        for target, lines in steps:
            with open(target, "ab") as handle:
                handle.writelines(lines)
            start = time.perf_counter()
            with archive_lock(db):
                ingester = new_ingester(conn)
                new += ingester.ingest([Source(target, "-work-app")]).new_messages
                ingester.commit()
            times.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu
    Path(out).write_text(json.dumps({"times": times, "new": new, "cpu": cpu}))


def check(db: str, expected: int) -> tuple[int, int]:
    """(lost, duplicated) in the database at `db` against `expected` messages."""
    from subrosa.archive.connection import open_archive

    with open_archive(db) as conn:
        stored, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT uuid) FROM messages"
        ).fetchone()
        counted = conn.execute("SELECT coalesce(sum(message_count), 0) FROM sessions").fetchone()[0]
    lost = max(0, expected - distinct) + max(0, expected - int(counted))
    duplicated = (int(stored) - int(distinct)) + max(0, int(counted) - expected)
    return lost, duplicated


def _spin(seconds: float, out: int) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        pass
    os.write(out, str(time.process_time() - cpu).encode())


def available_cores(seconds: float = 1.0) -> float:
    """How many cores this machine gives now: one busy loop per core for `seconds`,
    the CPU seconds they got over the wall seconds."""
    readers = []
    for _ in range(os.cpu_count() or 1):
        read, write = os.pipe()
        if os.fork() == 0:
            _spin(seconds, write)
            os._exit(0)
        os.close(write)
        readers.append(read)
    got = 0.0
    for read in readers:
        got += float(os.read(read, 64) or b"0")
        os.close(read)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    return got / seconds


def _ticks(pid: int) -> tuple[int, int]:
    """CPU ticks a process spent (user + system) and those of its children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def server_cpu(db: str) -> float | None:
    """CPU seconds the PostgreSQL server behind `db` has spent so far (postmaster, its
    live processes and those that have ended), when it runs on this machine; else None."""
    if db.startswith("sqlite"):
        return None
    from subrosa.archive.connection import open_archive

    try:
        with open_archive(db) as conn:
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"
            ).fetchone()
        status = Path(f"/proc/{row[0]}/status").read_text()
        postmaster = int(status.split("PPid:")[1].split()[0])
        own, reaped = _ticks(postmaster)
        total = own + reaped
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:  # a backend may end between the listing and the read
                    stat = (entry / "stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                        total += _ticks(int(entry.name))[0]
                except OSError:
                    continue
    except (OSError, TypeError, IndexError, ValueError):
        return None
    return total / os.sysconf("SC_CLK_TCK")


def run(
    db: str, files: list[str], processes: int, work: Path, expected: int, turn: int, rtt: float
) -> dict[str, Any]:
    from subrosa.archive.connection import open_archive

    with open_archive(db):
        pass  # created and migrated before the clock starts
    server_before = server_cpu(db)
    shares = [files[p::processes] for p in range(processes)]
    outs = [str(work / f"out-{processes}-{p}.json") for p in range(processes)]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--turn",
                str(turn),
                "--rtt",
                str(rtt),
                "--worker",
                db,
                out,
                *share,
            ],
            env=env,
            cwd=work,
        )
        for share, out in zip(shares, outs, strict=True)
    ]
    while not all(Path(out + ".ready").exists() for out in outs):
        time.sleep(0.01)
    start = time.perf_counter()
    for out in outs:
        Path(out + ".go").touch()
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"a worker failed ({proc.returncode})")
    wall = time.perf_counter() - start
    time.sleep(0.3)  # the server reaps the workers' backends
    server_after = server_cpu(db)
    results = [json.loads(Path(out).read_text()) for out in outs]
    times = [t for r in results for t in r["times"]]
    client = sum(r["cpu"] for r in results)
    server = (
        server_after - server_before
        if server_after is not None and server_before is not None
        else None
    )
    lost, duplicated = check(db, expected)
    ordered = sorted(times)
    return {
        "rate": expected / wall,
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "lost": lost,
        "duplicated": duplicated,
        "wall": wall,
        "client_us": client / expected * 1e6,
        "server_us": None if server is None else server / expected * 1e6,
    }


def new_pg_database(admin: str, name: str) -> str:
    import psycopg

    from subrosa.pg import conninfo

    with psycopg.connect(conninfo(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, query = admin.partition("?")
    return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", help="an admin URL of a PostgreSQL server (databases are made)")
    parser.add_argument(
        "--turn",
        type=int,
        default=0,
        help="ingest each transcript as it grows, this many lines at a time (as the hooks"
        " do after each turn of a live session); default: each transcript whole",
    )
    parser.add_argument(
        "--rtt",
        type=float,
        default=0.0,
        help="milliseconds each statement to the PostgreSQL server waits more, as over a"
        " network (the server here is on this machine): default 0",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        db, out, *files = args.worker
        worker(db, files, out, args.turn, args.rtt / 1e3)
        return
    with tempfile.TemporaryDirectory(prefix="subrosa-concurrency-") as temp:
        work = Path(temp)
        os.environ["HOME"] = str(work)
        os.environ["XDG_DATA_HOME"] = str(work / "data")
        os.environ["CLAUDE_CONFIG_DIR"] = str(work / "claude")
        folder = work / "transcripts"
        folder.mkdir()
        expected = write_sessions(folder)
        files = sorted(str(p) for p in folder.glob("*.jsonl"))
        cores = available_cores()
        how = f"ingested {args.turn} lines at a time" if args.turn else "each ingested whole"
        if args.rtt:
            start = time.perf_counter()
            for _ in range(100):
                time.sleep(args.rtt / 1e3)
            slept = (time.perf_counter() - start) / 100 * 1e3
            how += (
                f"; each statement to the PostgreSQL server waits {args.rtt:g} ms more"
                f" (a sleep of {slept:.2f} ms here)"
            )
        print(
            f"\n{SESSIONS} sessions ({how}), {expected:,} messages, one project;"
            f" {cores:.2f} of {os.cpu_count()} cores available to a busy loop\n"
        )
        print(
            "| engine | processes | messages/s | vs 1 | batch p50 / p95 | lost | duplicated"
            " | CPU µs per message: client / server | cores busy |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        engines = [("SQLite", None), *([("PostgreSQL", args.pg)] if args.pg else [])]
        ceilings = []
        for engine, admin in engines:
            base = 0.0
            busy_at_1 = 0.0
            for processes in PROCESSES:
                if admin is None:
                    db = f"sqlite:///{work}/sqlite-{processes}.db"
                else:
                    db = new_pg_database(admin, f"subrosa_concurrency_{processes}")
                r = run(db, files, processes, work, expected, args.turn, args.rtt if admin else 0.0)
                base = base or r["rate"]
                server = "-" if r["server_us"] is None else f"{r['server_us']:.0f}"
                cpu_us = r["client_us"] + (r["server_us"] or 0.0)
                busy = f"{cpu_us * r['rate'] / 1e6:.2f}"
                busy_at_1 = busy_at_1 or cpu_us * r["rate"] / 1e6
                print(
                    f"| {engine} | {processes} | {r['rate']:,.0f} | {r['rate'] / base:.2f}x |"
                    f" {r['p50'] * 1e3:.0f} / {r['p95'] * 1e3:.0f} ms | {r['lost']} |"
                    f" {r['duplicated']} | {r['client_us']:.0f} / {server} | {busy} |",
                    flush=True,
                )
            if admin is not None:
                ceilings.append(
                    f"{engine}: one process keeps {busy_at_1:.2f} cores busy; with"
                    f" {cores:.2f} available, no number of processes can go past"
                    f" {cores / busy_at_1:.2f}x (on {os.cpu_count()} idle cores:"
                    f" {(os.cpu_count() or 1) / busy_at_1:.2f}x)"
                )
        for line in ceilings:
            print(f"\n{line}")


if __name__ == "__main__":
    main()
