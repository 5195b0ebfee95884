"""Project-scoped search when projects' sessions interleave, as hooks leave them.

    python bench/projects.py --archive bench/out/work-1000mb/subrosa.db
    python bench/projects.py --archive DB --pg URL    # and that server's copy too

`subrosa search` looks in the project it runs in by default. bench/transcripts.py
ingests its corpus project by project, so each project's messages are one range of ids;
sessions that end in turn (each ingested as it ends) interleave instead. This takes an
archive bench/transcripts.py made (a copy of it: the SQLite file is copied next to
itself first; a PostgreSQL database named with --pg is changed in place, so name a
copy: `CREATE DATABASE x TEMPLATE y`) and gives each session to one of four projects at
random (1 %, 10 %, 40 % and the rest of the sessions; the same sessions on both
engines), then times bench/transcripts.py's queries in each of the three smaller
projects, in-process, three ways in turn query by query:
  - before: each project searched as a large one is (search.SPAN_SHARE = 0): each
    match tested for its project, newest first, within the project's first and last
    id, as search did before message_runs (on a server, a word sorted from the index
    is now read range by range even so: compare with an older commit's run for that);
  - after: as subrosa searches (the project's runs and spans, message_runs);
  - every project (`--all-projects`): the baseline the project's search is held to.
The best of three runs of each query; p50 and max over each class; with --pg, each
p50 of the server's table against SQLite's (PostgreSQL ÷ SQLite). Whole process: the
same queries as `subrosa search --project P` against `--all-projects`, median of three.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from transcripts import CLASSES, connect, pct, run_measured  # noqa: E402

from subrosa.archive import pgsearch  # noqa: E402
from subrosa.archive import search as archive_search  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

PROJECTS = (("side", 0.01), ("mid", 0.11), ("big", 0.51))
SPAN_SHARE = archive_search.SPAN_SHARE


def project_of(session_id: str) -> str:
    """The project a session is given: the same on every run and engine."""
    draw = int(hashlib.sha1(session_id.encode()).hexdigest()[:8], 16) / 2**32
    return next((name for name, below in PROJECTS if draw < below), "rest")


def reassign(conn: Any) -> None:
    for pk, session_id in conn.execute("SELECT id, session_id FROM sessions").fetchall():
        conn.execute("UPDATE sessions SET project = ? WHERE id = ?", (project_of(session_id), pk))


def timed(conn: Any, query: str, filters: Filters, share: float) -> float:
    archive_search.SPAN_SHARE = pgsearch.SPAN_SHARE = share
    try:
        start = time.perf_counter()
        search(conn, query, filters, 10)
        return time.perf_counter() - start
    finally:
        archive_search.SPAN_SHARE = pgsearch.SPAN_SHARE = SPAN_SHARE


P50 = dict[tuple[str, str], dict[str, float]]  # (project, class) -> way -> p50 in ms


def in_process(engine: str, conn: Any) -> P50:
    """The in-process table of one engine; its p50s, for compared()."""
    found: P50 = {}
    print(
        f"\n### {engine}, in-process\n\n| project (share of the messages) | class"
        " | before p50 / max | after p50 / max | after ÷ before (p50) | every project"
        " p50 / max | after ÷ every project (p50) |\n| --- | --- | --- | --- | --- | --- | --- |",
        flush=True,
    )
    for name, _ in PROJECTS:
        scoped = archive_search.for_project(conn, Filters(transcript_project=name))
        assert scoped is not None and scoped.runs is not None
        for cls, queries in CLASSES.items():
            ways: dict[str, list[float]] = {"before": [], "after": [], "every": []}
            for query in queries:
                best = dict.fromkeys(ways, float("inf"))
                for _ in range(3):
                    best["before"] = min(
                        best["before"], timed(conn, query, Filters(transcript_project=name), 0.0)
                    )
                    best["after"] = min(
                        best["after"],
                        timed(conn, query, Filters(transcript_project=name), SPAN_SHARE),
                    )
                    best["every"] = min(best["every"], timed(conn, query, Filters(), SPAN_SHARE))
                for way, value in best.items():
                    ways[way].append(value)
            p50 = {way: statistics.median(values) * 1e3 for way, values in ways.items()}
            found[name, cls] = p50
            worst = {way: max(values) * 1e3 for way, values in ways.items()}
            print(
                f"| {name} ({scoped.runs.share:.1%}, {len(scoped.runs.spans)} spans) | {cls}"
                f" | {p50['before']:.1f} / {worst['before']:.0f} ms"
                f" | {p50['after']:.1f} / {worst['after']:.0f} ms"
                f" | {p50['after'] / p50['before']:.2f}x"
                f" | {p50['every']:.1f} / {worst['every']:.0f} ms"
                f" | {p50['after'] / p50['every']:.2f}x |",
                flush=True,
            )
    return found


def compared(sqlite: P50, pg: P50) -> None:
    """PostgreSQL ÷ SQLite at p50, each way, from the same run's tables."""
    print(
        "\n### PostgreSQL ÷ SQLite, in-process p50 (same run)\n\n| project | class | before"
        " | after | every project |\n| --- | --- | --- | --- | --- |"
    )
    for (name, cls), mine in sqlite.items():
        theirs = pg[name, cls]
        ratios = " | ".join(
            f"{theirs[way] / mine[way]:.2f}x" for way in ("before", "after", "every")
        )
        print(f"| {name} | {cls} | {ratios} |", flush=True)


