"""Paths and files (issue 18, point 6): what a repository can plant in a memory dir or a
project's `.claude/`, and what subrosa itself creates.

A checked-out branch can hold symbolic links where subrosa keeps its own files, a
512 MB MEMORY.md, a settings file linked to /dev/zero, JSON nested ten thousand deep.
subrosa reads none of them without bound and nothing through a link; the hooks fail
open, the commands refuse in one sentence. What it creates is never wider than asked:
backups keep their source's mode, new files honour the umask, the data dir is 0700.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import resource
import stat
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from subrosa.archive import pending
from subrosa.paths import data_dir
from tests.conftest import REPO, RunCli, subrosa_process, write_leaf

PRECIOUS = b"precious: never truncated, never copied\n"
NESTED = "[" * 100_000 + "]" * 100_000


@pytest.fixture(autouse=True)
def no_background_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBROSA_BACKGROUND_INGEST", "0")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the memory dir holding a 0600 file a link may point at."""
    folder = tmp_path / "outside"
    (folder / "dir").mkdir(parents=True)
    (folder / "precious").write_bytes(PRECIOUS)
    (folder / "precious").chmod(0o600)
    return folder


def _untouched(outside: Path) -> None:
    assert (outside / "precious").read_bytes() == PRECIOUS
    assert stat.S_IMODE((outside / "precious").stat().st_mode) == 0o600
    assert sorted(p.name for p in outside.iterdir()) == ["dir", "precious"]
    assert list((outside / "dir").iterdir()) == []


