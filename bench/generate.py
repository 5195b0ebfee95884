"""Bench: `subrosa generate` over 1,000 and 10,000 leaves, whole process, against a baseline.

The baseline is plain Python in its own process that reads the same leaf files and writes
one file: the least any generator must do. Both are timed in the same run, so the ratio
holds across machines. Two generate figures per size: the first run (every leaf is parsed
and registered) and a steady run (nothing changed: leaves are read and hashed, not parsed).
Target (issue 3): steady generate at most 5x the baseline at 10k, near-linear growth 1k->10k.

    python bench/generate.py [--sizes 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = r"""
import sys
from pathlib import Path
d = Path(sys.argv[1])
out = []
for p in sorted(d.iterdir()):
    if p.suffix == ".md" and p.name not in ("MEMORY.md", "MEMORY_archive.md"):
        text = p.read_text(encoding="utf-8")
        desc = next((l[12:].strip() for l in text.splitlines() if l.startswith("description:")), "")
        out.append(f"- [{p.stem}]({p.name}) — {desc}\n")
(d.parent / "baseline.md").write_text("".join(out), encoding="utf-8")
"""

TYPES = ("feedback", "user", "project", "reference")


def make_leaves(directory: Path, count: int) -> None:
    directory.mkdir(parents=True)
    for n in range(count):
        kind = TYPES[n % 4]
        (directory / f"{kind}_fact_{n:05d}.md").write_text(
            f"---\nname: {kind}-fact-{n:05d}\n"
            f"description: Fact {n} says something worth keeping about the build, about 90 bytes.\n"
            f"metadata:\n  type: {kind}\n---\n\n"
            f"The body of fact {n}.\n\n**Why:** because.\n\n**How to apply:** always.\n",
            encoding="utf-8",
        )


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench_size(workdir: Path, count: int, repeat: int) -> dict[str, float]:
    memory = workdir / f"mem{count}"
    make_leaves(memory, count)
    env = dict(os.environ, HOME=str(workdir), XDG_DATA_HOME=str(workdir / "data"))
    env.pop("SUBROSA_MEMORY_DIR", None)
    baseline = min(timed([sys.executable, "-c", BASELINE, str(memory)], env) for _ in range(repeat))
    firsts, steadies = [], []
    for attempt in range(repeat):
        db = workdir / f"db{count}_{attempt}.sqlite"
        cmd = [sys.executable, "-m", "subrosa", "--memory-dir", str(memory), "--db", str(db)]
        for name in ("MEMORY.md", "MEMORY_archive.md"):
            (memory / name).unlink(missing_ok=True)
        shutil.rmtree(memory / ".subrosa", ignore_errors=True)
        # the schema is created outside the timing: it is paid once per database, not per run
        subprocess.run([*cmd, "db", "upgrade"], check=True, env=env, capture_output=True)
        firsts.append(timed([*cmd, "generate"], env))
        steadies.append(timed([*cmd, "generate"], env))
    return {"baseline": baseline, "first": min(firsts), "steady": min(steadies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="subrosa-bench-") as raw:
        for size in args.sizes:
            results[size] = bench_size(Path(raw), size, args.repeat)
    print(f"{'leaves':>7} {'baseline':>9} {'first':>8} {'ratio':>6} {'steady':>8} {'ratio':>6}")
    for size, r in results.items():
        first, steady = r["first"] / r["baseline"], r["steady"] / r["baseline"]
        print(
            f"{size:>7} {r['baseline']:>8.3f}s {r['first']:>7.3f}s {first:>5.1f}x"
            f" {r['steady']:>7.3f}s {steady:>5.1f}x"
        )
    if len(results) >= 2:
        small, large = min(results), max(results)
        factor = large / small
        for key in ("baseline", "first", "steady"):
            growth = results[large][key] / results[small][key]
            print(f"growth {small}->{large} ({factor:.0f}x leaves), {key}: {growth:.1f}x")


if __name__ == "__main__":
    main()
