"""`subrosa install`: put subrosa's three hooks into a Claude Code settings.json and
its skills into the matching skills directory, and take them out again.

The settings file is the user's: every key and every other hook stays exactly as
it was, ours are recognized by their command (`subrosa hook NAME`) so a second run
changes nothing, and a file that is not valid JSON is refused untouched. For
`--uninstall` to give back the original bytes, the content before the first install
is kept in `<data dir>/installs/`; it is restored only while the file still holds
exactly what install wrote, otherwise only our entries are taken out.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subrosa.claude.settings import EVENTS, Registrations, is_ours, runs_ours
from subrosa.errors import InvalidInput
from subrosa.fsutil import (
    JSON_CAP,
    atomic_write_bytes,
    atomic_write_text,
    loads_json,
    make_private_dir,
    read_capped,
)
from subrosa.lazyre import compile_lazily
from subrosa.paths import checkout_root as git_checkout_root
from subrosa.paths import claude_root, data_dir
from subrosa.resources import skills_dir, source_checkout

SCOPES = ("project", "local", "user")
# The name on PyPI (`subrosa` there is an unrelated project). Until a release is
# published, every hint installs from the repository, a path or a git URL.
DISTRIBUTION = "subrosa-memory"
_STRING = compile_lazily(r'"(?:[^"\\]|\\.)*"')


@dataclass(frozen=True)
class Runner:
    """How a hook command starts subrosa, and what it says when it cannot.

    `argv` None: the `subrosa` the hook's PATH finds (the plugin; an install made
    with subrosa on the PATH). Otherwise this absolute command, for an install whose
    `subrosa` is not on the PATH (a venv): the hook then needs no PATH at all.
    `missing` is the `echo` argument, already shell-quoted.
    """

    argv: tuple[str, ...] | None
    missing: str


# Claude Code runs a plugin's hooks with CLAUDE_PLUGIN_ROOT set to the plugin's folder,
# a copy of the repository, which `uv tool install` and `pipx install` take as it is.
# (An environment variable, not text Claude Code substitutes: hence the double quotes.)
PLUGIN = Runner(
    None,
    "\"subrosa is not installed, hook skipped: uv tool install '$CLAUDE_PLUGIN_ROOT' "
    "(or: pipx install '$CLAUDE_PLUGIN_ROOT')\"",
)


def hook_command(name: str, runner: Runner = PLUGIN) -> str:
    """The shell command Claude Code runs for hook `name` (`sh -c`, or Git Bash on Windows).

    When subrosa cannot be found the hook still exits 0, with one line on stderr
    saying how to install it; a hook must never break the agent. Only shell builtins
    run before subrosa, so the absolute form works with an empty PATH.
    """
    if runner.argv is None:
        test, command = "command -v subrosa >/dev/null 2>&1", "subrosa"
    else:
        test, command = f"[ -x {shlex.quote(runner.argv[0])} ]", shlex.join(runner.argv)
    return f"if {test}; then {command} hook {name}; else echo {runner.missing} >&2; fi; exit 0"


def running_subrosa() -> tuple[str, ...]:
    """The absolute command of the subrosa running now: its `subrosa` script (where the
    console script was started from, else beside this Python), else `python -m subrosa`."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.stem == "subrosa" and started.is_file():
        return (str(started.absolute()),)
    # Not resolved: a venv's python is a symlink to the base interpreter, which has no
    # subrosa beside it.
    beside = Path(sys.executable).absolute().parent
    for name in ("subrosa", "subrosa.exe"):
        if (beside / name).is_file():
            return (str(beside / name),)
    return (str(Path(sys.executable).absolute()), "-m", "subrosa")


def install_source() -> str:
    """Where this subrosa was installed from, in a form `uv tool install` takes: the
    checkout it runs from, the path or git URL pip recorded (PEP 610's
    direct_url.json), else the name on PyPI."""
    checkout = source_checkout()
    if checkout is not None:
        return str(checkout)
    from importlib import metadata

    try:
        recorded = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        origin = json.loads(recorded) if recorded else None
    except (metadata.PackageNotFoundError, ValueError):
        origin = None
    return source_of(origin) or DISTRIBUTION


def source_of(origin: object) -> str | None:
    """A direct_url.json document as what `uv tool install` takes: `git+URL@REV`, a
    local path, an archive's URL; None when it names nothing."""
    url = origin.get("url") if isinstance(origin, dict) else None
    if not isinstance(origin, dict) or not isinstance(url, str):
        return None
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict):
        revision = vcs.get("requested_revision")
        return f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(url).path)
    return url


def install_hint() -> str:
    """The command that puts this subrosa on the PATH."""
    source = shlex.quote(install_source())
    return f"uv tool install {source} (or: pipx install {source})"


