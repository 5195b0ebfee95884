"""The generate use case: the facts reconciled with the disk, then MEMORY.md and
MEMORY_archive.md written from them, all under the project lock.

`run_generate` is what `subrosa generate` and `subrosa adopt` run; it takes plain
values (a database URL, a project, the budget) so anything else (a server, another agent's
hook) can run it too. The steps: lines others added to the index files since the last
run are taken over (subrosa.memory.takeover), the selection is planned
(subrosa.memory.generator, pure), and the four files (two index files, two records of
what was written) are rewritten only where their bytes change.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subrosa.errors import InvalidInput, NotOwned, SubrosaError
from subrosa.fsutil import (
    backup_beside,
    read_bytes_if_exists,
    read_text_if_exists,
    sweep_temp_files,
    write_if_changed,
)
from subrosa.lazyre import compile_lazily
from subrosa.memory import generator, quick, rows
from subrosa.memory.indexfile import (
    IndexLine,
    foreign_lines,
    parse_index,
    stray_headings,
    undone_edits,
)
from subrosa.memory.leaf import parse_leaf
from subrosa.memory.marker import ARCHIVE, INDEX, foreign_index, is_subrosa_text, new_file_mode
from subrosa.memory.project import Project
from subrosa.memory.report import Report, Source
from subrosa.memory.state import read_last_index, save_last_index, save_ranking
from subrosa.memory.values import entry_for as entry_for  # re-exported: generate.entry_for
from subrosa.paths import state_dir

# SQLAlchemy (and the store and take-over built on it) load only when the quick path
# (subrosa.memory.quick) cannot answer: ~0.4 s of CPU a `generate` need not pay.
if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

# Claude Code's auto memory and people's editors write the index files without
# subrosa's lock. A line written between a pass's take-over (its read) and its write
# would be overwritten, so generate looks again before writing and starts over when
# either file changed; a take-over read twice takes nothing twice (a line's leaf and
# hook are what they were). On the last pass, a MEMORY.md changed all the same is kept
# as MEMORY.md.unplaced (`kept`) before it is replaced: nothing written there is lost.
TAKE_OVER_ATTEMPTS = 5

# Beside an index file, a copy of it as it was when it held lines no fact could take.
UNPLACED_SUFFIX = ".unplaced"


@dataclass
class Outcome:
    """What a generate did (or, in a dry run, would do)."""

    report: Report
    plan: generator.Plan
    # True when an index file changed (a run that finds both files as they should be
    # writes nothing, and says so).
    written: bool
    # MEMORY.md was the one Claude Code writes from the leaves (written_by_claude_code).
    replaced_claude_index: bool = False
    # The index files whose bytes changed.
    changed: list[str] = field(default_factory=list)
    # Copies kept of index files holding lines the take-over could not place.
    kept: list[str] = field(default_factory=list)
    # Facts whose line was deleted by hand and is written again, and facts whose line
    # was moved by hand and goes back to its place: {"file", "slug"} each.
    restored: list[dict[str, str]] = field(default_factory=list)
    reordered: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` shape (the issue's keys, plus a few more)."""
        plan, report = self.plan, self.report
        return {
            "included": [e.slug for e in plan.included],
            "below_budget": [e.slug for e in plan.below_budget],
            "archived": [e.slug for e in plan.archived],
            "bytes": plan.bytes,
            "lines": plan.lines,
            "adopted": sorted(report.adopted),
            "missing": report.missing,
            "pinned_left_out": [e.slug for e in plan.pinned_left_out],
            "hooks_taken": sorted(report.hooks_taken),
            "synced": sorted(report.synced),
            "materialized": report.materialized,
            "unreadable": [name for name, _ in report.unreadable],
            "unplaced": [item.to_dict() for item in report.unplaced],
            "kept": self.kept,
            "written": self.written,
            "replaced_claude_index": self.replaced_claude_index,
            "warnings": report.warnings,
            "too_long": [item.slug for item in plan.too_long],
            "restored": self.restored,
            "reordered": self.reordered,
        }


def _cold_additions(
    lines: list[IndexLine], numbers: set[int], registered_files: set[str]
) -> set[int]:
    """An edited archive line would bring its "(archived …)" suffix into the hook: from
    the cold tier, only lines that add a fact are taken over."""
    return {
        line.number
        for line in lines
        if line.number in numbers
        and (not line.targets or any(t not in registered_files for t in line.targets))
    }


