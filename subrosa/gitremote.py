"""A repository's identity on every machine: its git remote, normalized.

Two clones of one repository (different folders, different machines, one over SSH and
one over HTTPS) are one project for a team's shared database. Their folders differ;
their remote does not, once spelled one way: `github.com/org/repo` for
`git@github.com:org/repo.git`, `https://user@github.com/org/repo`,
`ssh://git@github.com:22/org/repo.git` and the like (host and path, lower-cased; no
user, password, port, scheme or `.git`).

Read from the repository's config file without running git: the hooks run on every turn
and cannot afford a subprocess. Standard library only. Worktrees read their main
repository's config (through `commondir`), a submodule its own. Which remote:
`upstream` when there is one (the fork convention: a fork's clones and the original's
clones then agree), else `origin`, else the first. `url.<base>.insteadOf` rewrites are
applied, from the repository's config and the user's (`~/.gitconfig`,
`$XDG_CONFIG_HOME/git/config`). Not followed: `include`/`includeIf` files and host
aliases from `~/.ssh/config`. No pathlib either (`subrosa search` reads the identity on
every run): paths are str, handled with subrosa.paths.
"""

from __future__ import annotations

import os
import re

from subrosa.lazyre import compile_lazily
from subrosa.paths import (
    absolute,
    common_dir,
    gitdir_from_file,
    home_dir,
    is_dir,
    is_file,
    join,
    lineage,
    read_text,
    spelled,
    unquote,
)

# Hosts that serve the same repositories under another name (SSH over port 443).
HOST_ALIASES = {
    "ssh.github.com": "github.com",
    "www.github.com": "github.com",
    "altssh.gitlab.com": "gitlab.com",
    "altssh.bitbucket.org": "bitbucket.org",
    "ssh.dev.azure.com": "dev.azure.com",
    "vs-ssh.visualstudio.com": "dev.azure.com",
}
PREFERRED_REMOTES = ("upstream", "origin")

_SCHEME = compile_lazily(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)", re.DOTALL)
# scp-like syntax: `[user@]host:path`, recognised by git only when no slash comes
# before the first colon.
_SCP = compile_lazily(r"(?:[^@/]*@)?(?P<host>[^:/]+):(?P<path>.*)", re.DOTALL)
_SECTION = compile_lazily(
    r'\s*\[\s*(?P<name>[A-Za-z0-9.-]+)\s*(?:"(?P<sub>(?:[^"\\]|\\.)*)")?\s*\]'
)
_KEY = compile_lazily(r"\s*(?P<key>[A-Za-z][A-Za-z0-9-]*)\s*(?P<eq>=)?")


# --- reading git's config files --------------------------------------------------


def git_config_path(start: str | os.PathLike[str]) -> str | None:
    """The config file of the repository containing `start` (walking up), or None.
    Worktrees read their main repository's (through `commondir`)."""
    for candidate in lineage(absolute(start)):
        dotgit = join(candidate, ".git")
        if is_dir(dotgit):
            return join(dotgit, "config")
        if is_file(dotgit):
            gitdir = gitdir_from_file(dotgit)
            if gitdir is None:
                return None
            return join(common_dir(gitdir) or gitdir, "config")
    return None


def parse_git_config(text: str) -> list[tuple[str, str, str]]:
    """`(section, key, value)` for every variable, in file order. The section is
    lower-cased with its subsection kept as written (`remote.origin`, `url.git@host:`);
    keys are lower-cased; values are unquoted and unescaped as git does. A key without
    `=` is `true`."""
    entries: list[tuple[str, str, str]] = []
    section = ""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        header = _SECTION.match(line)
        if header is not None:
            section = header.group("name").lower()
            sub = header.group("sub")
            if sub is not None:  # `[remote "origin"]`; the old `[remote.origin]` is lower-cased
                section += "." + re.sub(r"\\(.)", r"\1", sub)
            line = line[header.end() :]
        match = _KEY.match(line)
        if match is None or not section:
            continue
        key = match.group("key").lower()
        if match.group("eq") is None:
            if _value_is_blank(line[match.end() :]):
                entries.append((section, key, "true"))
            continue
        rest = line[match.end() :]
        while _continues(rest) and index < len(lines):
            rest = rest[:-1] + lines[index]
            index += 1
        entries.append((section, key, _value(rest)))
    return entries


def _value_is_blank(rest: str) -> bool:
    stripped = rest.strip()
    return not stripped or stripped[0] in "#;"


