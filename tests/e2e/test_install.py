"""`subrosa install` into a settings.json Claude Code then really runs, and back out."""

from __future__ import annotations

import json

import pytest

from tests.e2e.claude_code import ClaudeProject
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_install_runs_beside_the_users_hooks_and_uninstall_is_byte_identical(
    cc: ClaudeProject, api: FakeAnthropic
) -> None:
    marker = cc.root / "users-own-stop-hook-ran"
    settings = {
        "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]},
    }
    # Not subrosa's formatting, on purpose: tabs, key order, no newline at the end.
    original = json.dumps(settings, indent="\t", sort_keys=True).encode()
    cc.settings_file.parent.mkdir()
    cc.settings_file.write_bytes(original)

    cc.subrosa("install")
    run = cc.run("hello", env={"SUBROSA_NUDGE_EVERY": "1"})

    assert marker.exists(), "the user's own Stop hook still runs"
    nudge = "\n".join(api.agent_requests[-1].new_texts())
    assert "Stop hook feedback" in nudge and run.session_id in nudge, "and subrosa's beside it"
    assert cc.settings_file.read_bytes() != original

    cc.subrosa("install", "--uninstall")

    assert cc.settings_file.read_bytes() == original
    assert not (cc.project / ".claude" / "skills" / "memory-extraction").exists()
    marker.unlink()
    api.clear()
    cc.run("hello again", env={"SUBROSA_NUDGE_EVERY": "1"})
    assert marker.exists()
    texts = [t for r in api.agent_requests for t in r.texts()]
    assert not [t for t in texts if "Stop hook feedback" in t or "memory-extraction" in t]
