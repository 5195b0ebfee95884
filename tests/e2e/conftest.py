"""Fixtures for the end-to-end tests against the real Claude Code CLI.

`claude_code` (session): Claude Code installed from npm once per run (cached across runs
under ~/.cache/subrosa-e2e/), or every e2e test skips with the same one reason.
`api` (function): a fresh `FakeAnthropic`. `cc` (function): a `ClaudeProject`, a throwaway
git project with its own HOME wired to `api`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RAN
from tests.e2e.claude_code import (
    ClaudeCode,
    ClaudeProject,
    Unavailable,
    claude_code_from_env,
    subrosa_bin_dir,
)
from tests.e2e.fake_anthropic import FakeAnthropic

# Read before any test's monkeypatching replaces HOME and drops the SUBROSA_* variables.
_ENV = dict(os.environ)
# What ran, for the run's summary (tests/conftest.py prints it).
_RAN: dict[str, str] = RAN["e2e"]


@pytest.fixture(scope="session")
def claude_code() -> ClaudeCode:
    """The real Claude Code CLI, or a skip naming why it cannot run here."""
    try:
        installed = claude_code_from_env(_ENV)
    except Unavailable as exc:
        _RAN["skipped"] = str(exc)
        if _ENV.get("SUBROSA_E2E_REQUIRED") == "1":
            pytest.fail(f"SUBROSA_E2E_REQUIRED=1 but {exc}")
        pytest.skip(str(exc))
    _RAN.update(version=installed.version, binary=str(installed.binary))
    return installed


@pytest.fixture(scope="session")
def subrosa_bin() -> Path:
    try:
        return subrosa_bin_dir()
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def cc(
    claude_code: ClaudeCode, api: FakeAnthropic, subrosa_bin: Path, tmp_path: Path
) -> ClaudeProject:
    return ClaudeProject(claude_code, api, tmp_path / "e2e", subrosa_bin)


@pytest.fixture
def repo_root() -> Path:
    """This checkout: the Claude Code plugin (.claude-plugin/, hooks/, skills/)."""
    return Path(__file__).resolve().parents[2]
