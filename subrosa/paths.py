"""Where things live: the memory dir, Claude Code's directories, the database.

Standard library only, and without pathlib: the hooks import this on every turn of the
agent, and pathlib (with the fnmatch, urllib.parse and ipaddress it loads) was ~8 % of
a hook's whole process. So every path here is a `str`, spelled as pathlib spells it
(`spelled`), and the few pathlib answers the hooks and `subrosa search` need
(`absolute`, `expand_user`, `parent`, `lineage`, `relative_to`, `resolved`, `is_dir`,
`is_file`, `exists`) are given here the way Python 3.11's pathlib gives them, errors
included. Functions take a `str` or any os.PathLike; the rest of subrosa wraps what
they return in a Path where it wants one. Likewise `quote` and `unquote` give
urllib.parse's answers for a str (it loads ipaddress, ~1.5 ms): the database's URL
and its SQLite file name are read and written on `subrosa search`'s path.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from errno import EBADF, ELOOP, ENOENT, ENOTDIR

from subrosa.lazyre import compile_lazily

# pathlib stays off the hooks' path: only the type checker sees it here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    StrPath = str | os.PathLike[str]

_NOT_ALNUM = compile_lazily(r"[^A-Za-z0-9]")
# Claude Code cuts a project's folder name longer than this (and adds the path's hash).
_MAX_FOLDER_NAME = 200
# The project folder names Claude Code accepts from CLAUDE_CODE_PROJECT_DIR_NAME.
_FOLDER_NAME = compile_lazily(r"[A-Za-z0-9_-]{1,64}")
_DEVICE_NAME = compile_lazily(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])", re.IGNORECASE)
# What pathlib's is_dir, is_file and exists read as "no" rather than raise.
_ABSENT = (ENOENT, ENOTDIR, EBADF, ELOOP)
_WINDOWS = os.name == "nt"


# --- pathlib's answers, on str ---------------------------------------------------------


def spelled(path: StrPath) -> str:
    """`path` as `str(Path(path))` spells it: no empty or `.` parts and no trailing
    separator, `..` kept (os.path.normpath would drop it, and with it a link's parent),
    exactly two leading slashes kept (POSIX leaves their meaning to the system)."""
    text = os.fspath(path)
    if _WINDOWS:  # drives and UNC shares: pathlib's own rules
        from pathlib import Path

        return str(Path(text))
    if (  # already so spelled (most are: every join below starts from one)
        text
        and text[-1] != "/"
        and "//" not in text
        and "/./" not in text
        and text[:2] != "./"
        and text[-2:] != "/."
        and text != "."
    ):
        return text
    root = "/" if text[:1] == "/" else ""
    if text[:2] == "//" and text[2:3] != "/":
        root = "//"
    parts = [part for part in text.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def join(*parts: StrPath) -> str:
    """`Path(first) / second / …`, as a str."""
    return spelled(os.path.join(*parts))


def absolute(path: StrPath) -> str:
    """`Path(path).absolute()`: the current folder put in front, nothing resolved."""
    text = spelled(path)
    if _WINDOWS:
        from pathlib import Path

        return str(Path(text).absolute())
    return text if text[:1] == "/" else spelled(os.path.join(os.getcwd(), text))


def home_dir() -> str:
    """`Path.home()`."""
    return expand_user("~")


def expand_user(path: StrPath) -> str:
    """`Path(path).expanduser()`: RuntimeError when there is no home to put for `~`."""
    text = spelled(path)
    if _WINDOWS:
        from pathlib import Path

        return str(Path(text).expanduser())
    if text[:1] != "~":
        return text
    head, _, rest = text.partition("/")
    home = os.path.expanduser(head)
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return join(home, rest)


def parent(path: StrPath) -> str:
    """`Path(path).parent` (the root's parent is the root; a bare name's is `.`)."""
    return os.path.dirname(spelled(path)) or "."


def lineage(path: StrPath) -> list[str]:
    """`[path, *Path(path).parents]`: it and every folder above it, up to the root."""
    chain = [spelled(path)]
    while (up := parent(chain[-1])) != chain[-1]:
        chain.append(up)
    return chain


def relative_to(path: StrPath, top: StrPath) -> str | None:
    """`Path(path).relative_to(top).as_posix()`, None where that raises ValueError
    (`path` is not `top` nor under it, compared as written: nothing is resolved)."""
    text, top = spelled(path), spelled(top)
    if _WINDOWS:
        from pathlib import Path

        try:
            return Path(text).relative_to(top).as_posix()
        except ValueError:
            return None
    if top == ".":  # pathlib's `.` has no parts: every relative path is under it
        return text if text[:1] != "/" else None
    if top not in lineage(text):
        return None
    return text[len(top) :].lstrip("/") or "."


def resolved(path: StrPath) -> str:
    """`Path(path).resolve()`: links followed, absolute; RuntimeError on a link loop."""
    if _WINDOWS:
        from pathlib import Path

        return str(Path(path).resolve())
    real = spelled(os.path.realpath(path))
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == ELOOP:
            raise RuntimeError(f"Symlink loop from {exc.filename!r}") from None
    return real


def _mode_is(path: StrPath, test: Callable[[int], bool] | None) -> bool:
    """pathlib's is_dir / is_file / exists: missing reads as False, other errors raise."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno in _ABSENT or getattr(exc, "winerror", None) in (21, 123, 1921):
            return False
        raise
    except ValueError:  # a NUL in the name
        return False
    return test is None or test(mode)


def is_dir(path: StrPath) -> bool:
    """`Path(path).is_dir()`."""
    return _mode_is(path, stat.S_ISDIR)


def is_file(path: StrPath) -> bool:
    """`Path(path).is_file()`."""
    return _mode_is(path, stat.S_ISREG)


def exists(path: StrPath) -> bool:
    """`Path(path).exists()`."""
    return _mode_is(path, None)


# --- where things live ----------------------------------------------------------------


def claude_root(env: dict[str, str] | None = None) -> str:
    """Claude Code's configuration root: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    assert env is not None
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return expand_user(configured)
    return join(expand_user(env.get("HOME") or home_dir()), ".claude")


def encode_project_path(path: StrPath) -> str:
    """Claude Code's folder name for a project path (`projects/<name>/`), as Claude Code
    2.1 spells it: every UTF-16 code unit that is not an ASCII letter or digit becomes
    `-` (so an emoji, two code units, gives `--`); a name over 200 characters is cut to
    200 and followed by `-` and the path's hash (docs: "truncates the name to 200
    characters and appends a hash of the full path"), so a long path's folder is found
    where Claude Code keeps its transcripts and loads its auto memory."""
    text = str(path)
    if text.isascii():
        name = _NOT_ALNUM.sub("-", text)
    else:
        name = _NOT_ALNUM.sub(lambda found: "-" * len(_utf16(found.group())), text)
    if len(name) <= _MAX_FOLDER_NAME:
        return name
    return f"{name[:_MAX_FOLDER_NAME]}-{_base36(abs(_string_hash(text)))}"


def former_project_folder(path: StrPath) -> str:
    """How subrosa spelled a project's folder name before it spelled it as Claude Code
    does (encode_project_path): each code point that is not an ASCII letter or digit one
    `-` (an emoji one), never cut. Where the two differ (an emoji, a name over 200
    characters), sessions were filed under keys the project no longer has; ingest files
    them again (subrosa.archive.ingest, Ingester._file_older_keys)."""
    return _NOT_ALNUM.sub("-", str(path))


def in_project_folder(name: str, project_folder: str) -> bool:
    """Whether Claude Code's folder `name` can be that of the project whose folder is
    `project_folder`, or that of a subfolder's session (`<folder>-src-api`). A name cut
    at 200 characters ends in its own path's hash, so a subfolder's shares only the
    first 200 (as Claude Code itself matches them). A name alone cannot tell `/repo/src`
    from a sibling `/repo-src`: the caller checks the session's working directory."""
    if name == project_folder:
        return True
    if len(project_folder) > _MAX_FOLDER_NAME:
        project_folder = project_folder[:_MAX_FOLDER_NAME]
    return name.startswith(project_folder + "-")


def _utf16(text: str) -> list[int]:
    """The UTF-16 code units of `text`, as JavaScript sees a string (a lone surrogate,
    e.g. from an undecodable file name, is one unit)."""
    units: list[int] = []
    for char in text:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            units += (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
        else:
            units.append(code)
    return units


def _string_hash(text: str) -> int:
    """Claude Code's hash of a path: Java's String.hashCode over its UTF-16 code units
    (h = 31 h + unit, in signed 32-bit arithmetic)."""
    digest = 0
    for unit in _utf16(text):
        digest = (digest * 31 + unit) & 0xFFFFFFFF
    return digest - (1 << 32) if digest >= 1 << 31 else digest


def _base36(number: int) -> str:
    """`number.toString(36)` for a number >= 0."""
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
        if not number:
            return digits


def read_text(path: StrPath, errors: str = "strict") -> str:
    """`Path(path).read_text(encoding="utf-8", errors=errors)`."""
    with open(path, encoding="utf-8", errors=errors) as handle:
        return handle.read()


def gitdir_from_file(dotgit: StrPath) -> str | None:
    """The git dir a worktree's or a submodule's `.git` file names (`gitdir:`), absolute;
    None when it cannot be read or names none."""
    try:
        text = read_text(dotgit, errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = spelled(text[len("gitdir:") :].strip())
    return gitdir if os.path.isabs(gitdir) else resolved(join(parent(dotgit), gitdir))


def common_dir(gitdir: StrPath) -> str | None:
    """The main repository's git dir that a worktree's git dir names in `commondir`,
    absolute; None when it names none (a submodule's, a main repository's own)."""
    try:
        common = spelled(read_text(join(gitdir, "commondir")).strip())
    except OSError:
        return None
    return common if os.path.isabs(common) else resolved(join(gitdir, common))


def _main_repo_root_from_gitfile(gitfile: str) -> str | None:
    """For a worktree (`.git` is a file), follow gitdir and commondir to the main repository."""
    gitdir = gitdir_from_file(gitfile)
    if gitdir is None:
        return None
    common = common_dir(gitdir)
    return parent(gitfile) if common is None else parent(common)


def checkout_root(cwd: StrPath | None = None) -> str | None:
    """The top of the git checkout around `cwd` (a worktree's own top, unlike
    `project_root`), or None outside any checkout. Where Claude Code reads `.claude/`."""
    start = absolute(cwd if cwd is not None else os.getcwd())
    for candidate in lineage(start):
        if exists(join(candidate, ".git")):
            return candidate
    return None


def project_root(cwd: StrPath | None = None) -> str:
    """The git repository root containing `cwd` (worktrees share the main root), else `cwd`.

    Found by walking up for `.git` rather than running git: the hooks cannot afford a
    subprocess on every turn.
    """
    start = absolute(cwd if cwd is not None else os.getcwd())
    for candidate in lineage(start):
        dotgit = join(candidate, ".git")
        if is_dir(dotgit):
            return candidate
        if is_file(dotgit):
            return _main_repo_root_from_gitfile(dotgit) or candidate
    return start


def project_transcript_dir(cwd: StrPath | None = None, env: dict[str, str] | None = None) -> str:
    """`<claude root>/projects/<encoded project path>`: where Claude Code keeps transcripts
    (and its auto memory); `projects/<name>` when the host names it (`named_project_folder`)."""
    folder = named_project_folder(env) or encode_project_path(project_root(cwd))
    return join(claude_root(env), "projects", folder)


def named_project_folder(env: dict[str, str] | None = None) -> str | None:
    """The project folder a host named with `CLAUDE_CODE_PROJECT_DIR_NAME` (Claude Code
    2.1.234 and later), which Claude Code uses for every project instead of the encoded
    path: only beside a non-empty `CLAUDE_CONFIG_DIR`, and only a name it accepts (1 to
    64 letters, digits, `_` or `-`, not a reserved Windows device name)."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    assert env is not None
    name = env.get("CLAUDE_CODE_PROJECT_DIR_NAME") or ""
    if not env.get("CLAUDE_CONFIG_DIR") or not _FOLDER_NAME.fullmatch(name):
        return None
    return None if _DEVICE_NAME.fullmatch(name) else name


def auto_memory_dir(cwd: StrPath | None = None, env: dict[str, str] | None = None) -> str:
    """Claude Code's auto-memory directory for the project at `cwd`."""
    return join(project_transcript_dir(cwd, env), "memory")


def former_memory_dir(memory_dir: StrPath, env: dict[str, str] | None = None) -> str | None:
    """The auto-memory dir an older subrosa used for the project whose memory dir is
    `memory_dir`, when that is the project's auto-memory dir now and the older one was
    another folder: `projects/<former_project_folder>/memory` (an emoji, a name over 200
    characters). None otherwise: no stat, only names. None too where the host names the
    folder (CLAUDE_CODE_PROJECT_DIR_NAME): every project shares that one, and the
    path's folder then is Claude Code's own from before the name, not subrosa's."""
    env = dict(os.environ) if env is None else env
    if named_project_folder(env) is not None:
        return None
    given = env.get("CLAUDE_PROJECT_DIR")
    start = absolute(expand_user(given)) if given else None
    auto = auto_memory_dir(start, env)
    if spelled(memory_dir) != auto:
        return None
    old = join(claude_root(env), "projects", former_project_folder(project_root(start)), "memory")
    return None if old == auto else old


def project_memory_dir(start: StrPath | None = None) -> str | None:
    """The `.claude/memory` a project keeps in its tree, seen from `start` (default: the
    current folder): the nearest one from `start` up to the top of its git checkout;
    in a worktree without one, the main repository's (worktrees share one memory, as
    they share Claude Code's auto-memory dir). Outside a checkout only `start`'s own.

    So a command run anywhere inside a project (its root, a subfolder, a worktree)
    finds the memory the hooks found from the folder Claude Code was started in.
    """
    here = absolute(expand_user(start if start is not None else os.getcwd()))
    top = checkout_root(here)
    chain = lineage(here)
    folders = [here] if top is None else chain[: chain.index(top) + 1]
    for folder in folders:
        candidate = join(folder, ".claude", "memory")
        if is_dir(candidate):
            return candidate
    if top is not None and is_file(join(top, ".git")):
        main = _main_repo_root_from_gitfile(join(top, ".git"))
        if main is not None and main != top and is_dir(join(main, ".claude", "memory")):
            return join(main, ".claude", "memory")
    return None


def resolve_memory_dir(
    explicit: StrPath | None = None,
    cwd: StrPath | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The memory dir, by PRODUCT.md's order: flag, `SUBROSA_MEMORY_DIR`, the project's
    own `.claude/memory` seen from `$CLAUDE_PROJECT_DIR` (else `cwd`) when there is one
    (`project_memory_dir`), else Claude Code's auto-memory dir for the project."""
    env = dict(os.environ) if env is None else env
    if explicit:
        return absolute(expand_user(explicit))
    if env.get("SUBROSA_MEMORY_DIR"):
        return absolute(expand_user(env["SUBROSA_MEMORY_DIR"]))
    given = env.get("CLAUDE_PROJECT_DIR") or cwd
    start = absolute(expand_user(given)) if given else None
    found = project_memory_dir(start)
    if found is not None:
        return found
    return auto_memory_dir(start, env)


def memory_dir_origin(
    given_by: str | None = None,
    cwd: StrPath | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Where `resolve_memory_dir` took the memory dir from, as a person names it in an
    error: `given_by` (the option or variable that gave it: click tells), else the
    variable, the project's `.claude/memory`, or Claude Code's auto-memory dir."""
    env = dict(os.environ) if env is None else env
    if given_by:
        return given_by
    if env.get("SUBROSA_MEMORY_DIR"):
        return "SUBROSA_MEMORY_DIR"
    given = env.get("CLAUDE_PROJECT_DIR") or cwd
    if project_memory_dir(absolute(expand_user(given)) if given else None) is not None:
        return "the project's .claude/memory"
    return "Claude Code's auto-memory dir for this project"


def data_dir(env: dict[str, str] | None = None) -> str:
    """The per-user data directory: `$XDG_DATA_HOME/subrosa` or the platform's equivalent."""
    env = dict(os.environ) if env is None else env
    home = expand_user(env.get("HOME") or home_dir())
    if env.get("XDG_DATA_HOME"):
        return join(expand_user(env["XDG_DATA_HOME"]), "subrosa")
    if sys.platform == "darwin":
        return join(home, "Library", "Application Support", "subrosa")
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or join(home, "AppData", "Local")
        return join(base, "subrosa")
    return join(home, ".local", "share", "subrosa")


def config_file(env: dict[str, str] | None = None) -> str:
    """The settings file: `$SUBROSA_CONFIG`, else `$XDG_CONFIG_HOME/subrosa/config.toml`,
    else `~/.config/subrosa/config.toml`. Here rather than in subrosa.config so the Stop
    hook can see there is no file without importing the settings machinery."""
    env = dict(os.environ) if env is None else env
    if env.get("SUBROSA_CONFIG"):
        return expand_user(env["SUBROSA_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or join(env.get("HOME") or home_dir(), ".config")
    return join(expand_user(base), "subrosa", "config.toml")


# --- urllib.parse's quote and unquote, on str -----------------------------------------

# What quote never encodes (RFC 3986's unreserved characters), as bytes.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
_ASCII_RUN = compile_lazily(r"([\x00-\x7f]+)")
_PERCENT_HEX = compile_lazily(rb"%([0-9A-Fa-f]{2})")


def quote(text: str, safe: str = "/") -> str:
    """`urllib.parse.quote(text, safe)`: UTF-8 bytes, each one neither unreserved nor in
    `safe` written `%XX` (UnicodeEncodeError for a lone surrogate, as there)."""
    if not text:
        return text
    keep = _UNRESERVED | set(safe.encode("ascii", "ignore"))
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in text.encode("utf-8"))


def unquote(text: str) -> str:
    """`urllib.parse.unquote(text)`: every `%XX` read as a byte, each run of ASCII
    decoded as UTF-8 (what is not UTF-8 becoming U+FFFD), the rest kept."""
    if "%" not in text:
        return text
    bits = _ASCII_RUN.split(text)
    out = [bits[0]]
    for i in range(1, len(bits), 2):
        raw = _PERCENT_HEX.sub(lambda hit: bytes([int(hit[1], 16)]), bits[i].encode("ascii"))
        out += [raw.decode("utf-8", "replace"), bits[i + 1]]
    return "".join(out)


def sqlite_url(path: StrPath) -> str:
    """The `sqlite:///` URL of a file, as SQLAlchemy renders it (it quotes the same way)."""
    return "sqlite:///" + quote(str(path), safe=" +/")


_SQLITE_URL = compile_lazily(r"sqlite(\+pysqlite)?:///(?P<rest>.*)", re.DOTALL)


def sqlite_path(url: str) -> str | None:
    """The file behind an `sqlite:///` URL (spelled as pathlib spells it), or None for
    other databases and memory."""
    match = _SQLITE_URL.fullmatch(url)
    if match is None:
        return None
    rest = unquote(match.group("rest").split("?", 1)[0])
    if not rest or rest == ":memory:":
        return None
    return spelled(rest)


def state_dir(memory_dir: StrPath) -> str:
    """`<memory dir>/.subrosa`: subrosa's own state beside the leaves (sidecar, lock).

    Refused (InvalidInput) when it is a symbolic link: a repository could point it
    anywhere, and subrosa never reads or writes its state through a link."""
    from subrosa.fsutil import refuse_link

    return refuse_link(join(memory_dir, ".subrosa"))


def extract_dir(memory_dir: StrPath) -> str:
    """`<memory dir>/.extract`: the hooks' per-session state (document 000 reserves it).
    Refused (InvalidInput) when it is a symbolic link, as `state_dir`."""
    from subrosa.fsutil import refuse_link

    return refuse_link(join(memory_dir, ".extract"))