# A line of the MEMORY.md Claude Code (2.1) writes at session start when its auto-memory
# dir holds leaves and no index: `- [stem](stem.md) — description`, or no description.
_CLAUDE_CODE_LINE = compile_lazily(
    r"- \[(?P<stem>[^\[\]\n]+)\]\((?P<target>[^()\s]+)\)(?: — (?P<said>.*))?"
)


def written_by_claude_code(memory_dir: Path) -> bool:
    """True when MEMORY.md is exactly what Claude Code writes by itself from the leaves:
    one `- [stem](stem.md) — description` line per leaf, each naming a leaf on disk with
    that very description (or none). Such a file holds nothing of the user's, so
    generate replaces it; a line anyone changed makes it the user's (adopt's job)."""
    text = read_text_if_exists(memory_dir / INDEX)
    if text is None or is_subrosa_text(text):
        return False
    for line in (line for line in text.split("\n") if line.strip()):
        match = _CLAUDE_CODE_LINE.fullmatch(line.rstrip("\r"))
        if match is None or match["target"] != f"{match['stem']}.md":
            return False
        leaf = memory_dir / match["target"]
        if match["target"] in (INDEX, ARCHIVE) or not leaf.is_file():
            return False
        if match["said"] is not None:
            try:
                description = parse_leaf(leaf).description
            except SubrosaError:
                return False
            if match["said"].split() != description.split():
                return False
    return True


def read_index_text(path: Path) -> str | None:
    """An index file's text to take lines over from (None when there is none): refused
    when it is not UTF-8, as a leaf is, since a take-over would turn the user's bytes
    into U+FFFD in hooks and leaves and then rewrite the file; a byte order mark is no
    text of the user's."""
    data = read_bytes_if_exists(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{path}: is not UTF-8 text (bad byte at offset {exc.start}); "
            "save it as UTF-8 and run again"
        ) from None


def appended_lines(memory_dir: Path, registered_files: set[str]) -> list[Source]:
    """The lines of the subrosa-written index files that subrosa did not write (generate's
    take-over; lines added to MEMORY_archive.md give archived facts). Refuses a MEMORY.md
    that subrosa never wrote (that is adopt's job), unless Claude Code wrote it from the
    leaves alone (`written_by_claude_code`): that one is replaced."""
    foreign = foreign_index(memory_dir)
    if foreign is not None and not written_by_claude_code(memory_dir):
        raise NotOwned(
            f"{foreign}: was not written by subrosa; run `subrosa adopt "
            f"{shlex.quote(str(memory_dir))}` once to take it over (it keeps a backup), "
            "then generate."
        )
    sources = []
    for name in (INDEX, ARCHIVE):
        if name == INDEX and foreign is not None:
            continue
        text = read_index_text(memory_dir / name)
        if text is None:
            continue
        last = read_last_index(memory_dir, name)
        if text == last:
            continue
        lines = parse_index(text)
        numbers = set(foreign_lines(text, last, registered_files))
        cold = name == ARCHIVE
        unplaced: list[IndexLine] = []
        if cold:
            additions = _cold_additions(lines, numbers, registered_files)
            unplaced = [
                line
                for line in lines
                if any(n in numbers for n in line.numbers)
                and not any(n in additions for n in line.numbers)
            ]
            numbers = additions
        else:
            unplaced = stray_headings(text, lines, numbers)
        if numbers or unplaced:
            sources.append(
                Source(
                    name,
                    lines,
                    cold=cold,
                    foreign=numbers,
                    by_section=cold and last is None,
                    unplaced=unplaced,
                )
            )
    return sources


@contextmanager
def _session(engine: Engine, project: Project, dry_run: bool) -> Iterator[Session]:
    """A write under the project lock (sidecar rewritten after), or a dry run rolled back."""
    from subrosa.db import session_scope
    from subrosa.memory import store

    if not dry_run:
        with store.mutation(engine, project, whole=True) as session:
            yield session
        return
    with session_scope(engine) as session:
        yield session
        session.rollback()


