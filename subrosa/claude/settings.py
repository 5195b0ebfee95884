"""Claude Code's settings files, read: which of them register subrosa's hooks, and which
enable the subrosa plugin. Writing them is `install`'s job (subrosa.claude.install).

Standard library only, and light: the plugin's SessionStart hook asks, to warn the user
when `subrosa install` registered the same hooks too; `install` and `doctor` ask as well.
"""

from __future__ import annotations

import os

from subrosa.errors import InvalidInput
from subrosa.fsutil import loads_json, read_capped
from subrosa.lazyre import compile_lazily
from subrosa.paths import absolute, checkout_root, claude_root, join

# typing and pathlib stay off the hook's import path (see subrosa.claude.checkpoint and
# subrosa.paths): a path here is a str.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from subrosa.paths import StrPath

# Claude Code's event name -> our hook name.
EVENTS = {"SessionStart": "session-start", "Stop": "stop", "SessionEnd": "session-end"}
PLUGIN_NAME = "subrosa"
# Claude Code's settings files are small; a larger one is not read for these checks.
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
# `subrosa hook NAME`, also by a quoted absolute path (`'/venv/bin/subrosa' hook NAME`).
_OURS = compile_lazily(r"\bsubrosa['\"]?\s+hook\s+(session-start|stop|session-end)\b")
# A command that is only that: bare (by any path, or `python -m subrosa`), or inside the
# wrapper every version of install wrote (`if TEST; then … hook NAME; else echo … >&2;
# fi; exit 0`: subrosa.claude.install.hook_command).
_RUN = r"[^;&|\n]*?\bsubrosa['\"]?\s+hook\s+(?:session-start|stop|session-end)"
_ONLY_OURS = compile_lazily(
    rf"\s*(?:{_RUN}|if [^;\n]+; then {_RUN}; else echo [^\n]* >&2; fi; exit 0)\s*"
)


def runs_ours(handler: object) -> bool:
    """A hook handler whose command runs `subrosa hook NAME` (maybe among its own)."""
    return isinstance(handler, dict) and bool(_OURS.search(str(handler.get("command", ""))))


def is_ours(handler: object) -> bool:
    """A hook handler install wrote: its command runs `subrosa hook NAME` and nothing
    else. A person's own command that also runs it (`subrosa hook stop; notify-send
    done`) is theirs: install and uninstall leave it as it is."""
    return (
        isinstance(handler, dict)
        and runs_ours(handler)
        and bool(_ONLY_OURS.fullmatch(str(handler.get("command", ""))))
    )


class Found:
    """A settings file (its scope and path) that registers subrosa: `what` is its hook
    events ("SessionStart, Stop, SessionEnd") or the plugin's name (`subrosa@MARKET`)."""

    def __init__(self, scope: str, path: str, what: str) -> None:
        self.scope, self.path, self.what = scope, path, what

    def __repr__(self) -> str:
        return f"Found({self.scope!r}, {self.path!r}, {self.what!r})"


class Registrations:
    """Where subrosa is wired into Claude Code for a project."""

    def __init__(self) -> None:
        self.hooks: list[Found] = []
        self.plugins: list[Found] = []

    @property
    def events(self) -> set[str]:
        return {event for found in self.hooks for event in found.what.split(", ")}


def settings_files(project_dir: StrPath | None = None) -> list[tuple[str, str]]:
    """The settings files Claude Code reads for a session started in `project_dir`
    (default `$CLAUDE_PROJECT_DIR`), lowest precedence first: user, then project and
    local in that folder and, when it is a subfolder, the top of its git checkout's
    settings.local.json (Claude Code 2.1.332 started in a subfolder reads the top's
    settings.local.json, not its settings.json: tests/e2e/test_memory_dir.py). Run by
    hand (neither given), the top of the checkout around the current folder: where
    `subrosa install` writes."""
    given = project_dir or os.environ.get("CLAUDE_PROJECT_DIR")
    here = absolute(given or os.getcwd())
    top = checkout_root(here)
    if not given:
        here, top = top or here, None
    found = [("user", join(claude_root(), "settings.json"))]
    found.append(("project", join(here, ".claude", "settings.json")))
    found.append(("local", join(here, ".claude", "settings.local.json")))
    if top is not None and top != here:
        found.append(("local", join(top, ".claude", "settings.local.json")))
    return found


def read_object(path: StrPath) -> dict[str, Any]:
    """A settings file's object, or {} when it is missing, too big or not JSON."""
    try:  # bounded, regular files only (a settings file linked to /dev/zero or a FIFO)
        raw = read_capped(path, MAX_SETTINGS_BYTES, follow_links=True)
        data = loads_json(raw.decode("utf-8-sig")) if raw is not None else {}
    except (OSError, ValueError, InvalidInput):
        return {}
    return data if isinstance(data, dict) else {}


def our_events(data: dict[str, Any]) -> list[str]:
    """The events a settings object runs a subrosa hook on."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        event
        for event in EVENTS
        if isinstance(hooks.get(event), list)
        and any(
            runs_ours(handler)
            for group in hooks[event]
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for handler in group["hooks"]
        )
    ]


def registrations(project_dir: StrPath | None = None) -> Registrations:
    """Which settings files put subrosa's hooks in, and which enable the subrosa plugin
    (`enabledPlugins`; a later scope overrides an earlier one). A plugin loaded with
    `claude --plugin-dir` is in no settings file and is not seen here."""
    found = Registrations()
    enabled: dict[str, Found | None] = {}
    for scope, path in settings_files(project_dir):
        data = read_object(path)
        events = our_events(data)
        if events:
            found.hooks.append(Found(scope, path, ", ".join(events)))
        plugins = data.get("enabledPlugins")
        if isinstance(plugins, dict):
            for name, on in plugins.items():
                if isinstance(name, str) and name.split("@")[0] == PLUGIN_NAME:
                    enabled[name] = Found(scope, path, name) if on is True else None
    found.plugins = [entry for entry in enabled.values() if entry is not None]
    return found


def auto_memory_setting(project_dir: StrPath | None = None) -> tuple[str, str] | None:
    """The `autoMemoryDirectory` Claude Code's settings give a session started in
    `project_dir`, and the file it comes from (the one read last wins), or None when
    none sets it: Claude Code then keeps its memory in its own auto-memory dir."""
    found = None
    for _scope, path in settings_files(project_dir):
        value = read_object(path).get("autoMemoryDirectory")
        if isinstance(value, str) and value:
            found = (value, path)
    return found
