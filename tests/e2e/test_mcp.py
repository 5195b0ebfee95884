"""`subrosa mcp` inside the real Claude Code: registered by `subrosa install --mcp` or by
the plugin, started by Claude Code, its search tool called by the (scripted) model, and
its result carried to the model in the next request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.claude_code import ClaudeProject, write_leaf
from tests.e2e.fake_anthropic import FakeAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# A plugin's server is named `plugin_<plugin>_<server>` (plugins-reference.md).
PLUGIN_TOOL = "mcp__plugin_subrosa_subrosa__search"


@pytest.mark.parametrize(
    ("registered_by", "tool"),
    [
        ("install --scope local", "mcp__subrosa__search"),
        ("install --scope user", "mcp__subrosa__search"),
        ("install --scope project", "mcp__subrosa__search"),
        ("plugin", PLUGIN_TOOL),
    ],
)
def test_the_model_searches_the_memory_through_the_mcp_tool(
    cc: ClaudeProject, api: FakeAnthropic, repo_root: Path, registered_by: str, tool: str
) -> None:
    write_leaf(
        cc.auto_memory_dir(),
        "zebra_pipeline.md",
        "The zebra pipeline only runs inside the VPN.",
        body="Start the VPN first; the staging firewall drops everything else.",
    )
    cc.subrosa("generate")
    plugins: tuple[Path, ...] = ()
    if registered_by == "plugin":
        plugins = (repo_root,)
    else:
        cc.subrosa("install", "--mcp", *registered_by.split()[1:])
    cc.allowed_tools.append(tool)
    api.respond_tool_use(tool, {"query": "zebra pipeline"})
    api.respond_text("It runs inside the VPN.")

    cc.run("Where does the zebra pipeline run?", plugin_dirs=plugins)

    [result] = api.agent_requests[1].tool_results()
    lines = result.splitlines()
    assert lines[0].startswith("1 hit for 'zebra pipeline'"), result
    assert lines[1].startswith("fact zebra_pipeline · project · score ")
    assert "**zebra**" in lines[2].lower() and "**pipeline**" in lines[2].lower()
    shown = json.loads(cc.subrosa("fact", "show", "zebra_pipeline", "--json").stdout)
    assert shown["hits"] == 1, "the tool's search counts a hit, as `subrosa search` does"
