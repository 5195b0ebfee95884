"""Foundation speed: CLI start-up and bulk upsert, each against a baseline from the same run.

    python bench/cli.py [--leaves 10000] [--runs 15]

1. `subrosa --help` as a whole process vs `python -c "import click"` (target <= 2x:
   nothing heavy imported at module top).
2. `subrosa check` as a whole process vs the witness script it runs,
   `python skills/memory-compact/check_memory.py`, on the same memory dir (target <= 1.5x:
   no click, no database). Measured here (200 leaves, whole process, medians of 21
   runs in turn): the script 62 ms, `subrosa check` 70 ms (1.13x); through click, as
   before its fast path (subrosa.cli.fastcheck), 500 ms (7.7x), paying for click and
   SQLAlchemy it never used.
3. In-process upsert of N leaves in one session vs just reading and hashing the same
   files (report the ratio; target >= 1,000 leaves/s).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import print_table  # bench/ is on sys.path when run as a script


def _p50(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _write_leaves(directory: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = directory / f"fact_{i:05d}.md"
        path.write_text(
            f"---\nname: fact-{i:05d}\ndescription: Fact number {i} about the build.\n"
            f"metadata:\n  type: {('user', 'feedback', 'project', 'reference')[i % 4]}\n---\n\n"
            f"Body of fact {i}. " * 3 + "\n",
            encoding="utf-8",
        )
        paths.append(path)
    return paths


def bench_upsert(count: int) -> tuple[float, float]:
    from subrosa.db import dispose_all, open_database
    from subrosa.memory import store
    from subrosa.memory.leaf import parse_leaf

    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory"
        memory.mkdir()
        paths = _write_leaves(memory, count)

        start = time.perf_counter()
        for path in paths:
            hashlib.sha256(path.read_bytes()).hexdigest()
        baseline = time.perf_counter() - start

        engine = open_database(f"sqlite:///{tmp}/bench.db")
        project = store.Project(memory)
        start = time.perf_counter()
        with store.mutation(engine, project) as session:
            registrar = store.Registrar(session, project)
            for path in paths:
                registrar.upsert(parse_leaf(path), hook=f"hook for {path.stem}")
        elapsed = time.perf_counter() - start
        dispose_all()
    return baseline, elapsed


def bench_check(runs: int) -> tuple[float, float]:
    """`subrosa check` and the witness script, on one generated memory dir of 200 leaves."""
    from subrosa.resources import skills_dir

    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory"
        memory.mkdir()
        paths = _write_leaves(memory, 200)
        index = "".join(f"- [{p.stem}]({p.name}) — hook\n" for p in paths)
        (memory / "MEMORY.md").write_text(index, encoding="utf-8")
        script = skills_dir() / "memory-compact" / "check_memory.py"
        script_time = _p50([sys.executable, str(script), "--dir", str(memory)], runs)
        check_time = _p50([sys.executable, "-m", "subrosa", "check", "--dir", str(memory)], runs)
    return script_time, check_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--leaves", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    click_time = _p50([sys.executable, "-c", "import click"], args.runs)
    help_time = _p50([sys.executable, "-m", "subrosa", "--help"], args.runs)
    script_time, check_time = bench_check(args.runs)
    baseline, upsert_time = bench_upsert(args.leaves)

    rows = [
        (
            "`subrosa --help` (p50)",
            f"{help_time * 1000:.0f} ms",
            f"python -c 'import click': {click_time * 1000:.0f} ms",
            f"{help_time / click_time:.2f}x",
            "<= 2x",
        ),
        (
            "`subrosa check`, 200 leaves (p50)",
            f"{check_time * 1000:.0f} ms",
            f"check_memory.py itself: {script_time * 1000:.0f} ms",
            f"{check_time / script_time:.2f}x",
            "<= 1.5x",
        ),
        (
            f"upsert {args.leaves:,} leaves, one session",
            f"{upsert_time:.2f} s ({args.leaves / upsert_time:,.0f} leaves/s)",
            f"read + sha256 same files: {baseline:.2f} s",
            f"{upsert_time / baseline:.1f}x",
            ">= 1,000 leaves/s",
        ),
    ]
    print_table(rows)


if __name__ == "__main__":
    main()
