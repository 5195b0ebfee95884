"""A project's identity across machines: its git remote, read without git, normalized.

Real repositories are made with the real git (worktrees, submodules, remotes with odd
characters), then read back by subrosa's own parser, which must agree with git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subrosa.gitremote import git_config_path, normalize_remote, parse_git_config
from subrosa.identity import project_identity

SAME_REPO = [
    "git@github.com:org/repo.git",
    "git@github.com:org/repo",
    "git@github.com:/org/repo.git/",
    "github.com:org/repo.git",
    "https://github.com/org/repo",
    "https://github.com/org/repo.git",
    "https://github.com/org/repo/",
    "https://user@github.com/org/repo",
    "https://user:ghp_s3cretT0ken@github.com/org/repo.git",
    "https://GitHub.com/Org/Repo.git",
    "http://github.com/org/repo",
    "https://github.com:443/org/repo",
    "ssh://git@github.com/org/repo.git",
    "ssh://git@github.com:22/org/repo.git",
    "ssh://git@ssh.github.com:443/org/repo.git",
    "ssh://git@github.com:org/repo.git",
    "git+ssh://git@github.com/org/repo.git",
    "ssh+git://github.com/org/repo",
    "git://github.com/org/repo.git",
    "https://github.com/org//repo.git",
    "  git@github.com:org/repo.git\n",
]


@pytest.mark.parametrize("url", SAME_REPO)
def test_every_spelling_of_one_remote_is_one_project(url: str) -> None:
    assert normalize_remote(url) == "github.com/org/repo"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@gitlab.com:group/sub/group/repo.git", "gitlab.com/group/sub/group/repo"),
        ("https://gitlab.example.com:8443/team/repo.git", "gitlab.example.com/team/repo"),
        ("ssh://git@gitlab.example.com:2222/team/repo.git", "gitlab.example.com/team/repo"),
        ("ssh://git@[::1]:22/team/repo.git", "::1/team/repo"),
        ("https://dev.azure.com/acme/Tools/_git/Repo", "dev.azure.com/acme/tools/repo"),
        ("https://acme@dev.azure.com/acme/Tools/_git/Repo", "dev.azure.com/acme/tools/repo"),
        ("git@ssh.dev.azure.com:v3/acme/Tools/Repo", "dev.azure.com/acme/tools/repo"),
        ("https://acme.visualstudio.com/Tools/_git/Repo", "dev.azure.com/acme/tools/repo"),
        (
            "https://acme.visualstudio.com/DefaultCollection/Tools/_git/Repo",
            "dev.azure.com/acme/tools/repo",
        ),
        ("https://bitbucket.org/team/repo.git", "bitbucket.org/team/repo"),
        ("https://example.com/my%20repo.git", "example.com/my repo"),
        ("/srv/git/repo.git", None),
        ("../sibling", None),
        ("file:///srv/git/repo.git", None),
        ("C:\\src\\repo", None),
        ("https://github.com/", None),
        ("", None),
    ],
)
def test_normalized_forms(url: str, expected: str | None) -> None:
    assert normalize_remote(url) == expected


@given(
    user=st.sampled_from(["", "git@", "me@", "me:t0k3n@"]),
    port=st.sampled_from(["", ":22", ":443"]),
    suffix=st.sampled_from(["", ".git", "/", ".git/"]),
    scheme=st.sampled_from(["ssh", "https", "http", "git+ssh", "git"]),
)
def test_no_user_password_port_or_suffix_survives(
    user: str, port: str, suffix: str, scheme: str
) -> None:
    url = f"{scheme}://{user}example.org{port}/team/repo{suffix}"
    assert normalize_remote(url) == "example.org/team/repo"


def test_the_config_parser_reads_what_git_reads() -> None:
    text = r"""
# a comment
[core]
	bare = false
