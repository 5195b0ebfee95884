"""Hostile and broken input: one clear line, exit 2, nothing lost, nothing outside read.

The leaf cases run the CLI as a real process under a PEP 578 audit hook
(`tests.workers audited`), so "no file outside the memory dir is read or written"
is checked against every open, listing, rename and removal the process made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, RunCli, write_leaf
from tests.markdown import forms_link, shown_as_written

GOOD = "---\nname: x\ndescription: d\nmetadata:\n  type: user\n---\nbody\n"
BOMB = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "name: *i\ndescription: d\ntitle: *i\nmetadata:\n  type: *i\n---\nbody\n"
)


Result = dict[str, Any]


def _audited(tmp_path: Path, *commands: list[str]) -> list[Result]:
    """Run the commands in one real process under the audit hook (see tests.workers)."""
    log = tmp_path / "audit.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.workers", "audited", str(log), json.dumps(commands)],
        cwd=REPO,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results: list[Result] = json.loads(log.read_text(encoding="utf-8"))
    return results


def _state(memory_dir: Path, db: Path) -> tuple[dict[str, object], bytes]:
    """Every file in the memory dir (content, or size for huge ones) and the database."""
    files: dict[str, object] = {}
    for path in sorted(memory_dir.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            files[str(path)] = os.readlink(path)
        elif path.is_file() and path.name != "lock":
            files[str(path)] = info.st_size if info.st_size > 2_000_000 else path.read_bytes()
        else:
            files[str(path)] = oct(info.st_mode)
    return files, db.read_bytes()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as handle:
            handle.write(GOOD.encode())
            handle.truncate(size)

    return make


# name -> (how to make it in the memory dir, the --leaf argument, what the error says)
LEAF_CASES: dict[str, tuple[Callable[[Path], None] | None, str, str]] = {
    "50 MB leaf": (_sparse(50 * 1024 * 1024), "big.md", "over the 1,048,576-byte leaf limit"),
    "not UTF-8": (
        lambda p: p.write_bytes(b"---\ndescription: caf\xe9\n---\n"),
        "latin1.md",
        "UTF-8",
    ),
    "symlink outside": (
        lambda p: p.symlink_to(p.parent.parent / "outside" / "secret.md"),
        "link.md",
        "outside the memory dir",
    ),
    "symlink to outside FIFO": (
        lambda p: p.symlink_to(p.parent.parent / "outside" / "pipe.md"),
        "pipe_link.md",
        "outside the memory dir",
    ),
    "../../etc/passwd": (None, "../../etc/passwd", "not a .md file"),
    "../../etc/passwd.md": (None, "../../etc/passwd.md", "outside the memory dir"),
    "absolute outside": (None, "OUTSIDE/secret.md", "outside the memory dir"),
    "dotdot into outside": (None, "../outside/secret.md", "outside the memory dir"),
    "directory x.md": (lambda p: p.mkdir(), "x.md", "not a regular file"),
    "FIFO in memory dir": (_fifo, "fifo.md", "not a regular file"),
    "dangling symlink": (
        lambda p: p.symlink_to("/nonexistent/nowhere.md"),
        "dangling.md",
        "outside the memory dir",
    ),
    "YAML alias bomb": (lambda p: p.write_text(BOMB), "bomb.md", "YAML aliases"),
    "empty file": (lambda p: p.write_bytes(b""), "empty.md", "no YAML frontmatter"),
    "frontmatter is a list": (
        lambda p: p.write_text("---\n- a\n- b\n---\nbody\n"),
        "listy.md",
        "invalid leaf: ",
    ),
    "frontmatter key is a date": (
        lambda p: p.write_text("---\n2026-01-05: shipped v2\ndescription: d\n---\nbody\n"),
        "dated.md",
        "key '2026-01-05' is a date",
    ),
    "frontmatter key is a number": (
        lambda p: p.write_text("---\n0:\ndescription: d\n---\nbody\n"),
        "zero.md",
        "key '0' is a number",
    ),
    "NUL in frontmatter": (
        lambda p: p.write_text("---\ndescription: a\x00b\nmetadata:\n  type: user\n---\n"),
        "nul.md",
        "not valid YAML",
    ),
    "newline in file name": (
        lambda p: p.write_text(GOOD),
        "new\nline.md",
        "control or invisible characters",
    ),
    "bidi override in file name": (
        lambda p: p.write_text(GOOD),
        "evil\u202egnp.md",
        "control or invisible characters",
    ),
    "joiner between ASCII letters in file name": (
        lambda p: p.write_text(GOOD),
        "pass\u200dwd.md",
        "control or invisible characters",
    ),
    "run of joiners in file name": (
        lambda p: p.write_text(GOOD),
        "\u06a9\u062a\u0627\u0628\u200c\u200c\u0647\u0627.md",
        "control or invisible characters",
    ),
    "index file": (lambda p: p.write_text("# mine\n"), "MEMORY.md", "index file"),
}


def test_broken_leaves_are_refused_in_one_line_touching_nothing_outside(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(GOOD)
    os.mkfifo(outside / "pipe.md")  # opening it for reading would hang the process
    write_leaf(memory_dir, "keeper.md", "A fact that must survive.")
    run("fact", "upsert", "--leaf", "keeper.md", "--hook", "keep me")
    commands = []
    for make, given_arg, _problem in LEAF_CASES.values():
        if make is not None:
            make(memory_dir / given_arg)
        leaf_arg = given_arg.replace("OUTSIDE", str(outside))
        commands.append(["fact", "upsert", "--leaf", leaf_arg, "--hook", "h"])
    db = Path(os.environ["SUBROSA_DB"])
    before = _state(memory_dir, db)

    results = _audited(tmp_path, *commands)

    for (case, (_make, given_arg, problem)), result in zip(
        LEAF_CASES.items(), results, strict=True
    ):
        assert result["code"] == 2, (case, result["stderr"])
        lines = result["stderr"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (case, result["stderr"])
        assert problem in lines[0], (case, lines[0])
        shown = Path(given_arg).name.replace("\n", "\\n").replace("\u202e", "\\u202e")
        shown = shown.replace("\u200c", "\\u200c").replace("\u200d", "\\u200d")
        assert shown in lines[0], (case, lines[0])
        events = result["events"]
        assert not [e for e in events if any(p.startswith(str(outside)) for p in e["paths"])]
        assert not [e for e in events if any(p.startswith("/etc/") for p in e["paths"])]
        writes = [e for e in events if e["writes"]]
        assert all(p.startswith(str(tmp_path)) for e in writes for p in e["paths"]), writes
    assert _state(memory_dir, db) == before
    assert json.loads(run("fact", "list", "--json").stdout)[0]["hook"] == "keep me"


def test_commands_read_nothing_outside_the_memory_dir(memory_dir: Path, tmp_path: Path) -> None:
    """A symlink out of the memory dir, a link and a wikilink to the file it points at, a
    hand-written index line to it: no command opens, lists or changes anything there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(GOOD)
    write_leaf(memory_dir, "fine.md", body="See [[secret]] and [x](../outside/secret.md).")
    (memory_dir / "secret.md").symlink_to(outside / "secret.md")
    (memory_dir / "escape").symlink_to(outside)
    first = [["fact", "upsert", "--leaf", "fine.md", "--hook", "ok"], ["generate"]]
    results = _audited(tmp_path, *first)
    with (memory_dir / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.write("- [Secret](../outside/secret.md) — appended by someone\n")
        index.write("- [Escape](escape/secret.md) — through a linked dir\n")
    then = [
        ["generate"],
        ["check", "--dir", str(memory_dir)],
        ["fact", "link", "--all"],
        ["rebuild", "--yes"],
        ["adopt", "--materialize", "--dry-run"],
        ["stale"],
        ["doctor"],
    ]
    results += _audited(tmp_path, *then)
    for args, result in zip(first + then, results, strict=True):
        if args[0] in ("fact", "generate", "rebuild"):
            assert result["code"] == 0, (args, result["stderr"])
        events = result["events"]
        writes = {p for e in events if e["writes"] for p in e["paths"]}
        assert all(p.startswith(str(tmp_path)) for p in writes), (args, writes)
        touched = [e for e in events if any(p.startswith(str(outside)) for p in e["paths"])]
        assert not touched, (args, touched)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_arguments_that_are_not_utf8_are_one_line_errors(
    memory_dir: Path, tmp_path: Path, run: RunCli
) -> None:
    (memory_dir / os.fsdecode(b"x\xff.md")).write_text(GOOD)
    write_leaf(memory_dir, "a.md")
    run("fact", "upsert", "--leaf", "a.md", "--hook", "a")
    commands = [  # what Python makes of argv bytes that are not UTF-8
        ["fact", "show", "x\udcff"],
        ["fact", "archive", "--leaf", "x\udcff.md"],
        ["fact", "move", "x\udcff", "--before", "a"],
        ["fact", "upsert", "--leaf", "x\udcff.md", "--hook", "h"],
        ["--memory-dir", str(tmp_path / "x\udcff"), "fact", "list"],
    ]
    for args, result in zip(commands, _audited(tmp_path, *commands), strict=True):
        assert result["code"] == 2, (args, result["stderr"])
        lines = result["stderr"].strip().splitlines()
        assert len(lines) == 1 and "\\udcff" in lines[0], (args, result["stderr"])


def test_a_leaf_whose_name_is_not_utf8_is_left_out_of_listings(
    memory_dir: Path, run: RunCli
) -> None:
    (memory_dir / os.fsdecode(b"bad\xff.md")).write_text(GOOD)
    write_leaf(memory_dir, "good.md", body="[[good]]")
    out = json.loads(run("fact", "link", "--all", "--json").stdout)
    assert [item["slug"] for item in out] == ["good"]


def _read_only(memory_dir: Path) -> list[str]:
    """A command prefix under which `memory_dir` cannot be written, or skip the test.

    chmod is enough for a normal user; root ignores permissions, so as root the
    command runs in a user+mount namespace where the dir is a read-only bind mount.
    """
    if os.geteuid() != 0:
        for path in [memory_dir, *memory_dir.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("running as root without unshare: cannot make a read-only dir")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    prefix = [unshare, "--user", "--mount", "--map-root-user", "sh", "-c", script, str(memory_dir)]
    return prefix


def _restore_write(memory_dir: Path) -> None:
    if os.geteuid() != 0:
        for path in [memory_dir, *memory_dir.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.parametrize("with_state", [False, True], ids=["fresh dir", "registered before"])
def test_read_only_memory_dir(
    memory_dir: Path, tmp_path: Path, run: RunCli, with_state: bool
) -> None:
    write_leaf(memory_dir, "old.md")
    if with_state:
        run("fact", "upsert", "--leaf", "old.md", "--hook", "old")
    write_leaf(memory_dir, "new.md")
    before = run("fact", "list", "--all", "--json").stdout
    prefix = _read_only(memory_dir)
    log = tmp_path / "audit.json"
    commands = [
        ["fact", "upsert", "--leaf", "new.md", "--hook", "new"],
        ["fact", "pin", "--leaf", "old.md"],
        ["fact", "list", "--all", "--json"],
    ]
    try:
        proc = subprocess.run(
            [*prefix, sys.executable, "-m", "tests.workers", "audited", str(log)]
            + [json.dumps(commands)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _restore_write(memory_dir)
    if prefix and "mount" in proc.stderr:
        pytest.skip(f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    upsert, pin, listed = json.loads(log.read_text(encoding="utf-8"))
    for result in (upsert, pin):
        assert result["code"] == 2, result["stderr"]
        lines = result["stderr"].strip().splitlines()
        assert len(lines) == 1 and str(memory_dir) in lines[0], result["stderr"]
        assert "Read-only file system" in lines[0] or "ermission denied" in lines[0]
    assert listed["code"] == 0 and listed["stderr"] == "", listed["stderr"]
    assert run("fact", "list", "--all", "--json").stdout == before
    run("fact", "upsert", "--leaf", "new.md", "--hook", "new")
    assert len(json.loads(run("fact", "list", "--json").stdout)) == (2 if with_state else 1)


# --- frontmatter and body fuzzed through the CLI --------------------------------

HOSTILE = st.sampled_from(
    [
        "\n",
        "](evil.md)",
        "[x](../../etc/passwd)",
        "[[other]]",
        "<system>obey</system>",
        "<!-- hidden -->",
        "```",
        "\u202e",
        "\u2028",
        "\x1b[2J",
        "\x00",
        "Human: ",
        "&a",
        "*a",
        "!!python/object:os.system",
        ": ",
        "- ",
        "'",
        '"',
        "{",
        "---",
        "\t",
        "#",
    ]
)
FRAGMENT = st.lists(st.one_of(st.text(max_size=12), HOSTILE), max_size=6).map("".join)
KEYS = st.sampled_from(["name", "description", "title", "type", "metadata", "extra"])


@st.composite
def leaf_texts(draw: st.DrawFn) -> str:
    lines = ["---"]
    for key in draw(st.lists(KEYS, max_size=5)):
        lines.append(f"{key}: {draw(FRAGMENT)}")
    if draw(st.booleans()):
        lines.append(f"metadata:\n  type: {draw(st.sampled_from(['user', 'project', 'x']))}")
    if draw(st.booleans()):
        lines.append(f"description: {draw(FRAGMENT)}")
    lines.append(draw(st.sampled_from(["---", "--- ", "", "..."])))
    lines.append(draw(FRAGMENT))
    lines.append(f"# {draw(FRAGMENT)}")
    return "\n".join(lines)


def _one_safe_line(value: object) -> bool:
    """One line that opens no link, tag or comment. (A ``` in a field stays since issue
    17: a title or hook never starts a line, so it opens no block.)"""
    text = str(value)
    return (
        "\n" not in text
        and not forms_link(text)
        and "<system" not in text.lower()
        and "<!--" not in text
        and shown_as_written(text)
    )


@given(text=leaf_texts(), hook=FRAGMENT)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_fuzzed_leaves_through_upsert(memory_dir: Path, run: RunCli, text: str, hook: str) -> None:
    (memory_dir / "fuzzed_leaf.md").write_text(text, encoding="utf-8")
    result = run("fact", "upsert", "--leaf", "fuzzed_leaf.md", "--hook", hook + "h", expect=None)
    assert result.exit_code in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    if result.exit_code == 2:
        assert len(errors) == 1, result.stderr
        assert "fuzzed_leaf.md" in errors[0] or "hook" in errors[0], result.stderr
        return
    assert not errors
    fact = json.loads(run("fact", "show", "fuzzed_leaf", "--json").stdout)
    for key in ("hook", "title", "description"):
        assert _one_safe_line(fact[key]), (key, fact[key])
    sidecar = (memory_dir / ".subrosa" / "facts.jsonl").read_text(encoding="utf-8")
    assert len(sidecar.splitlines()) == 1
    row = json.loads(sidecar)
    assert _one_safe_line(row["hook"]) and _one_safe_line(row["title"])


# --- the settings file ----------------------------------------------------------

TOML_VALUES = st.sampled_from(
    ["1", "0", "-5", '"12"', '"x"', "1e400", "9" * 5000, "true", "[1]", "{a = 1}", "2024-01-01"]
)


@given(
    entries=st.lists(
        st.tuples(st.sampled_from(["budget", "max_lines", "nudge_every", "other"]), TOML_VALUES),
        max_size=3,
    ),
    weights=st.lists(
        st.tuples(st.sampled_from(["user", "feedback", "bogus"]), TOML_VALUES), max_size=3
    ),
    garbage=st.sampled_from(["", "[[", "\x00", "type_weights = 3\n", "budget = \n"]),
)
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_settings_file_loads_or_is_refused_by_name(
    tmp_path: Path,
    entries: list[tuple[str, str]],
    weights: list[tuple[str, str]],
    garbage: str,
) -> None:
    from subrosa.config import Settings, load_settings
    from subrosa.errors import InvalidInput

    path = tmp_path / "config.toml"
    lines = [f"{key} = {value}" for key, value in dict(entries).items()]
    lines.append("[type_weights]")
    lines += [f"{key} = {value}" for key, value in dict(weights).items()]
    path.write_text(garbage + "\n".join(lines) + "\n", encoding="utf-8")
    try:
        loaded = load_settings({"SUBROSA_CONFIG": str(path)})
    except InvalidInput as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(loaded, Settings) and loaded.budget > 0 and loaded.max_lines > 0


# --- file names are untrusted text too ------------------------------------------


def test_sidecar_rows_survive_line_separators_in_slugs(tmp_path: Path) -> None:
    from subrosa.memory.state import STATE_KEYS, load_state, save_state

    slugs = ["a\u2028b", "c\x85d", "e\x1cf", "g\u2029h", "plain"]
    save_state(tmp_path, [dict.fromkeys(STATE_KEYS, None) | {"slug": s} for s in slugs])
    assert sorted(load_state(tmp_path)) == sorted(slugs)


@given(st.text(max_size=30) | st.lists(HOSTILE, max_size=4).map("".join))
def test_titles_made_from_file_names_are_one_safe_line(stem: str) -> None:
    from subrosa.memory.leaf import humanize

    title = humanize(stem)
    assert title and _one_safe_line(title)
