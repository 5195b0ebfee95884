"""Leaves an older subrosa left in the memory dir it used for a project at an odd path.

Before 7aee5fe subrosa spelled the Claude Code folder of a project at a path with an
emoji (or a name over 200 characters) otherwise than Claude Code does: install made,
generate and the extraction skill wrote `projects/<old spelling>/memory`. subrosa now
uses the right folder, so the leaves there are read by nothing. doctor names them (a
warning), generate points at doctor, and `subrosa adopt --from OLD` brings them over
byte for byte, never over a file (subrosa.memory.leftover)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from subrosa.paths import auto_memory_dir, former_project_folder
from tests.conftest import RunCli, subrosa_process, write_leaf

# The sidecar line the older subrosa wrote for the leaf it registered (hook, pin, place).
TEA_LINE = (
    '{"slug": "user_likes_tea", "title": "Tea", "hook": "always tea — never coffee", '
    '"section": null, "pinned": true, "status": "active", "archive_reason": null, '
    '"archived_at": null, "position": 7, "created_at": "2026-01-02T03:04:05+00:00"}\n'
)
# Bytes a careful copy must keep: CRLF, no final newline, text outside ASCII.
ODD_LEAF = (
    b"---\r\nname: project-crab\r\ndescription: Ferris \xf0\x9f\xa6\x80 lives here\r\n"
    b"metadata:\r\n  type: project\r\n---\r\n\r\nKeep   these    spaces."
)


def _project(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A git checkout at `tmp_path/name`, the current folder; its old and new memory dirs."""
    root = tmp_path.joinpath(*name.split("/"))
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "subrosa.db"))
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"], "projects")
    old = projects / former_project_folder(str(root)) / "memory"
    new = Path(auto_memory_dir(root))
    assert old != new
    return old, new


def _old_leaves(old: Path) -> None:
    old.mkdir(parents=True)
    write_leaf(old, "user_likes_tea.md", "The user likes tea", fact_type="user")
    (old / "project_crab.md").write_bytes(ODD_LEAF)
    write_leaf(old, "twice.md", "Said first in the old folder")
    (old / ".subrosa").mkdir()
    (old / ".subrosa" / "facts.jsonl").write_text(TEA_LINE, encoding="utf-8")
    (old / "MEMORY.md").write_text("an index generated there, read by no session\n")


def _checks(run: RunCli) -> dict[str, dict[str, object]]:
    data = json.loads(run("doctor", "--json", expect=None).stdout)
    return {c["name"]: c for c in data["checks"]}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _long(tmp_path: Path) -> str:
    """A folder whose name Claude Code cuts (over 200 characters) and the older subrosa
    did not: 230, which a file system still takes (255 at most)."""
    return "x" * (230 - len(former_project_folder(str(tmp_path))) - 1)


