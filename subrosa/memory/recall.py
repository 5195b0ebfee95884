"""Facts for a query, and the hit counts a search leaves on them. Standard library only.

subrosa.recall calls this with the query already parsed (subrosa.query) and a DB-API
connection to the database: `subrosa search` answers without importing SQLAlchemy
(docs/search.md), so this half's fact search is written against sqlite3 too.

Hits are a write to the facts, so, like every other change to them, they are made
under the project lock of each fact's project (the memory dir's `.subrosa/lock`,
the lock of subrosa.memory.project.Project), one short transaction per project. A
hit is a ranking hint, not something a user would miss, and search must not wait
behind a `generate`: when the lock stays busy for HIT_LOCK_TIMEOUT_S, the database
file's write lock for HIT_BUSY_TIMEOUT_MS (another program's transaction), or the memory
dir is gone or cannot be written, that project's hits are skipped, silently. A
search never creates a memory dir's `.subrosa/`.

The lock is subrosa.fsutil.file_lock on the lock file of Project.lock (flock(2)
taken by hand: importing the filelock package would cost ~45 ms of CPU here, as much
as all the rest of a `subrosa search` process). A process that holds the lock already
is in the middle of a change of its own: its search skips the hits.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from subrosa.errors import InvalidInput, LockTimeout, busy, denied
from subrosa.fold import fold_text
from subrosa.fsutil import file_lock, held_here
from subrosa.memory.marker import LOCK_FILE
from subrosa.paths import is_dir, join, state_dir
from subrosa.query import (
    Filters,
    Unit,
    one_line,
    pieces,
    significant,
    snippet_pattern,
    text_snippet,
    unit_written,
)

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The lock file of subrosa.memory.project.Project.lock, in the memory dir's state dir.
HIT_LOCK_TIMEOUT_S = 0.05
# How long a hit waits for the SQLite file's write lock (an ingest's transaction, another
# program's): a search answers without its hits rather than wait longer.
HIT_BUSY_TIMEOUT_MS = 1000
# A fact's fields, as weighted by the ranking (a match in the title counts most).
FIELDS = ("title", "description", "hook", "body")
WEIGHTS = (10.0, 5.0, 5.0, 1.0)
CANDIDATES = 200  # facts ranked here at most, the best by FTS5's bm25 first
BM25_K1, BM25_B = 1.2, 0.75
VARIANT = 0.6  # a match by another form than the one typed (as for messages)

Idf = Callable[[Unit], float | None]  # a unit's idf over the archive, None: none there


def _fact_filters(filters: Filters) -> tuple[str, list[Any]]:
    where, params = "", []
    if filters.fact_project:
        where += " AND x.project = ?"
        params.append(filters.fact_project)
    if filters.since:
        where += " AND x.updated_at >= ?"
        params.append(filters.since)
    return where, params


def _cjk_test(runs: list[str], written: list[str]) -> tuple[str, list[str]]:
    """SQL true when a fact holds any of the CJK runs, or any of the symbol words or
    pictographs `written` (lowercase): unicode61 keeps a run of CJK as one token and
    drops the rest, and facts are few, so a substring test is exact and cheap."""
    whole = "(x.title || ' ' || x.description || ' ' || x.hook || ' ' || x.body)"
    tests = [f"instr({whole}, ?)" for _ in runs] + [f"instr(lower({whole}), ?)" for _ in written]
    return " OR ".join(tests), runs + written


def _by_text(unit: Unit) -> bool:
    """Whether a unit is tested on the facts' text, not their index: a CJK run, a
    symbol word, an emoji (see unit_written)."""
    return unit.cjk or unit_written(unit) is not None


def _text_tests(units: list[Unit]) -> tuple[list[str], list[str]]:
    """The CJK runs and the written forms (first pictograph of a sequence) of the
    units tested on the facts' text."""
    runs = [unit.label for unit in units if unit.cjk]
    written = [w[0] for w in map(unit_written, units) if w is not None]
    return runs, written


