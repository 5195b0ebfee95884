"""A project's name on every machine, and the key each half files its rows under.

Two clones of one repository (different folders, different machines, one cloned over
SSH and one over HTTPS) are one project in a shared database. Their folders differ;
their name does not:

1. the repository's git remote, normalized (`github.com/org/repo`; subrosa.gitremote,
   read from `.git/config` without running git);
2. else the name the settings file gives the folder, in its `[projects]` table
   (`"~/code/acme-tools" = "acme-tools"`; the nearest folder listed wins), for a
   repository without a remote or a folder that is no repository;
3. else None, and each half keeps its path-based key: the memory dir's resolved path
   for facts, Claude Code's encoded project folder (`-home-me-code-tool`) for sessions.

Why a table of folders and not one `project = "name"`: the settings file is the user's,
for every folder they work in, and a single name would make every project without a
remote one project (each `generate` would then see the others' facts without leaves).

Facts follow the repository of their *memory dir*, sessions the repository they ran in.
So a memory dir kept in the repository (`<repo>/.claude/memory`, committed: its leaves
travel by git, docs/sync.md) is filed under `github.com/org/repo` like the sessions,
while Claude Code's auto-memory dir (`~/.claude/projects/<folder>/memory`, private to one
machine) keeps its path: two members' private memories under one key would each look
to the other's `generate` like facts whose leaves were deleted. A memory dir elsewhere
in a repository gets the repository's name and its place: `github.com/org/repo:docs/mem`.

Standard library only, no subprocess: the hooks and `subrosa search`'s fast path use it.
And no pathlib: folders are str, handled with subrosa.paths (pathlib and the urllib.parse
and ipaddress it loads were ~5 ms of a ~100 ms search process).
"""

from __future__ import annotations

import os

from subrosa.gitremote import remote_identity
from subrosa.paths import (
    checkout_root,
    encode_project_path,
    join,
    lineage,
    parent,
    project_root,
    relative_to,
    resolved,
    spelled,
)

# Where a memory dir sits when it is the repository's own: no suffix for these.
_CANONICAL = (".", ".claude/memory")


def configured_folders(env: dict[str, str] | None = None) -> dict[str, str]:
    """The settings file's `[projects]` table: folder (absolute, `~` expanded) -> name.
    A relative folder is relative to the settings file's own folder."""
    from subrosa.config import config_path, read_file
    from subrosa.errors import InvalidInput

    env = dict(os.environ) if env is None else env
    table = read_file(env).get("projects")
    if table is None:
        return {}
    where = config_path(env)
    if not isinstance(table, dict):
        raise InvalidInput(f"{where}: projects must be a table of folder = name.")
    folders: dict[str, str] = {}
    for folder, name in table.items():
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(f"{where}: projects.{folder!r} must name the project, not {name!r}.")
        path = spelled(os.path.expanduser(folder))
        if not os.path.isabs(path):
            path = join(parent(where), path)
        # Both spellings: a folder reached through a symbolic link (macOS's /var is
        # /private/var) matches whether the path asked about was resolved or not.
        folders[spelled(os.path.abspath(path))] = name.strip()
        folders[resolved(os.path.abspath(path))] = name.strip()
    return folders


def _configured(start: str, env: dict[str, str] | None) -> tuple[str, str] | None:
    """The name the settings file gives `start` or the nearest folder above it, and that
    folder; None when it names none of them."""
    folders = configured_folders(env)
    if not folders:
        return None
    for candidate in lineage(start):
        if candidate in folders:
            return folders[candidate], candidate
    return None


def project_identity(
    start: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None
) -> str | None:
    """The name of the project containing `start` (default: the current folder) on every
    machine: its repository's normalized remote, else the name the settings file gives
    it, else None."""
    here = spelled(os.path.abspath(start if start is not None else os.getcwd()))
    named = remote_identity(here, env)
    if named is not None:
        return named
    configured = _configured(here, env)
    return configured[0] if configured is not None else None


def facts_key(memory_dir: str | os.PathLike[str], env: dict[str, str] | None = None) -> str:
    """The key a memory dir's facts are filed under: the name of the repository holding
    the memory dir (with the dir's place in it when that is not `.claude/memory` or the
    top), else the memory dir's resolved path (today's key)."""
    real = resolved(memory_dir)
    remote = remote_identity(real, env)
    if remote is not None:
        top = checkout_root(real)
        return _placed(remote, real, top if top is not None else real)
    configured = _configured(real, env)
    if configured is not None:
        return _placed(configured[0], real, configured[1])
    return real


def _placed(name: str, memory_dir: str, top: str) -> str:
    place = relative_to(memory_dir, top)
    if place is None:
        return name
    return name if place in _CANONICAL else f"{name}:{place}"


def sessions_key(
    cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None
) -> str:
    """The key the sessions run in `cwd` (default: the current folder) are filed under:
    the project's name (project_identity of its repository's root), else Claude Code's
    encoded folder of that root (today's key)."""
    root = project_root(cwd)
    return project_identity(root, env) or encode_project_path(root)


def legacy_sessions_key(cwd: str | os.PathLike[str] | None = None) -> str:
    """The key sessions run in `cwd` were filed under before projects had names."""
    return encode_project_path(project_root(cwd))


def ingested_by(env: dict[str, str] | None = None) -> tuple[str, str]:
    """(machine, member) recorded on each session this process archives: the host name,
    and `SUBROSA_USER` or the settings file's `user` (a team's name for a member whose
    login differs between machines), else the login name."""
    import getpass
    import socket

    from subrosa.config import text_setting

    user = text_setting("user", env)
    if not user:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no name for this uid (a container)
            user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return socket.gethostname() or "unknown", user
