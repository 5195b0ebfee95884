"""Taking over index lines someone else wrote, and reconciling the facts with the disk.

One implementation, two callers: `subrosa adopt` takes over a whole MEMORY.md that
subrosa never wrote; `subrosa generate` takes over only the lines appended or edited
since its last run (Claude Code's auto memory and people write into MEMORY.md). Either
way a line keeps its hook and its place, a line whose file does not exist (or a bullet
with no link at all) can become a leaf of its own, and leaves on disk that nothing
registered yet are registered. Nothing a user wrote is dropped.

Reading the lines is subrosa.memory.indexfile's job (pure); this module decides what
they mean for the facts. Its queries are the store's, its file reads leaf's and state's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from subrosa.errors import LeafError
from subrosa.fsutil import atomic_write_text, holds_text
from subrosa.memory import store
from subrosa.memory.generator import ARCHIVED_SECTION
from subrosa.memory.indexfile import IndexLine, meaningful_title, split_archived_suffix
from subrosa.memory.leaf import (
    hash_leaf_file,
    humanize,
    list_leaf_files,
    parse_leaf_lenient,
    render_leaf,
)

# Loose, Report and Source live in subrosa.memory.report (plain values: generate's quick
# path, which never loads this module, reports with them too); re-exported here.
from subrosa.memory.report import Loose as Loose
from subrosa.memory.report import Report as Report
from subrosa.memory.report import Source as Source
from subrosa.memory.state import load_state, sidecar_matches
from subrosa.models import Fact

_TYPE_PREFIX = re.compile(r"^(user|feedback|project|reference)[_-]")


# --- materializing lines that have no leaf --------------------------------------


def _slugify(text: str) -> str:
    words = re.findall(r"\w+", text.lower())[:6]
    return "_".join(words)[:60].strip("_") or "note"


def _leaf_names_for(line: IndexLine, target: str | None) -> Iterator[str]:
    """The filenames a loose line may be materialized as, in order of preference."""
    if target and "/" not in target and "\\" not in target and not target.startswith("."):
        yield target
        stem = Path(target).stem
    else:
        stem = _slugify(line.title or line.hook)
    for n in range(1, 10_000):
        yield f"{stem}.md" if n == 1 else f"{stem}_{n}.md"


def _materialized_text(filename: str, line: IndexLine, target: str | None, origin: str) -> str:
    """The leaf `line` becomes when materialized as `filename` (the same bytes every run)."""
    stem = Path(filename).stem
    prefix = _TYPE_PREFIX.match(filename)
    title = (meaningful_title(line, target) if target else line.title) or humanize(stem)
    body = (
        f"# {title}\n\n{line.hook or title}\n\n"
        f"(Taken over by subrosa from line {line.number} of {origin}, "
        "which had no leaf of its own.)"
    )
    fact_type = prefix.group(1) if prefix else "reference"
    return render_leaf(stem.replace("_", "-"), line.hook or title, fact_type, body)


def materialize(
    memory_dir: Path, line: IndexLine, target: str | None, taken: set[str], origin: str
) -> str:
    """Write a leaf of its own for a line whose file does not exist (or a bullet without
    a link), in the canonical shape; return its filename. Never overwrites a file.

    A file that already holds exactly what this line would be materialized as is that
    leaf, written by a run killed before it wrote the index: it is taken as it is, so
    running again after a crash does not make the leaf a second time.
    """
    for filename in _leaf_names_for(line, target):
        text = _materialized_text(filename, line, target, origin)
        path = memory_dir / filename
        if filename in taken or path.exists():
            if holds_text(path, text):
                taken.add(filename)
                return filename
            continue
        atomic_write_text(path, text)
        taken.add(filename)
        return filename
    raise LeafError(target or line.title, "has too many namesakes to materialize")


# --- the take-over itself ---------------------------------------------------------


def find_loose(sources: list[Source], on_disk: set[str]) -> list[Loose]:
    """Lines that link files not on disk, and bullets without any link."""
    loose: list[Loose] = []
    for source in sources:
        for line in source.taken_lines():
            if not line.targets:
                loose.append(Loose(source.origin, line, None))
            for target in line.targets:
                if target not in on_disk:
                    loose.append(Loose(source.origin, line, target))
    return loose


def unchanged_rows(
    session: Session, project: store.Project, sources: list[Source]
) -> list[Any] | None:
    """The facts as plain rows (no body) when the disk holds nothing new for them: no
    lines to take over, every leaf registered and unchanged, every registered leaf on
    disk, the sidecar in step with the database. None when `take_over` has work to do.

    The common case (generate run again, nothing changed) then builds no ORM objects:
    with thousands of facts that was most of the run.
    """
    if any(source.taken_lines() for source in sources):
        return None
    rows = store.rows_without_body(session, project)
    by_path = {row.path: row for row in rows}
    memory_dir = project.memory_dir
    names = [p.name for p in list_leaf_files(memory_dir)]
    if len(names) != len(by_path) or not all(name in by_path for name in names):
        return None
    directory = str(memory_dir)
    for name in names:
        try:
            if hash_leaf_file(directory, name) != by_path[name].content_hash:
                return None
        except OSError:
            return None
    if not sidecar_matches(memory_dir, store.state_rows(session, project)):
        return None
    return rows


def take_over(
    session: Session,
    project: store.Project,
    sources: list[Source],
    *,
    materialize_loose: bool,
    reorder: bool,
    dry_run: bool = False,
) -> Report:
    """Reconcile the facts with the disk and take over `sources`' lines.

    - loose lines are materialized as leaves (when asked and not a dry run), else reported;
    - every readable leaf on disk is registered (hook from its line, else the sidecar,
      else its description) or refreshed when its content changed;
    - facts whose leaf is gone are reported as missing;
    - `reorder` (adopt) sets the curated order and sections from the lines; otherwise a
      new fact is placed after the fact whose line precedes its own.
    """
    report = Report()
    on_disk = {p.name for p in list_leaf_files(project.memory_dir)}
    first_line = _materialize_loose(
        project.memory_dir, sources, on_disk, report, materialize_loose and not dry_run
    )
    facts = {f.slug: f for f in store.facts_without_body(session, project)}
    # The sidecar is rewritten by every change, so where it disagrees with the database
    # it was changed under it (a git pull, another machine): it wins.
    state = load_state(project.memory_dir)
    for slug, row in state.items():
        if slug in facts and store.apply_state(facts[slug], row):
            report.synced.append(slug)
    new_files = _register_leaves(session, project, sorted(on_disk), facts, state, report)
    by_file = {f.path: f for f in facts.values()}
    for filename, (source, line) in first_line.items():
        if filename in by_file:
            _apply_line(
                by_file[filename], filename, source, line, filename in new_files, reorder, report
            )
    _place(session, project, sources, first_line, by_file, new_files, reorder, bool(report.synced))
    report.facts = [f for f in facts.values() if f.path in report.present]
    return report


def _materialize_loose(
    memory_dir: Path, sources: list[Source], on_disk: set[str], report: Report, write: bool
) -> dict[str, tuple[Source, IndexLine]]:
    """Give each loose line a leaf (when `write`), else report it; return, for each file on
    disk, the first line that links it (that line gives the fact its hook and place)."""
    first_line: dict[str, tuple[Source, IndexLine]] = {}
    taken_names = set(on_disk) | {p.name for p in memory_dir.iterdir()}
    for loose in find_loose(sources, on_disk):
        if not write:
            report.loose.append(loose)
            continue
        filename = materialize(memory_dir, loose.line, loose.target, taken_names, loose.origin)
        report.materialized.append(filename)
        on_disk.add(filename)
        source = next(s for s in sources if s.origin == loose.origin)
        first_line.setdefault(filename, (source, loose.line))
    for source in sources:
        for line in source.taken_lines():
            for target in line.targets:
                if target in on_disk:
                    first_line.setdefault(target, (source, line))
    return first_line


def _register_leaves(
    session: Session,
    project: store.Project,
    filenames: list[str],
    facts: dict[str, Fact],
    state: dict[str, dict[str, Any]],
    report: Report,
) -> list[str]:
    """Register leaves nobody registered, refresh changed ones, note missing and unreadable
    ones; `facts` (by slug) gains the new facts. Returns the new facts' filenames."""
    by_file = {f.path: f for f in facts.values()}
    new_files: list[str] = []
    directory = str(project.memory_dir)
    last_position = max((f.position for f in facts.values()), default=0) + 10**6
    for filename in filenames:
        fact = by_file.get(filename)
        try:
            digest = hash_leaf_file(directory, filename)
        except OSError as exc:
            report.unreadable.append((filename, f"cannot be read ({exc.strerror})"))
            continue
        if fact is not None and fact.content_hash == digest:
            report.present.add(filename)
            continue
        path = project.memory_dir / filename
        try:
            leaf = parse_leaf_lenient(path)
        except LeafError as exc:
            report.unreadable.append((filename, exc.problem))
            continue
        report.present.add(filename)
        report.warnings.extend(f"{path}: {w}" for w in leaf.warnings)
        fact = fact or facts.get(leaf.slug)  # registered under another path spelling
        if fact is None:
            fact = store.register_from_disk(
                session,
                project,
                leaf,
                state.get(leaf.slug),
                known_new=True,
                fallback_position=last_position + len(new_files) + 1,
            )
            facts[fact.slug] = fact
            report.adopted.append(fact.slug)
            new_files.append(filename)
        else:
            store.refresh_from_leaf(fact, leaf)
            report.refreshed.append(fact.slug)
    seen = report.present | {name for name, _ in report.unreadable}  # once, not per fact
    report.missing = sorted(f.slug for f in facts.values() if f.path not in seen)
    return new_files


