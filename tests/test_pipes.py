"""Output into a pipe whose reader has gone (`subrosa transcript list | head -1`): the
command stops quietly, as any Unix tool does; no `Error: Broken pipe.`, no Python
"Exception ignored" lines on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RunCli, write_leaf


@pytest.mark.parametrize(
    "args",
    [
        ("fact", "list"),  # click
        ("fact", "show", "a"),
        ("transcript", "list", "--all-projects"),
        ("search", "pnpm"),  # the fast search
        ("generate", "--dry-run"),  # the fast entries
        ("doctor",),
        ("--help",),
    ],
)
def test_a_reader_that_went_away_is_no_error(
    memory_dir: Path, run: RunCli, args: tuple[str, ...]
) -> None:
    write_leaf(memory_dir, "a.md", "The owner uses pnpm everywhere, never npm.")
    run("generate")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "subrosa", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
            timeout=120,
        )
    finally:
        os.close(write)
    stderr = done.stderr.decode()
    assert "Broken pipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