def _one_sentence(stderr: str, *needles: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def under_way(memory_dir: Path, run: RunCli) -> Path:
    """A memory dir subrosa already keeps: two facts, MEMORY.md, the sidecar, the lock."""
    write_leaf(memory_dir, "alpha.md")
    write_leaf(memory_dir, "beta.md")
    run("fact", "upsert", "--leaf", "alpha.md", "--hook", "alpha")
    run("generate")
    return memory_dir


# --- the lock: CVE-2025-68146 --------------------------------------------------------


def test_filelock_has_the_symlink_fix() -> None:
    """filelock before 3.20.1 truncated the target of a lock path that was a symlink."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "filelock>=3.20.1" in declared
    installed = tuple(int(p) for p in importlib.metadata.version("filelock").split(".")[:3])
    assert installed >= (3, 20, 1)


# --- subrosa's own files as links -----------------------------------------------------

LINKS: dict[str, Callable[[Path, Path], None]] = {
    ".subrosa/lock": lambda m, o: (m / ".subrosa" / "lock").symlink_to(o / "precious"),
    ".subrosa": lambda m, o: (m / ".subrosa").symlink_to(o / "dir", target_is_directory=True),
    ".subrosa/facts.jsonl": lambda m, o: (m / ".subrosa" / "facts.jsonl").symlink_to(
        o / "precious"
    ),
    ".subrosa/last-index.txt": lambda m, o: (m / ".subrosa" / "last-index.txt").symlink_to(
        o / "precious"
    ),
    "MEMORY.md": lambda m, o: (m / "MEMORY.md").symlink_to(o / "precious"),
    "MEMORY_archive.md": lambda m, o: (m / "MEMORY_archive.md").symlink_to(o / "precious"),
}
WRITERS = (
    ("generate",),
    ("fact", "upsert", "--leaf", "beta.md", "--hook", "beta"),
    ("fact", "pin", "--leaf", "alpha.md"),
    ("adopt",),
    ("rebuild", "--yes"),
    ("fact", "archive", "--leaf", "alpha.md", "--reason", "done"),
)


def _plant(memory_dir: Path, outside: Path, name: str) -> None:
    target = memory_dir / name
    if target.is_dir() and not target.is_symlink():
        for child in target.iterdir():
            child.unlink()
        target.rmdir()
    else:
        target.unlink(missing_ok=True)
    LINKS[name](memory_dir, outside)


@pytest.mark.parametrize("name", list(LINKS))
def test_no_command_reads_or_writes_through_a_link_among_its_own_files(
    under_way: Path, outside: Path, run: RunCli, name: str
) -> None:
    """`.subrosa/lock -> ~/.bashrc` (filelock 3.20.0 truncated it), `.subrosa -> ~/x`,
    `MEMORY.md -> ~/.ssh/id_rsa`: every writer refuses in one sentence naming the link,
    and the file it points at is neither changed nor copied."""
    _plant(under_way, outside, name)
    before = {p: os.readlink(p) for p in under_way.rglob("*") if p.is_symlink()}
    for args in WRITERS:
        result = run(*args, expect=2)
        _one_sentence(result.stderr, str(under_way / name), "symbolic link")
        _untouched(outside)
    assert {p: os.readlink(p) for p in under_way.rglob("*") if p.is_symlink()} == before
    for path in under_way.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert PRECIOUS.strip() not in path.read_bytes(), path


def test_adopt_does_not_follow_a_memory_md_link_out_of_the_memory_dir(
    memory_dir: Path, outside: Path, run: RunCli
) -> None:
    """The index a user would adopt points at a private file elsewhere: no backup of it
    lands in the memory dir (a folder the docs say to commit)."""
    write_leaf(memory_dir, "alpha.md")
    (memory_dir / "MEMORY.md").symlink_to(outside / "precious")
    for args in (("adopt",), ("adopt", "--materialize"), ("adopt", "--dry-run")):
        _one_sentence(run(*args, expect=2).stderr, "MEMORY.md", "symbolic link")
    assert sorted(p.name for p in memory_dir.iterdir()) == ["MEMORY.md", "alpha.md"]
    _untouched(outside)


def _checks(output: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads(output)["checks"]}


def test_the_witness_does_not_read_a_linked_index(
    under_way: Path, outside: Path, run: RunCli
) -> None:
    """`subrosa check` (and the script the memory-compact skill runs) reports what it
    reads to the agent: a linked index is refused, not read."""
    for name in ("MEMORY.md", "MEMORY_archive.md"):
        _plant(under_way, outside, name)
        result = run("check", "--json", expect=2)
        _one_sentence(result.stderr, name, "symbolic link")
        assert "precious" not in result.stdout
        (under_way / name).unlink()
        run("generate")


def test_doctor_names_a_linked_index(under_way: Path, outside: Path, run: RunCli) -> None:
    _plant(under_way, outside, "MEMORY.md")
    checks = _checks(run("doctor", "--json", expect=1).stdout)
    assert not checks["index"]["ok"] and "symbolic link" in checks["index"]["detail"]
    _untouched(outside)


def test_a_lock_file_of_the_database_that_is_a_link_is_refused(
    memory_dir: Path, tmp_path: Path, outside: Path, run: RunCli
) -> None:
    """The database's migration and ingest locks (beside a database in a shared folder,
    another user could plant them): filelock refuses the link, the command says so."""
    database = tmp_path / "subrosa.db"
    Path(str(database) + ".migrate.lock").symlink_to(outside / "precious")
    result = run("db", "upgrade", expect=1)
    _one_sentence(result.stderr, "migrate.lock")
    _untouched(outside)
    Path(str(database) + ".migrate.lock").unlink()
    Path(str(database) + ".ingest.lock").symlink_to(outside / "precious")
    _one_sentence(run("ingest", expect=1).stderr, "ingest.lock")
    _untouched(outside)


def test_a_dangling_link_where_the_database_will_be_is_not_followed(
    tmp_path: Path, outside: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "public" / "subrosa.db"
    planted.parent.mkdir()
    planted.symlink_to(outside / "dir" / "created-through-the-link.db")
    monkeypatch.setenv("SUBROSA_DB", str(planted))
    _one_sentence(run("db", "upgrade", expect=1).stderr, str(planted), "link")
    _untouched(outside)


# --- the hooks: fail open, read nothing through a link or without bound ----------------


def _hook(name: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """A hook as a real process, its address space capped at 1 GiB so that reading
    /dev/zero or a 512 MB file ends in a failed test, not a starved machine."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subrosa_process("hook", name, input=json.dumps(payload), preexec_fn=cap)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    return result


