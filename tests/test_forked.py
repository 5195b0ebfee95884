"""tests.conftest.subrosa_forked, the forked `subrosa` the long command-by-command tests
run, answers as `python -m subrosa` in a fresh interpreter does: the same exit code,
stdout and stderr, through each way subrosa.cli.main dispatches."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import RunCli, subrosa_forked, subrosa_process, write_leaf


def test_a_forked_command_answers_as_a_fresh_interpreter_does(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    write_leaf(memory_dir, "alpha_fact.md", "The alpha fact.")
    run("generate")
    start = {"cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(os.urandom(8192))
    for args, stdin in (
        (["generate"], None),  # fastpath
        (["search", "alpha"], None),  # fastsearch
        (["check"], None),  # fastcheck
        (["fact", "list", "--json"], None),  # click
        (["fact", "show", "nothing_here"], None),  # a one-sentence error
        (["no-such-command"], None),  # click's usage error
        (["--db", str(damaged), "fact", "list"], None),  # a database that is none
        (["hook", "session-start"], start),  # the hooks, on stdin
    ):
        # A session starts once: each run its own.
        fresh = subrosa_process(*args, input=stdin and json.dumps({**stdin, "session_id": "a"}))
        forked = subrosa_forked(*args, input=stdin and json.dumps({**stdin, "session_id": "b"}))
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        ), args
    # Its own working directory and environment, not this process's.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, SUBROSA_MEMORY_DIR=str(elsewhere))
    listed = subrosa_forked("fact", "list", "--json", env=env, cwd=elsewhere)
    assert json.loads(listed.stdout) == [] and Path.cwd() == tmp_path
    assert os.environ["SUBROSA_MEMORY_DIR"] == str(memory_dir)