def this_runner() -> Runner:
    """How hooks written by this `subrosa install` start subrosa: by name when it is
    on the PATH, else by this install's absolute command."""
    hint = install_hint()
    if shutil.which("subrosa") is not None:
        return Runner(None, shlex.quote(f"subrosa is not installed, hook skipped: {hint}"))
    argv = running_subrosa()
    return Runner(
        argv,
        shlex.quote(
            f"subrosa is no longer at {argv[0]}, hook skipped: {hint}, then subrosa install"
        ),
    )


def hook_handler(name: str, runner: Runner = PLUGIN) -> dict[str, str]:
    return {"type": "command", "command": hook_command(name, runner)}


def hooks_config(runner: Runner = PLUGIN) -> dict[str, list[dict[str, Any]]]:
    """The `hooks` object: one matcher group (no matcher: every source/reason) per event."""
    return {event: [{"hooks": [hook_handler(name, runner)]}] for event, name in EVENTS.items()}


def plugin_hooks_json() -> str:
    """The plugin's hooks/hooks.json, byte for byte (a test keeps the file in step)."""
    document = {
        "description": "subrosa: inject the memory index, nudge extraction, queue ended sessions",
        "hooks": hooks_config(),
    }
    return json.dumps(document, indent=2) + "\n"


def checkout_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The top of the git checkout around `cwd` (a worktree's own top, unlike
    subrosa.paths.project_root, which maps worktrees to the main repository the way
    Claude Code keys its memory), else `cwd`: where Claude Code reads `.claude/`."""
    top = git_checkout_root(cwd)
    if top is not None:
        return Path(top)
    return Path(cwd if cwd is not None else os.getcwd()).absolute()


@dataclass(frozen=True)
class Target:
    scope: str
    settings_path: Path
    skills_path: Path


def target_for(scope: str, cwd: str | os.PathLike[str] | None = None) -> Target:
    """Where `scope` lives (hooks.md, "Hook locations"; skills.md, "Where skills live").

    project: `.claude/settings.json` (shared through git); local:
    `.claude/settings.local.json` (this machine only); both put the skills in the
    project's `.claude/skills/`. user: `~/.claude/settings.json` and `~/.claude/skills/`,
    for every project.
    """
    if scope == "user":
        root = Path(claude_root())
        return Target(scope, root / "settings.json", root / "skills")
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}.")
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or checkout_root(cwd))
    name = "settings.json" if scope == "project" else "settings.local.json"
    return Target(scope, project / ".claude" / name, project / ".claude" / "skills")


# --- what is active ---------------------------------------------------------------------


def plugin_advice(found: Registrations) -> str | None:
    """What to tell someone installing the hooks while the subrosa plugin is enabled."""
    if not found.plugins:
        return None
    plugin = found.plugins[0]
    return (
        f"the subrosa plugin is enabled too ({plugin.what}, in {plugin.path}), so subrosa's "
        "hooks are registered twice. Each still acts once per event, but keep one: "
        f"`claude plugin disable {plugin.what}`, or `subrosa install --uninstall` to keep "
        "the plugin."
    )


# --- settings.json ---------------------------------------------------------------------


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text (None when missing) and its object; anything else is refused."""
    # Bounded, regular files only (one linked to /dev/zero is refused, not read until
    # memory runs out); a link is followed, as Claude Code follows it. A BOM from a
    # Windows editor is fine; CRLF line ends are kept (render_settings).
    raw = read_capped(path, JSON_CAP, follow_links=True)
    if raw is None:
        return None, {}
    try:
        text = raw.decode("utf-8-sig")  # a BOM from a Windows editor is fine
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text; nothing was changed.") from None
    if not text.strip():
        return text, {}
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise InvalidInput(
            f"{path}: not valid JSON ({exc}); nothing was changed. Fix the file (Claude "
            "Code's settings are strict JSON: no comments, no trailing commas) and run "
            "`subrosa install` again."
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: the top level is not a JSON object; nothing was changed.")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(f'{path}: "hooks" is not a JSON object; nothing was changed.')
    for event in EVENTS:
        if hooks and event in hooks and not isinstance(hooks[event], list):
            raise InvalidInput(f"{path}: hooks.{event} is not a list; nothing was changed.")
    return text, data


def render_settings(data: dict[str, Any], like: str | None = None) -> str:
    """`data` as JSON in the style of the text `like` (a team's settings.json is in git:
    a compact or tab-indented file stays so, with or without its final newline);
    two-space indentation for a new file."""
    if like is None or '"' not in like:  # no file, or `{}`: no style to keep
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    body = like.strip()
    newline = "\r\n" if "\r\n" in like else "\n"
    end = newline if like.endswith("\n") else ""
    if "\n" not in body:  # one line: compact, in its own spacing
        skeleton = _STRING.sub('""', body)  # what strings hold is no style
        tight = bool(re.search(r'":\S', skeleton)) and '": ' not in skeleton
        tight_comma = ',"' in skeleton or (tight and "," not in skeleton)
        comma = "," if tight_comma and ", " not in skeleton else ", "
        colon = ":" if tight else ": "
        return json.dumps(data, separators=(comma, colon), ensure_ascii=False) + end
    step = re.search(r"\n([ \t]+)\S", body)
    indent = step.group(1) if step else 2
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return text.replace("\n", newline) + end


def _strip_ours(groups: list[Any]) -> tuple[list[Any], int]:
    """`groups` without our handlers (a group we emptied goes too); how many went."""
    kept: list[Any] = []
    removed = 0
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            kept.append(group)
            continue
        others = [handler for handler in handlers if not is_ours(handler)]
        removed += len(handlers) - len(others)
        if others or not handlers:
            kept.append({**group, "hooks": others} if len(others) < len(handlers) else group)
    return kept, removed


def merge_hooks(data: dict[str, Any], runner: Runner = PLUGIN) -> tuple[dict[str, Any], list[str]]:
    """`data` with exactly one subrosa handler per event; what changed, per event."""
    merged = copy.deepcopy(data)
    hooks = merged.setdefault("hooks", {})
    changes = []
    for event, name in EVENTS.items():
        groups = hooks.get(event, [])
        mine = [
            handler
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for handler in group["hooks"]
            if is_ours(handler)
        ]
        if mine == [hook_handler(name, runner)]:
            changes.append(f"= {event}: subrosa hook {name} (already there)")
            continue
        theirs = [
            handler
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for handler in group["hooks"]
            if runs_ours(handler) and not is_ours(handler)
        ]
        if theirs and not mine:  # a second one would run it twice
            changes.append(f"= {event}: subrosa hook {name} (run by a handler of yours, left)")
            continue
        kept, _ = _strip_ours(groups)
        hooks[event] = [*kept, {"hooks": [hook_handler(name, runner)]}]
        verb = "~" if mine else "+"
        changes.append(f"{verb} {event}: subrosa hook {name}")
    return merged, changes


def remove_hooks(
    data: dict[str, Any], created: Containers | None = None
) -> tuple[dict[str, Any], list[str]]:
    """`data` without subrosa's handlers. A container (`hooks`, an event's list) left
    empty goes when install made it (`created`, kept in the install record); one the
    file held before, empty or not, stays. Without a record (an older install),
    every container that only we filled goes."""
    cleaned = copy.deepcopy(data)
    hooks = cleaned.get("hooks")
    changes: list[str] = []
    if not isinstance(hooks, dict):
        return cleaned, changes
    for event, name in EVENTS.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept, removed = _strip_ours(groups)
        if not removed:
            continue
        changes.append(f"- {event}: subrosa hook {name}")
        if kept or (created is not None and ("hooks", event) not in created):
            hooks[event] = kept
        else:
            del hooks[event]
    if changes and not hooks and (created is None or ("hooks",) in created):
        del cleaned["hooks"]
    return cleaned, changes


# The objects and lists install made, each as its keys from the top of the file
# (("hooks",), ("hooks", "Stop"), ("projects", DIR, "mcpServers")): uninstall takes out
# only these when they are left empty, so an empty one the user had stays.
Containers = frozenset[tuple[str, ...]]


def _containers(
    before: dict[str, Any], after: dict[str, Any], keys: list[tuple[str, ...]]
) -> Containers:
    """Which of the containers at `keys` `after` has and `before` has not."""
    return frozenset(
        key for key in keys if _at(after, key) is not None and _at(before, key) is None
    )


def _at(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _created(
    record: dict[str, Any] | None,
    data: dict[str, Any],
    merged: dict[str, Any],
    removed: dict[str, Any],
    keys: list[tuple[str, ...]],
) -> Containers:
    """The containers install made, for the record: those it makes now (in `merged`,
    not in `data`), and those an earlier install made, as its record says; with no
    record to say (an older install), those that hold only our entries (gone in
    `removed`, `data` without them)."""
    earlier = _recorded_containers(record)
    if earlier is None:
        earlier = _containers(removed, data, keys)
    return earlier | _containers(data, merged, keys)


def _recorded_containers(record: dict[str, Any] | None) -> Containers | None:
    listed = record.get("created") if record is not None else None
    if not isinstance(listed, list):
        return None
    return frozenset(
        tuple(keys)
        for keys in listed
        if isinstance(keys, list) and all(isinstance(key, str) for key in keys)
    )


def _hook_containers() -> list[tuple[str, ...]]:
    return [("hooks",), *(("hooks", event) for event in EVENTS)]


def _prefixes(keys: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [keys[: n + 1] for n in range(len(keys))]


def refuse_read_only(path: Path) -> None:
    """InvalidInput when the file at `path` (through a link) is read-only: a person made
    it so to keep it as it is. The atomic write would not notice (a rename replaces a
    read-only file, and root may write any), so the mode is asked here, before anything
    is written."""
    try:
        info = path.stat()
    except OSError:  # missing (to be created), or unreadable: reading it says why
        return
    if not info.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        raise InvalidInput(
            f"{path}: is read-only, so subrosa leaves it as it is; nothing was changed "
            "(make it writable to let `subrosa install` change it)."
        )


def _record_path(settings_path: Path, keys: tuple[str, ...] = ()) -> Path:
    """Where install keeps what it needs to know about the file at `settings_path` for
    uninstall (for a part of ~/.claude.json, about the object at `keys`)."""
    name = str(settings_path.absolute()) + (json.dumps(keys) if keys else "")
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]
    return Path(data_dir(), "installs", f"{digest}.json")


def _read_record(settings_path: Path, keys: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The install record of the file (of the object at `keys` in it), or None. One for
    a whole file has the text install wrote (`installed`)."""
    try:
        record = loads_json(read_capped(_record_path(settings_path, keys), JSON_CAP) or b"")
    except (OSError, ValueError, InvalidInput):
        return None
    if isinstance(record, dict) and (keys or isinstance(record.get("installed"), str)):
        return record
    return None


def _installed(record: dict[str, Any], text: str | None) -> bool:
    """Whether the file holds what install wrote, as the record says (same JSON)."""
    return bool(_parsed(record.get("installed")) == _parsed(text))


def _parsed(text: str | None) -> Any:
    if text is None or not text.strip():
        return None if text is None else {}
    try:
        return loads_json(text)
    except ValueError:
        return None


# --- the skills ------------------------------------------------------------------------


def shipped_skills() -> list[Path]:
    """The skill directories subrosa ships (each holds a SKILL.md)."""
    source = skills_dir()
    return sorted(path for path in source.iterdir() if (path / "SKILL.md").is_file())


def _skill_files(skill: Path) -> list[Path]:
    return sorted(
        path
        for path in skill.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def _skill_copies(skills_path: Path) -> list[tuple[Path, Path, str, bool | None]]:
    """Every shipped skill file as (source, its place under `skills_path`, its relative
    name, whether that place holds the same bytes: None when there is no file there)."""
    copies: list[tuple[Path, Path, str, bool | None]] = []
    for skill in shipped_skills():
        for source in _skill_files(skill):
            relative = source.relative_to(skill.parent)
            destination = skills_path / relative
            same: bool | None
            # Bounded: a project's `.claude/skills/…` may hold anything, /dev/zero too.
            held = read_capped(destination, JSON_CAP, follow_links=True)
            same = None if held is None else held == source.read_bytes()
            copies.append((source, destination, relative.as_posix(), same))
    return copies


# --- Claude Code's auto memory (autoMemoryDirectory) ---------------------------------
#
# Claude Code keeps its own memory ("remember X", and the MEMORY.md it loads) in its
# auto-memory dir under ~/.claude/projects/. A project that keeps its memory in the
# repository (.claude/memory) would then have two, and subrosa would never see what
# Claude Code writes. `autoMemoryDirectory` points Claude Code at .claude/memory; being
# an absolute path of this machine, it goes in settings.local.json, never the shared
# settings.json.

AUTO_MEMORY = "autoMemoryDirectory"


def wanted_auto_memory_dir(memory_dir: Path, project: Path) -> str | None:
    """The `autoMemoryDirectory` install writes for `memory_dir`: its absolute path when
    it is the project's own `.claude/memory` (in the tree, or the one a worktree
    shares), else None (another folder is no project's to name)."""
    from subrosa.claude.hooks import same_dir
    from subrosa.paths import project_memory_dir

    here = str(memory_dir.absolute())
    shared = project_memory_dir(project)
    if same_dir(here, str(project / ".claude" / "memory")) or (
        shared is not None and same_dir(here, shared)
    ):
        return here
    return None


def plan_auto_memory(memory_dir: Path, project: Path) -> tuple[str | None, str | None]:
    """What install does about `autoMemoryDirectory` for the project: the value to
    write into its settings.local.json (None: nothing to write), and a warning when a
    settings file already sends Claude Code's memory to another folder (left as set)."""
    from subrosa.claude.hooks import same_dir
    from subrosa.claude.settings import auto_memory_setting
    from subrosa.paths import expand_user

    wanted = wanted_auto_memory_dir(memory_dir, project)
    if wanted is None:
        return None, None
    found = auto_memory_setting(str(project))
    if found is None:
        return wanted, None
    value, where = found
    local = project / ".claude" / "settings.local.json"
    if same_dir(expand_user(value), wanted):
        return None, None  # as it should be, however it is spelled
    record = _read_record(local)
    if Path(where) == local and record is not None and record.get("automemory") == value:
        return wanted, None  # ours, from an earlier install: moved with the memory dir
    return None, (
        f"{where} sets {AUTO_MEMORY} to {value}, not to the memory dir {wanted}: Claude "
        "Code's own memory writes go there, not to subrosa's memory dir (left as it is; "
        f"set it to {wanted}, or remove it and run `subrosa install` again)."
    )


def git_ignores(path: Path) -> bool | None:
    """Whether git keeps `path` out of commits (ignored and not tracked); None when it
    cannot say (no git, not in a repository)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", "--", str(path.absolute())],
            cwd=next(folder for folder in path.absolute().parents if folder.is_dir()),
            capture_output=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)


def merge_auto_memory(data: dict[str, Any], value: str) -> tuple[dict[str, Any], list[str]]:
    """`data` with `autoMemoryDirectory` set to `value` (added at the end); the change."""
    current = data.get(AUTO_MEMORY)
    if current == value:
        return data, [f"= {AUTO_MEMORY}: {value} (already there)"]
    return {**data, AUTO_MEMORY: value}, [f"{'~' if current else '+'} {AUTO_MEMORY}: {value}"]


def _without_recorded_auto_memory(
    data: dict[str, Any], record: dict[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """`data` without the `autoMemoryDirectory` install wrote (its record says which
    value; one a person changed since is theirs), and that value (None: not there)."""
    ours = record.get("automemory") if record is not None else None
    if not isinstance(ours, str) or data.get(AUTO_MEMORY) != ours:
        return data, None
    return {key: value for key, value in data.items() if key != AUTO_MEMORY}, ours


# --- the plan --------------------------------------------------------------------------


@dataclass
class SettingsEdit:
    """What install or uninstall does to one settings file, and the install record it
    keeps for it (the same record for every scope that writes the file)."""

    path: Path
    changes: list[str] = field(default_factory=list)
    write: bool = False
    text: str | None = None  # the file's new content (None: delete it)
    record: dict[str, Any] | None = None  # the install record to write (None: delete it)

    def apply(self) -> None:
        if not self.write:
            return
        record_path = _record_path(self.path)
        if self.record is not None:
            make_private_dir(record_path.parent.parent)  # the data dir: 0700
            make_private_dir(record_path.parent)
            atomic_write_text(record_path, json.dumps(self.record) + "\n", mode=0o600)
        if self.text is None:
            self.path.unlink(missing_ok=True)
        else:
            # A settings.json kept in a dotfiles repo is often a symlink: write
            # through it, or the rename would replace the link with a copy.
            real = self.path.resolve() if self.path.is_symlink() else self.path
            real.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(real, self.text)
        if self.record is None:
            record_path.unlink(missing_ok=True)


@dataclass
class Plan:
    """What install or uninstall will do; `apply` does it."""

    target: Target
    # The scope's settings file first; then, for the project scope, the project's
    # settings.local.json when `autoMemoryDirectory` goes there.
    files: list[SettingsEdit] = field(default_factory=list)
    copies: list[tuple[Path, Path]] = field(default_factory=list)
    removals: list[Path] = field(default_factory=list)
    skill_changes: list[str] = field(default_factory=list)
    memory_dir: Path | None = None  # a memory dir to create (install, first time)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        written = any(edit.write for edit in self.files)
        return written or bool(self.copies or self.removals or self.memory_dir)

    def apply(self) -> None:
        if self.memory_dir is not None:
            self.memory_dir.mkdir(parents=True, exist_ok=True)
        for edit in self.files:
            edit.apply()
        for source, destination in self.copies:
            destination.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(destination, source.read_bytes(), mode=source.stat().st_mode & 0o777)
        for destination in self.removals:
            destination.unlink(missing_ok=True)
            _remove_empty_dirs(destination.parent, self.target.skills_path.parent)


def _remove_empty_dirs(directory: Path, stop: Path) -> None:
    """Remove `directory` and its parents while empty, up to (not including) `stop`."""
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _merge_into(
    path: Path,
    runner: Runner | None,
    auto_memory: str | None,
) -> SettingsEdit:
    """Install into the settings file at `path`: subrosa's hooks (`runner` None: none)
    and `autoMemoryDirectory` (None: none), with the record uninstall needs."""
    edit = SettingsEdit(path)
    text, data = read_settings(path)
    merged = data
    if runner is not None:
        merged, edit.changes = merge_hooks(merged, runner)
    if auto_memory is not None:
        merged, changes = merge_auto_memory(merged, auto_memory)
        edit.changes += changes
    if merged == data and text is not None:
        return edit
    refuse_read_only(path)
    edit.write = True
    edit.text = render_settings(merged, like=text)
    record = _read_record(path)
    keep_original = record is not None and _installed(record, text)
    removed, hooks_there = remove_hooks(data)
    removed, memory_there = _without_recorded_auto_memory(removed, record)
    ours_there = bool(hooks_there) or memory_there is not None
    edit.record = {
        "settings_path": str(path),
        "installed": edit.text,
        "created": sorted(
            list(keys)
            for keys in _created(
                record if keep_original or ours_there else None,
                data,
                merged,
                removed,
                _hook_containers(),
            )
        ),
    }
    if record is not None and keep_original:
        if "original" in record:
            edit.record["original"] = record["original"]
    elif not ours_there:
        # Bytes to give back on uninstall; not a file that holds our entries already
        # (edited since an install, or from one whose record is lost): uninstall
        # then takes ours out of what is there.
        edit.record["original"] = text
    ours = auto_memory or memory_there
    if ours is not None and merged.get(AUTO_MEMORY) == ours:
        edit.record["automemory"] = ours
    return edit


def _take_out_of(path: Path, hooks: bool) -> SettingsEdit:
    """Uninstall from the settings file at `path`: subrosa's hooks (when `hooks`) and
    the `autoMemoryDirectory` install wrote. The file gets its content from before the
    first install back when nobody changed it since and nothing of ours stays in it."""
    edit = SettingsEdit(path)
    text, data = read_settings(path)
    record = _read_record(path)
    cleaned = data
    if hooks:
        cleaned, edit.changes = remove_hooks(data, _recorded_containers(record))
    cleaned, memory = _without_recorded_auto_memory(cleaned, record)
    if memory is not None:
        edit.changes.append(f"- {AUTO_MEMORY}: {memory}")
    hooks_stay = not hooks and bool(remove_hooks(cleaned)[1])  # another scope's
    untouched = record is not None and _installed(record, text)
    restore = untouched and text is not None and "original" in (record or {})
    if restore and not hooks_stay and record is not None:
        # Untouched since install: give back the original bytes (or no file at all).
        original = record.get("original")
        edit.write = True
        edit.text = original if isinstance(original, str) else None
        if not edit.changes:
            edit.changes = ["- the subrosa hooks"]
    if not edit.write and edit.changes:
        edit.write = True
        edit.text = render_settings(cleaned, like=text)
        if hooks_stay and record is not None:  # the other scope's uninstall needs it
            edit.record = {**record, "installed": edit.text}
            edit.record.pop("automemory", None)
    if edit.write:
        refuse_read_only(path)
    return edit


def plan_install(target: Target, runner: Runner = PLUGIN, memory_dir: Path | None = None) -> Plan:
    """Install into `target`; create `memory_dir` when it does not exist yet, so the
    first session has somewhere to keep its leaves. When `memory_dir` is the project's
    `.claude/memory`, point Claude Code's auto memory at it too (settings.local.json)."""
    plan = Plan(
        target, memory_dir=None if memory_dir is None or memory_dir.is_dir() else memory_dir
    )
    auto_memory = None
    if memory_dir is not None and target.scope != "user":
        auto_memory, warning = plan_auto_memory(memory_dir, target.settings_path.parent.parent)
        if warning is not None:
            plan.warnings.append(warning)
    local = target.settings_path.with_name("settings.local.json")
    same_file = target.scope == "local"
    plan.files.append(_merge_into(target.settings_path, runner, auto_memory if same_file else None))
    if auto_memory is not None and not same_file:
        plan.files.append(_merge_into(local, None, auto_memory))
    if auto_memory is not None and git_ignores(local) is False:
        # Claude Code has git ignore the file only when it writes it itself.
        plan.warnings.append(
            f"{local} now names a path on this machine, and git does not ignore it: keep "
            "it out of commits (add .claude/settings.local.json to .gitignore)."
        )
    for source, destination, name, same in _skill_copies(target.skills_path):
        if not same:
            plan.copies.append((source, destination))
        verb = "+" if same is None else "=" if same else "~"
        plan.skill_changes.append(f"{verb} {name}")
    return plan


def plan_uninstall(target: Target) -> Plan:
    """Take out what install put into `target`; for the project scope, also the
    `autoMemoryDirectory` it put into settings.local.json."""
    plan = Plan(target)
    plan.files.append(_take_out_of(target.settings_path, hooks=True))
    local = target.settings_path.with_name("settings.local.json")
    record = _read_record(local)
    if target.scope == "project" and record is not None and "automemory" in record:
        try:
            plan.files.append(_take_out_of(local, hooks=False))
        except InvalidInput as exc:  # the hooks still come out
            plan.warnings.append(f"{AUTO_MEMORY} was left in place: {exc}")
    for _source, destination, name, same in _skill_copies(target.skills_path):
        if same:
            plan.removals.append(destination)
            plan.skill_changes.append(f"- {name}")
        elif same is False:
            plan.skill_changes.append(f"! {name} (changed by you, left in place)")
    return plan


# --- the MCP server (`subrosa install --mcp`) -------------------------------------------

MCP_SERVER = "subrosa"


def claude_json_path(env: dict[str, str] | None = None) -> Path:
    """Claude Code's own state file, which holds the user- and local-scope MCP servers:
    `$CLAUDE_CONFIG_DIR/.claude.json` when that is set, else `~/.claude.json`."""
    env = dict(os.environ) if env is None else env
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser() / ".claude.json"
    return Path(env.get("HOME") or Path.home()).expanduser() / ".claude.json"


def mcp_command() -> str:
    """How Claude Code should start `subrosa`: by name when it is on the PATH, else by
    the absolute path of the one running now (a venv install), so the server starts."""
    import shutil
    import sys

    if shutil.which("subrosa"):
        return "subrosa"
    beside = Path(sys.executable).parent / "subrosa"
    return str(beside) if beside.is_file() else "subrosa"


def mcp_server_config(command: str | None = None) -> dict[str, Any]:
    """The server's entry, in the shape `claude mcp add` writes."""
    return {"type": "stdio", "command": command or mcp_command(), "args": ["mcp"], "env": {}}


def is_our_server(entry: object) -> bool:
    """An `mcpServers` entry that runs `subrosa mcp` (by name or by path)."""
    if not isinstance(entry, dict):
        return False
    command = str(entry.get("command", ""))
    return Path(command).name == "subrosa" and entry.get("args") == ["mcp"]


@dataclass(frozen=True)
class McpTarget:
    """Where a scope keeps its MCP servers: a file, and the keys down to `mcpServers`
    (project: `.mcp.json` at the project's top; user: `~/.claude.json`; local: the
    project's entry under `projects` in `~/.claude.json`)."""

    scope: str
    path: Path
    keys: tuple[str, ...]


def mcp_target_for(scope: str, cwd: str | os.PathLike[str] | None = None) -> McpTarget:
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}.")
    if scope == "user":
        return McpTarget(scope, claude_json_path(), ("mcpServers",))
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or checkout_root(cwd))
    if scope == "project":
        return McpTarget(scope, project / ".mcp.json", ("mcpServers",))
    return McpTarget(scope, claude_json_path(), ("projects", str(project), "mcpServers"))


def _read_json_object(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, {}
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text; nothing was changed.") from None
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{path}: not valid JSON ({exc}); nothing was changed.") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: the top level is not a JSON object; nothing was changed.")
    return text, data


def _render_like(data: dict[str, Any], original: str | None) -> str:
    """`data` as JSON in the original file's style: its indentation (Claude Code writes
    two spaces) and its final newline or lack of one, so that only our lines change."""
    indent = 2
    if original:
        match = re.search(r"\n([ \t]+)\S", original)
        if match:
            indent = len(match.group(1).expandtabs(4))
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    ending = "\n" if original is None or original.endswith("\n") else ""
    return text + ending


def _servers(data: dict[str, Any], keys: tuple[str, ...], path: Path) -> Any:
    node: Any = data
    for key in keys:
        if not isinstance(node, dict):
            raise InvalidInput(f"{path}: {'.'.join(keys)} is not a JSON object; nothing changed.")
        node = node.get(key)
        if node is None:
            return None
    if not isinstance(node, dict):
        raise InvalidInput(f"{path}: {'.'.join(keys)} is not a JSON object; nothing changed.")
    return node


@dataclass
class McpPlan:
    """What `install --mcp` or `--uninstall` does to the scope's MCP servers."""

    target: McpTarget
    changes: list[str] = field(default_factory=list)
    text: str | None = None  # the file's new content (None: delete it)
    write: bool = False
    record: dict[str, Any] | None = None
    keep_record: bool = True

    def apply(self) -> None:
        if not self.write:
            return
        path = self.target.path
        record_path = _record_path(path, _record_keys(self.target))
        if self.record is not None:
            make_private_dir(record_path.parent.parent)  # the data dir: 0700
            make_private_dir(record_path.parent)
            atomic_write_text(record_path, json.dumps(self.record) + "\n", mode=0o600)
        if self.text is None:
            path.unlink(missing_ok=True)
        else:
            real = path.resolve() if path.is_symlink() else path
            real.parent.mkdir(parents=True, exist_ok=True)
            mode = 0o600 if self.target.scope != "project" else None
            atomic_write_text(real, self.text, mode=mode if not real.exists() else None)
        if not self.keep_record:
            record_path.unlink(missing_ok=True)


def _record_keys(target: McpTarget) -> tuple[str, ...]:
    """.mcp.json has a record of its own, the whole file's; ~/.claude.json one for each
    scope it holds, the object's (no copy of the file: Claude Code rewrites it all the
    time)."""
    return () if target.scope == "project" else target.keys


def _without_server(
    data: dict[str, Any], keys: tuple[str, ...], created: Containers | None
) -> dict[str, Any]:
    """`data` without our server at `keys`; a container left empty goes when install
    made it (`created`; None: no record, so every one we emptied goes)."""
    cleaned = copy.deepcopy(data)
    nodes = [cleaned]
    for key in keys:
        nodes.append(nodes[-1][key])
    del nodes[-1][MCP_SERVER]
    for depth in range(len(keys), 0, -1):
        node, made = nodes[depth], created is None or keys[:depth] in created
        if node or not made:
            break
        del nodes[depth - 1][keys[depth - 1]]
    return cleaned


def plan_mcp_install(target: McpTarget, command: str | None = None) -> McpPlan:
    """The subrosa server merged into the scope's `mcpServers`, every other key kept."""
    plan = McpPlan(target)
    text, data = _read_json_object(target.path)
    servers = _servers(data, target.keys, target.path)
    wanted = mcp_server_config(command)
    current = servers.get(MCP_SERVER) if servers else None
    label = f"mcpServers.{MCP_SERVER}: {wanted['command']} mcp"
    if current == wanted:
        plan.changes.append(f"= {label} (already there)")
        return plan
    if current is not None and not is_our_server(current):
        raise InvalidInput(
            f"{target.path}: mcpServers.{MCP_SERVER} runs something else; rename or remove "
            "it first. Nothing was changed."
        )
    refuse_read_only(target.path)
    merged = copy.deepcopy(data)
    node = merged
    for key in target.keys:
        node = node.setdefault(key, {})
    node[MCP_SERVER] = wanted
    plan.changes.append(f"{'~' if current else '+'} {label}")
    plan.write = True
    plan.text = _render_like(merged, text)
    record = _read_record(target.path, _record_keys(target))
    same = record is not None and "installed" in record and _installed(record, text)
    removed = _without_server(data, target.keys, None) if current is not None else data
    created = _created(
        record if same or current is not None else None,
        data,
        merged,
        removed,
        _prefixes(target.keys),
    )
    plan.record = {"settings_path": str(target.path), "created": sorted(map(list, created))}
    if target.scope != "project":
        plan.record["keys"] = list(target.keys)
        return plan
    # .mcp.json is the project's file, often new: keep what was there before, so that
    # uninstall gives back the same bytes (or no file). ~/.claude.json is Claude Code's
    # own state, rewritten by it all the time: no copy is kept.
    plan.record["installed"] = plan.text
    if record is not None and same:
        if "original" in record:
            plan.record["original"] = record["original"]
    elif current is None:  # not a file that holds our server already
        plan.record["original"] = text
    return plan


def plan_mcp_uninstall(target: McpTarget) -> McpPlan:
    """The subrosa server taken out of the scope's `mcpServers` (and the containers it
    leaves empty); `.mcp.json` gets its content from before the install back while it
    still holds what install wrote."""
    plan = McpPlan(target, keep_record=False)
    text, data = _read_json_object(target.path)
    servers = _servers(data, target.keys, target.path)
    if not servers or not is_our_server(servers.get(MCP_SERVER)):
        return plan
    refuse_read_only(target.path)
    plan.changes.append(f"- mcpServers.{MCP_SERVER}")
    plan.write = True
    record = _read_record(target.path, _record_keys(target))
    untouched = record is not None and "installed" in record and _installed(record, text)
    if record is not None and untouched and "original" in record:
        original = record.get("original")
        plan.text = original if isinstance(original, str) else None
        return plan
    cleaned = _without_server(data, target.keys, _recorded_containers(record))
    plan.text = _render_like(cleaned, text)
    return plan


def plugin_mcp_json() -> str:
    """The plugin's .mcp.json, byte for byte (a test keeps the file in step): Claude Code
    starts `subrosa mcp` from the PATH, as the plugin's hooks find `subrosa`."""
    document = {"mcpServers": {MCP_SERVER: {"command": "subrosa", "args": ["mcp"]}}}
    return json.dumps(document, indent=2) + "\n"


def registered_mcp_servers(cwd: str | os.PathLike[str] | None = None) -> list[tuple[str, Any]]:
    """Where subrosa's MCP server is registered, scope by scope: (the file and scope,
    the entry), for `doctor`. Files that cannot be read count as not registering it."""
    found = []
    for scope in ("project", "local", "user"):
        target = mcp_target_for(scope, cwd)
        try:
            _text, data = _read_json_object(target.path)
            servers = _servers(data, target.keys, target.path)
        except InvalidInput:
            continue
        entry = servers.get(MCP_SERVER) if servers else None
        if is_our_server(entry):
            found.append((f"{target.path} ({scope})", entry))
    return found
