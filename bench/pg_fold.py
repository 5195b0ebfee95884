"""What folding diacritics costs a server's writes (migration 0021, issue 16).

    .venv/bin/python bench/pg_fold.py --pg URL --sqlite PATH [--rows 50000] [--rounds 5]

Since 0021 a server stores each message's words as `subrosa_words(text, terms)`: 0007's
vector, of the text and terms folded (subrosa.fold: `subrosa_fold(text)`) when the row
holds a letter or mark the fold changes. Every ingest computes it once a
row. This script copies the newest --rows messages (text and terms) of a SQLite archive
PATH into a temporary table of the server URL, makes the migration's functions there
(in a schema of its own, dropped at the end), and computes, in turn for --rounds rounds,
0007's vector of every row (the baseline) and 0021's; then the same with every row
given one accented word (`café`: each row takes the folding path, the worst case: a
user who writes French or German in every message). It prints the median time of each,
its ratio to the baseline of the same rounds, and the share of rows that fold.

The vector is a part of what an ingested row costs the server (the GIN and range
indexes' entries, the lexicon's trigger, the postings, the row itself): the ratio here
is an upper bound of the ingest's. Nothing else on the server is touched.
"""

from __future__ import annotations

import argparse
import importlib.util
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _table import print_table  # noqa: E402

from subrosa.pg import connect  # noqa: E402

SCHEMA = "subrosa_fold_bench"


def _migration() -> Any:
    path = HERE.parent / "migrations" / "versions" / "0021_pg_folded_words.py"
    spec = importlib.util.spec_from_file_location("m0021", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path, count: int) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT text, terms FROM messages ORDER BY id DESC LIMIT ?", (count,))
        # A server's text holds no NUL (subrosa.archive.pgstore drops them as it writes).
        return [(t.replace("\0", ""), terms and terms.replace("\0", "")) for t, terms in rows]
    finally:
        conn.close()


def _timed(conn: Any, sql: str) -> float:
    start = time.perf_counter()
    conn.execute(sql).fetchall()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", required=True, help="a server's URL (a scratch schema is used)")
    parser.add_argument("--sqlite", required=True, type=Path, help="a SQLite archive to copy")
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    made = _migration()
    rows = _rows(args.sqlite, args.rows)
    conn = connect(args.pg)
    try:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(f"SET search_path = {SCHEMA}, public")
        for statement in (made.FOLD, made.words(SCHEMA)):
            conn.execute(statement)
        conn.execute("CREATE TABLE plain (text text, terms text)")
        conn.execute("CREATE TABLE accented (text text, terms text)")
        for start in range(0, len(rows), 1000):
            batch = rows[start : start + 1000]
            conn.execute(
                "INSERT INTO plain SELECT * FROM unnest(?::text[], ?::text[])",
                [[t for t, _ in batch], [terms for _, terms in batch]],
            )
        conn.execute("INSERT INTO accented SELECT 'café ' || text, terms FROM plain")
        conn.execute("ANALYZE plain")
        conn.execute("ANALYZE accented")
        old = made.OLD_WORDS
        figures: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for table in ("plain", "accented"):
                for name, expression in (("0007", old), ("0021", made.NEW_WORDS)):
                    sql = f"SELECT sum(length({expression})) FROM {table}"
                    figures.setdefault((table, name), []).append(_timed(conn, sql))
        folding = conn.execute(
            f"SELECT count(*) FILTER (WHERE subrosa_words(text, terms) <> ({old})) FROM plain"
        ).fetchall()[0][0]
    finally:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.close()
    table_rows = []
    for table, label in (("plain", "the archive's rows"), ("accented", "every row accented")):
        base = statistics.median(figures[table, "0007"])
        new = statistics.median(figures[table, "0021"])
        table_rows.append(
            (
                f"vector of {len(rows):,} rows: {label}",
                f"{new * 1000:.0f} ms",
                f"{base * 1000:.0f} ms (0007's vector)",
                f"{new / base:.2f}x",
                "informational",
            )
        )
    print_table(table_rows)
    print(f"rows whose vector the fold changes: {folding:,} of {len(rows):,}")


if __name__ == "__main__":
    main()