def _candidates(
    conn: sqlite3.Connection, units: list[Unit], filters: Filters
) -> dict[int, tuple[Any, ...]]:
    """The facts holding any of the units (the CANDIDATES best by FTS5's bm25, and
    those holding a CJK run)."""
    where, params = _fact_filters(filters)
    columns = "x.id, x.slug, x.type, x.status, x.project, x.title, x.description, x.hook, x.body"
    found: dict[int, tuple[Any, ...]] = {}
    if not isinstance(conn, sqlite3.Connection):  # a PostgreSQL server
        from subrosa.memory import pgfacts

        for row in pgfacts.candidates(conn, units, columns, where, params, CANDIDATES):
            found[row[0]] = tuple(row)
        return found
    exprs = [unit.expr(None, unit.alts + unit.splits) for unit in units if not _by_text(unit)]
    match = " OR ".join(e for e in exprs if e)
    if match:
        for row in conn.execute(
            f"SELECT {columns} FROM facts_fts JOIN facts x ON x.id = facts_fts.rowid"
            f" WHERE facts_fts MATCH ?{where}"
            " ORDER BY bm25(facts_fts, 10.0, 5.0, 5.0, 1.0) LIMIT ?",
            [match, *params, CANDIDATES],
        ):
            found[row[0]] = row
    runs, written = _text_tests(units)
    if runs or written:
        test, args = _cjk_test(runs, written)
        for row in conn.execute(
            f"SELECT {columns} FROM facts x WHERE ({test}){where}"
            " ORDER BY x.updated_at DESC LIMIT ?",
            [*args, *params, CANDIDATES],
        ):
            found[row[0]] = row
    return found


def _holders(conn: sqlite3.Connection, unit: Unit, ids: list[int]) -> set[int] | None:
    """Which of the facts `ids` hold `unit` by the full-text index; None for a CJK
    unit, a symbol word or an emoji (tested on the text instead)."""
    if _by_text(unit):
        return None
    if not isinstance(conn, sqlite3.Connection):  # a PostgreSQL server
        from subrosa.memory import pgfacts

        return pgfacts.holders(conn, unit, ids)
    expr = unit.expr(None, unit.alts + unit.splits)
    marks = ",".join("?" * len(ids))
    return {
        int(row[0])
        for row in conn.execute(
            f"SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? AND rowid IN ({marks})",
            [expr, *ids],
        )
    }


def _tf(unit: Unit, lowered: str, text: str) -> float:
    """A unit's frequency in one field (substring counts, as for messages)."""
    if unit.cjk:
        return float(text.count(unit.label))
    written = unit_written(unit)
    if written is not None:
        return float(min(lowered.count(w) for w in written))
    total = 0.0
    for alt in unit.alts + unit.splits:
        count = lowered.count(" ".join(alt.tokens))
        total += count if alt.exact else VARIANT * count
    return total


def search_facts(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    limit: int,
    idf: Idf | None = None,
) -> list[dict[str, Any]]:
    """The best `limit` facts for the query's units, ranked exactly here (facts are
    few): those holding every required unit first (`match` "all"), then those holding
    some ("some"), by bm25 over the weighted fields with `idf` from the archive when it
    has one (so that facts and messages of the second tier share one scale). Each
    result carries its `fact_id` for record_hits."""
    if limit <= 0 or filters.role in ("user", "assistant") or not units:
        return []
    wide = list(dict.fromkeys(piece for unit in units for piece in pieces(unit)))
    # Stopwords look for candidates only when nothing else is found.
    rows = _candidates(conn, [u for u in wide if not u.stop], filters)
    rows = rows or _candidates(conn, [u for u in wide if u.stop], filters)
    if not rows:
        return []
    ids = list(rows)
    scored = _score(conn, units, wide, rows, ids, idf)
    scored.sort(key=lambda item: (item[1], -item[2], item[0]))
    pattern = snippet_pattern([alt for unit in wide for alt in unit.alts])
    results = []
    for fact_id, tier, score in scored[:limit]:
        _, slug, fact_type, status, project, title, description, hook, body = rows[fact_id]
        shown = (body, description, hook, title)
        best = next(
            (f for f in shown if pattern is not None and pattern.search(fold_text(f)[0])), body
        )
        results.append(
            {
                "kind": "fact",
                "score": significant(score),
                "match": "all" if tier == 1 else "some",
                "snippet": one_line(text_snippet(best, pattern)),
                "slug": slug,
                "title": title,
                "type": fact_type,
                "status": status,
                "project": project,
                "fact_id": fact_id,
            }
        )
    return results


