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


def _finish(procs: list[subprocess.Popen[bytes]]) -> list[str]:
    """Wait for every worker and check none failed or met a locked database; their stdout."""
    failures, outputs = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0 or b"locked" in err or b"Traceback" in err:
            failures.append(err.decode(errors="replace"))
        outputs.append(out.decode())
    assert not failures, failures
    return outputs


def test_writers_and_generators_lose_nothing(memory_dir: Path, tmp_path: Path, run: RunCli) -> None:
    """8 processes upsert 50 facts each while 4 others generate the index in a loop."""
    stop = tmp_path / "stop"
    generators = [_spawn("loop", str(stop), "0.5", "generate") for _ in range(4)]
    writers = [_spawn("upsert", str(memory_dir), str(w), "50") for w in range(8)]
    _finish(writers)
    stop.touch()
    rounds = [int(out.split()[-1]) for out in _finish(generators)]
    print(f"generate ran {rounds} times alongside the writers")
    assert all(r >= 1 for r in rounds)

    facts = json.loads(run("fact", "list", "--json").stdout)
    assert len(facts) == 400
    assert sorted(f["position"] for f in facts) == list(range(1, 401))
    state = (memory_dir / ".subrosa" / "facts.jsonl").read_text().splitlines()
    assert len(state) == 400
    # One more generate accounts for every fact, each in exactly one of the two files.
    final = json.loads(run("generate", "--json").stdout)
    assert sorted(final["included"] + final["below_budget"]) == sorted(f["slug"] for f in facts)
    run("check", "--dir", str(memory_dir))