[remote "origin"]  ; the main one
	url = "git@github.com:org/repo.git" # trailing comment
	fetch = +refs/heads/*:refs/remotes/origin/*
[Remote "With \"Quotes\""] url = https://example.com/a\
b.git
[remote.Legacy]
	URL = https://example.com/legacy.git
[url "git@github.com:"]
	insteadOf = gh:
[flags]
	standalone
"""
    entries = parse_git_config(text)
    assert ("remote.origin", "url", "git@github.com:org/repo.git") in entries
    assert ('remote.With "Quotes"', "url", "https://example.com/ab.git") in entries
    assert ("remote.legacy", "url", "https://example.com/legacy.git") in entries
    assert ("url.git@github.com:", "insteadof", "gh:") in entries
    assert ("flags", "standalone", "true") in entries


# --- real repositories, made by git ---------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def make_repo(path: Path, *remotes: tuple[str, str]) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
    for name, url in remotes:
        git("remote", "add", name, url, cwd=path)
    return path


@needs_git
def test_two_clones_with_different_url_forms_are_one_project(tmp_path: Path) -> None:
    laptop = make_repo(tmp_path / "laptop" / "src", ("origin", "git@github.com:Org/Repo.git"))
    desktop = make_repo(
        tmp_path / "desktop" / "work" / "repo", ("origin", "https://me@github.com/org/repo")
    )
    (laptop / "deep" / "folder").mkdir(parents=True)
    env: dict[str, str] = {"HOME": str(tmp_path)}
    assert project_identity(laptop / "deep" / "folder", env) == "github.com/org/repo"
    assert project_identity(desktop, env) == "github.com/org/repo"


@needs_git
def test_odd_remote_urls_are_read_as_git_reads_them(tmp_path: Path) -> None:
    odd = 'https://example.com/we"ird #1; x\\y/re po.git'
    repo = make_repo(tmp_path / "repo", ("origin", odd))
    assert git("config", "--get", "remote.origin.url", cwd=repo) == odd
    config = git_config_path(repo)
    assert config is not None
    assert ("remote.origin", "url", odd) in parse_git_config(Path(config).read_text())
    assert project_identity(repo, {"HOME": str(tmp_path)}) == 'example.com/we"ird #1; x/y/re po'


@needs_git
def test_a_worktree_has_its_main_repositorys_identity(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", ("origin", "git@github.com:org/repo.git"))
    git("worktree", "add", "-q", str(tmp_path / "wt" / "feature"), "-b", "feature", cwd=main)
    assert (tmp_path / "wt" / "feature" / ".git").is_file()
    env = {"HOME": str(tmp_path)}
    assert project_identity(tmp_path / "wt" / "feature", env) == "github.com/org/repo"


@needs_git
def test_a_submodule_has_its_own_identity(tmp_path: Path) -> None:
    library = make_repo(tmp_path / "library")
    outer = make_repo(tmp_path / "outer", ("origin", "https://github.com/org/outer.git"))
    git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib", cwd=outer
    )
    git("-C", "lib", "remote", "set-url", "origin", "git@github.com:org/library.git", cwd=outer)
    assert (outer / "lib" / ".git").is_file()
    env = {"HOME": str(tmp_path)}
    assert project_identity(outer / "lib", env) == "github.com/org/library"
    assert project_identity(outer, env) == "github.com/org/outer"


@needs_git
def test_upstream_wins_over_origin_then_origin_over_others(tmp_path: Path) -> None:
    fork = make_repo(
        tmp_path / "fork",
        ("mine", "git@github.com:me/other.git"),
        ("origin", "git@github.com:me/repo.git"),
        ("upstream", "https://github.com/org/repo.git"),
    )
    env = {"HOME": str(tmp_path)}
    assert project_identity(fork, env) == "github.com/org/repo"
    git("remote", "remove", "upstream", cwd=fork)
    assert project_identity(fork, env) == "github.com/me/repo"
    git("remote", "remove", "origin", cwd=fork)
    assert project_identity(fork, env) == "github.com/me/other"


@needs_git
def test_insteadof_rewrites_from_the_repository_and_the_user(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ("origin", "gh:org/repo"))
    env = {"HOME": str(tmp_path / "user")}
    assert project_identity(repo, env) == "gh/org/repo"  # an ssh host alias, to anyone else
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / ".gitconfig").write_text('[url "git@github.com:"]\n\tinsteadOf = gh:\n')
    assert project_identity(repo, env) == "github.com/org/repo"
    git("config", "url.https://gitlab.com/.insteadOf", "gh:org/", cwd=repo)  # longer prefix
    assert project_identity(repo, env) == "gitlab.com/repo"


@needs_git
def test_without_a_remote_the_configured_name_is_used(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "user"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    assert project_identity(repo, env) is None
    config = home / ".config" / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[projects]\n"{repo}" = "acme-tools"\n')
    assert project_identity(repo, env) == "acme-tools"
    assert project_identity(repo / "src", env) == "acme-tools"  # what is under it too
    assert project_identity(tmp_path, env) is None  # not above it
    git("remote", "add", "origin", "/srv/git/local.git", cwd=repo)  # a local path: no identity
    assert project_identity(repo, env) == "acme-tools"
    git("remote", "set-url", "origin", "git@github.com:org/repo.git", cwd=repo)
    assert project_identity(repo, env) == "github.com/org/repo"  # the remote wins


def test_outside_any_repository_there_is_no_identity(tmp_path: Path) -> None:
    assert git_config_path(tmp_path) is None
    assert project_identity(tmp_path, {"HOME": str(tmp_path)}) is None


def test_the_identity_is_found_with_the_standard_library_only(tmp_path: Path) -> None:
    """The hooks will call it on every turn: no heavy import, no subprocess."""
    script = (
        "import json, subprocess, sys\n"
        "def refuse(*a, **k):\n    raise AssertionError('a subprocess was started')\n"
        "subprocess.Popen = refuse\n"
        "from subrosa.identity import project_identity\n"
        "print(json.dumps([project_identity(), sorted(sys.modules)]))\n"
    )
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text('[remote "origin"]\n\turl = git@h.example:o/r\n')
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    identity, modules = json.loads(result.stdout)
    assert identity == "h.example/o/r"
    heavy = {"sqlalchemy", "click", "rich", "yaml", "frontmatter", "alembic", "filelock"}
    assert not {m.split(".")[0] for m in modules} & heavy
