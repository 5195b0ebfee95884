"""The adopt and rebuild use cases: a memory dir taken over as it is, and the database
recreated from the disk alone.

Adopt reads a MEMORY.md (and MEMORY_archive.md) that subrosa never wrote for each
fact's hook, order and section, keeps the old files as backups, and generates. It
refuses, before writing anything, when index lines have no leaf and the caller did not
ask to materialize them: nothing a user wrote is silently dropped. Rebuild drops the
project's rows and registers every readable leaf again, with what only subrosa knew
taken from the sidecar.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subrosa.db import open_database
from subrosa.errors import LeafError, ProblemFound
from subrosa.fsutil import backup_beside, sweep_temp_files
from subrosa.memory import store, takeover
from subrosa.memory.generate import Outcome, read_index_text, run_generate
from subrosa.memory.indexfile import parse_index
from subrosa.memory.leaf import (
    list_leaf_files,
    parse_leaf,
    parse_leaf_lenient,
    parse_note,
    rewrite_canonical,
    subfolder_note,
)
from subrosa.memory.marker import ARCHIVE, INDEX, is_subrosa_index
from subrosa.memory.state import load_state
from subrosa.paths import state_dir

# Never `.md`, so a backup is no topic file the witness would count.
BACKUP_SUFFIX = ".pre-subrosa"
FRONTMATTER_BACKUP = "frontmatter-backup"


def foreign_sources(memory_dir: Path) -> list[takeover.Source]:
    """Every line of a MEMORY.md (and MEMORY_archive.md) that subrosa did not write."""
    sources = []
    for name, cold in ((INDEX, False), (ARCHIVE, True)):
        path = memory_dir / name
        if path.is_file() and not is_subrosa_index(path):
            text = read_index_text(path) or ""
            sources.append(takeover.Source(name, parse_index(text), cold=cold))
    return sources


def fix_frontmatter(memory_dir: Path, *, write: bool = True) -> tuple[list[str], list[str]]:
    """Mend the frontmatter of leaves the strict reader refuses (only the lines that need
    it; subrosa.memory.frontfix); each original is kept under
    `.subrosa/frontmatter-backup/`. Returns their names (with `write` False, the names
    it would mend) and a warning for each leaf left as it is."""
    fixed: list[str] = []
    unfixed: list[str] = []
    keep = Path(state_dir(memory_dir), FRONTMATTER_BACKUP)
    if write:  # an adopt killed while keeping an original left its temp file (generate
        sweep_temp_files(keep)  # sweeps the memory dir and .subrosa, not this folder)
    for path in list_leaf_files(memory_dir):
        try:
            parse_leaf(path)
            continue
        except LeafError:
            pass
        try:
            leaf = parse_leaf_lenient(path)
        except LeafError:
            continue  # unreadable: nothing to fix it from
        try:
            rewrite_canonical(leaf, keep, write=write)
        except LeafError as exc:
            unfixed.append(str(exc))
            continue
        fixed.append(path.name)
    return fixed, unfixed


@dataclass
class Adoption:
    """What adopt did: the generate it ran, and the files it kept or rewrote."""

    memory_dir: Path
    outcome: Outcome
    backups: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` shape: generate's keys, plus what adopt adds."""
        plan, report = self.outcome.plan, self.outcome.report
        data = self.outcome.to_dict()
        data.update(
            {
                "dir": str(self.memory_dir),
                "registered": sorted(
                    e.slug for e in plan.included + plan.below_budget + plan.archived
                ),
                "loose": [item.to_dict() for item in report.loose],
                "backups": self.backups,
                "fixed_frontmatter": self.fixed,
                "warnings": report.warnings,
            }
        )
        return data


class LooseLines(ProblemFound):
    """Adopt stopped: index items have no leaf (`loose`, for `--json`)."""

    def __init__(self, memory_dir: Path, loose: list[takeover.Loose]) -> None:
        super().__init__(
            f"{memory_dir}: {len(loose)} index item(s) have no leaf ("
            + "; ".join(item.describe() for item in loose[:5])
            + (", …" if len(loose) > 5 else "")
            + "); nothing was written. Run again with --materialize to make each a "
            "leaf of its own, or give them a leaf by hand."
        )
        self.memory_dir = memory_dir
        self.loose = loose


def _refuse_loose(memory_dir: Path, loose: list[takeover.Loose]) -> None:
    raise LooseLines(memory_dir, loose)


def adopt(
    db_url: str,
    memory_dir: Path,
    *,
    budget: int,
    max_lines: int,
    weights: dict[str, int],
    materialize: bool = False,
    fix: bool = False,
    dry_run: bool = False,
) -> Adoption:
    """Take over `memory_dir` as it is: back up a foreign index, optionally fix broken
    frontmatter, then generate with the foreign lines as the take-over's source (their
    hooks, order and sections win). Under the project lock from the first read. A dry
    run goes the same way (it refuses where the real run refuses) and writes nothing."""
    project = store.Project(memory_dir)
    project.require_dir()
    with project.lock(dry_run=dry_run):
        foreign = foreign_sources(memory_dir)
        loose = takeover.find_loose(foreign, takeover.files_on_disk(memory_dir, foreign))
        if loose and not materialize:
            _refuse_loose(memory_dir, loose)
        write = not dry_run
        backups = [
            str(backup_beside(memory_dir / s.origin, BACKUP_SUFFIX, write=write)) for s in foreign
        ]
        fixed, unfixed = fix_frontmatter(memory_dir, write=write) if fix else ([], [])
        outcome = run_generate(
            db_url,
            project,
            budget=budget,
            max_lines=max_lines,
            weights=weights,
            dry_run=dry_run,
            sources=foreign or None,
            materialize=materialize,
            reorder=bool(foreign),
            copies=backups,
        )
    outcome.report.warnings[:0] = unfixed
    return Adoption(memory_dir, outcome, backups, fixed)


@dataclass
class Rebuilt:
    """The facts a rebuild recreated, and the leaves it could not read."""

    slugs: list[str]
    active: int
    archived: int
    pinned: int
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The `--json` shape."""
        return {
            "rebuilt": self.slugs,
            "active": self.active,
            "archived": self.archived,
            "pinned": self.pinned,
        }


def rebuild(db_url: str, project: store.Project) -> Rebuilt:
    """Drop the project's facts and recreate them from the leaves (read leniently; an
    unreadable one is named in the warnings) and the sidecar."""
    project.require_dir()
    leaves = []
    warnings: list[str] = []
    for path in list_leaf_files(project.memory_dir):
        try:
            leaves.append(parse_leaf_lenient(path))
        except LeafError as exc:
            warnings.append(str(exc))
    # Notes in subfolders that the index linked: the sidecar names them (`notes/x`).
    root = project.memory_dir.resolve()
    for slug in sorted(load_state(project.memory_dir)):
        rel = slug + ".md"
        if "/" in slug and subfolder_note(project.memory_dir, rel, root) is not None:
            try:
                leaves.append(parse_note(project.memory_dir, rel))
            except LeafError as exc:
                warnings.append(str(exc))
    with store.mutation(open_database(db_url), project) as session:
        facts = store.rebuild(session, project, leaves)
        return Rebuilt(
            slugs=[f.slug for f in facts],
            active=sum(f.status == "active" for f in facts),
            archived=sum(f.status == "archived" for f in facts),
            pinned=sum(bool(f.pinned) for f in facts),
            warnings=warnings,
        )
