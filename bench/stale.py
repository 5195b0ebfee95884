"""Staleness review speed, each figure against a baseline from the same run.

    python bench/stale.py [--facts 10000] [--runs 7]

1. The pure rules (`staleness.assess`) over N hook + leaf pairs vs one regex pass
   tokenizing the same text (report the ratio; target >= 10,000 facts/s).
2. `subrosa stale --json` over N registered facts (a tenth of them with a terminal
   hook, so their leaf is read from disk) as a whole process vs `subrosa fact list
   --json` over the same database (target <= 2x: the review costs little more than
   listing the facts).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from _table import print_table  # bench/ is on sys.path when run as a script

TODAY = date(2026, 11, 29)


def _p50(command: list[str], runs: int, env: dict[str, str]) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _fact(i: int) -> tuple[str, str]:
    """A hook and a leaf body: every 10th finished, every 7th dated, the rest plain."""
    hook = f"Fact {i} about the build pipeline and its cache"
    body = f"# Fact {i}\n\nThe build uses a cache keyed by the lockfile.\n\nWhy: speed."
    if i % 10 == 0:
        hook += f": Done 2026-0{1 + i % 9}-15"
        body = f"# Fact {i}\n\nStatus: Closed\n\n## Outcome\n\nCompleted, merged."
    elif i % 7 == 0:
        hook += f"; next check 2026-{1 + i % 12:02d}-01"
    return hook, body


def bench_rules(count: int) -> tuple[float, float]:
    from subrosa.memory.staleness import assess

    pairs = [_fact(i) for i in range(count)]
    word = re.compile(r"\w+")
    start = time.perf_counter()
    for hook, body in pairs:
        word.findall(hook)
        word.findall(body)
    baseline = time.perf_counter() - start
    start = time.perf_counter()
    for hook, body in pairs:
        assess(hook=hook, leaf_text=body, pinned=False, hits=1, last_changed=TODAY, today=TODAY)
    return baseline, time.perf_counter() - start


def bench_cli(count: int, runs: int) -> tuple[float, float]:
    from subrosa.db import dispose_all, open_database
    from subrosa.memory import store
    from subrosa.memory.leaf import parse_leaf

    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory"
        memory.mkdir()
        engine = open_database(f"sqlite:///{tmp}/bench.db")
        project = store.Project(memory)
        with store.mutation(engine, project) as session:
            registrar = store.Registrar(session, project)
            for i in range(count):
                hook, body = _fact(i)
                path = memory / f"fact_{i:05d}.md"
                path.write_text(
                    f"---\nname: fact-{i:05d}\ndescription: Fact {i}.\n"
                    f"metadata:\n  type: project\n---\n\n{body}\n",
                    encoding="utf-8",
                )
                registrar.upsert(parse_leaf(path), hook=hook)
        dispose_all()
        env = dict(os.environ, SUBROSA_MEMORY_DIR=str(memory), SUBROSA_DB=f"{tmp}/bench.db")
        base = [sys.executable, "-m", "subrosa"]
        listing = _p50([*base, "fact", "list", "--json"], runs, env)
        review = _p50([*base, "stale", "--today", TODAY.isoformat(), "--json"], runs, env)
    return listing, review


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    tokenize, rules = bench_rules(args.facts)
    listing, review = bench_cli(args.facts, args.runs)
    rows = [
        (
            f"assess() on {args.facts:,} facts",
            f"{rules:.2f} s ({args.facts / rules:,.0f} facts/s)",
            f"regex tokenize same text: {tokenize:.3f} s",
            f"{rules / tokenize:.1f}x",
            ">= 10,000 facts/s",
        ),
        (
            f"`subrosa stale --json`, {args.facts:,} facts (p50)",
            f"{review:.2f} s",
            f"`subrosa fact list --json`: {listing:.2f} s",
            f"{review / listing:.2f}x",
            "<= 2x",
        ),
    ]
    print_table(rows)


if __name__ == "__main__":
    main()
