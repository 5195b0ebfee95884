"""Search over facts and archived messages. Standard library only (the query language
is subrosa.query).

`subrosa search` must answer in a fraction of the time grep needs to read the raw
transcripts, and importing SQLAlchemy alone costs more than that here; so this module
talks to SQLite through the DB-API, and `subrosa search` runs it straight from the
entry point (subrosa.cli.__init__) when the database is current and nothing is
waiting to be ingested. Otherwise the click command drains the pending transcripts,
migrates, and then calls the same functions. Why the query runs the way it does:
docs/search.md.
"""

from __future__ import annotations

import math
import re
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from subrosa.query import (
    MARK,
    Filters,
    Phrase,
    QueryError,
    Term,
    fts_query,
    one_line,
    parse_query,
    parse_since,
    query_phrases,
    significant,
    split_cjk,
)

BUSY_TIMEOUT_MS = 30_000
SNIPPET_TOKENS = 16  # facts' snippets (FTS5's snippet())
# A phrase in fewer messages than this is "selective": FTS5's own bm25 ranks every
# match exactly and cheaply. Otherwise bm25 would count the phrase's documents over
# its whole doclist (~0.1-0.3 s for a word in most of a million messages) and score
# every match: the newest RERANK matches are ranked here instead (docs/search.md).
SELECTIVE = 4000
RERANK = 1000
BM25_K1, BM25_B = 1.2, 0.75


