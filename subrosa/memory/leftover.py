"""Leaves left in the memory dir an older subrosa used for the project.

Before subrosa spelled a project's Claude Code folder as Claude Code does (an emoji is
two `-`, a name over 200 characters is cut and hashed: 7aee5fe), its auto-memory dir
for such a project was `projects/<old spelling>/memory`
(subrosa.paths.former_memory_dir): install made it, generate wrote its MEMORY.md and
the extraction skill its leaves. Nothing reads that folder now. Here it is compared
with the memory dir (`find`, for doctor and a line of generate's) and its leaves are
brought over (`bring_over`, `subrosa adopt --from`): copied byte for byte, each only
where the memory dir has no file of that name, with its sidecar line when the memory
dir's sidecar has none. Nothing is ever overwritten, and the old folder is left as it
is. Standard library only: generate's entry without click (subrosa.cli.fastpath)
asks it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from subrosa.errors import InvalidInput
from subrosa.fsutil import atomic_write_bytes, fsync_dir, read_capped, remove_file
from subrosa.memory.leaf import leaf_names
from subrosa.memory.project import Project
from subrosa.memory.state import append_state_lines, load_state, state_path
from subrosa.paths import former_memory_dir, is_dir


@dataclass
class Leftovers:
    """What the old folder holds against the memory dir: leaves the memory dir lacks
    (`missing`), leaves it has with other bytes (`differing`: never overwritten), and
    how many it has alike (`same`)."""

    old: Path
    missing: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    same: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "from": str(self.old),
            "missing": self.missing,
            "differing": self.differing,
            "same": self.same,
        }


@dataclass
class Brought:
    """What `bring_over` copied (or, in a dry run, would copy)."""

    leftovers: Leftovers
    copied: list[str] = field(default_factory=list)
    sidecar_lines: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            **self.leftovers.to_dict(),
            "copied": self.copied,
            "sidecar_lines": self.sidecar_lines,
            "dry_run": self.dry_run,
        }


def old_folder(memory_dir: Path) -> Path | None:
    """The older subrosa's memory dir for this project, when it exists (one stat, and
    only for a project whose folder was spelled otherwise); else None."""
    old = former_memory_dir(memory_dir)
    try:
        return Path(old) if old is not None and is_dir(old) else None
    except OSError:  # a name over the system's limit (NAME_MAX): never made, so none
        return None


def compare(old: Path, memory_dir: Path) -> Leftovers:
    """The leaves of `old` against those of `memory_dir`, by name, then by bytes."""
    found = Leftovers(old)
    for name in leaf_names(old):
        here = memory_dir / name
        if not os.path.lexists(here):
            found.missing.append(name)
        elif _same_bytes(old / name, here):
            found.same += 1
        else:
            found.differing.append(name)
    return found


def find(memory_dir: Path) -> Leftovers | None:
    """What the older subrosa's memory dir of this project holds that the memory dir
    lacks or holds otherwise; None when there is no such folder or nothing to say."""
    old = old_folder(memory_dir)
    if old is None:
        return None
    found = compare(old, memory_dir)
    return found if found.missing or found.differing else None


def describe(found: Leftovers) -> str:
    """One line naming what `found` holds, for people."""
    parts = []
    if found.missing:
        parts.append(
            f"{len(found.missing)} leaf file(s) the memory dir lacks ({_first(found.missing)})"
        )
    if found.differing:
        parts.append(
            f"{len(found.differing)} with the same name as one in the memory dir and other "
            f"bytes ({_first(found.differing)})"
        )
    return f"{found.old} holds " + " and ".join(parts)


def bring_over(memory_dir: Path, old: Path, *, dry_run: bool = False) -> Brought:
    """Copy into `memory_dir` each leaf of `old` it lacks, byte for byte (never over a
    file: a name taken since is left and reported as differing), with its sidecar line
    when `old` has one and `memory_dir`'s sidecar has none. The lines go first, so a
    run killed midway leaves a line whose leaf the next run copies, never a copied leaf
    without its line. Both sidecars are read before anything is written: a broken one
    is refused by name (InvalidInput) and nothing is written, not even the memory dir,
    which is made when it does not exist yet (not by a dry run). Under its lock."""
    if not is_dir(old):
        raise InvalidInput(f"{old}: no such folder; nothing to bring over (--from).")
    if old.resolve() == memory_dir.resolve():
        raise InvalidInput(f"{old}: is the memory dir itself; nothing to bring over (--from).")
    load_state(old)  # each broken sidecar refused before the memory dir is made
    if memory_dir.is_dir():
        load_state(memory_dir)
    if not dry_run:
        memory_dir.mkdir(parents=True, exist_ok=True)
    if not memory_dir.is_dir():  # a dry run, the memory dir not made yet: no lock to take
        return _bring_over(memory_dir, old, dry_run=True)
    with Project(memory_dir).lock(dry_run=dry_run):
        return _bring_over(memory_dir, old, dry_run=dry_run)


def _bring_over(memory_dir: Path, old: Path, *, dry_run: bool) -> Brought:
    found = compare(old, memory_dir)
    brought = Brought(found, copied=list(found.missing), dry_run=dry_run)
    lines = _sidecar_lines(old, memory_dir, [name[: -len(".md")] for name in found.missing])
    brought.sidecar_lines = list(lines)
    if dry_run or not found.missing:
        return brought
    if lines:
        append_state_lines(memory_dir, b"".join(lines.values()))
    brought.copied = []
    for name in found.missing:
        if _copy_new(old / name, memory_dir / name):
            brought.copied.append(name)
        else:
            found.differing.append(name)
    found.missing = list(brought.copied)
    return brought


def _sidecar_lines(old: Path, memory_dir: Path, slugs: list[str]) -> dict[str, bytes]:
    """Each slug's line in `old`'s sidecar (its last, as readers take it), as written,
    for the slugs `memory_dir`'s sidecar has no line for."""
    have = load_state(memory_dir)  # read again under the lock
    data = read_capped(state_path(old))
    if not data:
        return {}
    wanted = set(slugs) - set(have)
    lines: dict[str, bytes] = {}
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line (load_state refuses any other)
        slug = row.get("slug") if isinstance(row, dict) else None
        if slug in wanted:
            lines[slug] = line + b"\n"
    return lines


def _copy_new(source: Path, target: Path) -> bool:
    """Copy `source` to `target`, which must not exist: written whole to a temp file,
    then linked into place (a link never replaces a file), so `target` appears whole or
    not at all. The source's permission bits kept. False when `target` exists."""
    data = source.read_bytes()
    mode = os.stat(source).st_mode & 0o777
    temp = target.with_name(f".{target.name}.bring")
    remove_file(temp)
    atomic_write_bytes(temp, data, mode)
    try:
        os.link(temp, target)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: a new file, never an old one
        return _write_new(target, data, mode)
    finally:
        remove_file(temp)
    fsync_dir(target.parent)
    return True


def _write_new(target: Path, data: bytes, mode: int) -> bool:
    """Write `data` to `target` only if it does not exist (O_EXCL), fsynced; False when
    it does. A run killed midway leaves part of the copy: doctor then names it as a
    leaf with other bytes, and the old one is still there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(target, flags, mode)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return True


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        if os.stat(a).st_size != os.stat(b).st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _first(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + ("…" if len(names) > limit else "")
