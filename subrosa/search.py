"""Search over facts and archived messages. Standard library only.

`subrosa search` must answer in a fraction of the time grep needs to read the raw
transcripts, and importing SQLAlchemy alone costs more than that here; so this module
talks to SQLite through the DB-API, and `subrosa search` runs it straight from the
entry point (subrosa.cli.__init__) when the database is current and nothing is
waiting to be ingested. Otherwise the click command drains the pending transcripts,
migrates, and then calls the same functions. Why the query runs the way it does:
docs/search.md.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from subrosa.cjk import cjk_runs, has_cjk

BUSY_TIMEOUT_MS = 30_000
# Messages ranked by bm25 at most: the newest CANDIDATES that match. A term found in
# most of a million messages would otherwise be scored everywhere (seconds).
CANDIDATES = 4000
SNIPPET_TOKENS = 16
MARK = ("**", "**")
_TERM = re.compile(r'"([^"]*)"(\*?)|([^\s"]+)')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class QueryError(ValueError):
    """A filter the user gave cannot be understood (the query text itself never fails)."""


def connect(path: Path) -> sqlite3.Connection:
    """A DB-API connection set up like subrosa.db's engine (WAL, busy timeout, FKs);
    transactions are begun explicitly (BEGIN IMMEDIATE for writes)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


# ---------------------------------------------------------------- the query language


@dataclass(frozen=True)
class Term:
    """One thing the user asked for: a word, a "phrase", or a prefix*."""

    text: str
    prefix: bool = False


def parse_query(query: str) -> list[Term]:
    """The terms of a user query. Balanced "quotes" make a phrase and a trailing * a
    prefix; everything else is words. Operators (AND, OR, NOT, NEAR, col:, -x, ^) are
    not operators here: each term is later quoted, so no input is a syntax error."""
    terms: list[Term] = []
    # FTS5 reads a query as a C string: a NUL would end it inside a quote.
    query = _CONTROL.sub(" ", query)
    for match in _TERM.finditer(query):
        phrase, phrase_star, word = match.groups()
        if word is not None:
            text, prefix = word.rstrip("*"), word.endswith("*")
        else:
            text, prefix = phrase, bool(phrase_star)
        if any(ch.isalnum() for ch in text):
            terms.append(Term(text, prefix))
    return terms


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _split_cjk(term: Term) -> tuple[list[str], str]:
    """A term's CJK runs, and what is left of it with them taken out."""
    if not has_cjk(term.text):
        return [], term.text
    runs = cjk_runs(term.text)
    rest = term.text
    for run in runs:
        rest = rest.replace(run, " ")
    return runs, rest


def fts_query(terms: list[Term], cjk_column: str | None) -> str:
    """An FTS5 MATCH expression: every term quoted, all terms required. CJK text is
    matched as a phrase of single characters in `cjk_column` (see docs/search.md)."""
    parts: list[str] = []
    for term in terms:
        runs, rest = _split_cjk(term)
        for run in runs:
            if cjk_column is not None:
                parts.append(f"{cjk_column} : {_quote(' '.join(run))}")
        if any(ch.isalnum() for ch in rest):
            parts.append(_quote(rest.strip()) + ("*" if term.prefix else ""))
    return " ".join(parts)


# ---------------------------------------------------------------- searching


@dataclass(frozen=True)
class Filters:
    since: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    role: str | None = None
    transcript_project: str | None = None  # None: every project
    fact_project: str | None = None


