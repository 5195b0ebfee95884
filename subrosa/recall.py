"""Recall: what subrosa holds about a query, the facts first, then archived messages.

The one search use case. `subrosa search` calls it from both of its entries (the
click command, and the fast path of subrosa.cli.fastsearch), and so does the MCP
server (subrosa.tools): they differ only in how the database is made ready
(search_database migrates it and ingests the sessions that ended first;
search_at_once answers only when neither is needed; the MCP server does what
search_database does on a connection it keeps, subrosa.archive.kept). It composes the two halves,
each searching its own table with one query language (subrosa.query): the facts
(subrosa.memory.recall, which also records their hits under their project's lock)
and the messages (subrosa.archive.search).

Standard library only: the fast path must not pay for click or SQLAlchemy; and no
pathlib (paths are str, subrosa.paths).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable

from subrosa.archive.search import (
    Cache,
    for_project,
    project_span,
    read_misspelt,
    search_messages,
    search_sessions,
    unit_stats,
)
from subrosa.memory.recall import record_hits, search_facts
from subrosa.query import Filters, QueryError, Unit, parse_query, parse_since, query_units

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Which misspelt word the last search() read as which of the archive's words (a word
# the archive holds in no form, read as those one typo away: docs/search.md,
# "Misspelt words"), for the text output's line on stderr (`--json` keeps its shape).
READ_AS: list[tuple[str, tuple[str, ...]]] = []


def readings() -> list[str]:
    """What the last search() read as what, one line each, for a person or an agent:
    `(read "postgress" as "postgres")` (the CLI on stderr, the MCP tool above its hits)."""
    from subrosa.query import one_line

    return [
        one_line(f'(read "{typed}" as ' + " or ".join(f'"{w}"' for w in words) + ")")
        for typed, words in READ_AS
    ]


BOTH_SCOPES = "--all-projects and --project name two scopes: give one of them."
EMPTY_PROJECT = (
    "--project is empty: give the project's name (as `transcript list --json` shows it),"
    " or leave --project out for this project."
)


def refuse_empty_project(project: str | None) -> None:
    """QueryError when `--project` was given empty (an unset variable in a script): it
    would search this project without a word."""
    if project is not None and not project.strip():
        raise QueryError(EMPTY_PROJECT)


def filters_for(
    *,
    since: str | None,
    role: str | None,
    all_projects: bool,
    memory_dir: str | os.PathLike[str],
    project: str | None = None,
) -> Filters:
    """The filters of a search run for the project of `memory_dir` (and of the current
    working directory's transcripts), or for the project named `project`, or of every
    project. Raises QueryError for a --since that is not a date, or for both scopes."""
    from subrosa.identity import facts_key, sessions_key
    from subrosa.paths import resolved

    if all_projects and project:
        raise QueryError(BOTH_SCOPES)
    refuse_empty_project(project)
    key = facts_key(memory_dir)
    facts, sessions = (project, project) if project else (key, sessions_key())
    return Filters(
        since=parse_since(since) if since else None,
        role=role,
        transcript_project=None if all_projects else sessions,
        fact_project=None if all_projects else facts,
        home=(key, resolved(memory_dir)),
    )


def _archive_idf(
    conn: sqlite3.Connection, cache: Cache, span: tuple[int, int] | None = None
) -> Callable[[Unit], float | None]:
    """A unit's idf over the archived messages (None when the archive is empty), so
    that facts are scored on the messages' scale (the search's `span`: unit_stats())."""
    has_messages: list[bool] = []

    def idf(unit: Unit) -> float | None:
        stats = unit_stats(conn, [unit], cache, span=span)[0]
        if not stats.df:
            if not has_messages:
                has_messages.append(_has_messages(conn))
            if not has_messages[0]:
                return None
        return stats.idf

    return idf


def _has_messages(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None


def search(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
    sessions: bool = False,
) -> list[dict[str, Any]]:
    """What subrosa holds about `query`, best first, in two tiers (docs/search.md):
    the facts, then the messages, holding every word of it (stopwords aside); then,
    when those are fewer than `limit`, facts and messages holding some of its words,
    by one bm25 score. With `sessions`, sessions instead of messages (and no facts).
    Every fact returned in the first tier counts a hit. Facts lead the first tier:
    they are the distilled memory."""
    units = query_units(parse_query(query))
    READ_AS.clear()
    if not units:
        return []
    cache: Cache = {}  # what the archive said about each unit, asked once
    messages_next = sessions or not facts_only
    # Where the project's messages are, asked once: every question the search asks
    # of the archive counts a costly unit within the same span (unit_stats()), the
    # facts' idf too, whether messages are searched or not.
    scoped = for_project(conn, filters)
    if scoped is not None:
        filters = scoped
    units, read = read_misspelt(conn, units, cache, filters if messages_next else None, limit)
    READ_AS.extend(read)
    if sessions:
        return search_sessions(conn, units, filters, limit, cache)
    facts: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    if facts_only or not transcripts_only:
        idf = _archive_idf(conn, cache, project_span(filters))
        facts = search_facts(conn, units, filters, limit, idf)
    if transcripts_only or not facts_only:
        messages = search_messages(conn, units, filters, limit, cache)
    # The first tier (every word, and the replies ranked among those messages) in its
    # order; then the second, "some" words (subrosa.archive.search): one bm25 scale.
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    for result in facts + messages:
        tier = result.get("tier", 1 if result["match"] == "all" else 2)
        (first if tier == 1 else second).append(result)
    found = first + sorted(second, key=lambda r: -float(r["score"]))
    found = found[:limit]
    hits = [r for r in found if r["kind"] == "fact" and r["match"] == "all"]
    record_hits(conn, [(r["fact_id"], _lock_dir(r["project"], filters)) for r in hits])
    for result in found:
        result.pop("fact_id", None)
        result.pop("tier", None)
    return found


def _lock_dir(project: str, filters: Filters) -> str:
    """The memory dir whose lock guards the facts of `project` (a facts key): the
    search's own, or the key itself when it is a path (a key that is a name, of a
    project elsewhere, names no lock here: its hits are skipped)."""
    if filters.home is not None and project == filters.home[0]:
        return filters.home[1]
    return project


def search_database(
    db_url: str,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
    sessions: bool = False,
    *,
    tool_result_chars: int = 2000,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """search() over the database at `db_url`, made ready first: migrated when due (a
    re-index told to `reindex_progress`), and the sessions that ended since the last
    ingest ingested (subrosa.archive.ingest)."""
    from subrosa.archive.ingest import archive_ready

    with archive_ready(
        db_url, tool_result_chars, lock=True, reindex_progress=reindex_progress
    ) as conn:
        return search(conn, query, filters, limit, facts_only, transcripts_only, sessions)


def search_at_once(
    path: str | os.PathLike[str],
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
    sessions: bool = False,
) -> list[dict[str, Any]] | None:
    """search() over the SQLite file at `path` when it needs nothing first (its schema
    is current and its index complete, no ended session waits to be ingested), with
    the standard library only; None when it does, or when the query fails
    (search_database then says why)."""
    from subrosa.archive import pending
    from subrosa.schema import connect, is_current

    if not is_current(path) or pending.list_pending():
        return None
    try:
        conn = connect(path)
        try:
            return search(conn, query, filters, limit, facts_only, transcripts_only, sessions)
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeEncodeError):  # e.g. argv bytes that are not UTF-8
        return None