def _context(result: subprocess.CompletedProcess[bytes]) -> str:
    if not result.stdout.strip():
        return ""
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


def test_session_start_injects_no_linked_index(
    under_way: Path, outside: Path, tmp_path: Path
) -> None:
    """`MEMORY.md -> ~/.ssh/id_rsa` in a repository: SessionStart would send the key to
    the model. It injects nothing of it and says why on stderr."""
    payload = {"session_id": "s1", "cwd": str(tmp_path)}
    assert "alpha" in _context(_hook("session-start", payload))  # injected while regular
    _plant(under_way, outside, "MEMORY.md")
    # Another session: the same event twice would be taken for a double registration.
    result = _hook("session-start", {**payload, "session_id": "s2"})
    assert "precious" not in _context(result)
    assert b"symbolic link" in result.stderr and len(result.stderr.splitlines()) == 1
    _untouched(outside)


def test_a_huge_index_is_not_read_by_session_start(under_way: Path, tmp_path: Path) -> None:
    """A 512 MB MEMORY.md (sparse: it costs the disk nothing) is refused at its stat:
    the hook, capped at 1 GiB of address space, exits 0 and injects nothing."""
    index = under_way / "MEMORY.md"
    with index.open("r+b") as handle:
        handle.truncate(512 * 1024 * 1024)
    result = _hook("session-start", {"session_id": "s1", "cwd": str(tmp_path)})
    assert _context(result) == ""
    assert b"larger than" in result.stderr


