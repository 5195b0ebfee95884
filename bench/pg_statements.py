"""Where a search's time goes on a server: each statement it sends, timed (issue 16).

    .venv/bin/python bench/pg_statements.py --pg URL --sqlite PATH [--classes common,"some words"]

URL and PATH are the two archives `bench/transcripts.py --size N --pg URL` leaves (the
server's, and SQLite's under --out). Each query of the classes named is searched as the
bench's in-process figure does (`subrosa.recall.search`, every project, limit 10), on
SQLite and on the server (psycopg, the MCP server's driver), the best of --runs. For the
server's best run it prints every statement in the order sent: the time from sending it
to its rows being in the client (subrosa.pg.Connection._run: the round trip, the
server's planning and execution, psycopg reading the result), the number of
parameters, and the SQL's start; then the search's whole time, the statements' sum and
the rest (the client's ranking, reading rows into Python values, psycopg's own work).
SQLite's whole time of the same query, best of --runs, is the baseline beside it.
With --explain, each statement of that run is then asked again with EXPLAIN (ANALYZE)
on a second connection, in the same order and under the same planner settings, and
the server's planning and execution times are printed beside it (warm: the search
ran it just before).

Nothing is changed on either archive. The figures are of this process on a shared
machine: compare the two engines' columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transcripts import CLASSES  # noqa: E402

from subrosa import pg  # noqa: E402
from subrosa.archive.connection import connect  # noqa: E402
from subrosa.archive.pgstore import open_server  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

Statement = tuple[float, str, Any]


def traced() -> list[Statement]:
    """Every statement the server connections run from now on, appended as it ends."""
    log: list[Statement] = []
    run, simple = pg.Connection._run, pg.Connection._simple

    def timed_run(self: pg.Connection, sql: str, params: Any) -> Any:
        start = time.perf_counter()
        result = run(self, sql, params)
        log.append((time.perf_counter() - start, sql, params or []))
        return result

    def timed_simple(self: pg.Connection, sql: str) -> None:
        start = time.perf_counter()
        simple(self, sql)
        log.append((time.perf_counter() - start, sql, None))

    pg.Connection._run = timed_run  # type: ignore[method-assign]
    pg.Connection._simple = timed_simple  # type: ignore[method-assign]
    return log


def best(conn: Any, query: str, runs: int, log: list[Statement]) -> tuple[float, list[Statement]]:
    """The fastest of `runs` searches of `query` on `conn`, and its statements."""
    fastest, statements = float("inf"), []
    for _ in range(runs):
        log.clear()
        start = time.perf_counter()
        search(conn, query, Filters(), 10)
        took = time.perf_counter() - start
        if took < fastest:
            fastest, statements = took, list(log)
    return fastest, statements


def explained(raw: Any, statements: list[Statement]) -> list[str]:
    """The server's planning and execution times of each statement, asked again in
    order on `raw` (settings run as they are)."""
    out = []
    for _, sql, params in statements:
        if params is None:
            raw.execute(sql)
            out.append("")
            continue
        plan = raw.execute(
            "EXPLAIN (ANALYZE, SUMMARY, FORMAT JSON) " + pg._native(sql), params or None
        ).fetchone()[0][0]
        out.append(f"plan {plan['Planning Time']:5.2f} run {plan['Execution Time']:6.2f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", required=True, help="the server archive's URL")
    parser.add_argument("--sqlite", required=True, type=Path, help="the SQLite archive")
    parser.add_argument("--classes", default="common,some words", help="comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="best of this many (default 5)")
    parser.add_argument("--width", type=int, default=110, help="characters of SQL shown")
    parser.add_argument("--explain", action="store_true", help="the server's plan and run times")
    args = parser.parse_args()
    log = traced()
    lite = connect(str(args.sqlite))
    other = pg.connect(args.pg) if args.explain else None
    with open_server(args.pg) as conn:
        for cls in args.classes.split(","):
            for query in CLASSES[cls]:
                sqlite_s, _ = best(lite, query, args.runs, log)
                server_s, statements = best(conn, query, args.runs, log)
                in_sql = sum(took for took, _, _ in statements)
                print(
                    f"\n{cls}: {query!r}: server {server_s * 1e3:.1f} ms (statements"
                    f" {in_sql * 1e3:.1f} ms, {len(statements)} of them; the rest"
                    f" {(server_s - in_sql) * 1e3:.1f} ms), SQLite {sqlite_s * 1e3:.1f} ms:"
                    f" {server_s / sqlite_s:.2f}x"
                )
                server = explained(other.raw, statements) if other else [""] * len(statements)
                for (took, sql, params), times in zip(statements, server, strict=True):
                    shown = " ".join(sql.split())[: args.width]
                    count = len(params or ())
                    print(f"  {took * 1e3:6.2f} ms  {times:22} [{count}] {shown}")
    if other is not None:
        other.close()
    lite.close()


if __name__ == "__main__":
    main()
