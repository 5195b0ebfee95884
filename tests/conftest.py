"""Every test runs in its own HOME, with every subrosa/Claude variable pointed into tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from subrosa.cli.app import cli
from subrosa.db import dispose_all

REPO = Path(__file__).resolve().parent.parent
# Small real data vendored with the tests (tests/fixtures/SOURCES.md): a clone tests alone.
FIXTURES = REPO / "tests" / "fixtures"
# The larger shared corpus beside the checkout (helpers' worktrees sit one level deeper):
# tests that read it skip when it is absent, through `corpus()`.
CORPUS = next(
    (
        p
        for p in (REPO.parent / "shared" / "corpus", REPO.parent.parent / "shared" / "corpus")
        if p.is_dir()
    ),
    REPO.parent / "shared" / "corpus",
)


def corpus(*parts: str) -> Path:
    """A path in the shared corpus, or a skip (with the reason) when it is not there."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared corpus at {path} (not part of a clone)")
    return path


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A throwaway HOME; no subrosa or Claude setting leaks in from the machine."""
    for var in list(os.environ):
        if var.startswith(("SUBROSA_", "CLAUDE_", "XDG_")):
            monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    yield home
    dispose_all()


@pytest.fixture
def memory_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty memory dir and a database file, both under tmp_path, set in the environment."""
    directory = tmp_path / "memory"
    directory.mkdir()
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(directory))
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "subrosa.db"))
    return directory


RunCli = Callable[..., Result]


@pytest.fixture
def run() -> RunCli:
    """Invoke the real CLI in-process; assert the exit code (default 0)."""

    def _run(*args: str, expect: int | None = 0, input: str | None = None) -> Result:
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        if expect is not None:
            assert result.exit_code == expect, (
                f"exit {result.exit_code} != {expect}\nstdout:\n{result.stdout}\n"
                f"stderr:\n{result.stderr}"
            )
        return result

    return _run


def write_leaf(
    directory: Path,
    filename: str,
    description: str = "A fact worth keeping.",
    fact_type: str = "project",
    body: str = "The body.",
    name: str | None = None,
    extra: str = "",
) -> Path:
    """Write a canonical leaf (document 000's shape) and return its path."""
    stem = filename.removesuffix(".md")
    name = name if name is not None else stem.replace("_", "-")
    text = (
        f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {fact_type}\n"
        f"{extra}---\n\n{body}\n"
    )
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


def subrosa_process(
    *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[Any]:
    """Run `subrosa` as a real process (hooks, crash tests), with the test's environment."""
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [sys.executable, "-m", "subrosa", *args],
        input=data,
        capture_output=True,
        env=env if env is not None else dict(os.environ),
        timeout=120,
        **kw,
    )
