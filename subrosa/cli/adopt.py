"""`subrosa adopt` (take over a memory dir as it is) and `subrosa rebuild` (the database
from the disk alone). Adapters only: the use cases are subrosa.memory.adopt."""

from __future__ import annotations

from pathlib import Path

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.cli.index import print_summary, report_problems, report_too_long
from subrosa.cli.output import note
from subrosa.errors import ProblemFound
from subrosa.memory import adopt as adoption
from subrosa.memory import leftover
from subrosa.memory.leftover import Brought
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
@click.option(
    "--from",
    "source",
    type=click.Path(file_okay=False),
    help="First copy in each leaf of this folder the memory dir lacks (an older "
    "subrosa's memory dir: `subrosa doctor` names it), with its sidecar line; never over "
    "a file.",
)
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@json_option
@pass_app
def adopt(
    app: AppContext,
    directory: str | None,
    materialize: bool,
    fix: bool,
    source: str | None,
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

    --from OLD first copies into the memory dir (made if missing) each leaf of OLD it
    lacks, byte for byte, with OLD's sidecar line for it: OLD is left as it is, and a
    leaf both hold with other bytes is named, never overwritten. With --dry-run, only
    what it would copy is shown.
    """
    memory_dir = Path(directory).expanduser().absolute() if directory else app.memory_dir
    settings = app.settings
    brought = None
    if source is not None:
        brought = leftover.bring_over(
            memory_dir, Path(source).expanduser().absolute(), dry_run=dry_run
        )
        _show_brought(brought, as_json)
        if dry_run:
            if as_json:
                print_json({"dir": str(memory_dir), "brought": brought.to_dict()})
            return
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
                    **({"brought": brought.to_dict()} if brought else {}),
                }
            )
        raise
    outcome = result.outcome
    report_problems(outcome.report, shared=is_server(app.db_url))
    report_too_long(outcome.plan.too_long, settings.budget)
    if as_json:
        print_json({**result.to_dict(), **({"brought": brought.to_dict()} if brought else {})})
    else:
        print_summary(outcome, settings.budget, settings.max_lines, dry_run, result.backups)
        for item in outcome.report.loose:
            warn(f"{item.describe()}: no leaf (use --materialize to make it one)")
        if result.fixed:
            done = "would be rewritten" if dry_run else "rewritten"
            say(f"frontmatter {done} ({len(result.fixed)}): {', '.join(result.fixed)}")
    if outcome.plan.pinned_left_out:
        raise ProblemFound("pinned facts do not all fit the budget.")


def _show_brought(brought: Brought, as_json: bool) -> None:
    """What --from copied (or would), and what it left: on stderr with --json."""
    found = brought.leftovers
    tell = note if as_json else say
    verb = "would copy" if brought.dry_run else "copied"
    if brought.copied:
        lines = (
            f", with {len(brought.sidecar_lines)} sidecar line(s)" if brought.sidecar_lines else ""
        )
        tell(
            f"{verb} {len(brought.copied)} leaf file(s) from {found.old}{lines}: "
            + ", ".join(brought.copied)
        )
    else:
        tell(f"nothing to copy from {found.old}: the memory dir has a file of each leaf's name")
    for name in found.differing:
        warn(
            f"{name}: in {found.old} and in the memory dir with other bytes; left as both are "
            "(compare them and keep what you want in the memory dir's)."
        )


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
