"""`subrosa generate` (the two index files, byte-budgeted) and `subrosa check` (the witness).

Adapters only: the generate use case is subrosa.memory.generate; its report is printed
by subrosa.cli.fastpath (generate's entry without click), whose `print_summary`,
`report_problems` and `report_too_long` `subrosa adopt` shares."""

from __future__ import annotations

import click

from subrosa.cli.common import AppContext, json_option, pass_app

# print_summary, report_problems, report_too_long: adopt's too (re-exported for cli.adopt).
from subrosa.cli.fastpath import generate_and_report
from subrosa.cli.fastpath import print_summary as print_summary
from subrosa.cli.fastpath import report_problems as report_problems
from subrosa.cli.fastpath import report_too_long as report_too_long
from subrosa.config import BYTE_CAP, LINE_CAP


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
    Both files are generated: a line deleted or moved by hand comes back in its place,
    and generate names it with the command that does what the edit meant (`fact
    archive`, `fact forget`, `fact move`, `fact pin`).

    Exit 1 when pinned facts do not all fit (what fits is written), or when MEMORY.md was
    not written by subrosa (run `subrosa adopt` once).
    """
    # The use case and its report, shared with the entry without click (fastpath).
    generate_and_report(app.db_url, app.project, budget, max_lines, dry_run, as_json)


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
