"""Where things live: the memory dir, Claude Code's directories, the database.

Standard library only: the hooks import this on every turn of the agent.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from urllib.parse import quote, unquote

from subrosa.lazyre import compile_lazily

_NOT_ALNUM = compile_lazily(r"[^A-Za-z0-9]")


def claude_root(env: dict[str, str] | None = None) -> Path:
    """Claude Code's configuration root: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    assert env is not None
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".claude"


def encode_project_path(path: str | os.PathLike[str]) -> str:
    """Claude Code's encoding of a project path: every non-alphanumeric becomes `-`."""
    return _NOT_ALNUM.sub("-", str(path))


def _main_repo_root_from_gitfile(gitfile: Path) -> Path | None:
    """For a worktree (`.git` is a file), follow gitdir and commondir to the main repository."""
    try:
        text = gitfile.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:") :].strip())
    if not gitdir.is_absolute():
        gitdir = (gitfile.parent / gitdir).resolve()
    commondir_file = gitdir / "commondir"
    try:
        common = Path(commondir_file.read_text(encoding="utf-8").strip())
    except OSError:
        return gitfile.parent
    if not common.is_absolute():
        common = (gitdir / common).resolve()
    return common.parent


def checkout_root(cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The top of the git checkout around `cwd` (a worktree's own top, unlike
    `project_root`), or None outside any checkout. Where Claude Code reads `.claude/`."""
    start = Path(cwd if cwd is not None else os.getcwd()).absolute()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The git repository root containing `cwd` (worktrees share the main root), else `cwd`.

    Found by walking up for `.git` rather than running git: the hooks cannot afford a
    subprocess on every turn.
    """
    start = Path(cwd if cwd is not None else os.getcwd()).absolute()
    for candidate in (start, *start.parents):
        dotgit = candidate / ".git"
        if dotgit.is_dir():
            return candidate
        if dotgit.is_file():
            return _main_repo_root_from_gitfile(dotgit) or candidate
    return start


def project_transcript_dir(
    cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None
) -> Path:
    """`<claude root>/projects/<encoded project path>`: where Claude Code keeps transcripts."""
    return claude_root(env) / "projects" / encode_project_path(project_root(cwd))


def auto_memory_dir(
    cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None
) -> Path:
    """Claude Code's auto-memory directory for the project at `cwd`."""
    return project_transcript_dir(cwd, env) / "memory"


def project_memory_dir(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The `.claude/memory` a project keeps in its tree, seen from `start` (default: the
    current folder): the nearest one from `start` up to the top of its git checkout;
    in a worktree without one, the main repository's (worktrees share one memory, as
    they share Claude Code's auto-memory dir). Outside a checkout only `start`'s own.

    So a command run anywhere inside a project (its root, a subfolder, a worktree)
    finds the memory the hooks found from the folder Claude Code was started in.
    """
    here = Path(start if start is not None else os.getcwd()).expanduser().absolute()
    top = checkout_root(here)
    folders = (
        [here] if top is None else [here, *here.parents[: len(here.parents) - len(top.parents)]]
    )
    for folder in folders:
        candidate = folder / ".claude" / "memory"
        if candidate.is_dir():
            return candidate
    if top is not None and (top / ".git").is_file():
        main = _main_repo_root_from_gitfile(top / ".git")
        if main is not None and main != top and (main / ".claude" / "memory").is_dir():
            return main / ".claude" / "memory"
    return None


def resolve_memory_dir(
    explicit: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """The memory dir, by PRODUCT.md's order: flag, `SUBROSA_MEMORY_DIR`, the project's
    own `.claude/memory` seen from `$CLAUDE_PROJECT_DIR` (else `cwd`) when there is one
    (`project_memory_dir`), else Claude Code's auto-memory dir for the project."""
    env = dict(os.environ) if env is None else env
    if explicit:
        return Path(explicit).expanduser().absolute()
    if env.get("SUBROSA_MEMORY_DIR"):
        return Path(env["SUBROSA_MEMORY_DIR"]).expanduser().absolute()
    given = env.get("CLAUDE_PROJECT_DIR") or cwd
    start = Path(given).expanduser().absolute() if given else None
    found = project_memory_dir(start)
    if found is not None:
        return found
    return auto_memory_dir(start, env)


def data_dir(env: dict[str, str] | None = None) -> Path:
    """The per-user data directory: `$XDG_DATA_HOME/subrosa` or the platform's equivalent."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or Path.home()).expanduser()
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]).expanduser() / "subrosa"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "subrosa"
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "subrosa"
    return home / ".local" / "share" / "subrosa"


def config_file(env: dict[str, str] | None = None) -> Path:
    """The settings file: `$SUBROSA_CONFIG`, else `$XDG_CONFIG_HOME/subrosa/config.toml`,
    else `~/.config/subrosa/config.toml`. Here rather than in subrosa.config so the Stop
    hook can see there is no file without importing the settings machinery."""
    env = dict(os.environ) if env is None else env
    if env.get("SUBROSA_CONFIG"):
        return Path(env["SUBROSA_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "subrosa" / "config.toml"


def sqlite_url(path: Path) -> str:
    """The `sqlite:///` URL of a file, as SQLAlchemy renders it (it quotes the same way)."""
    return "sqlite:///" + quote(str(path), safe=" +/")


_SQLITE_URL = compile_lazily(r"sqlite(\+pysqlite)?:///(?P<rest>.*)", re.DOTALL)


def sqlite_path(url: str) -> Path | None:
    """The file behind an `sqlite:///` URL, or None for other databases and memory."""
    match = _SQLITE_URL.fullmatch(url)
    if match is None:
        return None
    rest = unquote(match.group("rest").split("?", 1)[0])
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


def state_dir(memory_dir: Path) -> Path:
    """`<memory dir>/.subrosa`: subrosa's own state beside the leaves (sidecar, lock).

    Refused (InvalidInput) when it is a symbolic link: a repository could point it
    anywhere, and subrosa never reads or writes its state through a link."""
    from subrosa.fsutil import refuse_link

    return refuse_link(memory_dir / ".subrosa")


def extract_dir(memory_dir: Path) -> Path:
    """`<memory dir>/.extract`: the hooks' per-session state (document 000 reserves it).
    Refused (InvalidInput) when it is a symbolic link, as `state_dir`."""
    from subrosa.fsutil import refuse_link

    return refuse_link(memory_dir / ".extract")
