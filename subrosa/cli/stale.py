"""`subrosa stale`: document 002's staleness review, as a command a person can trust."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click
from sqlalchemy.orm import Session

from subrosa.cli.common import AppContext, json_option, note, pass_app, print_json, say
from subrosa.db import session_scope
from subrosa.memory import staleness, store
from subrosa.memory.leaf import MAX_LEAF_BYTES
from subrosa.memory.staleness import Verdict
from subrosa.models import Fact

DEFAULT_MAX_FLAGS = 5


@dataclass(frozen=True)
class Finding:
    """A fact the review has something to say about."""

    slug: str
    position: int
    pinned: bool
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "reason": self.verdict.reason,
            "pinned": self.pinned,
            "signals": [
                {"where": s.where, "kind": s.kind, "evidence": s.evidence}
                for s in self.verdict.signals
            ],
        }


@dataclass(frozen=True)
class Review:
    """High-confidence findings (to archive) and low-confidence ones, strongest first."""

    archive: list[Finding]
    flagged: list[Finding]


def read_leaf_text(memory_dir: Path, filename: str, root: Path | None = None) -> str | None:
    """The leaf file as it is on disk now (the truth), or None when it is gone, not a
    regular file, unreadable, or a symlink that leads out of the memory dir (the leaf
    parser's rule: never read a file outside it). `root` is the resolved memory dir."""
    path = memory_dir / Path(filename).name
    try:
        if path.is_symlink() and path.resolve().parent != (root or memory_dir.resolve()):
            return None
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(MAX_LEAF_BYTES + 1)
    except OSError:
        return None
    return raw.decode("utf-8", errors="replace")


def judge(fact: Fact, memory_dir: Path, today: date, root: Path | None = None) -> Verdict | None:
    """The verdict on one fact. The hook is read first; the leaf file is opened only when
    the hook could make a high-confidence call, and otherwise the cached body serves."""
    hook = staleness.hook_signals(fact.hook, today)
    text = read_leaf_text(memory_dir, fact.path, root) if hook.qualifies else fact.body
    return staleness.assess(
        hook=fact.hook,
        leaf_text=text,
        pinned=bool(fact.pinned),
        hits=fact.hits,
        last_changed=fact.updated_at.date(),
        today=today,
        from_hook=hook,
    )


def review(session: Session, project: store.Project, today: date) -> Review:
    """Judge every active fact of the project."""
    archive: list[Finding] = []
    flagged: list[Finding] = []
    root = project.memory_dir.resolve()
    for fact in store.list_facts(session, project):
        verdict = judge(fact, project.memory_dir, today, root)
        if verdict is None:
            continue
        finding = Finding(fact.slug, fact.position, bool(fact.pinned), verdict)
        (archive if verdict.level == "archive" else flagged).append(finding)
    flagged.sort(key=lambda f: (*f.verdict.sort_key, f.position))
    return Review(archive, flagged)


def _print_report(result: Review, shown: list[Finding], more: int, applied: bool) -> None:
    if not result.archive and not result.flagged:
        say("Nothing looks stale.")
        return
    if result.archive:
        title = "Archived" if applied else "Would archive (dry run)"
        say(f"{title} ({len(result.archive)}):")
        for finding in result.archive:
            say(f"  {finding.slug}: {finding.verdict.reason}")
    if result.flagged:
        say(f"Potentially stale (review) ({len(result.flagged)}):")
        for finding in shown:
            say(f"  {finding.slug}: {finding.verdict.reason}")
        if more:
            say(
                f"  … and {more} more. Review them together in a separate session "
                f"(`subrosa stale --max-flags {len(result.flagged)}` lists them all)."
            )


@click.command()
@click.option(
    "--apply", is_flag=True, help="Archive the high-confidence stale facts (default: a dry run)."
)
@click.option(
    "--today",
    type=click.DateTime(formats=["%Y-%m-%d"]),
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
def stale(
    app: AppContext, apply: bool, today: datetime | None, max_flags: int, as_json: bool
) -> None:
    """Review the active facts for staleness (document 002), and archive the sure cases.

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
    `subrosa generate` moves them to MEMORY_archive.md, `subrosa fact upsert --leaf
    FILE` brings one back. --json prints {"archived": [{"slug", "reason", ...}],
    "flagged": [...], "more_flagged": N, "applied": bool, "today": "YYYY-MM-DD"}.
    """
    day = today.date() if today is not None else date.today()
    with session_scope(app.engine) as session:
        result = review(session, app.project, day)
    if apply and result.archive:
        # Judged again under the project lock, so what is archived is what is true now.
        with store.mutation(app.engine, app.project) as session:
            result = review(session, app.project, day)
            now = store.utcnow()
            for finding in result.archive:
                reason = f"stale: {finding.verdict.reason}"
                store.archive(session, app.project, finding.slug, reason, now=now)
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
