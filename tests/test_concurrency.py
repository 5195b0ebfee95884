"""Several sessions at once on one project: nothing lost, no "database is locked"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, RunCli


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.workers", *args],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_eight_writers_lose_nothing(memory_dir: Path, run: RunCli) -> None:
    workers = [_spawn("upsert", str(memory_dir), str(w), "50") for w in range(8)]
    failures = []
    for proc in workers:
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0 or b"locked" in err:
            failures.append(err.decode(errors="replace"))
    assert not failures, failures
    facts = json.loads(run("fact", "list", "--json").stdout)
    assert len(facts) == 400
    assert sorted(f["position"] for f in facts) == list(range(1, 401))
    state = (memory_dir / ".subrosa" / "facts.jsonl").read_text().splitlines()
    assert len(state) == 400