def _apply_line(
    fact: Fact,
    filename: str,
    source: Source,
    line: IndexLine,
    is_new: bool,
    reorder: bool,
    report: Report,
) -> None:
    """What a taken-over line says about its fact: hook (kept whole), title, section; a
    new fact found only in a hand-kept archive stays in the cold tier."""
    text, reason = split_archived_suffix(line.hook) if source.cold else (line.hook, None)
    if text:
        hook, _ = store.clean_hook(text, strict=False)
        if hook != fact.hook:
            fact.hook = hook
            report.hooks_taken.append(fact.slug)
    title = meaningful_title(line, filename)
    if title:
        fact.title = title
    archived_here = not source.by_section or line.section == ARCHIVED_SECTION
    if source.cold and is_new and fact.status == "active" and archived_here:
        fact.status = "archived"
        how = "before adoption" if reorder else "added by hand"
        fact.archive_reason = reason if reason is not None else f"in {source.origin} {how}"
        fact.archived_at = store.utcnow()
    if reorder and not source.cold:
        fact.section = line.section


def _place(
    session: Session,
    project: store.Project,
    sources: list[Source],
    first_line: dict[str, tuple[Source, IndexLine]],
    by_file: dict[str, Fact],
    new_files: list[str],
    reorder: bool,
    resort: bool = False,
) -> None:
    """Set the curated order: all of it from the lines (adopt), or new facts after the fact
    whose line precedes theirs (generate). `resort` makes positions dense again after
    some were taken from the sidecar."""
    if not reorder and not new_files and not resort:
        return
    session.flush()
    current = store.list_facts(session, project, status=None)
    if reorder:
        ordered: list[Fact] = []
        seen: set[str] = set()
        for source in sources:
            for line in source.lines:
                for target in line.targets:
                    fact = by_file.get(target)
                    if fact is not None and fact.slug not in seen:
                        ordered.append(fact)
                        seen.add(fact.slug)
        rest = [f for f in current if f.slug not in seen]
        store.renumber(session, project, ordered + rest)
        return
    placed = {by_file[f].slug for f in new_files if f in first_line and f in by_file}
    if not placed:
        store.renumber(session, project, current)
        return
    ordered = [f for f in current if f.slug not in placed]
    hot = next((s for s in sources if not s.cold), None)
    anchor: str | None = None
    for line in hot.lines if hot else []:
        for target in line.targets:
            fact = by_file.get(target)
            if fact is None:
                continue
            if fact.slug in placed and fact not in ordered:
                index = (
                    next(i for i, f in enumerate(ordered) if f.slug == anchor) + 1
                    if anchor is not None
                    else 0
                )
                ordered.insert(index, fact)
                if line.section is not None:
                    fact.section = line.section
            anchor = fact.slug
    ordered.extend(f for f in current if f.slug in placed and f not in ordered)
    store.renumber(session, project, ordered)
