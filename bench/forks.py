"""Ingest of forked sessions: what the shared_messages rows cost (subrosa.archive.ingest
_share, migration 0010).

    python bench/forks.py                 # the 100 MB corpus of bench/transcripts.py
    python bench/forks.py --size 300 --runs 5

A copy of bench/transcripts.py's corpus in which every 4th transcript gets a fork as
Claude Code writes one (`--fork-session`: the whole file copied under a new session id,
uuids kept, then a prompt of its own), named to sort first in its folder, so the fork is
archived before its parent and the parent's every message becomes a shared row. Each
run ingests the plain corpus and the forked one (`subrosa ingest --all-projects`, a real
process, into an archive created just before), in turn, and prints the forked corpus's
MB/s against the plain one's (the baseline: same run, same machine). Whatever `subrosa`
is importable is measured (put another checkout first on PYTHONPATH to compare).

Measured (2026-12-01, 2 cores shared with other runs; 100 MB + 23 MB of forks, 18,841
shared rows): under cProfile, _share took 1.4 s of the ingest with an INSERT … SELECT
per shared row (FTS5 flushes its in-memory index at each statement savepoint), 0.19 s
with the ids looked up first and the rows inserted with VALUES. Alternate runs of this
script against main (which writes no shared rows), median of 3: the forked corpus's
ingest 5.7 s CPU on both, the plain one's 5.4 s (main) and 5.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from transcripts import corpus, run_measured  # noqa: E402


def forked(root: Path, out: Path) -> Path:
    """A copy of the corpus at `root` with a fork of every 4th transcript (made once)."""
    target = out / f"{root.name}-forked"
    if (target / ".complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(root, target)
    for n, path in enumerate(sorted((target / "projects").glob("*/*.jsonl"))):
        if n % 4:
            continue
        fork = str(uuid.UUID(int=n + 1))  # 00000000-…: sorts before its parent
        copied = path.read_text(encoding="utf-8").replace(
            f'"sessionId": "{path.stem}"', f'"sessionId": "{fork}"'
        )
        prompt = {
            "type": "user",
            "uuid": str(uuid.UUID(int=(1 << 64) + n)),
            "sessionId": fork,
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": "the fork's own prompt"},
        }
        path.with_name(f"{fork}.jsonl").write_text(copied + json.dumps(prompt) + "\n")
    (target / ".complete").write_text("")
    return target


def ingest(root: Path, work: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `subrosa ingest --all-projects` of `root` into a new archive."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "memory").mkdir(parents=True)
    env = {
        **os.environ,
        "HOME": str(work),
        "CLAUDE_CONFIG_DIR": str(root),
        "SUBROSA_DB": str(work / "subrosa.db"),
        "SUBROSA_MEMORY_DIR": str(work / "memory"),
        "XDG_DATA_HOME": str(work / "data"),
    }
    subrosa = [str(Path(sys.executable).parent / "subrosa")]
    run_measured([*subrosa, "ingest"], env)  # creates the archive, unmeasured
    wall, _, cpu = run_measured([*subrosa, "ingest", "--all-projects"], env)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100, help="corpus size in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    plain, plain_bytes = corpus(args.size, args.out)
    forks = forked(plain, args.out)
    forks_bytes = sum(p.stat().st_size for p in (forks / "projects").rglob("*.jsonl"))
    ratios = []
    for run in range(args.runs):
        p_wall, p_cpu = ingest(plain, args.out / "work-forks-plain")
        f_wall, f_cpu = ingest(forks, args.out / "work-forks-forked")
        p_speed, f_speed = plain_bytes / 1e6 / p_wall, forks_bytes / 1e6 / f_wall
        ratios.append(f_speed / p_speed)
        print(
            f"run {run + 1}: plain {p_speed:.1f} MB/s ({p_wall:.1f} s, {p_cpu:.1f} s CPU),"
            f" forked {f_speed:.1f} MB/s ({f_wall:.1f} s, {f_cpu:.1f} s CPU):"
            f" {f_speed / p_speed:.2f}x",
            flush=True,
        )
    print(f"forked ÷ plain MB/s, median of {args.runs}: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
