"""Where things live (PRODUCT.md, "Where things live")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subrosa import paths
from subrosa.config import load_settings, resolve_db_url
from subrosa.errors import InvalidInput
from subrosa.paths import (
    auto_memory_dir,
    encode_project_path,
    project_root,
    resolve_memory_dir,
)
from tests.conftest import RunCli


def test_encoding_matches_claude_code() -> None:
    assert encode_project_path("/work/my.proj") == "-work-my-proj"
    assert encode_project_path("C:\\Users\\me\\repo") == "C--Users-me-repo"
    assert encode_project_path("/home/ü/x_y") == "-home---x-y"


# Folder names Claude Code 2.1.332 made for these paths (tests/e2e/test_project_path.py).
LONG = "/tmp/realcli/r2/" + "/".join(f"a-rather-long-folder-name-{n:02d}" for n in range(7))


def test_encoding_matches_claude_code_for_an_emoji_and_a_long_path() -> None:
    # An emoji is two UTF-16 code units, each a `-`.
    assert encode_project_path("/tmp/realcli/r1/proj-🦀-x") == "-tmp-realcli-r1-proj----x"
    # Over 200 characters: cut to 200, then `-` and the path's hash in base 36.
    assert encode_project_path(LONG) == encode_project_path(LONG)[:200] + "-3yqku9"
    assert len(encode_project_path("/" + "x" * 199)) == 200  # exactly 200: kept whole


@given(st.text(max_size=300))
def test_encoding_is_claude_codes_on_utf16_code_units(path: str) -> None:
    units = path.encode("utf-16-le", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    name = "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else "-" for c in codes)
    encoded = encode_project_path(path)
    if len(name) <= 200:
        assert encoded == name
    else:
        digest = 0
        for code in codes:
            digest = (digest * 31 + code) % 2**32
        digest = abs(digest - 2**32 if digest >= 2**31 else digest)
        assert encoded.startswith(name[:200] + "-")
        assert int(encoded[201:], 36) == digest


def test_a_subfolders_folder_under_a_long_path_is_the_projects() -> None:
    top, sub = encode_project_path(LONG), encode_project_path(LONG + "/src/api")
    assert top != sub and not sub.startswith(top)
    assert paths.in_project_folder(sub, top) and paths.in_project_folder(top, top)
    short = encode_project_path("/repo")
    assert paths.in_project_folder(encode_project_path("/repo/src"), short)
    assert not paths.in_project_folder(encode_project_path("/repository"), short)


def test_memory_dir_order(tmp_path: Path, isolated_env: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude_root = isolated_env / ".claude"
    env = {"HOME": str(isolated_env), "CLAUDE_CONFIG_DIR": str(claude_root)}
    expected_auto = claude_root / "projects" / encode_project_path(project) / "memory"
    assert Path(resolve_memory_dir(cwd=project, env=env)) == expected_auto
    env["CLAUDE_PROJECT_DIR"] = str(project)
    assert Path(resolve_memory_dir(env=env)) == expected_auto  # .claude/memory does not exist yet
    (project / ".claude" / "memory").mkdir(parents=True)
    assert Path(resolve_memory_dir(env=env)) == project / ".claude" / "memory"
    env["SUBROSA_MEMORY_DIR"] = str(tmp_path / "env")
    assert Path(resolve_memory_dir(env=env)) == tmp_path / "env"
    assert Path(resolve_memory_dir(str(tmp_path / "flag"), env=env)) == tmp_path / "flag"


def test_claude_root_defaults_to_home(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert Path(auto_memory_dir(cwd=tmp_path / "p", env=env)) == (
        tmp_path / ".claude" / "projects" / encode_project_path(tmp_path / "p") / "memory"
    )


def test_git_root_and_worktrees_share_one_project(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("x")
    subprocess.run([*git, "-C", str(repo), "add", "f"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "x"], check=True)
    subprocess.run(
        [*git, "-C", str(repo), "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "b"],
        check=True,
    )
    assert Path(project_root(repo / "src" / "deep")) == repo
    assert Path(project_root(tmp_path / "wt")) == repo
    assert Path(project_root(tmp_path / "elsewhere")) == tmp_path / "elsewhere"


def test_database_location(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert resolve_db_url(env=env) == f"sqlite:///{tmp_path / 'data' / 'subrosa' / 'subrosa.db'}"
    assert resolve_db_url("x.db", env=env).endswith("/x.db")
    assert resolve_db_url("postgresql://u@h/db", env=env) == "postgresql://u@h/db"
    env["SUBROSA_DB"] = "sqlite:///" + str(tmp_path / "e.db")
    assert resolve_db_url(env=env) == env["SUBROSA_DB"]


def test_settings_file_and_environment(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("budget = 1000\nnudge_every = 3\n[type_weights]\nreference = 9\n")
    env = {"SUBROSA_CONFIG": str(config), "SUBROSA_NUDGE_EVERY": "7"}
    settings = load_settings(env)
    assert (settings.budget, settings.nudge_every, settings.max_lines) == (1000, 7, 150)
    assert settings.type_weights["reference"] == 9
    config.write_text("budget = [")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        load_settings(env)


def test_default_database_is_created_owner_only(
    memory_dir: Path, run: RunCli, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBROSA_DB")
    run("fact", "list")
    db = isolated_env / ".local" / "share" / "subrosa" / "subrosa.db"
    assert db.exists() and (db.stat().st_mode & 0o777) == 0o600
    assert (db.parent.stat().st_mode & 0o777) == 0o700


# Paths made of the pieces pathlib spells specially: separators in runs, `.`, `..`, `~`.
_SPELLINGS = st.text(alphabet="/.~ab", max_size=14) | st.text(max_size=14)


@given(_SPELLINGS, _SPELLINGS)
def test_the_hooks_paths_are_spelled_as_pathlib_spells_them(first: str, second: str) -> None:
    """subrosa.paths answers on str what pathlib answers (the hooks load no pathlib)."""
    path = Path(first)
    assert paths.spelled(first) == str(path)
    assert paths.join(first, second) == str(path / second)
    assert paths.parent(first) == str(path.parent)
    assert paths.lineage(first) == [str(p) for p in (path, *path.parents)]
    assert paths.absolute(first) == str(path.absolute())
    try:
        expected: str | type[RuntimeError] = str(path.expanduser())
    except RuntimeError:  # `~nosuchuser`: no home to put there
        expected = RuntimeError
    try:
        assert paths.expand_user(first) == expected
    except RuntimeError:
        assert expected is RuntimeError


@given(_SPELLINGS, _SPELLINGS)
def test_relative_to_answers_as_pathlib(first: str, second: str) -> None:
    """`subrosa search` files a memory dir's facts by its place in its repository."""
    try:
        expected: str | None = Path(first).relative_to(second).as_posix()
    except ValueError:
        expected = None
    assert paths.relative_to(first, second) == expected
    top = paths.parent(first)  # one that is above it, most often
    assert paths.relative_to(first, top) == Path(first).relative_to(top).as_posix()


