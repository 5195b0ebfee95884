"""The staleness review use case: every active fact judged by document 002's rules
(subrosa.memory.staleness, pure), and the sure cases archived under the project lock.

The hook is judged first and the leaf is read from disk (the truth, not the cached
body) only when the hook could make a high-confidence call, so a review of thousands
of facts opens few files. Archiving judges again under the lock, so what is archived
is what is true at that moment, not when the dry run looked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from subrosa.db import open_database, session_scope
from subrosa.memory import staleness, store
from subrosa.memory.leaf import read_leaf_text
from subrosa.memory.staleness import Verdict
from subrosa.models import Fact


@dataclass(frozen=True)
class Finding:
    """A fact the review has something to say about."""

    slug: str
    position: int
    pinned: bool
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        """The `--json` shape of one finding."""
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


def run_review(db_url: str, project: store.Project, today: date, *, apply: bool) -> Review:
    """The review as of `today`; with `apply`, its high-confidence findings archived (the
    review is run again under the lock first, and that one is returned)."""
    engine = open_database(db_url)
    with session_scope(engine) as session:
        result = review(session, project, today)
    if not apply or not result.archive:
        return result
    with store.mutation(engine, project) as session:
        result = review(session, project, today)
        now = store.utcnow()
        for finding in result.archive:
            reason = f"stale: {finding.verdict.reason}"
            store.archive(session, project, finding.slug, reason, now=now)
    return result
