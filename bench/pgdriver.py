"""Whole `subrosa search` processes on PostgreSQL through libpq (subrosa.libpq, the
fast path's default) and through psycopg (SUBROSA_PG_DRIVER=psycopg), against the same
search on an SQLite file, interleaved query by query so that a busy machine slows all
three alike.

    python bench/pgdriver.py --pg URL --sqlite FILE [--runs 5]

The archives must hold the same corpus (bench/transcripts.py makes both). Read-only:
every search is `--transcripts --all-projects` (no fact is searched, so no hit is
written), so it may run against a server the bench must not change. Prints, by query
class (bench/transcripts.py's queries), the median of each query's median process
time, and the ratios: libpq / psycopg and each PostgreSQL driver / SQLite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transcripts import CLASSES  # noqa: E402

SUBROSA = [str(Path(sys.executable).with_name("subrosa"))]


def _time(env: dict[str, str], query: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [*SUBROSA, "search", "--transcripts", "--all-projects", query],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", required=True, help="the PostgreSQL archive's URL")
    parser.add_argument("--sqlite", required=True, type=Path, help="the SQLite archive")
    parser.add_argument("--runs", type=int, default=5, help="processes per query and engine")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUBROSA_")}
    # As an installed subrosa runs: its modules compiled once, not on every start.
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "subrosa")], check=True
    )
    work = args.sqlite.parent  # as bench/transcripts.py sets it: nothing waits to be ingested
    base |= {"HOME": str(work), "XDG_DATA_HOME": str(work / "data")}
    base["SUBROSA_MEMORY_DIR"] = str(work / "memory")
    engines = {
        "SQLite": {**base, "SUBROSA_DB": str(args.sqlite)},
        "libpq": {**base, "SUBROSA_DB": args.pg, "SUBROSA_PG_DRIVER": "libpq"},
        "psycopg": {**base, "SUBROSA_DB": args.pg, "SUBROSA_PG_DRIVER": "psycopg"},
    }
    print(f"load average at the start: {os.getloadavg()[0]:.2f}\n")
    print("| class | SQLite p50 | libpq p50 | psycopg p50 | libpq / psycopg | libpq / SQLite |")
    print("| --- | --- | --- | --- | --- | --- |")
    for cls, queries in CLASSES.items():
        medians: dict[str, list[float]] = {name: [] for name in engines}
        for query in queries:
            runs: dict[str, list[float]] = {name: [] for name in engines}
            for env in engines.values():
                _time(env, query)  # warm the caches the others warmed
            for _ in range(args.runs):
                for name, env in engines.items():
                    runs[name].append(_time(env, query))
            for name in engines:
                medians[name].append(statistics.median(runs[name]))
        p50 = {name: statistics.median(values) for name, values in medians.items()}
        worst = max(
            lib / lite for lib, lite in zip(medians["libpq"], medians["SQLite"], strict=True)
        )
        print(
            f"| {cls} ({len(queries)}) | {p50['SQLite'] * 1e3:.0f} ms | {p50['libpq'] * 1e3:.0f} ms"
            f" | {p50['psycopg'] * 1e3:.0f} ms | {p50['libpq'] / p50['psycopg']:.2f}x"
            f" | {p50['libpq'] / p50['SQLite']:.2f}x (worst query {worst:.2f}x) |"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