# Text made of what quote and unquote treat specially: `%` and hex digits, runs of ASCII
# broken by other characters, UTF-8 cut short, lone surrogates.
_ESCAPED = st.lists(
    st.sampled_from(["%", "a", "F", "0", "g", "/", " ", "+", "?", "#", "é", "\udc80", "\x7f"])
    | st.sampled_from(["%C3", "%a9", "%E2%82", "%AC", "%zz", "%%", "%ff", "\x80"]),
    max_size=12,
).map("".join)


@given(_ESCAPED | st.text(), st.sampled_from(["/", " +/", "", "é/", "~%"]))
def test_quote_and_unquote_answer_as_urllib(text: str, safe: str) -> None:
    """The database's URL and file name are spelled and read back without urllib.parse
    (and the ipaddress it loads) on `subrosa search`'s path: byte for byte the same."""
    from urllib.parse import quote, unquote

    assert paths.unquote(text) == unquote(text)
    try:
        expected: str | type[UnicodeEncodeError] = quote(text, safe=safe)
    except UnicodeEncodeError:
        expected = UnicodeEncodeError
    try:
        assert paths.quote(text, safe) == expected
    except UnicodeEncodeError:
        assert expected is UnicodeEncodeError


def test_the_hooks_file_tests_answer_as_pathlib(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "up").symlink_to(tmp_path)
    for name in ("file", "loop", "up", "missing", "file/below", "up/../file", "\0"):
        path = tmp_path / name
        answers = (paths.is_dir(path), paths.is_file(path), paths.exists(path))
        assert answers == (path.is_dir(), path.is_file(), path.exists()), name
    assert paths.resolved(tmp_path / "up" / "file") == str((tmp_path / "up" / "file").resolve())
    with pytest.raises(RuntimeError, match="Symlink loop"):
        (tmp_path / "loop").resolve()
    with pytest.raises(RuntimeError, match="Symlink loop"):
        paths.resolved(tmp_path / "loop")


def test_a_project_folder_the_host_named_is_claude_codes_auto_memory(tmp_path: Path) -> None:
    # CLAUDE_CODE_PROJECT_DIR_NAME names the folder for every project, beside a
    # CLAUDE_CONFIG_DIR only, and only a name Claude Code accepts.
    config = tmp_path / "config"
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config)}
    derived = config / "projects" / encode_project_path(tmp_path / "p") / "memory"
    for name, folder in [
        ("work", config / "projects" / "work" / "memory"),
        ("A_b-9", config / "projects" / "A_b-9" / "memory"),
        ("x" * 65, derived),
        ("../up", derived),
        ("two words", derived),
        ("work\n", derived),
        ("COM1", derived),
        ("", derived),
    ]:
        named = {**env, "CLAUDE_CODE_PROJECT_DIR_NAME": name}
        assert Path(auto_memory_dir(cwd=tmp_path / "p", env=named)) == folder, name
        assert Path(resolve_memory_dir(cwd=tmp_path / "p", env=named)) == folder, name
    alone = {"HOME": str(tmp_path), "CLAUDE_CODE_PROJECT_DIR_NAME": "work"}
    assert Path(auto_memory_dir(cwd=tmp_path / "p", env=alone)) == (
        tmp_path / ".claude" / "projects" / encode_project_path(tmp_path / "p") / "memory"
    )
