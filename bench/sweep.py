"""Odd queries: the shapes people type that bench/transcripts.py's classes leave out.

    python bench/sweep.py --archive bench/out/work-1000mb/subrosa.db   # after transcripts.py
    python bench/sweep.py --archive PATH --whole 10                    # and 10 as processes

bench/transcripts.py times 75 fixed queries in seven classes. This script asks a wider
set of shapes of the archive it left behind (one-character prefixes, folded ones, long
prefixes of a common word, quoted prefixes, phrases of three common words or two
phrases together, identifiers typed four ways, questions in words, numbers, CJK, a
misspelt word), each over every project, in one project (the oldest), by session, for
one role, since a date and with `--limit 200`: the slowest first, each against a rare
word's search in the same run (the yardstick: a lookup of one short doclist). It found
`ä*` (merged over the whole index as `a*` was before _one_letter(): 412 ms at 1 GB) and
`deploy*` (a long prefix of a word in 83 % of the bench's messages: docs/search.md,
"Still over 150 ms").

In-process (`subrosa.recall.search`, the best of --rounds); with --whole N the N
slowest are asked again as whole `subrosa search` processes (the median of three), the
figure issue 12's 150 ms is about.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table import print_table  # noqa: E402
from transcripts import run_measured  # noqa: E402

from subrosa.archive.connection import connect  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

YARDSTICK = "zanzibarite"  # a rare word of bench/gen_transcripts.py
QUERIES = [
    # one character, ASCII and folded by the tokenizer (é is e), quoted
    "t*",
    "é*",
    "Ä*",
    '"t"*',
    # prefixes of a common word (the index holds two- and three-letter prefixes only)
    "deploy*",
    "depend*",
    "check*",
    "kubernetes*",
    '"deploy th"*',
    # phrases of common words, rare as a whole
    '"deploy dependency check"',
    '"it deploy" "to a"',
    't* "of the"',
    # identifiers typed four ways, and a misspelt word
    "deployCheck",
    "deploy_check",
    "deploy-check",
    "deploy.check",
    "kubernetse",
    # questions in words, numbers, CJK
    "how do I fix the flaky test",
    "why did the deploy fail",
    "2026*",
    "東京",
]


class Scope(NamedTuple):
    """Where a query is asked: in-process (filters, keywords, limit) and as the command
    line says it (flags)."""

    name: str
    filters: Filters
    keywords: dict[str, bool]
    limit: int
    flags: list[str]


def scopes(project: str) -> list[Scope]:
    every = ["--all-projects"]
    return [
        Scope("every project", Filters(), {}, 10, every),
        Scope("one project", Filters(transcript_project=project), {}, 10, ["--project", project]),
        Scope("--sessions", Filters(), {"sessions": True}, 10, [*every, "--sessions"]),
        Scope(
            "--role assistant", Filters(role="assistant"), {}, 10, [*every, "--role", "assistant"]
        ),
        Scope(
            "--since",
            Filters(since="2026-06-01 00:00:00"),
            {},
            10,
            [*every, "--since", "2026-06-01"],
        ),
        Scope("--limit 200", Filters(), {}, 200, [*every, "--limit", "200"]),
    ]


def timed(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    keywords: dict[str, bool],
    limit: int,
    rounds: int,
) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        search(conn, query, filters, limit, **keywords)
        best = min(best, time.perf_counter() - start)
    return best


def whole(archive: Path, query: str, scope: Scope) -> float:
    """The median of three `subrosa search` processes, in ms."""
    env = {**os.environ, "SUBROSA_DB": str(archive), "HOME": str(archive.parent)}
    subrosa = str(Path(sys.executable).parent / "subrosa")
    args = [subrosa, "search", *scope.flags, "--", query]
    return statistics.median(run_measured(args, env)[0] for _ in range(3)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--archive",
        type=Path,
        required=True,
        help="a subrosa.db that bench/transcripts.py ingested",
    )
    parser.add_argument("--rounds", type=int, default=3, help="in-process runs a query (best)")
    parser.add_argument(
        "--whole", type=int, default=0, help="ask the N slowest again as whole processes"
    )
    parser.add_argument("--top", type=int, default=25, help="rows printed")
    args = parser.parse_args()
    if not args.archive.is_file():
        raise SystemExit(f"{args.archive}: no such archive (run bench/transcripts.py first).")
    conn = connect(args.archive)
    project = conn.execute(
        "SELECT s.project FROM sessions s JOIN messages m ON m.session_pk = s.id"
        " GROUP BY s.project ORDER BY max(m.id) LIMIT 1"
    ).fetchone()[0]
    messages = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
    found = []
    yardsticks = []
    for query in QUERIES:
        for scope in scopes(project):
            asked = (scope.filters, scope.keywords, scope.limit, args.rounds)
            yardsticks.append(timed(conn, YARDSTICK, *asked))
            found.append((timed(conn, query, *asked), query, scope))
    yardstick = statistics.median(yardsticks)
    found.sort(key=lambda item: item[0], reverse=True)
    print(
        f"{len(found)} searches ({len(QUERIES)} queries x 6 scopes) of {args.archive}"
        f" ({messages:,} messages); yardstick: `{YARDSTICK}` in the same scopes,"
        f" median {yardstick * 1000:.1f} ms in-process\n"
    )
    rows = []
    for rank, (seconds, query, scope) in enumerate(found[: args.top]):
        process = f"{whole(args.archive, query, scope):.0f} ms" if rank < args.whole else "-"
        rows.append(
            (
                f"`{query}` {scope.name}",
                f"{seconds * 1000:.1f} ms",
                f"{yardstick * 1000:.1f} ms",
                f"{seconds / yardstick:.1f}x",
                process,
                "<= 150 ms whole process",
            )
        )
    header = ("search", "in-process", "yardstick (same run)", "ratio", "whole process", "target")
    print_table(rows, header)
    if args.whole:
        over = [row for row in rows[: args.whole] if float(row[4].split()[0]) > 150]
        print(f"\nover 150 ms as a whole process: {len(over)} of the {args.whole} slowest")


if __name__ == "__main__":
    main()
