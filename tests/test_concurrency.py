"""Several sessions at once on one project: nothing lost, no "database is locked"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.engines
def test_writers_generators_and_ingests_lose_nothing(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    """8 processes upsert 20 facts each while 4 others generate the index in a loop and 2
    ingest transcripts that a 15th process keeps appending to.

    20 facts a writer races what 50 did: the 8 writers start together and write at once
    for most of the run (nearly every upsert overlaps another writer's), and each
    generator and ingester runs several times among them. The commit that made it 20
    has the figures."""
    stop = tmp_path / "stop"
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    generators = [_spawn("loop", str(stop), "0.5", "generate") for _ in range(4)]
    ingesters = [_spawn("loop", str(stop), "0.3", "ingest", str(transcripts)) for _ in range(2)]
    sessions = _spawn("transcribe", str(transcripts), "4", "200")
    writers = [_spawn("upsert", str(memory_dir), str(w), "20") for w in range(8)]
    _finish([*writers, sessions])
    stop.touch()
    rounds = [int(out.split()[-1]) for out in _finish([*generators, *ingesters])]
    print(f"generate ran {rounds[:4]} times and ingest {rounds[4:]} alongside the writers")
    assert all(r >= 1 for r in rounds)

    final_ingest = json.loads(run("ingest", "--json", str(transcripts)).stdout)
    assert final_ingest["duplicate_messages"] == 0
    listed = json.loads(run("transcript", "list", "--all-projects", "--json").stdout)
    assert sorted(s["message_count"] for s in listed) == [200] * 4  # each once, none lost

    facts = json.loads(run("fact", "list", "--json").stdout)
    assert len(facts) == 160
    assert sorted(f["position"] for f in facts) == list(range(1, 161))
    state = (memory_dir / ".subrosa" / "facts.jsonl").read_text().splitlines()
    assert len(state) == 160
    # One more generate accounts for every fact, each in exactly one of the two files.
    final = json.loads(run("generate", "--json").stdout)
    assert sorted(final["included"] + final["below_budget"]) == sorted(f["slug"] for f in facts)
    run("check", "--dir", str(memory_dir))