def test_settings_linked_to_dev_zero_are_not_read(
    under_way: Path, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.claude/settings.local.json -> /dev/zero` in a repository: SessionStart,
    `install` and `doctor` see a file that is not one, and go on or refuse."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").symlink_to("/dev/zero")
    (project / ".claude" / "settings.json").write_text(NESTED)  # and nested past any limit
    result = _hook("session-start", {"session_id": "s1", "cwd": str(project)})
    assert "alpha" in _context(result)
    monkeypatch.chdir(project)
    refused = run("install", "--scope", "local", expect=2)
    _one_sentence(refused.stderr, "settings.local.json", "not a regular file")
    nested = run("install", "--scope", "project", expect=2)
    _one_sentence(nested.stderr, "settings.json", "not valid JSON")
    assert (project / ".claude" / "settings.json").read_text() == NESTED
    checks = _checks(run("doctor", "--json", expect=None).stdout)
    assert checks["hooks"]["severity"] == "warning"


def _extract_dir_case(memory_dir: Path, outside: Path) -> None:
    (memory_dir / ".extract").symlink_to(outside / "dir", target_is_directory=True)


def test_the_hooks_write_nothing_through_a_linked_extract_dir(
    under_way: Path, outside: Path, tmp_path: Path, run: RunCli
) -> None:
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    _extract_dir_case(under_way, outside)
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)}
    for name in ("session-start", "stop", "session-end"):
        result = _hook(name, payload)
        assert b"symbolic link" in result.stderr, (name, result.stderr)
    _untouched(outside)
    for args in (("checkpoint-list",), ("checkpoint-mark", "--session", "s1")):
        _one_sentence(run(*args, expect=2).stderr, ".extract", "symbolic link")
    _untouched(outside)


def test_old_files_behind_a_linked_marks_dir_are_not_deleted(
    under_way: Path, outside: Path, tmp_path: Path
) -> None:
    """SessionEnd deletes counters and marks older than two weeks: never in a folder
    `.extract/marks` points to."""
    old = outside / "dir" / "keep.json"
    old.write_text("{}")
    two_months_ago = time.time() - 60 * 24 * 3600
    os.utime(old, (two_months_ago, two_months_ago))
    (under_way / ".extract").mkdir()
    (under_way / ".extract" / "marks").symlink_to(outside / "dir", target_is_directory=True)
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    _hook("session-end", {"session_id": "s1", "transcript_path": str(transcript)})
    assert old.read_text() == "{}"


def test_a_linked_hook_record_reads_as_none_and_is_replaced(
    under_way: Path, outside: Path, tmp_path: Path
) -> None:
    """A record in `.extract/` that is a link (the turn counter -> /dev/zero, or a file
    elsewhere) is read as absent and replaced by the hook's own, the target untouched."""
    (under_way / ".extract").mkdir()
    counter = under_way / ".extract" / "s1.json"
    counter.symlink_to(outside / "precious")
    (under_way / ".extract" / "s2.json").symlink_to("/dev/zero")
    for session in ("s1", "s2"):
        _hook("stop", {"session_id": session, "cwd": str(tmp_path)})
        record = under_way / ".extract" / f"{session}.json"
        assert not record.is_symlink() and json.loads(record.read_text())["turns"] == 1
    _untouched(outside)


# --- nesting past the parser's recursion limit ----------------------------------------


def test_json_nested_too_deeply_is_bad_input_everywhere(
    under_way: Path, tmp_path: Path, run: RunCli
) -> None:
    """`[[[[…` raises RecursionError, not ValueError, in json, msgspec and TOML: the
    sidecar, hook records, pending records, settings, stdin and transcripts each treat
    it as the bad input it is."""
    sidecar = under_way / ".subrosa" / "facts.jsonl"
    good = sidecar.read_text()
    sidecar.write_text(NESTED + "\n")
    _one_sentence(run("rebuild", "--yes", expect=2).stderr, "facts.jsonl", "line 1")
    sidecar.write_text(good)

    queue = under_way / ".extract" / "queue"
    queue.mkdir(parents=True)
    (queue / "s9.json").write_text(NESTED)
    assert json.loads(run("checkpoint-list", "--json").stdout) == []

    transcript = tmp_path / "s1.jsonl"
    record = {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user"}}
    record["message"]["content"] = "zephyrine lamp"
    transcript.write_text(NESTED + "\n" + json.dumps(record) + "\n")
    pending.record(str(transcript), "s1")
    (Path(pending.pending_dir()) / "nested.json").write_text(NESTED)
    found = json.loads(run("search", "--json", "zephyrine").stdout)
    assert [r["session_id"] for r in found] == ["s1"]
    assert pending.list_pending() == []

    for name in ("session-start", "stop", "session-end"):
        result = subrosa_process("hook", name, input=NESTED)
        assert result.returncode == 0 and b"not valid JSON" in result.stderr, result.stderr

    config = Path(os.environ["XDG_CONFIG_HOME"]) / "subrosa" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("budget = " + NESTED + "\n")
    _one_sentence(run("generate", expect=2).stderr, "config.toml", "not valid TOML")


def test_yaml_nested_too_deeply_in_a_leaf_is_refused_by_name(memory_dir: Path, run: RunCli) -> None:
    path = memory_dir / "deep.md"
    path.write_text("---\nname: deep\ndescription: " + NESTED + "\n---\n\nbody\n")
    _one_sentence(run("fact", "upsert", "--leaf", "deep.md", expect=2).stderr, "deep.md")
    block = "".join(" " * i + "k:\n" for i in range(3000))
    path.write_text("---\nname: deep\n" + block + "---\n\nbody\n")
    _one_sentence(run("fact", "upsert", "--leaf", "deep.md", expect=2).stderr, "deep.md")


# --- what subrosa creates -------------------------------------------------------------


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process's umask for the test (the CLI runs in this process)."""
    previous = os.umask(0o022)

    def set_to(value: int) -> None:
        os.umask(value)

    try:
        yield set_to
    finally:
        os.umask(previous)


def _mode(path: str | Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_backup_keeps_the_mode_of_its_source(
    memory_dir: Path, run: RunCli, umask: Callable[[int], None]
) -> None:
    """adopt keeps the old index as MEMORY.md.pre-subrosa in a folder meant for git: a
    0600 index never becomes a 0644 backup; neither does a leaf's frontmatter backup."""
    write_leaf(memory_dir, "alpha.md")
    (memory_dir / "broken.md").write_text("---\nname: [unclosed\n---\n\nThe body.\n")
    (memory_dir / "broken.md").chmod(0o600)
    index = memory_dir / "MEMORY.md"
    index.write_text("# Memory\n\n- [Alpha](alpha.md) — the first\n")
    index.chmod(0o600)
    run("adopt", "--fix-frontmatter")
    assert _mode(memory_dir / "MEMORY.md.pre-subrosa") == 0o600
    assert _mode(memory_dir / ".subrosa" / "frontmatter-backup" / "broken.md") == 0o600
    assert _mode(index) == 0o600  # replaced in place: it keeps its mode


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o027])
def test_new_files_honour_the_umask(
    memory_dir: Path, run: RunCli, tmp_path: Path, umask: Callable[[int], None], mask: int
) -> None:
    umask(mask)
    write_leaf(memory_dir, "alpha.md")
    run("fact", "upsert", "--leaf", "alpha.md", "--hook", "alpha")
    run("generate")
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    _hook("stop", {"session_id": "s1", "transcript_path": str(transcript), "cwd": "."})
    made = [
        memory_dir / "MEMORY.md",
        memory_dir / "MEMORY_archive.md",
        memory_dir / ".subrosa" / "facts.jsonl",
        memory_dir / ".subrosa" / "last-index.txt",
        memory_dir / ".extract" / "s1.json",
    ]
    for path in made:
        assert _mode(path) == 0o666 & ~mask, (path, oct(_mode(path)))
    assert _mode(pending.record(str(transcript), "s1")) == 0o600 & ~mask


def test_the_data_dir_is_created_private(
    memory_dir: Path, tmp_path: Path, run: RunCli, umask: Callable[[int], None]
) -> None:
    """Whichever comes first, the SessionEnd hook's pending record, `install`'s record or
    the database, the data dir (documented 0700) is created 0700."""
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    _hook("session-end", {"session_id": "s1", "transcript_path": str(transcript)})
    assert _mode(data_dir()) == 0o700
    assert _mode(pending.pending_dir()) == 0o700
    Path(data_dir()).rename(tmp_path / "data-before")
    run("install", "--scope", "user")
    assert _mode(data_dir()) == 0o700 and _mode(Path(data_dir()) / "installs") == 0o700
    for record in (Path(data_dir()) / "installs").iterdir():
        assert _mode(record) == 0o600


def test_doctor_never_suggests_changing_a_shared_folder(
    memory_dir: Path, tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database in /tmp (sticky, everyone's): the fix is to move the database, not
    `chmod 700 /tmp`. In a folder of the user's own, the chmod is right, quoted."""
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)
    database = public / "subrosa.db"
    monkeypatch.setenv("SUBROSA_DB", str(database))
    run("fact", "list")
    database.chmod(0o644)
    checks = _checks(run("doctor", "--json", expect=1).stdout)
    fix = checks["permissions"]["fix"]
    assert not checks["permissions"]["ok"]
    assert "chmod" not in fix and "move the database" in fix, fix

    # An ordinary 755 folder is fine (others only see the names); one others may write
    # to is not (they could swap the database), and there the chmod is right, quoted.
    own = tmp_path / "it's mine"
    own.mkdir()
    own.chmod(0o775)
    monkeypatch.setenv("SUBROSA_DB", str(own / "subrosa.db"))
    run("fact", "list")
    checks = _checks(run("doctor", "--json", expect=1).stdout)
    assert checks["permissions"]["fix"] == f"chmod go-w '{tmp_path}/it'\"'\"'s mine'"


def test_is_current_reads_the_file_named_whatever_its_name(tmp_path: Path, run: RunCli) -> None:
    """The fast path checks the schema through an SQLite URI: a `#` or `?` in the path
    once cut it short, and SQLite opened (and created) another file."""
    from subrosa.schema import is_current

    folder = tmp_path / "we ird'#%();@?x=1"
    folder.mkdir()
    database = folder / "subrosa.db"
    run("--db", str(database), "db", "upgrade")
    assert is_current(database)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("we ird")) == [
        folder.name
    ]
