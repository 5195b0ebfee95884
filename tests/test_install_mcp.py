"""`subrosa install --mcp`: the MCP server registered where Claude Code reads each
scope's servers, merged and taken out as cleanly as the hooks; the plugin's .mcp.json;
`doctor`'s check."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from subrosa.claude.install import mcp_server_config, plugin_mcp_json
from tests.conftest import REPO, RunCli

# A file as Claude Code writes it: JSON.stringify(state, null, 2), no final newline.
CLAUDE_STATE: dict[str, Any] = {
    "numStartups": 3,
    "mcpServers": {"github": {"type": "http", "url": "https://example.invalid/mcp"}},
    "projects": {"/elsewhere": {"allowedTools": [], "mcpServers": {}}},
}
PROJECT_SERVERS = {"mcpServers": {"db": {"command": "npx", "args": ["db-mcp"], "env": {}}}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def claude_json() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / ".claude.json"


def ours() -> dict[str, Any]:
    return mcp_server_config()


def test_project_scope_merges_into_mcp_json_and_uninstall_gives_the_bytes_back(
    project: Path, run: RunCli
) -> None:
    path = project / ".mcp.json"
    original = json.dumps(PROJECT_SERVERS, indent=2)  # Claude Code's style: no newline
    path.write_text(original)

    out = run("install", "--mcp").stdout
    assert f"updated {path}" in out and "+ mcpServers.subrosa: " in out
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers == {**PROJECT_SERVERS["mcpServers"], "subrosa": ours()}
    assert not path.read_text().endswith("\n")
    again = run("install", "--mcp").stdout
    assert "= mcpServers.subrosa" in again and "nothing to change" in again

    out = run("install", "--uninstall").stdout
    assert "- mcpServers.subrosa" in out
    assert path.read_text() == original


def test_a_fresh_project_gets_a_mcp_json_and_loses_it_again(project: Path, run: RunCli) -> None:
    run("install", "--mcp")
    assert json.loads((project / ".mcp.json").read_text()) == {"mcpServers": {"subrosa": ours()}}
    run("install", "--uninstall")
    assert not (project / ".mcp.json").exists()


def test_uninstall_after_other_edits_takes_out_only_our_server(project: Path, run: RunCli) -> None:
    path = project / ".mcp.json"
    path.write_text(json.dumps(PROJECT_SERVERS, indent=2))
    run("install", "--mcp")
    edited = json.loads(path.read_text())
    edited["mcpServers"]["cache"] = {"command": "cache-mcp"}
    path.write_text(json.dumps(edited, indent=2))
    run("install", "--uninstall")
    assert json.loads(path.read_text()) == {
        "mcpServers": {**PROJECT_SERVERS["mcpServers"], "cache": {"command": "cache-mcp"}}
    }


@pytest.mark.parametrize(
    ("scope", "keys"),
    [("user", ("mcpServers",)), ("local", ("projects", "{project}", "mcpServers"))],
)
def test_user_and_local_scopes_live_in_claude_json(
    project: Path, run: RunCli, scope: str, keys: tuple[str, ...]
) -> None:
    path = claude_json()
    path.parent.mkdir(parents=True)
    original = json.dumps(CLAUDE_STATE, indent=2)
    path.write_text(original)

    run("install", "--mcp", "--scope", scope)
    node: Any = json.loads(path.read_text())
    for key in keys:
        node = node[key.format(project=project)]
    assert node["subrosa"] == ours()
    assert json.loads(path.read_text())["numStartups"] == 3

    # Claude Code rewrites this file all the time; our entry is taken out of whatever
    # it holds then, and nothing else changes, byte for byte.
    state = json.loads(path.read_text())
    state["numStartups"] = 4
    path.write_text(json.dumps(state, indent=2))
    run("install", "--uninstall", "--scope", scope)
    assert path.read_text() == json.dumps({**CLAUDE_STATE, "numStartups": 4}, indent=2)


def test_a_server_of_someone_else_under_our_name_is_refused(project: Path, run: RunCli) -> None:
    path = project / ".mcp.json"
    content = json.dumps({"mcpServers": {"subrosa": {"command": "other-tool"}}})
    path.write_text(content)
    result = run("install", "--mcp", expect=2)
    assert "runs something else" in result.stderr
    assert path.read_text() == content


def test_without_subrosa_on_the_path_the_server_is_started_by_its_absolute_path(
    project: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "")
    run("install", "--mcp")
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["subrosa"]
    assert entry["command"] == str(Path(sys.executable).parent / "subrosa")
    assert Path(entry["command"]).is_file()


def test_dry_run_writes_nothing(project: Path, run: RunCli) -> None:
    out = run("install", "--mcp", "--dry-run").stdout
    assert f"would update {project / '.mcp.json'}" in out
    assert not (project / ".mcp.json").exists()


def test_the_plugin_registers_the_server() -> None:
    assert (REPO / ".mcp.json").read_text() == plugin_mcp_json()
    assert json.loads(plugin_mcp_json())["mcpServers"]["subrosa"]["args"] == ["mcp"]


def test_doctor_says_where_the_server_is_registered(
    project: Path, memory_dir: Path, run: RunCli
) -> None:
    def check() -> dict[str, Any]:
        report = json.loads(run("doctor", "--json", expect=None).stdout)
        return next(c for c in report["checks"] if c["name"] == "mcp server")

    before = check()
    assert before["ok"] and "not registered" in before["detail"]
    run("install", "--mcp")
    after = check()
    assert after["ok"] and str(project / ".mcp.json") in after["detail"]
    entry = json.loads((project / ".mcp.json").read_text())
    entry["mcpServers"]["subrosa"]["command"] = "/nowhere/subrosa"
    (project / ".mcp.json").write_text(json.dumps(entry))
    broken = check()
    assert not broken["ok"] and broken["severity"] == "warning"
    assert "/nowhere/subrosa" in broken["detail"]


def test_an_unreadable_claude_json_does_not_keep_the_hooks_in(project: Path, run: RunCli) -> None:
    run("install", "--scope", "user")
    claude_json().parent.mkdir(parents=True, exist_ok=True)
    claude_json().write_text("{broken")
    result = run("install", "--uninstall", "--scope", "user")
    assert "the MCP server was left alone" in result.stderr
    assert not (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").exists()
    assert claude_json().read_text() == "{broken"
    assert "not valid JSON" in run("install", "--mcp", "--scope", "user", expect=2).stderr


@pytest.mark.parametrize("scope", ["user", "local"])
def test_uninstall_keeps_an_empty_mcp_servers_that_was_there(
    project: Path, run: RunCli, scope: str
) -> None:
    """Claude Code writes `"mcpServers": {}` itself; uninstall takes out our entry and
    leaves the object, where Claude Code put it."""
    path = claude_json()
    path.parent.mkdir(parents=True)
    state = {
        "numStartups": 3,
        "mcpServers": {},
        "projects": {str(project): {"allowedTools": [], "mcpServers": {}}},
    }
    path.write_text(json.dumps(state, indent=2))
    run("install", "--mcp", "--scope", scope)
    rewritten = json.loads(path.read_text())
    rewritten["numStartups"] = 4  # Claude Code rewrote it meanwhile
    path.write_text(json.dumps(rewritten, indent=2))
    run("install", "--uninstall", "--scope", scope)
    assert path.read_text() == json.dumps({**state, "numStartups": 4}, indent=2)


def test_uninstall_keeps_an_empty_mcp_servers_in_an_edited_mcp_json(
    project: Path, run: RunCli
) -> None:
    path = project / ".mcp.json"
    path.write_text('{\n  "mcpServers": {}\n}')
    run("install", "--mcp")
    edited = json.loads(path.read_text())
    edited["other"] = 1
    path.write_text(json.dumps(edited, indent=2))
    run("install", "--uninstall")
    assert json.loads(path.read_text()) == {"mcpServers": {}, "other": 1}