def _continues(raw: str) -> bool:
    """A value line ending in an unescaped backslash goes on on the next line."""
    trailing = len(raw) - len(raw.rstrip("\\"))
    return trailing % 2 == 1


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(raw: str) -> str:
    """A value as git reads it: quotes removed, escapes decoded, `#`/`;` comments cut,
    whitespace outside quotes trimmed at both ends."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append(pending_space + _ESCAPES.get(raw[i + 1], raw[i + 1]))
            pending_space = ""
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "#;":
            break
        elif not quoted and ch.isspace():
            if out:
                pending_space += ch
        else:
            out.append(pending_space + ch)
            pending_space = ""
        i += 1
    return "".join(out)


def _read_entries(path: str) -> list[tuple[str, str, str]]:
    try:
        return parse_git_config(read_text(path, errors="replace"))
    except OSError:
        return []


def _user_config_paths(env: dict[str, str]) -> list[str]:
    home = spelled(env.get("HOME") or home_dir())
    xdg = spelled(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else join(home, ".config")
    return [join(xdg, "git", "config"), join(home, ".gitconfig")]


# --- choosing and normalizing the remote -----------------------------------------


def _remotes(entries: list[tuple[str, str, str]]) -> dict[str, str]:
    """Each remote's first url, in file order."""
    remotes: dict[str, str] = {}
    for section, key, value in entries:
        if section.startswith("remote.") and key == "url" and value:
            remotes.setdefault(section.removeprefix("remote."), value)
    return remotes


def _rewrite(url: str, entries: list[tuple[str, str, str]]) -> str:
    """Apply `url.<base>.insteadOf = <prefix>`: the longest matching prefix wins."""
    rules = [
        (section.removeprefix("url."), value)
        for section, key, value in entries
        if section.startswith("url.") and key == "insteadof" and value and url.startswith(value)
    ]
    if not rules:
        return url
    base, prefix = max(rules, key=lambda rule: len(rule[1]))
    return base + url[len(prefix) :]


def normalize_remote(url: str) -> str | None:
    """`host/path` for a network remote URL (lower-cased, without user, password,
    port, scheme, `.git` or slashes at the ends); None for a local path or file://."""
    url = url.strip()
    scheme = _SCHEME.fullmatch(url)
    if scheme is not None:
        if scheme.group("scheme").lower() == "file":
            return None
        authority, _, path = scheme.group("rest").partition("/")
        authority = authority.rpartition("@")[2]  # user[:password]@ is never kept
        if authority.startswith("["):  # an IPv6 address, [::1]:22
            host, _, port = authority.partition("]")
            port = port.removeprefix(":")
        else:
            host, _, port = authority.partition(":")
        if port and not port.isdigit():  # `ssh://host:org/repo`: scp-like after ssh://
            path = f"{port}/{path}"
    else:
        scp = _SCP.fullmatch(url)
        # A one-letter "host" is a Windows drive (C:\repo), not a machine.
        if scp is None or len(scp.group("host")) < 2:
            return None
        host, path = scp.group("host"), scp.group("path")
    return _identity(host, path)


def _identity(host: str, path: str) -> str | None:
    host = host.strip().lower().strip("[]")
    host = HOST_ALIASES.get(host, host)
    parts = [p for p in unquote(path).replace("\\", "/").lower().split("/") if p]
    if parts and parts[-1].endswith(".git"):
        parts[-1] = parts[-1].removesuffix(".git")
    parts = [p for p in parts if p]
    host, parts = _azure(host, parts)
    if not host or not parts:
        return None
    return "/".join([host, *parts])


def _azure(host: str, parts: list[str]) -> tuple[str, list[str]]:
    """Azure DevOps spells one repository three ways: dev.azure.com/ORG/PROJECT/_git/REPO,
    ssh.dev.azure.com:v3/ORG/PROJECT/REPO and ORG.visualstudio.com/PROJECT/_git/REPO."""
    if host.endswith(".visualstudio.com"):
        organization = host.removesuffix(".visualstudio.com")
        host = "dev.azure.com"
        if parts and parts[0] == "defaultcollection":
            parts = parts[1:]
        parts = [organization, *parts]
    if host == "dev.azure.com":
        if parts and parts[0] == "v3":
            parts = parts[1:]
        parts = [p for p in parts if p != "_git"]
    return host, parts


def remote_identity(start: str | os.PathLike[str], env: dict[str, str] | None = None) -> str | None:
    """The normalized remote of the repository containing `start`, or None (no
    repository, no remote, or only local ones)."""
    env = dict(os.environ) if env is None else env
    config = git_config_path(start)
    if config is None:
        return None
    entries = _read_entries(config)
    remotes = _remotes(entries)
    if not remotes:
        return None
    name = next((n for n in PREFERRED_REMOTES if n in remotes), next(iter(remotes)))
    rules = [e for p in _user_config_paths(env) for e in _read_entries(p)] + entries
    return normalize_remote(_rewrite(remotes[name], rules))
