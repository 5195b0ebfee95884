"""`subrosa adopt` (take over a memory dir as it is) and `subrosa rebuild` (the database
from the disk alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.cli.index import outcome_json, print_summary, report_problems, run_generate
from subrosa.errors import InvalidInput, LeafError, ProblemFound
from subrosa.fsutil import atomic_write_bytes, atomic_write_text
from subrosa.memory import store, takeover
from subrosa.memory.generator import ARCHIVE, INDEX
from subrosa.memory.leaf import list_leaf_files, parse_leaf, parse_leaf_lenient, render_leaf
from subrosa.memory.marker import is_subrosa_index
from subrosa.paths import state_dir

BACKUP_SUFFIX = ".pre-subrosa"


def _foreign_sources(memory_dir: Path) -> list[takeover.Source]:
    """Every line of a MEMORY.md (and MEMORY_archive.md) that subrosa did not write."""
    sources = []
    for name, cold in ((INDEX, False), (ARCHIVE, True)):
        path = memory_dir / name
        if path.is_file() and not is_subrosa_index(path):
            text = path.read_text(encoding="utf-8", errors="replace")
            sources.append(takeover.Source(name, takeover.parse_index(text), cold=cold))
    return sources


def backup(path: Path) -> Path:
    """Keep `path` beside itself as `<name>.pre-subrosa` (never a `.md`, so it is no topic
    file); an existing backup is never overwritten: the next free `.N` is used, unless it
    already holds the same bytes."""
    data = path.read_bytes()
    for n in range(1, 1000):
        target = path.with_name(path.name + BACKUP_SUFFIX + ("" if n == 1 else f".{n}"))
        if not target.exists():
            atomic_write_bytes(target, data)
            return target
        if target.read_bytes() == data:
            return target
    raise InvalidInput(f"{path}: too many backups beside it already.")


def fix_frontmatter(memory_dir: Path) -> list[str]:
    """Rewrite leaves the strict reader refuses in the canonical shape (body kept whole);
    each original is kept under `.subrosa/frontmatter-backup/`."""
    fixed = []
    keep = state_dir(memory_dir) / "frontmatter-backup"
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
        keep.mkdir(parents=True, exist_ok=True)
        if not (keep / path.name).exists():
            atomic_write_bytes(keep / path.name, path.read_bytes())
        atomic_write_text(
            path, render_leaf(leaf.slug.replace("_", "-"), leaf.description, leaf.type, leaf.body)
        )
        fixed.append(path.name)
    return fixed


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option(
    "--materialize",
    is_flag=True,
    help="Make each index line whose file does not exist, and each bullet with no link, "
    "a leaf of its own.",
)
@click.option(
    "--fix-frontmatter",
    "fix",
    is_flag=True,
    help="Rewrite leaves with missing or broken frontmatter in the canonical shape "
    "(originals kept in .subrosa/frontmatter-backup/).",
)
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@json_option
@pass_app
def adopt(
    app: AppContext,
    directory: str | None,
    materialize: bool,
    fix: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Take over an existing memory dir (default: this project's) as it is.

    Reads MEMORY.md (and MEMORY_archive.md) for each fact's hook, the curated order and
    the `##` sections; registers every leaf (hook = its index line, else its description;
    leaves with broken frontmatter too, with a warning); facts only in MEMORY_archive.md
    stay in the cold tier (archived). The old MEMORY.md is kept as MEMORY.md.pre-subrosa,
    then both index files are generated.

    Lines that link a file that does not exist, and bullets with no link, are never
    dropped: without --materialize adopt names them and stops (exit 1, nothing written);
    with it, each becomes a leaf of its own. Adopting twice changes nothing.
    """
    memory_dir = Path(directory).expanduser().absolute() if directory else app.memory_dir
    if not memory_dir.is_dir():
        raise InvalidInput(f"{memory_dir}: no such memory directory.")
    project = store.Project(memory_dir)
    settings = app.settings
    with project.lock():
        foreign = _foreign_sources(memory_dir)
        on_disk = {p.name for p in list_leaf_files(memory_dir)}
        loose = takeover.find_loose(foreign, on_disk)
        if loose and not materialize and not dry_run:
            raise ProblemFound(
                f"{memory_dir}: {len(loose)} index line(s) have no leaf ("
                + "; ".join(_describe(item) for item in loose[:5])
                + (", …" if len(loose) > 5 else "")
                + "); nothing was written. Run again with --materialize to make each a "
                "leaf of its own, or give them a leaf by hand."
            )
        backups: list[str] = []
        fixed: list[str] = []
        if not dry_run:
            backups = [str(backup(memory_dir / s.origin)) for s in foreign]
            fixed = fix_frontmatter(memory_dir) if fix else []

        outcome = run_generate(
            app.engine,
            project,
            budget=settings.budget,
            max_lines=settings.max_lines,
            weights=settings.type_weights,
            dry_run=dry_run,
            sources=foreign or None,
            materialize=materialize,
            reorder=bool(foreign),
        )
    report_problems(outcome.report)
    data: dict[str, Any] = outcome_json(outcome)
    data.update(
        {
            "dir": str(memory_dir),
            "registered": sorted(
                e.slug
                for e in outcome.plan.included + outcome.plan.below_budget + outcome.plan.archived
            ),
            "loose": [item.to_dict() for item in outcome.report.loose],
            "backups": backups,
            "fixed_frontmatter": fixed,
            "warnings": outcome.report.warnings,
        }
    )
    if as_json:
        print_json(data)
    else:
        print_summary(outcome, settings.budget, settings.max_lines, dry_run)
        for item in outcome.report.loose:
            warn(f"{_describe(item)}: no leaf (use --materialize to make it one)")
        for path in backups:
            say(f"the old index is kept as {path}")
        if fixed:
            say(f"frontmatter rewritten ({len(fixed)}): {', '.join(fixed)}")
    if outcome.plan.pinned_left_out:
        raise ProblemFound("pinned facts do not all fit the budget.")


