"""Ctrl-C in a command that runs without click (the fast search, the witness's check,
the fact commands' and generate's fast path):
the one line click prints for it and click's exit code, as for every other command,
not a Python traceback."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli, subrosa_forked, write_leaf


def _interrupted(*_args: Any, **_kwargs: Any) -> Any:
    """Stands in for the command's work: a real SIGINT to this process, as a terminal's
    Ctrl-C sends, delivered by Python's own handler (KeyboardInterrupt)."""
    os.kill(os.getpid(), signal.SIGINT)
    raise AssertionError("SIGINT did not interrupt")


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (("search", "pnpm"), "subrosa.recall.search"),  # subrosa.cli.fastsearch
        (("check",), "subrosa.memory.witness.load"),  # subrosa.cli.fastcheck
        (("generate", "--dry-run"), "subrosa.cli.fastpath.generate_and_report"),
    ],
)
def test_ctrl_c_in_a_fast_command_is_aborted_not_a_traceback(
    memory_dir: Path,
    run: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    target: str,
) -> None:
    write_leaf(memory_dir, "a.md", "The owner uses pnpm everywhere, never npm.")
    run("generate")
    before = subrosa_forked(*args)
    assert before.returncode == 0, before.stderr.decode()
    monkeypatch.setattr(target, _interrupted)  # the forked child inherits it
    done = subrosa_forked(*args)
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert stderr == "Aborted!\n", stderr
    assert done.stdout == b""
