"""`subrosa generate` (the two index files, byte-budgeted) and `subrosa check` (the witness)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.db import session_scope
from subrosa.errors import InvalidInput, NotOwned, ProblemFound
from subrosa.fsutil import atomic_write_text, sweep_temp_files
from subrosa.memory import generator, store, takeover
from subrosa.memory.marker import foreign_index
from subrosa.models import Fact
from subrosa.paths import state_dir


@dataclass
class Outcome:
    report: takeover.Report
    plan: generator.Plan
    written: bool


def entry_for(fact: Fact | Any) -> generator.Entry:
    """A fact (an ORM object, or a plain row of the same columns) as the generator sees it."""
    return generator.Entry(
        slug=fact.slug,
        filename=fact.path,
        title=fact.title,
        hook=fact.hook,
        type=fact.type,
        updated_at=fact.updated_at,
        position=fact.position,
        section=fact.section,
        pinned=bool(fact.pinned),
        archived=fact.status == "archived",
        archive_reason=fact.archive_reason,
        archived_at=fact.archived_at,
        hits=fact.hits,
    )


def appended_lines(memory_dir: Path, registered_files: set[str]) -> list[takeover.Source]:
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
    for name in (generator.INDEX, generator.ARCHIVE):
        try:
            text = (memory_dir / name).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        last = takeover.read_last_index(memory_dir, name)
        if text == last:
            continue
        lines = takeover.parse_index(text)
        numbers = set(takeover.foreign_lines(text, last, registered_files))
        if name == generator.ARCHIVE:
            # An edited archive line would bring its "(archived …)" suffix into the hook:
            # from the cold tier, only lines that add a fact are taken over.
            numbers = {
                line.number
                for line in lines
                if line.number in numbers
                and (not line.targets or any(t not in registered_files for t in line.targets))
            }
        if numbers:
            cold = name == generator.ARCHIVE
            sources.append(
                takeover.Source(
                    name, lines, cold=cold, foreign=numbers, by_section=cold and last is None
                )
            )
    return sources


@contextmanager
def _session(engine: Engine, project: store.Project, dry_run: bool) -> Iterator[Session]:
    """A write under the project lock (sidecar rewritten after), or a dry run rolled back."""
    if not dry_run:
        with store.mutation(engine, project) as session:
            yield session
        return
    with session_scope(engine) as session:
        yield session
        session.rollback()


def _write_if_changed(path: Path, text: str) -> bool:
    try:
        if path.read_bytes() == text.encode("utf-8"):
            return False
    except FileNotFoundError:
        pass
    atomic_write_text(path, text)
    return True


def run_generate(
    engine: Engine,
    project: store.Project,
    *,
    budget: int,
    max_lines: int,
    weights: dict[str, int],
    dry_run: bool = False,
    sources: list[takeover.Source] | None = None,
    materialize: bool = True,
    reorder: bool = False,
) -> Outcome:
    """Take over what others wrote, reconcile with the disk, select, render and write both
    index files, all under the project lock. `sources` (adopt's foreign index) replaces the
    lines generate takes over."""
    memory_dir = project.memory_dir
    if not memory_dir.is_dir():
        raise InvalidInput(f"{memory_dir}: no such memory directory.")
    with project.lock():
        with _session(engine, project, dry_run) as session:
            if sources is None:
                query = select(Fact.path).where(Fact.project == project.key)
                sources = appended_lines(memory_dir, set(session.scalars(query)))
            rows = takeover.unchanged_rows(session, project, sources)
            if rows is not None:
                report = takeover.Report(present={row.path for row in rows})
                entries = [entry_for(row) for row in rows]
            else:
                report = takeover.take_over(
                    session,
                    project,
                    sources,
                    materialize_loose=materialize,
                    reorder=reorder,
                    dry_run=dry_run,
                )
                entries = [entry_for(f) for f in report.facts]
        plan = generator.plan(
            entries,
            budget=budget,
            max_lines=max_lines,
            weights=weights,
            unreadable=report.unreadable,
        )
        if dry_run:
            return Outcome(report, plan, written=False)
        # A writer killed mid-write leaves its temp file behind; tidy up under the lock.
        for directory in (memory_dir, state_dir(memory_dir)):
            sweep_temp_files(directory)
        _write_if_changed(memory_dir / generator.ARCHIVE, plan.archive_md)
        _write_if_changed(memory_dir / generator.INDEX, plan.memory_md)
        _write_if_changed(takeover.last_index_path(memory_dir), plan.memory_md)
        _write_if_changed(takeover.last_index_path(memory_dir, generator.ARCHIVE), plan.archive_md)
    return Outcome(report, plan, written=True)


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """The issue's `--json` keys, plus a few more."""
    plan, report = outcome.plan, outcome.report
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
        "written": outcome.written,
    }


