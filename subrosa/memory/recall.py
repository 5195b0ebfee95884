"""Facts for a query, and the hit counts a search leaves on them. Standard library only.

subrosa.recall calls this with the query already parsed (subrosa.query) and a DB-API
connection to the database: `subrosa search` answers without importing SQLAlchemy
(docs/search.md), so this half's fact search is written against sqlite3 too.

Hits are a write to the facts, so, like every other change to them, they are made
under the project lock of each fact's project (the memory dir's `.subrosa/lock`,
the lock of subrosa.memory.project.Project), one short transaction per project. A
hit is a ranking hint, not something a user would miss, and search must not wait
behind a `generate`: when the lock stays busy for HIT_LOCK_TIMEOUT_S, or the memory
dir is gone or cannot be written, that project's hits are skipped, silently. A
search never creates a memory dir's `.subrosa/`.

The lock is subrosa.fsutil.file_lock on the lock file of Project.lock (flock(2)
taken by hand: importing the filelock package would cost ~45 ms of CPU here, as much
as all the rest of a `subrosa search` process). A process that holds the lock already
is in the middle of a change of its own: its search skips the hits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from subrosa.errors import LockTimeout
from subrosa.fsutil import file_lock, held_here
from subrosa.memory.project import LOCK_FILE
from subrosa.paths import state_dir
from subrosa.query import MARK, Filters, Term, fts_query, one_line, significant, split_cjk

SNIPPET_TOKENS = 16  # FTS5's snippet() around a match in a fact
# The lock file of subrosa.memory.project.Project.lock, in the memory dir's state dir.
HIT_LOCK_TIMEOUT_S = 0.05


def cjk_snippet(text: str, terms: list[Term], width: int = 40) -> str:
    """A snippet around the first CJK match (FTS5's snippet() only sees the text column)."""
    for term in terms:
        for run in split_cjk(term)[0]:
            at = text.find(run)
            if at >= 0:
                start = max(0, at - width)
                end = at + len(run) + width
                head = "…" if start > 0 else ""
                tail = "…" if end < len(text) else ""
                return (
                    f"{head}{text[start:at]}{MARK[0]}{run}{MARK[1]}"
                    f"{text[at + len(run) : end]}{tail}"
                )
    return text[: width * 2]


def search_facts(
    conn: sqlite3.Connection, terms: list[Term], filters: Filters, limit: int
) -> list[dict[str, Any]]:
    """The best `limit` facts for `terms` (few rows: ranked exactly). Each result
    carries its `fact_id` for record_hits."""
    if limit <= 0 or filters.role == "user" or filters.role == "assistant":
        return []
    match = fts_query(terms, None)
    runs = [run for term in terms for run in split_cjk(term)[0]]
    where, params = "", []
    if filters.fact_project:
        where += " AND x.project = ?"
        params.append(filters.fact_project)
    if filters.since:
        where += " AND x.updated_at >= ?"
        params.append(filters.since)
    for run in runs:
        # CJK in facts: unicode61 keeps a run of CJK as one token, and facts are few,
        # so a substring test is exact and cheap.
        where += " AND instr(x.title || ' ' || x.description || ' ' || x.hook || ' ' || x.body, ?)"
        params.append(run)
    if match:
        sql = (
            "SELECT x.id, x.slug, x.title, x.type, x.status, x.project,"
            " bm25(facts_fts, 10.0, 5.0, 5.0, 1.0) AS score,"
            " snippet(facts_fts, -1, ?, ?, '…', ?), x.body"
            " FROM facts_fts JOIN facts x ON x.id = facts_fts.rowid"
            f" WHERE facts_fts MATCH ?{where} ORDER BY score LIMIT ?"
        )
        args: list[Any] = [*MARK, SNIPPET_TOKENS, match, *params, limit]
    elif runs:
        sql = (
            "SELECT x.id, x.slug, x.title, x.type, x.status, x.project, 0.0, '', x.body"
            f" FROM facts x WHERE 1{where} ORDER BY x.updated_at DESC LIMIT ?"
        )
        args = [*params, limit]
    else:
        return []
    results = []
    for fact_id, slug, title, fact_type, status, project, score, snippet, body in conn.execute(
        sql, args
    ):
        if not match:
            snippet = cjk_snippet(f"{title} {body}", terms)
        results.append(
            {
                "kind": "fact",
                "score": significant(-score),
                "snippet": one_line(snippet),
                "slug": slug,
                "title": title,
                "type": fact_type,
                "status": status,
                "project": project,
                "fact_id": fact_id,
            }
        )
    return results


# ---------------------------------------------------------------- hits


def record_hits(conn: sqlite3.Connection, hits: list[tuple[int, str]]) -> None:
    """Every fact a search returned, as (fact id, project): hits + 1 and a last-hit time
    (the generator's fourth rank key), under each project's lock when it can be had
    at once (see the module's docstring)."""
    by_project: dict[str, list[int]] = {}
    for fact_id, project in hits:
        by_project.setdefault(project, []).append(fact_id)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.000000")
    for project, fact_ids in by_project.items():
        _under_project_lock(project, partial(_bump, conn, fact_ids, now))


def _bump(conn: sqlite3.Connection, fact_ids: list[int], now: str) -> None:
    marks = ",".join("?" * len(fact_ids))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"UPDATE facts SET hits = hits + 1, last_hit_at = ? WHERE id IN ({marks})",
            [now, *fact_ids],
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _under_project_lock(project: str, write: Callable[[], None]) -> bool:
    """Run `write` holding the lock of the memory dir `project` (a project key: the
    memory dir's resolved path); False, without running it, when the lock is busy
    for HIT_LOCK_TIMEOUT_S or cannot be taken."""
    memory_dir = Path(project)
    directory = state_dir(memory_dir)
    if not memory_dir.is_absolute() or not directory.is_dir():
        return False  # the memory dir moved, or subrosa never wrote to it
    lock = directory / LOCK_FILE
    if held_here(lock):
        # This process is in the middle of a change (its write transaction may be open):
        # a hit written now would wait behind it.
        return False
    held = ExitStack()
    try:
        held.enter_context(file_lock(lock, HIT_LOCK_TIMEOUT_S, "busy"))
    except (LockTimeout, OSError):  # busy, not writable, or no flock on this file system
        return False
    with held:
        write()
    return True