def parse_since(value: str) -> str:
    """--since: a date or an ISO time, as stored ("YYYY-MM-DD HH:MM:SS", UTC)."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise QueryError(
            f"--since {value!r}: expected a date like 2026-11-29 or 2026-11-29T10:00."
        ) from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


def _message_filters(filters: Filters) -> tuple[str, str, list[Any]]:
    joins, where, params = "", "", []
    if filters.role or filters.since or filters.transcript_project:
        joins = " JOIN messages m ON m.id = f.rowid"
    if filters.role:
        where += " AND m.role = ?"
        params.append(filters.role)
    if filters.since:
        where += " AND m.timestamp >= ?"
        params.append(filters.since)
    if filters.transcript_project:
        joins += " JOIN sessions s ON s.id = m.session_pk"
        where += " AND s.project = ?"
        params.append(filters.transcript_project)
    return joins, where, params


def search_messages(
    conn: sqlite3.Connection, terms: list[Term], filters: Filters, limit: int
) -> list[dict[str, Any]]:
    """The best `limit` messages for `terms`, by bm25 among the newest CANDIDATES matches."""
    match = fts_query(terms, "cjk")
    if not match or limit <= 0:
        return []
    joins, where, params = _message_filters(filters)
    base = f"FROM messages_fts f{joins} WHERE messages_fts MATCH ?{where}"
    # Newest-first is what FTS5 does cheaply (doclists are in rowid order); the
    # CANDIDATES-th newest match bounds the set that is ranked.
    row = conn.execute(
        f"SELECT f.rowid {base} ORDER BY f.rowid DESC LIMIT 1 OFFSET ?",
        [match, *params, CANDIDATES - 1],
    ).fetchone()
    floor = row[0] if row else 0
    ranked = conn.execute(
        f"SELECT f.rowid, bm25(messages_fts) AS score {base} AND f.rowid >= ?"
        " ORDER BY score LIMIT ?",
        [match, *params, floor, limit],
    ).fetchall()
    cjk_only = all(not any(ch.isalnum() for ch in _split_cjk(t)[1]) for t in terms)
    results = []
    for rowid, score in ranked:
        detail = conn.execute(
            "SELECT s.session_id, m.timestamp, m.role, m.text, s.project,"
            " snippet(messages_fts, 0, ?, ?, '…', ?)"
            " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " JOIN sessions s ON s.id = m.session_pk"
            " WHERE messages_fts MATCH ? AND f.rowid = ?",
            [*MARK, SNIPPET_TOKENS, match, rowid],
        ).fetchone()
        if detail is None:
            continue
        session_id, timestamp, role, text, project, snippet = detail
        if cjk_only:
            snippet = cjk_snippet(text, terms)
        results.append(
            {
                "kind": "message",
                "score": round(-score, 4),
                "snippet": _one_line(snippet),
                "session_id": session_id,
                "timestamp": timestamp,
                "role": role,
                "message_id": rowid,
                "project": project,
            }
        )
    return results


def cjk_snippet(text: str, terms: list[Term], width: int = 40) -> str:
    """A snippet around the first CJK match (FTS5's snippet() only sees the text column)."""
    for term in terms:
        for run in _split_cjk(term)[0]:
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
    """The best `limit` facts for `terms` (few rows: ranked exactly)."""
    if limit <= 0 or filters.role == "user" or filters.role == "assistant":
        return []
    match = fts_query(terms, None)
    runs = [run for term in terms for run in _split_cjk(term)[0]]
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
                "score": round(-score, 4),
                "snippet": _one_line(snippet),
                "slug": slug,
                "title": title,
                "type": fact_type,
                "status": status,
                "project": project,
                "fact_id": fact_id,
            }
        )
    return results


def record_hits(conn: sqlite3.Connection, fact_ids: list[int]) -> None:
    """Every fact a search returned: hits + 1 and a last-hit time (the generator's
    fourth rank key). One short write transaction."""
    if not fact_ids:
        return
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.000000")
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


def search(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    limit: int = 10,
    facts: bool = True,
    messages: bool = True,
) -> list[dict[str, Any]]:
    """Facts and messages for `query`, best first (facts' and messages' bm25 scores are
    on the same scale: both sum idf-weighted term frequencies)."""
    terms = parse_query(query)
    if not terms:
        return []
    found: list[dict[str, Any]] = []
    if facts:
        found += search_facts(conn, terms, filters, limit)
    if messages:
        found += search_messages(conn, terms, filters, limit)
    found.sort(key=lambda result: -result["score"])
    found = found[:limit]
    record_hits(conn, [r["fact_id"] for r in found if r["kind"] == "fact"])
    for result in found:
        result.pop("fact_id", None)
    return found