def whole_process(engine: str, env: dict[str, str]) -> None:
    subrosa = [str(Path(sys.executable).parent / "subrosa")]
    print(
        f"\n### {engine}, whole process (median of three)\n\n| project | class"
        " | p50 / p95 / max | every project p50 / p95 / max |\n| --- | --- | --- | --- |",
        flush=True,
    )
    for name, _ in PROJECTS:
        for cls, queries in CLASSES.items():
            mine: list[float] = []
            every: list[float] = []
            for query in queries:
                for scope, out in ((["--project", name], mine), (["--all-projects"], every)):
                    runs = [
                        run_measured([*subrosa, "search", *scope, query], env)[0] for _ in range(3)
                    ]
                    out.append(statistics.median(runs))
            print(
                f"| {name} | {cls} | {pct(mine, 0.5) * 1e3:.0f} / {pct(mine, 0.95) * 1e3:.0f}"
                f" / {max(mine) * 1e3:.0f} ms | {pct(every, 0.5) * 1e3:.0f} /"
                f" {pct(every, 0.95) * 1e3:.0f} / {max(every) * 1e3:.0f} ms |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, required=True, help="bench/transcripts.py's DB")
    parser.add_argument("--pg", help="a PostgreSQL database holding the same archive (changed)")
    parser.add_argument("--no-whole", action="store_true", help="in-process figures only")
    args = parser.parse_args()
    copy = args.archive.with_name("projects-interleaved.db")
    if not copy.exists():
        shutil.copy(args.archive, copy)
    sqlite_conn = connect(copy)
    reassign(sqlite_conn)
    sqlite_conn.commit()
    env = {**os.environ, "SUBROSA_DB": str(copy), "HOME": str(copy.parent)}
    print(f"## Projects interleaved: {copy}")
    sqlite_p50 = in_process("SQLite", sqlite_conn)
    if not args.no_whole:
        whole_process("SQLite", env)
    if args.pg:
        from subrosa.archive.pgstore import open_server

        with open_server(args.pg) as conn:
            conn.execute("BEGIN")
            reassign(conn)
            conn.execute("COMMIT")
            conn.execute("ANALYZE sessions")
            compared(sqlite_p50, in_process("PostgreSQL", conn))
        if not args.no_whole:
            whole_process("PostgreSQL", {**env, "SUBROSA_DB": args.pg})


if __name__ == "__main__":
    main()
