"""kill -9 at random points: files are old or new, never partial; the database passes
its integrity check; running the command again completes the work; nothing twice.

See tests/crash.py for how the processes are started and killed. Each test prints a
tally (`pytest -s` shows it): how many kills, over which range of times.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import crash
from tests.conftest import RunCli, write_leaf

pytestmark = pytest.mark.slow

KILLS = 30  # per command, processes forked from this one (see tests/crash.py)
EXEC_KILLS = 5  # per command, `python -m subrosa` started afresh
SPAWNS = pytest.mark.parametrize(
    ("spawn", "kills", "window"),
    [(crash.run_forked, KILLS, (0.0, 1.0)), (crash.run_exec, EXEC_KILLS, (0.5, 1.0))],
    ids=["forked", "python -m subrosa"],
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> crash.Workspace:
    space = crash.Workspace(tmp_path / "work")
    space.memory_dir.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(space.memory_dir))
    monkeypatch.setenv("SUBROSA_DB", str(space.db))
    return space


def _sidecar(memory_dir: Path) -> dict[str, dict[str, object]]:
    """The sidecar by slug; every line must be a whole JSON object."""
    path = memory_dir / ".subrosa" / "facts.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["slug"]: row for row in rows}


def _facts(run: RunCli) -> dict[str, dict[str, object]]:
    listed = json.loads(run("fact", "list", "--all", "--json").stdout)
    return {fact["slug"]: fact for fact in listed}


@SPAWNS
def test_kill_during_fact_upsert(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    memory_dir = workspace.memory_dir
    for name in ("alpha", "beta"):
        write_leaf(memory_dir, f"{name}.md", f"The {name} fact.")
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", name)
    write_leaf(memory_dir, "gamma.md", "The gamma fact.", fact_type="feedback")
    workspace.save()
    old_sidecar = (workspace.template / "memory" / ".subrosa" / "facts.jsonl").read_bytes()
    args = ["fact", "upsert", "--leaf", "gamma.md", "--hook", "gamma", "--pin"]

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        raw = (memory_dir / ".subrosa" / "facts.jsonl").read_bytes()
        sidecar = _sidecar(memory_dir)  # whole lines only
        if raw != old_sidecar:
            assert set(sidecar) == {"alpha", "beta", "gamma"}
            assert sidecar["gamma"]["hook"] == "gamma" and sidecar["gamma"]["pinned"]
        assert set(_facts(run)) in ({"alpha", "beta"}, {"alpha", "beta", "gamma"})
        run(*args)
        facts = _facts(run)
        assert [facts[s]["position"] for s in ("alpha", "beta", "gamma")] == [1, 2, 3]
        assert facts["gamma"]["pinned"] and facts["gamma"]["hook"] == "gamma"
        sidecar = _sidecar(memory_dir)
        assert {s: r["hook"] for s, r in sidecar.items()} == {
            s: f["hook"] for s, f in facts.items()
        }

    tally = crash.trials(
        "fact upsert",
        args,
        workspace,
        kills=kills,
        seed=8,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())
