"""`subrosa doctor` reads the real Claude Code's version, as a user's shell finds it."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e.claude_code import ClaudeProject

pytestmark = [pytest.mark.e2e]


def test_doctor_names_the_claude_code_on_path(cc: ClaudeProject) -> None:
    """The version doctor reads is the one Claude Code reports (the harness asked it
    too), judged by docs/claude-code.md's table: 2.1.196 or later has everything."""
    path = os.pathsep.join([str(cc.claude.binary.parent), cc.env["PATH"]])
    done = cc.subrosa("doctor", "--json", env={"PATH": path}, expect=None)
    check = {c["name"]: c for c in json.loads(done.stdout)["checks"]}["claude code"]
    version = cc.claude.version.split("-")[0]
    assert f"Claude Code {version} (" in check["detail"], check
    assert check["ok"] is cc.claude.at_least("2.1.196"), check