# ---------------------------------------------------------------- output


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_text(results: list[dict[str, Any]]) -> str:
    """Results for people: one header line and one snippet line each."""
    if not results:
        return "no results"
    lines = []
    for result in results:
        if result["kind"] == "fact":
            head = f"fact {result['slug']} ({result['type']}, {result['status']})"
        else:
            head = (
                f"message {result['session_id']} {result['timestamp'] or '-'} "
                f"{result['role']} #{result['message_id']}"
            )
        lines.append(f"{head}  score {result['score']:.2f}")
        lines.append(f"    {result['snippet']}")
    return "\n".join(lines)


def emit(results: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        import json

        sys.stdout.write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(results) + "\n")


# ---------------------------------------------------------------- the fast path

_ROOT_OPTIONS = ("--memory-dir", "--db")
_VALUE_OPTIONS = ("--limit", "--since", "--role")
_FLAGS = ("--all-projects", "--facts", "--transcripts", "--json")


def _parse_argv(argv: list[str]) -> tuple[dict[str, str], dict[str, Any], list[str]] | None:
    """`[root options] search [options] QUERY...` as the click command reads it, or None
    for anything else (help, an unknown option, a bad value: click then says what)."""
    root: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i] != "search":
        name, _, value = argv[i].partition("=")
        if name not in _ROOT_OPTIONS:
            return None
        if not value:
            if i + 1 >= len(argv):
                return None
            value, i = argv[i + 1], i + 1
        root[name] = value
        i += 1
    if i >= len(argv):
        return None
    options: dict[str, Any] = {}
    words: list[str] = []
    rest = iter(argv[i + 1 :])
    for arg in rest:
        if arg == "--":
            words += list(rest)
            break
        name, has_value, value = arg.partition("=")
        if name in _FLAGS and not has_value:
            options[name] = True
        elif name in _VALUE_OPTIONS:
            if not has_value:
                following = next(rest, None)
                if following is None:
                    return None
                value = following
            options[name] = value
        elif arg.startswith("-") and len(arg) > 1:
            return None
        else:
            words.append(arg)
    return (root, options, words) if words else None


def fast_main(argv: list[str]) -> int | None:
    """Run `subrosa search` without click or SQLAlchemy when that is safe: the database
    is an SQLite file that already holds the archive and no ended session waits to be
    ingested. None means "not here": the click command runs instead."""
    import os

    from subrosa import pending
    from subrosa.paths import (
        project_transcript_dir,
        resolve_db_url,
        resolve_memory_dir,
        sqlite_path,
    )
    from subrosa.schema import is_current

    parsed = _parse_argv(argv)
    if parsed is None:
        return None
    root, options, words = parsed
    try:
        limit = int(options.get("--limit", "10"))
        since = parse_since(options["--since"]) if "--since" in options else None
    except (ValueError, QueryError):
        return None
    role = options.get("--role")
    if limit < 1 or role not in (None, "user", "assistant"):
        return None
    path = sqlite_path(resolve_db_url(root.get("--db") or os.environ.get("SUBROSA_DB") or None))
    if path is None or not is_current(path) or pending.list_pending():
        return None
    all_projects = bool(options.get("--all-projects"))
    memory_dir = root.get("--memory-dir") or os.environ.get("SUBROSA_MEMORY_DIR") or None
    filters = Filters(
        since=since,
        role=role,
        transcript_project=None if all_projects else project_transcript_dir().name,
        fact_project=None if all_projects else str(resolve_memory_dir(memory_dir).resolve()),
    )
    facts_only, transcripts_only = bool(options.get("--facts")), bool(options.get("--transcripts"))
    try:
        conn = connect(path)
        try:
            results = search(
                conn,
                " ".join(words),
                filters,
                limit,
                facts=facts_only or not transcripts_only,
                messages=transcripts_only or not facts_only,
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    emit(results, bool(options.get("--json")))
    return 0