def _score(
    conn: sqlite3.Connection,
    units: list[Unit],
    wide: list[Unit],
    rows: dict[int, tuple[Any, ...]],
    ids: list[int],
    idf: Idf | None,
) -> list[tuple[int, int, float]]:
    """(fact id, tier, score) for each candidate."""
    holders = {unit: _holders(conn, unit, ids) for unit in dict.fromkeys(units + wide)}
    total = max(1, len(ids))
    lengths = {}
    for fact_id in ids:
        fields = rows[fact_id][5:]
        lengths[fact_id] = sum(
            w * (len(f.split()) + 1) for w, f in zip(WEIGHTS, fields, strict=True)
        )
    average = sum(lengths.values()) / total or 1.0
    weights: dict[Unit, float] = {}
    for unit in wide:
        archive_idf = idf(unit) if idf is not None else None
        if archive_idf is None:
            held = holders[unit]
            df = (
                len(held)
                if held is not None
                else sum(1 for i in ids if _holds(None, unit, i, rows[i][5:]))
            )
            archive_idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        weights[unit] = archive_idf * unit.weight
    required = [unit for unit in units if not unit.stop]
    scored = []
    for fact_id in ids:
        fields = rows[fact_id][5:]
        lowered = [f.lower() for f in fields]
        holding = {unit for unit in holders if _holds(holders[unit], unit, fact_id, fields)}
        tier = 1 if all(unit in holding for unit in required) else 2
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[fact_id] / average)
        score = 0.0
        for unit in wide:
            if unit not in holding:
                continue
            tf = sum(
                w * _tf(unit, low, f) for w, low, f in zip(WEIGHTS, lowered, fields, strict=True)
            )
            tf = max(tf, VARIANT)
            score += weights[unit] * tf * (BM25_K1 + 1) / (tf + norm)
        scored.append((fact_id, tier, score))
    return scored


def _holds(held: set[int] | None, unit: Unit, fact_id: int, fields: tuple[str, ...]) -> bool:
    """Whether a fact holds a unit: by the full-text index, or by its text (CJK, a
    symbol word, an emoji)."""
    if held is not None:
        return fact_id in held
    written = unit_written(unit)
    if written is None:
        return any(unit.label in field for field in fields)
    return any(all(w in field.lower() for w in written) for field in fields)


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
    try:
        _begin_hit(conn)
    except sqlite3.OperationalError as exc:
        if busy(exc):
            return  # another program holds the database: the hint is skipped, not the search
        raise
    try:
        conn.execute(
            f"UPDATE facts SET hits = hits + 1, last_hit_at = ? WHERE id IN ({marks})",
            [now, *fact_ids],
        )
    except BaseException as exc:
        conn.execute("ROLLBACK")
        if denied(exc) is not None:
            return  # a reader's role on a team server (docs/team.md): it counts no hits
        raise
    conn.execute("COMMIT")


def _begin_hit(conn: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, waiting for the SQLite file's write lock HIT_BUSY_TIMEOUT_MS at
    most (not the 30 s of other writes: a hit is not worth a search's wait)."""
    if not isinstance(conn, sqlite3.Connection):
        conn.execute("BEGIN IMMEDIATE")  # a server: no file lock to wait for
        return
    (waits,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute(f"PRAGMA busy_timeout = {min(int(waits), HIT_BUSY_TIMEOUT_MS)}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waits)}")


def _under_project_lock(project: str, write: Callable[[], None]) -> bool:
    """Run `write` holding the lock of the memory dir `project` (a project key: the
    memory dir's resolved path); False, without running it, when the lock is busy
    for HIT_LOCK_TIMEOUT_S or cannot be taken."""
    try:
        directory = state_dir(project)
    except InvalidInput:
        return False  # `.subrosa` is a link: no lock is taken through it, no hit counted
    if not os.path.isabs(project) or not is_dir(directory):
        return False  # the memory dir moved, or subrosa never wrote to it
    lock = join(directory, LOCK_FILE)
    if held_here(lock):
        # This process is in the middle of a change (its write transaction may be open):
        # a hit written now would wait behind it.
        return False
    # Entered by hand, not with contextlib.ExitStack: `subrosa search` loads no
    # contextlib (~1 ms), and a lock that cannot be had is not an error here.
    held = file_lock(lock, HIT_LOCK_TIMEOUT_S, "busy")
    try:
        held.__enter__()
    except (LockTimeout, OSError):  # busy, not writable, or no flock on this file system
        return False
    try:
        write()
    finally:
        held.__exit__(None, None, None)
    return True
