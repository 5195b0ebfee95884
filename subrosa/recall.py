"""Recall: what subrosa holds about a query, the facts first, then archived messages.

The one search use case. `subrosa search` calls it from both of its entries (the
click command, and the fast path of subrosa.cli.fastsearch), and so will any other
front end (an MCP server): they differ only in how the database is made ready
(search_database migrates it and ingests the sessions that ended first;
search_at_once answers only when neither is needed). It composes the two halves,
each searching its own table with one query language (subrosa.query): the facts
(subrosa.memory.recall, which also records their hits under their project's lock)
and the messages (subrosa.archive.search).

Standard library only: the fast path must not pay for click or SQLAlchemy.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from subrosa.archive.search import search_messages
from subrosa.memory.recall import record_hits, search_facts
from subrosa.query import Filters, parse_query, parse_since


def filters_for(
    *, since: str | None, role: str | None, all_projects: bool, memory_dir: Path
) -> Filters:
    """The filters of a search run for the project of `memory_dir` (and of the current
    working directory's transcripts), or of every project. Raises QueryError for a
    --since that is not a date."""
    from subrosa.paths import project_transcript_dir

    return Filters(
        since=parse_since(since) if since else None,
        role=role,
        transcript_project=None if all_projects else project_transcript_dir().name,
        fact_project=None if all_projects else str(memory_dir.resolve()),
    )


def search(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
) -> list[dict[str, Any]]:
    """Facts, then messages, for `query`, each best first (both kinds unless one is
    asked for alone); every fact returned counts a hit. Facts lead: they are the
    distilled memory, and their scores (over a few hundred facts) and the messages'
    (over up to millions) are not on one scale."""
    terms = parse_query(query)
    if not terms:
        return []
    found: list[dict[str, Any]] = []
    if facts_only or not transcripts_only:
        found += search_facts(conn, terms, filters, limit)
    if transcripts_only or not facts_only:
        found += search_messages(conn, terms, filters, limit)
    found = found[:limit]
    record_hits(conn, [(r["fact_id"], r["project"]) for r in found if r["kind"] == "fact"])
    for result in found:
        result.pop("fact_id", None)
    return found


def search_database(
    db_url: str,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
    *,
    tool_result_chars: int = 2000,
) -> list[dict[str, Any]]:
    """search() over the database at `db_url`, made ready first: migrated when due, and
    the sessions that ended since the last ingest ingested (subrosa.archive.ingest)."""
    from subrosa.archive.ingest import archive_ready

    with archive_ready(db_url, tool_result_chars, lock=True) as conn:
        return search(conn, query, filters, limit, facts_only, transcripts_only)


def search_at_once(
    path: Path,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts_only: bool = False,
    transcripts_only: bool = False,
) -> list[dict[str, Any]] | None:
    """search() over the SQLite file at `path` when it needs nothing first (its schema
    is current, no ended session waits to be ingested), with the standard library
    only; None when it does, or when the query fails (search_database then says why)."""
    from subrosa.archive import pending
    from subrosa.archive.connection import connect
    from subrosa.schema import is_current

    if not is_current(path) or pending.list_pending():
        return None
    try:
        conn = connect(path)
        try:
            return search(conn, query, filters, limit, facts_only, transcripts_only)
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeEncodeError):  # e.g. argv bytes that are not UTF-8
        return None
