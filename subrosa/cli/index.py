"""`subrosa generate` (the two index files, byte-budgeted) and `subrosa check` (the witness).

Adapters only: the generate use case is subrosa.memory.generate; `print_summary` and
`report_problems` are shared with `subrosa adopt`."""

from __future__ import annotations

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.config import BYTE_CAP, LINE_CAP
from subrosa.errors import ProblemFound
from subrosa.memory.generate import Outcome, run_generate
from subrosa.memory.marker import ARCHIVE, INDEX
from subrosa.memory.takeover import Report


def _names(slugs: list[str], limit: int = 12) -> str:
    shown = ", ".join(slugs[:limit])
    return shown + (f", … ({len(slugs) - limit} more)" if len(slugs) > limit else "")


def print_summary(outcome: Outcome, budget: int, max_lines: int, dry_run: bool) -> None:
    plan, report = outcome.plan, outcome.report
    if dry_run:
        verb = "would write MEMORY.md"
    elif INDEX in outcome.changed:
        verb = "wrote MEMORY.md"
    else:
        verb = "MEMORY.md unchanged" + (f" (wrote {ARCHIVE})" if outcome.changed else "")
    say(
        f"{verb}: {len(plan.included)} facts, {plan.bytes:,} / {budget:,} bytes, "
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
    if outcome.replaced_claude_index:
        say("replaced the MEMORY.md Claude Code had written from the leaves (nothing else in it)")
    for path in outcome.kept:
        say(f"kept a copy of the lines not taken over: {path}")


def report_problems(report: Report) -> None:
    """Warnings on stderr: facts whose leaf is gone, unreadable leaves, lenient parses."""
    for slug in report.missing:
        warn(
            f"{slug}: registered, but its leaf is gone; left out of both index files "
            f"(restore the leaf, or forget the fact: `subrosa fact forget {slug}`)."
        )
    for filename, problem in report.unreadable:
        where = "listed under 'Unreadable leaves' in MEMORY_archive.md"
        if problem.startswith("invalid leaf: "):
            why = problem.removeprefix("invalid leaf: ")
            warn(f"invalid leaf: {filename}: {why}; skipped ({where}).")
        else:
            warn(f"{filename}: {problem}; {where}.")
    for message in report.warnings:
        warn(message)
    for item in report.unplaced:
        warn(f"{item.describe()}.")


@click.command()
@click.option(
    "--budget",
    type=click.IntRange(min=1, max=BYTE_CAP),
    help="Bytes of MEMORY.md to plan for (default 23000; at most 25000, the witness's cap).",
)
@click.option(
    "--max-lines",
    type=click.IntRange(min=1, max=LINE_CAP),
    help="Lines of MEMORY.md to plan for (default 150; at most 200, what Claude Code loads).",
)
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
        app.db_url,
        app.project,
        budget=budget,
        max_lines=max_lines,
        weights=settings.type_weights,
        dry_run=dry_run,
    )
    report_problems(outcome.report)
    if as_json:
        print_json(outcome.to_dict())
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
