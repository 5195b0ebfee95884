"""Sealed-chunk postings on a server (subrosa.archive.pgpostings; docs/team.md, "Round
eleven"), measured against the GIN index they stand in for, in the same run.

Each query of bench/transcripts.py's classes is searched in this process three ways in
turn, each the best of --runs: on SQLite, on the server with the postings, and on the
server with them left out (the probes through the GIN index, as before them: the search's
count of sealed chunks taken as none). Results are compared: the two server columns must
find the same messages in the same order (the run stops if not). It prints, per class,
the p50 of each and the ratios to SQLite's p50 of the same run.

    .venv/bin/python bench/pg_postings.py --pg URL --sqlite bench/out/work-1000mb/subrosa.db

The server's archive must be at the current revision with its complete chunks sealed
(`subrosa db upgrade`, or an ingest, seals them); the SQLite archive the same corpus's
(bench/transcripts.py's --out holds both after a run with --pg).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transcripts import CLASSES, pct  # noqa: E402

from subrosa.archive import pgsearch  # noqa: E402
from subrosa.archive.connection import connect  # noqa: E402
from subrosa.archive.pgstore import open_server  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402


def timed(conn: Any, query: str, runs: int) -> tuple[float, Any]:
    best, results = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        results = search(conn, query, Filters(), 10)
        best = min(best, time.perf_counter() - start)
    return best, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", required=True, help="the server archive's URL")
    parser.add_argument("--sqlite", required=True, type=Path, help="the SQLite archive")
    parser.add_argument("--runs", type=int, default=3, help="best of this many (default 3)")
    args = parser.parse_args()
    real = pgsearch.newest_id

    def without(conn: Any) -> int:
        newest = real(conn)
        conn.sealed = 0
        return newest

    lite = connect(str(args.sqlite))
    times: dict[str, dict[str, list[float]]] = {}
    with open_server(args.pg) as conn:
        real(conn)
        print(f"ids in the postings: {conn.sealed}", file=sys.stderr)
        for cls, queries in CLASSES.items():
            for query in queries:
                sqlite_s, _ = timed(lite, query, args.runs)
                pgsearch.newest_id = real
                with_s, found = timed(conn, query, args.runs)
                pgsearch.newest_id = without
                without_s, expected = timed(conn, query, args.runs)
                pgsearch.newest_id = real
                if found != expected:
                    sys.exit(f"{query!r}: the postings found other messages than the index")
                row = times.setdefault(cls, {"sqlite": [], "with": [], "without": []})
                row["sqlite"].append(sqlite_s)
                row["with"].append(with_s)
                row["without"].append(without_s)
    lite.close()
    print(
        "| class | SQLite p50 | server, GIN only: p50 (÷ SQLite) | server, postings: p50"
        " (÷ SQLite) | postings ÷ GIN only (p50; median of the queries) |"
    )
    print("| --- | --- | --- | --- | --- |")
    for cls, row in times.items():
        s, w, o = (pct(row[k], 0.5) for k in ("sqlite", "with", "without"))
        each = sorted(a / b for a, b in zip(row["with"], row["without"], strict=True))
        print(
            f"| {cls} ({len(row['with'])}) | {s * 1e3:.1f} ms | {o * 1e3:.1f} ms ({o / s:.2f}x)"
            f" | {w * 1e3:.1f} ms ({w / s:.2f}x) | {w / o:.2f}x; {pct(each, 0.5):.2f}x |"
        )


if __name__ == "__main__":
    main()