def _reconcile(
    session: Session,
    project: Project,
    sources: list[Source] | None,
    *,
    materialize: bool,
    reorder: bool,
    dry_run: bool,
) -> tuple[Report, list[generator.Entry]]:
    """The take-over, and every fact as an entry; a run where nothing changed on disk
    reads plain rows and skips the take-over."""
    from subrosa.memory import store, takeover

    if sources is None:
        sources = appended_lines(project.memory_dir, store.registered_paths(session, project))
    plain = takeover.unchanged_rows(session, project, sources)
    if plain is not None:
        return Report(present={row.path for row in plain}), [entry_for(r) for r in plain]
    report = takeover.take_over(
        session,
        project,
        sources,
        materialize_loose=materialize,
        reorder=reorder,
        dry_run=dry_run,
    )
    return report, [entry_for(f) for f in report.facts]


def keep_unplaced(memory_dir: Path, report: Report, copies: Sequence[str] = ()) -> list[str]:
    """A copy of each index file holding lines the take-over could not place, beside it
    as `NAME.unplaced` (not `.md`: no leaf, nothing the witness counts), before it is
    rewritten; a file one of `copies` (adopt's backups) holds as it is now is kept there
    already, and is not copied twice. Returns the copies."""
    kept = []
    for origin in sorted({item.origin for item in report.unplaced}):
        path = memory_dir / origin
        if not path.is_file():
            continue
        now = read_bytes_if_exists(path)
        same = [c for c in copies if Path(c).name.startswith(origin + ".")]
        held = next((c for c in same if read_bytes_if_exists(Path(c)) == now), None)
        kept.append(held if held is not None else str(backup_beside(path, UNPLACED_SUFFIX)))
    return kept