def _names(slugs: list[str], limit: int = 12) -> str:
    shown = ", ".join(slugs[:limit])
    return shown + (f", … ({len(slugs) - limit} more)" if len(slugs) > limit else "")


def print_summary(outcome: Outcome, budget: int, max_lines: int, dry_run: bool) -> None:
    plan, report = outcome.plan, outcome.report
    verb = "would write" if dry_run else "wrote"
    say(
        f"{verb} MEMORY.md: {len(plan.included)} facts, {plan.bytes:,} / {budget:,} bytes, "
        f"{plan.lines} / {max_lines} lines"
    )
    groups = (
        ("below budget (in MEMORY_archive.md)", [e.slug for e in plan.below_budget]),
        ("archived", [e.slug for e in plan.archived]),
        ("adopted (registered from disk)", sorted(report.adopted)),
        ("hooks taken from lines written by others", sorted(report.hooks_taken)),
        ("taken from a sidecar changed under the database", sorted(report.synced)),
        ("materialized as leaves", report.materialized),
    )
    for label, slugs in groups:
        if slugs:
            say(f"{label} ({len(slugs)}): {_names(slugs)}")


def report_problems(report: takeover.Report) -> None:
    """Warnings on stderr: facts whose leaf is gone, unreadable leaves, lenient parses."""
    for slug in report.missing:
        warn(
            f"{slug}: registered, but its leaf is gone; left out of both index files "
            "(restore the leaf, or run `subrosa rebuild` to forget the fact)."
        )
    for filename, problem in report.unreadable:
        warn(f"{filename}: {problem}; listed under 'Unreadable leaves' in MEMORY_archive.md.")
    for message in report.warnings:
        warn(message)


@click.command()
@click.option("--budget", type=click.IntRange(min=1), help="Bytes of MEMORY.md (default 23000).")
@click.option("--max-lines", type=click.IntRange(min=1), help="Lines of MEMORY.md (default 200).")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@json_option
@pass_app
def generate(
    app: AppContext, budget: int | None, max_lines: int | None, dry_run: bool, as_json: bool
) -> None:
    """Rewrite MEMORY.md (hot tier) and MEMORY_archive.md (cold tier) from the facts.

    First reconciles with the disk: leaves nobody registered are registered (hook = their
    description), facts whose leaf is gone are left out, and lines someone else added to
    MEMORY.md since the last run are taken over (hook and place kept; a line without a
    leaf becomes a leaf of its own). Then selects by rank (pinned, type weight, newest
    change, hits) every fact whose line still fits the byte budget and line cap, and shows
    them in curated order; every other leaf goes to MEMORY_archive.md, exactly once.

    Exit 1 when pinned facts do not all fit (what fits is written), or when MEMORY.md was
    not written by subrosa (run `subrosa adopt` once).
    """
    settings = app.settings
    budget = budget or settings.budget
    max_lines = max_lines or settings.max_lines
    outcome = run_generate(
        app.engine,
        app.project,
        budget=budget,
        max_lines=max_lines,
        weights=settings.type_weights,
        dry_run=dry_run,
    )
    report_problems(outcome.report)
    if as_json:
        print_json(outcome_json(outcome))
    else:
        print_summary(outcome, budget, max_lines, dry_run)
    if outcome.plan.pinned_left_out:
        raise ProblemFound(
            "pinned facts do not all fit the budget; left out: "
            + ", ".join(e.slug for e in outcome.plan.pinned_left_out)
            + " (unpin some, shorten their hooks, or raise --budget)."
        )


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    help="The memory dir to check (default: this project's).",
)
@click.option("--strict", is_flag=True, help="Also fail on dangling [[wikilinks]].")
@json_option
@click.option("--max-lines", type=int, default=200, show_default=True, help="Line cap.")
@click.option("--max-bytes", type=int, default=25_000, show_default=True, help="Byte cap.")
@pass_app
@click.pass_context
def check(
    ctx: click.Context,
    app: AppContext,
    directory: str | None,
    strict: bool,
    as_json: bool,
    max_lines: int,
    max_bytes: int,
) -> None:
    """The witness: re-derive the index invariants from disk alone (no database).

    Fails (exit 1) when MEMORY.md is over the line or byte cap, when a topic .md file is
    linked from neither MEMORY.md nor MEMORY_archive.md (orphan file), a link names a file
    that does not exist (orphan link), a file is linked more than once, or MEMORY.md does
    not link an existing MEMORY_archive.md. Dangling [[wikilinks]] in leaves are advisory
    unless --strict. Runs skills/memory-compact/check_memory.py itself: same verdicts.
    """
    from subrosa.memory.witness import load

    argv = ["--dir", directory or str(app.memory_dir)]
    argv += ["--max-lines", str(max_lines), "--max-bytes", str(max_bytes)]
    argv += ["--strict"] if strict else []
    argv += ["--json"] if as_json else []
    ctx.exit(int(load().main(argv)))