@pytest.mark.parametrize("name", ["notes 🦀 café", "long"])
def test_doctor_names_the_old_folder_and_adopt_from_brings_its_leaves_over(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    old, new = _project(tmp_path, _long(tmp_path) if name == "long" else name, monkeypatch)
    _old_leaves(old)
    new.mkdir(parents=True)
    write_leaf(new, "twice.md", "Said otherwise in the memory dir")
    write_leaf(new, "mine.md", "A leaf of the memory dir now")
    run("generate")
    before_old = _snapshot(old)
    twice_new = (new / "twice.md").read_bytes()

    check = _checks(run)["old memory dir"]
    assert check["ok"] is False and check["severity"] == "warning"
    assert str(old) in str(check["detail"])
    assert "2 leaf file(s) the memory dir lacks" in str(check["detail"])
    assert "1 with the same name" in str(check["detail"]) and "twice.md" in str(check["detail"])
    assert "subrosa adopt --from" in str(check["fix"]) and "never over" in str(check["fix"])

    # generate says it in one line, and points at doctor.
    said = run("generate").stderr
    assert said.count("subrosa doctor") == 1 and str(old) in said

    # A dry run says what it would copy and writes nothing.
    dry = run("adopt", "--from", str(old), "--dry-run", "--json")
    brought = json.loads(dry.stdout)["brought"]
    assert brought["copied"] == ["project_crab.md", "user_likes_tea.md"]
    assert brought["differing"] == ["twice.md"] and brought["sidecar_lines"] == ["user_likes_tea"]
    assert not (new / "user_likes_tea.md").exists()

    result = json.loads(run("adopt", "--from", str(old), "--json").stdout)
    assert result["brought"]["copied"] == ["project_crab.md", "user_likes_tea.md"]
    # Every byte kept; the old folder as it was; the leaf both hold, untouched in both.
    assert (new / "project_crab.md").read_bytes() == ODD_LEAF
    assert (new / "user_likes_tea.md").read_bytes() == (old / "user_likes_tea.md").read_bytes()
    assert (new / "twice.md").read_bytes() == twice_new
    assert _snapshot(old) == before_old
    # What only subrosa knew of the fact (hook, pin) came with its sidecar line.
    facts = {f["slug"]: f for f in json.loads(run("fact", "list", "--all", "--json").stdout)}
    assert facts["user_likes_tea"]["pinned"] is True
    assert facts["user_likes_tea"]["hook"] == "always tea — never coffee"
    assert "always tea — never coffee" in (new / "MEMORY.md").read_text(encoding="utf-8")
    assert {"project_crab", "mine", "twice"} <= set(facts)

    # Only the leaf named in both is left to say; a second run copies nothing.
    check = _checks(run)["old memory dir"]
    assert "lacks" not in str(check["detail"]) and "twice.md" in str(check["detail"])
    assert "adopt --from" not in str(check["fix"]) and "diff" in str(check["fix"])
    again = run("adopt", "--from", str(old))
    assert "nothing to copy" in again.stdout and "twice.md" in again.stderr
    assert run("check", expect=None).exit_code == 0


def test_a_new_leaf_of_the_same_name_is_never_overwritten(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _project(tmp_path, "crab🦀", monkeypatch)
    _old_leaves(old)
    new.mkdir(parents=True)
    (new / ".subrosa").mkdir()
    mine = '{"slug": "user_likes_tea", "title": "T", "hook": "mine"}\n'
    (new / ".subrosa" / "facts.jsonl").write_text(mine, encoding="utf-8")
    from subrosa.memory import leftover

    (new / "user_likes_tea.md").write_bytes(b"written here since")
    brought = leftover.bring_over(new, old)
    assert "user_likes_tea.md" not in brought.copied
    assert (new / "user_likes_tea.md").read_bytes() == b"written here since"
    # The memory dir's own sidecar line wins: none appended for a leaf not copied.
    assert (new / ".subrosa" / "facts.jsonl").read_text(encoding="utf-8") == mine


def test_the_memory_dir_made_when_missing_and_a_broken_sidecar_refused(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _project(tmp_path, "crab🦀", monkeypatch)
    _old_leaves(old)
    # install never ran in the right folder: doctor says both, generate points at doctor.
    checks = _checks(run)
    assert checks["old memory dir"]["ok"] is False and "mkdir" in str(checks["memory dir"]["fix"])
    assert "subrosa doctor" in run("generate", expect=2).stderr
    (old / ".subrosa" / "facts.jsonl").write_text("not json\n" + TEA_LINE, encoding="utf-8")
    said = run("adopt", "--from", str(old), expect=2).stderr
    assert "facts.jsonl" in said and "line 1" in said
    assert not new.exists()
    run("adopt", "--from", str(tmp_path / "nowhere"), expect=2)
    (old / ".subrosa" / "facts.jsonl").write_text(TEA_LINE, encoding="utf-8")
    run("adopt", "--from", str(old))
    assert (new / "user_likes_tea.md").is_file()
    sidecar = (new / ".subrosa" / "facts.jsonl").read_text(encoding="utf-8")
    assert sidecar.count('"hook": "always tea — never coffee"') == 1  # written whole by adopt


def test_an_old_name_too_long_for_any_file_system_is_no_folder(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The older subrosa's spelling of this path passes 255 bytes: it never made it, and
    # asking for it must break neither generate nor doctor.
    old, new = _project(tmp_path, "y" * 240 + "/" + "z" * 60, monkeypatch)
    new.mkdir(parents=True)
    assert len(old.parent.name) > 255
    run("generate")
    assert "old memory dir" not in _checks(run)


def test_nothing_said_where_the_host_names_the_folder(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every project shares the named folder; the path's own is Claude Code's from before.
    old, _ = _project(tmp_path, "crab🦀", monkeypatch)
    _old_leaves(old)
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "work")
    Path(auto_memory_dir(os.getcwd())).mkdir(parents=True)
    assert "old memory dir" not in _checks(run)
    assert run("generate").stderr == ""


def test_nothing_said_for_a_project_at_an_ordinary_path(
    tmp_path: Path, run: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "plain"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SUBROSA_DB", str(tmp_path / "subrosa.db"))
    Path(auto_memory_dir(root)).mkdir(parents=True)
    assert "old memory dir" not in _checks(run)
    assert run("generate").stderr == ""


def test_generate_through_the_real_entry_points_at_doctor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _project(tmp_path, "crab🦀", monkeypatch)
    _old_leaves(old)
    new.mkdir(parents=True)
    done = subrosa_process("generate", cwd=os.getcwd(), text=True)
    assert done.returncode == 0, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "subrosa doctor" in x]
    assert "3 leaf file(s) the memory dir lacks" in line and str(old) in line