def _describe(item: takeover.Loose) -> str:
    what = f"links {item.target}, which does not exist" if item.target else "has no link"
    return f"{item.origin} line {item.line.number} {what}"


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask before dropping the rows.")
@json_option
@pass_app
def rebuild(app: AppContext, yes: bool, as_json: bool) -> None:
    """Drop this project's facts from the database and recreate them from disk alone.

    Leaves give each fact's title, type, description and body; the sidecar
    `.subrosa/facts.jsonl` (rewritten after every change) gives what only subrosa knows:
    hooks, pins, status and archive reason, curated order, sections. Only hit counts are
    lost. Run it on a new machine, after losing the database, or after a git pull.
    """
    memory_dir = app.memory_dir
    if not memory_dir.is_dir():
        raise InvalidInput(f"{memory_dir}: no such memory directory.")
    if not yes:
        click.confirm(f"Drop and recreate every fact of {memory_dir} from disk?", abort=True)
    leaves = []
    for path in list_leaf_files(memory_dir):
        try:
            leaves.append(parse_leaf_lenient(path))
        except LeafError as exc:
            warn(str(exc))
    with store.mutation(app.engine, app.project) as session:
        facts = store.rebuild(session, app.project, leaves)
        slugs = [f.slug for f in facts]
        counts = {
            "active": sum(f.status == "active" for f in facts),
            "archived": sum(f.status == "archived" for f in facts),
            "pinned": sum(bool(f.pinned) for f in facts),
        }
    if as_json:
        print_json({"rebuilt": slugs, **counts})
    else:
        say(
            f"rebuilt {len(slugs)} facts from {memory_dir} ({counts['active']} active, "
            f"{counts['archived']} archived, {counts['pinned']} pinned)"
        )