def connect(path: Path) -> sqlite3.Connection:
    """A DB-API connection set up like subrosa.db's engine (WAL, busy timeout, FKs);
    transactions are begun explicitly (BEGIN IMMEDIATE for writes)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


# ---------------------------------------------------------------- searching


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


def _probe(conn: sqlite3.Connection, phrase: Phrase) -> int | None:
    """The rowid of the phrase's SELECTIVE-th newest match, or None when it has fewer
    (FTS5 walks doclists newest-first lazily: this reads SELECTIVE entries at most)."""
    row = conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        [phrase.expr, SELECTIVE - 1],
    ).fetchone()
    return None if row is None else int(row[0])


def _document_count(
    conn: sqlite3.Connection, phrase: Phrase, kth: int | None, total: int, newest: int
) -> float:
    """How many messages hold `phrase`: counted when it is selective, else estimated
    from how far back its SELECTIVE newest matches reach."""
    if kth is None:
        row = conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", [phrase.expr]
        ).fetchone()
        return float(row[0])
    return min(float(total), SELECTIVE * total / max(1, newest - kth + 1))


def _rerank(
    conn: sqlite3.Connection,
    phrases: list[Phrase],
    kths: list[int | None],
    candidates: list[tuple[int, str, str | None]],
    limit: int,
) -> list[tuple[int, float]]:
    """bm25 (Okapi, with Lucene's always-positive idf) over the candidates, computed
    here from their text: FTS5's bm25() would first count documents over the whole
    doclist of every phrase, then score every match."""
    # Ids are dense (ingest hands them out in order), so the newest id is the count;
    # count(*) would read the whole table.
    row = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
    total = newest = int(row[0])
    idf = []
    for phrase, kth in zip(phrases, kths, strict=True):
        df = _document_count(conn, phrase, kth, total, newest)
        idf.append(math.log(1 + (total - df + 0.5) / (df + 0.5)))
    # Term frequency and length from C-speed string operations (a substring count;
    # words split on spaces): a Python tokenizer over a thousand messages would cost
    # more than the whole query budget, and bm25 needs them only roughly.
    needles = [" ".join(phrase.tokens) for phrase in phrases]
    documents = []
    for rowid, text, cjk in candidates:
        lowered = text.lower()
        chars = cjk or ""
        length = lowered.count(" ") + lowered.count("\n") + 1 + len(chars) // 2
        tfs = [
            max(1, (chars if phrase.cjk else lowered).count(needle))
            for phrase, needle in zip(phrases, needles, strict=True)
        ]
        documents.append((rowid, tfs, length))
    average = sum(d[2] for d in documents) / max(1, len(documents)) or 1.0
    scored = []
    for rowid, tfs, length in documents:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
        score = sum(
            weight * tf * (BM25_K1 + 1) / (tf + norm) for weight, tf in zip(idf, tfs, strict=True)
        )
        scored.append((rowid, score))
    scored.sort(key=lambda item: (-item[1], -item[0]))
    return scored[:limit]


def _phrase_pattern(phrases: list[Phrase]) -> re.Pattern[str]:
    """A regex marking the phrases' occurrences in a message, for snippets."""
    parts = []
    for phrase in sorted(phrases, key=lambda p: -sum(map(len, p.tokens))):
        if phrase.cjk:
            parts.append(re.escape("".join(phrase.tokens)))
            continue
        body = r"[\W_]+".join(re.escape(token) for token in phrase.tokens)
        parts.append(r"\b" + body + (r"\w*" if phrase.prefix else r"\b"))
    return re.compile("|".join(parts), re.IGNORECASE)


def text_snippet(text: str, pattern: re.Pattern[str], width: int = 110) -> str:
    """About `width` characters of `text` around its first match, matches in bold (the
    rerank path has the text in hand; FTS5's snippet() would look the phrases up in
    the index again, milliseconds each for a word in most messages)."""
    first = pattern.search(text)
    at = first.start() if first else 0
    start = max(0, at - width // 3)
    if start:
        space = text.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", at, end)
        end = space if space > at else end
    window = pattern.sub(lambda m: f"{MARK[0]}{m.group(0)}{MARK[1]}", text[start:end])
    return ("…" if start else "") + window + ("…" if end < len(text) else "")


def search_messages(
    conn: sqlite3.Connection, terms: list[Term], filters: Filters, limit: int
) -> list[dict[str, Any]]:
    """The best `limit` messages for `terms` by bm25 (docs/search.md): exact when the
    query has at most RERANK matches or every phrase is selective, else among the
    newest RERANK matches."""
    phrases = query_phrases(terms, "cjk")
    if not phrases or limit <= 0:
        return []
    match = " ".join(phrase.expr for phrase in phrases)
    joins, where, params = _message_filters(filters)
    kths = [_probe(conn, phrase) for phrase in phrases]
    text_joins = (
        joins if " JOIN messages m " in joins else " JOIN messages m ON m.id = f.rowid" + joins
    )
    candidates = conn.execute(
        f"SELECT f.rowid, m.text, m.cjk FROM messages_fts f{text_joins}"
        f" WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
        [match, *params, RERANK],
    ).fetchall()
    if len(candidates) == RERANK and all(kth is None for kth in kths):
        # More matches than RERANK, but every phrase's doclist is short: FTS5's bm25
        # ranks them all exactly and cheaply.
        ranked = [
            (int(rowid), -float(score))
            for rowid, score in conn.execute(
                f"SELECT f.rowid, bm25(messages_fts) AS score FROM messages_fts f{joins}"
                f" WHERE messages_fts MATCH ?{where} ORDER BY score LIMIT ?",
                [match, *params, limit],
            )
        ]
    else:
        # All matches in hand (exact), or the newest RERANK of a query with a common
        # phrase. Ranked here, with an idf that stays positive: FTS5 gives a word in
        # over half the rows an idf of 1e-6, which flattens small archives' ranking.
        ranked = _rerank(conn, phrases, kths, candidates, limit)
    if not ranked:
        return []
    ids = [rowid for rowid, _score in ranked]
    details = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT m.id, s.session_id, m.timestamp, m.role, s.project, m.text FROM messages m"
            f" JOIN sessions s ON s.id = m.session_pk WHERE m.id IN ({','.join('?' * len(ids))})",
            ids,
        )
    }
    pattern = _phrase_pattern(phrases)
    results = []
    for rowid, score in ranked:
        session_id, timestamp, role, project, text = details[rowid]
        results.append(
            {
                "kind": "message",
                "score": significant(score),
                "snippet": one_line(text_snippet(text, pattern)),
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
    """The best `limit` facts for `terms` (few rows: ranked exactly)."""
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
    facts_only: bool = False,
    transcripts_only: bool = False,
) -> list[dict[str, Any]]:
    """Facts, then messages, for `query`, each best first (both kinds unless one is
    asked for alone). Facts lead: they are the distilled memory, and their scores
    (over a few hundred facts) and the messages' (over up to millions) are not on one
    scale."""
    terms = parse_query(query)
    if not terms:
        return []
    found: list[dict[str, Any]] = []
    if facts_only or not transcripts_only:
        found += search_facts(conn, terms, filters, limit)
    if transcripts_only or not facts_only:
        found += search_messages(conn, terms, filters, limit)
    found = found[:limit]
    record_hits(conn, [r["fact_id"] for r in found if r["kind"] == "fact"])
    for result in found:
        result.pop("fact_id", None)
    return found


# ---------------------------------------------------------------- output


def render_text(results: list[dict[str, Any]]) -> str:
    """Results for people: one header line and one snippet line each."""
    if not results:
        return "no results"
    lines = []
    for result in results:
        if result["kind"] == "fact":
            head = f"fact {one_line(result['slug'])} ({result['type']}, {result['status']})"
        else:
            head = (
                f"message {one_line(result['session_id'])} {result['timestamp'] or '-'} "
                f"{result['role']} #{result['message_id']}"
            )
        lines.append(f"{head}  score {result['score']:.3g}")
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

    from subrosa.archive import pending
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
    try:
        conn = connect(path)
        try:
            results = search(
                conn,
                " ".join(words),
                filters,
                limit,
                facts_only=bool(options.get("--facts")),
                transcripts_only=bool(options.get("--transcripts")),
            )
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeEncodeError):  # e.g. argv bytes that are not UTF-8
        return None  # the click command says what is wrong, in one line
    emit(results, bool(options.get("--json")))
    return 0
