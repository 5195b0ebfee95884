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

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subrosa.errors import NotOwned
from subrosa.fsutil import read_text_if_exists, sweep_temp_files, write_if_changed
from subrosa.memory import generator, quick, rows
from subrosa.memory.indexfile import IndexLine, foreign_lines, parse_index
from subrosa.memory.marker import ARCHIVE, INDEX, foreign_index
from subrosa.memory.project import Project
from subrosa.memory.report import Report, Source
from subrosa.memory.state import read_last_index, save_last_index
from subrosa.memory.values import entry_for as entry_for  # re-exported: generate.entry_for
from subrosa.paths import state_dir

# SQLAlchemy (and the store and take-over built on it) load only when the quick path
# (subrosa.memory.quick) cannot answer: ~0.4 s of CPU a `generate` need not pay.
if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session


@dataclass
class Outcome:
    """What a generate did (or, in a dry run, would do)."""

    report: Report
    plan: generator.Plan
    written: bool

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
            "written": self.written,
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


def appended_lines(memory_dir: Path, registered_files: set[str]) -> list[Source]:
    """The lines of the subrosa-written index files that subrosa did not write (generate's
    take-over; lines added to MEMORY_archive.md give archived facts). Refuses a MEMORY.md
    that subrosa never wrote: that is adopt's job."""
    foreign = foreign_index(memory_dir)
    if foreign is not None:
        raise NotOwned(
            f"{foreign}: was not written by subrosa; run `subrosa adopt` once to take it "
            "over (it keeps a backup), then generate."
        )
    sources = []
    for name in (INDEX, ARCHIVE):
        text = read_text_if_exists(memory_dir / name)
        if text is None:
            continue
        last = read_last_index(memory_dir, name)
        if text == last:
            continue
        lines = parse_index(text)
        numbers = set(foreign_lines(text, last, registered_files))
        cold = name == ARCHIVE
        if cold:
            numbers = _cold_additions(lines, numbers, registered_files)
        if numbers:
            sources.append(
                Source(name, lines, cold=cold, foreign=numbers, by_section=cold and last is None)
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


def _write(memory_dir: Path, plan: generator.Plan) -> None:
    """Both index files and the record of what was written, each only if it changed."""
    # A writer killed mid-write leaves its temp file behind; tidy up under the lock.
    for directory in (memory_dir, state_dir(memory_dir)):
        sweep_temp_files(directory)
    write_if_changed(memory_dir / ARCHIVE, plan.archive_md)
    write_if_changed(memory_dir / INDEX, plan.memory_md)
    save_last_index(memory_dir, INDEX, plan.memory_md)
    save_last_index(memory_dir, ARCHIVE, plan.archive_md)


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
) -> Outcome:
    """Take over what others wrote, reconcile with the disk, select, render and write both
    index files, all under the project lock. `sources` (adopt's foreign index) replaces the
    lines generate takes over. The database is opened (and migrated on first use) once
    the memory dir is known to exist.

    On an SQLite file at the newest schema, a run with no lines to take over and no
    sidecar changed under the database reconciles through sqlite3 (subrosa.memory.quick:
    a stat per leaf, only changed leaves read, new ones registered in one statement);
    anything else takes the full path through SQLAlchemy. `quickly=False` forces the full
    path (tests compare the two)."""
    project.require_dir()
    database = rows.database_file(db_url) if quickly and sources is None and not reorder else None
    engine = None if database is not None else _engine(db_url)
    with project.lock():
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
        plan = generator.plan(
            entries,
            budget=budget,
            max_lines=max_lines,
            weights=weights,
            unreadable=report.unreadable,
        )
        if dry_run:
            return Outcome(report, plan, written=False)
        _write(project.memory_dir, plan)
    return Outcome(report, plan, written=True)


def _engine(db_url: str) -> Engine:
    from subrosa.db import open_database

    return open_database(db_url)
