"""`subrosa stale`: the staleness review, as a command a person can trust.

An adapter: the review and the archiving are subrosa.memory.review."""

from __future__ import annotations

from datetime import date, datetime

import click

from subrosa.cli.common import (
    AppContext,
    CliInputError,
    json_option,
    note,
    pass_app,
    print_json,
    say,
)
from subrosa.memory.review import Finding, Review, run_review
from subrosa.query import not_a_date
from subrosa.text import escape_block_start, terminal_line

DEFAULT_MAX_FLAGS = 5


def _line(finding: Finding) -> str:
    # The slug is a leaf's file name (a repository may choose it) and the extraction
    # skill reads this report: shown as search shows it. The reason is sanitized.
    return escape_block_start(f"  {terminal_line(finding.slug)}: {finding.verdict.reason}")


def _print_report(result: Review, shown: list[Finding], more: int, applied: bool) -> None:
    if not result.archive and not result.flagged:
        say("Nothing looks stale.")
        return
    if result.archive:
        title = "Archived" if applied else "Would archive (dry run)"
        say(f"{title} ({len(result.archive)}):")
        for finding in result.archive:
            say(_line(finding))
    if result.flagged:
        say(f"Potentially stale (review) ({len(result.flagged)}):")
        for finding in shown:
            say(_line(finding))
        if more:
            say(
                f"  … and {more} more. Review them together in a separate session "
                f"(`subrosa stale --max-flags {len(result.flagged)}` lists them all)."
            )


def _day(_ctx: click.Context, _param: click.Parameter, value: str | None) -> date | None:
    """--today as a day; one sentence, not click's format string, when it is none."""
    if value is None:
        return None
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d").date()
    except ValueError:
        raise CliInputError(not_a_date("--today", value, "a day as YYYY-MM-DD")) from None


@click.command()
@click.option(
    "--apply", is_flag=True, help="Archive the high-confidence stale facts (default: a dry run)."
)
@click.option(
    "--today",
    callback=_day,
    metavar="YYYY-MM-DD",
    help="Judge dates against this day instead of the real today.",
)
@click.option(
    "--max-flags",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_FLAGS,
    show_default=True,
    help="List at most this many low-confidence facts; the rest are counted.",
)
@json_option
@pass_app
def stale(app: AppContext, apply: bool, today: date | None, max_flags: int, as_json: bool) -> None:
    """Review the active facts for staleness, and archive the sure cases.

    Signals in the hook: a terminal word (Complete, Done, Closed, Resolved, Archived,
    Cancelled, Superseded; whole words, any case, not negated) or an absolute date
    before today (2026-04-27, "Next check: 2026-04-27"). The signal in the leaf: it
    confirms a terminal state (a "Status: Closed" line, an "## Outcome" section that
    reports completion, or a closing paragraph saying the work is finished or
    superseded).

    High confidence, archived with --apply: the leaf confirms AND (the hook has a
    terminal word OR its date is more than 30 days before today). The leaf file is
    re-read from disk first; a missing leaf is never archived. Pinned facts are
    flagged instead.

    Low confidence, only flagged: any signal short of that, or a fact with no search
    hits whose leaf has not changed for 90 days. At most --max-flags are listed,
    strongest first.

    Without --apply nothing changes. Archived facts keep their leaf and row;
    `subrosa generate` moves them to MEMORY_archive.md, `subrosa fact upsert SLUG`
    brings one back. --json prints {"archived": [{"slug", "reason", ...}],
    "flagged": [...], "more_flagged": N, "applied": bool, "today": "YYYY-MM-DD"}.
    """
    day = today if today is not None else date.today()
    result = run_review(app.db_url, app.existing_project(), day, apply=apply)
    shown = result.flagged[:max_flags]
    more = len(result.flagged) - len(shown)
    if as_json:
        print_json(
            {
                "archived": [f.to_dict() for f in result.archive],
                "flagged": [f.to_dict() for f in shown],
                "more_flagged": more,
                "applied": apply,
                "today": day.isoformat(),
            }
        )
    else:
        _print_report(result, shown, more, apply)
    if result.archive and not apply:
        count = len(result.archive)
        note(f"Dry run: nothing changed. `subrosa stale --apply` archives the {count} above.")
    elif result.archive:
        note("Run `subrosa generate` to move them to MEMORY_archive.md.")