def hand_edits_undone(
    memory_dir: Path, plan: generator.Plan
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """What writing `plan` undoes of hand edits to the index files since subrosa last
    wrote them: lines deleted that come back, lines moved that go back to their place.
    The files are generated (document 002), so the edit is not honoured, but it is said:
    a deletion may be a slip, a compaction pass's move or another writer's, and a fact
    leaves the index by `fact archive` or `fact forget`, its place changes by `fact move`."""
    slugs = {e.filename: e.slug for e in plan.included + plan.below_budget + plan.archived}
    restored: list[dict[str, str]] = []
    reordered: list[dict[str, str]] = []
    for name, new in ((INDEX, plan.memory_md), (ARCHIVE, plan.archive_md)):
        last = read_last_index(memory_dir, name)
        current = read_index_text(memory_dir / name) if last is not None else None
        if last is None or current is None or current == last:
            continue
        back, moved = undone_edits(last, current, new)
        restored += [{"file": name, "slug": slugs.get(t, t.removesuffix(".md"))} for t in back]
        reordered += [{"file": name, "slug": slugs.get(t, t.removesuffix(".md"))} for t in moved]
    return restored, reordered


def _write(
    memory_dir: Path,
    plan: generator.Plan,
    seen: tuple[bytes | None, bytes | None] | None,
    keep: list[str] | None = None,
) -> list[str] | None:
    """Both index files and the record of what was written, each only if it changed;
    returns the index files that changed. None, with MEMORY.md not written, when an index
    file is no longer `seen` (what the pass read): each is looked at again just before
    it is replaced, as writing the archive of thousands of facts takes a while."""
    # A writer killed mid-write leaves its temp file behind; tidy up under the lock.
    for directory in (memory_dir, state_dir(memory_dir)):
        sweep_temp_files(directory)
    mode = new_file_mode(memory_dir)
    if seen is not None and keep is None and _index_bytes(memory_dir) != seen:
        return None
    archive = write_if_changed(memory_dir / ARCHIVE, plan.archive_md, mode)
    save_last_index(memory_dir, ARCHIVE, plan.archive_md)
    # Looked at again after the temp file's fsync, just before the rename: the window in
    # which a line appended by another writer is lost is that of one rename.
    # On the last pass (`keep`), a MEMORY.md changed all the same is kept beside it first.
    moved: list[bool] = []

    def index_moved() -> bool:
        now = read_bytes_if_exists(memory_dir / INDEX)
        moved.append(seen is not None and now is not None and now != seen[0])
        if moved[-1] and keep is not None:
            keep.append(backup_beside(memory_dir / INDEX, UNPLACED_SUFFIX))
            return False
        return moved[-1]

    if index_moved():
        return None
    index = write_if_changed(memory_dir / INDEX, plan.memory_md, mode, unless=index_moved)
    if moved[-1] and keep is None:
        return None
    save_last_index(memory_dir, INDEX, plan.memory_md)
    save_ranking(memory_dir, [generator.link_target(e.filename) for e in plan.ranked])
    return [name for name, changed in ((INDEX, index), (ARCHIVE, archive)) if changed]


def run_generate(
    db_url: str,
    project: Project,
    *,
    budget: int,
    max_lines: int,
    weights: dict[str, int],
    dry_run: bool = False,
    sources: list[Source] | None = None,
    materialize: bool = True,
    reorder: bool = False,
    quickly: bool = True,
    copies: Sequence[str] = (),
) -> Outcome:
    """Take over what others wrote, reconcile with the disk, select, render and write both
    index files, all under the project lock. `sources` (adopt's foreign index) replaces the
    lines generate takes over. The database is opened (and migrated on first use) once
    the memory dir is known to exist.

    On an SQLite file at the newest schema, a run with no lines to take over and no
    sidecar changed under the database reconciles through sqlite3 (subrosa.memory.quick:
    a stat per leaf, only changed leaves read, new ones registered in one statement);
    anything else takes the full path through SQLAlchemy. `quickly=False` forces the full
    path (tests compare the two). `copies`: copies of the index files already kept
    (adopt's backups), which keep_unplaced() does not make twice."""
    project.require_dir()
    database = rows.database_file(db_url) if quickly and sources is None and not reorder else None
    engine = None if database is not None else _engine(db_url)
    with project.lock(dry_run=dry_run):
        earlier: Report | None = None
        for attempt in range(1, TAKE_OVER_ATTEMPTS + 1):
            seen = _index_bytes(project.memory_dir)
            replaced = sources is None and foreign_index(project.memory_dir) is not None
            reconciled = quick.reconcile(database, project, dry_run=dry_run) if database else None
            if reconciled is None:
                engine = engine or _engine(db_url)
                with _session(engine, project, dry_run) as session:
                    reconciled = _reconcile(
                        session,
                        project,
                        sources,
                        materialize=materialize,
                        reorder=reorder,
                        dry_run=dry_run,
                    )
            report, entries = reconciled
            earlier = _carried(earlier, report)
            plan = generator.plan(
                entries,
                budget=budget,
                max_lines=max_lines,
                weights=weights,
                unreadable=report.unreadable,
            )
            restored, reordered = (
                hand_edits_undone(project.memory_dir, plan)
                if sources is None and not replaced
                else ([], [])
            )
            if dry_run:
                return Outcome(
                    report,
                    plan,
                    written=False,
                    replaced_claude_index=replaced,
                    restored=restored,
                    reordered=reordered,
                )
            # Others write the index files without our lock: one changed since this
            # pass read it would lose what they wrote; look again (TAKE_OVER_ATTEMPTS).
            if attempt < TAKE_OVER_ATTEMPTS and _index_bytes(project.memory_dir) != seen:
                continue
            kept = keep_unplaced(project.memory_dir, report, copies)
            last = kept if attempt == TAKE_OVER_ATTEMPTS else None
            written = _write(project.memory_dir, plan, seen, last)
            if written is None:
                continue
            changed = written
            break
    return Outcome(
        report,
        plan,
        written=bool(changed),
        replaced_claude_index=replaced,
        changed=changed,
        kept=kept,
        restored=restored,
        reordered=reordered,
    )


def _carried(earlier: Report | None, report: Report) -> Report:
    """`report` with what an earlier pass of the same run did first (a leaf it registered
    or materialized is no news to the pass after it, but is to the user)."""
    if earlier is not None:
        for name in ("adopted", "refreshed", "hooks_taken", "materialized", "synced"):
            later: list[str] = getattr(report, name)
            later[:0] = [item for item in getattr(earlier, name) if item not in later]
    return report


def _index_bytes(memory_dir: Path) -> tuple[bytes | None, bytes | None]:
    """Both index files' bytes, to tell whether someone wrote one during a pass."""
    return read_bytes_if_exists(memory_dir / INDEX), read_bytes_if_exists(memory_dir / ARCHIVE)


def _engine(db_url: str) -> Engine:
    from subrosa.db import open_database

    return open_database(db_url)
