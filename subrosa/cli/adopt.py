"""`subrosa adopt` (take over a memory dir as it is) and `subrosa rebuild` (the database
from the disk alone). Adapters only: the use cases are subrosa.memory.adopt."""

from __future__ import annotations

from pathlib import Path

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.cli.index import print_summary, report_problems, report_too_long
from subrosa.errors import ProblemFound
from subrosa.memory import adopt as adoption
from subrosa.pg import is_server


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
    help="Mend leaves with missing or broken frontmatter, changing only the lines that "
    "need it (originals kept in .subrosa/frontmatter-backup/).",
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
    settings = app.settings
    try:
        result = adoption.adopt(
            app.db_url,
            memory_dir,
            budget=settings.budget,
            max_lines=settings.max_lines,
            weights=settings.type_weights,
            materialize=materialize,
            fix=fix,
            dry_run=dry_run,
        )
    except adoption.LooseLines as refused:
        if as_json:  # what stopped it, for a script: the items, as a real run's `loose`
            print_json(
                {
                    "dir": str(refused.memory_dir),
                    "refused": True,
                    "loose": [item.to_dict() for item in refused.loose],
                }
            )
        raise
    outcome = result.outcome
    report_problems(outcome.report, shared=is_server(app.db_url))
    report_too_long(outcome.plan.too_long, settings.budget)
    if as_json:
        print_json(result.to_dict())
    else:
        print_summary(outcome, settings.budget, settings.max_lines, dry_run, result.backups)
        for item in outcome.report.loose:
            warn(f"{item.describe()}: no leaf (use --materialize to make it one)")
        if result.fixed:
            done = "would be rewritten" if dry_run else "rewritten"
            say(f"frontmatter {done} ({len(result.fixed)}): {', '.join(result.fixed)}")
    if outcome.plan.pinned_left_out:
        raise ProblemFound("pinned facts do not all fit the budget.")


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
    app.project.require_dir()
    if not yes:
        click.confirm(f"Drop and recreate every fact of {memory_dir} from disk?", abort=True)
    result = adoption.rebuild(app.db_url, app.project)
    for message in result.warnings:
        warn(message)
    if as_json:
        print_json(result.to_dict())
    else:
        say(
            f"rebuilt {len(result.slugs)} facts from {memory_dir} ({result.active} active, "
            f"{result.archived} archived, {result.pinned} pinned)"
        )
