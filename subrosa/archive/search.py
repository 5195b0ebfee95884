"""Archived messages for a query: SQL over messages_fts, bm25 over a bounded set of
candidates, snippets. Standard library only (sqlite3: subrosa.archive.connection says
why); the query language is subrosa.query, shared with the facts' search.

subrosa.recall composes this with the facts' search; `subrosa search` runs it
straight from the entry point when it can (subrosa.cli.fastsearch). Why the query
runs the way it does: docs/search.md.
"""

from __future__ import annotations

import math
import re
import sqlite3
from typing import Any

from subrosa.query import MARK, Filters, Phrase, Term, one_line, query_phrases, significant

# A phrase in fewer messages than this is "selective": FTS5's own bm25 ranks every
# match exactly and cheaply. Otherwise bm25 would count the phrase's documents over
# its whole doclist (~0.1-0.3 s for a word in most of a million messages) and score
# every match: the newest RERANK matches are ranked here instead (docs/search.md).
SELECTIVE = 4000
RERANK = 1000
BM25_K1, BM25_B = 1.2, 0.75


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
    query has at most max(RERANK, limit) matches or every phrase is selective, else
    among the newest max(RERANK, limit) matches: a limit past RERANK widens the window,
    so `--limit 5000` returns 5,000 results when that many match."""
    phrases = query_phrases(terms, "cjk")
    if not phrases or limit <= 0:
        return []
    match = " ".join(phrase.expr for phrase in phrases)
    joins, where, params = _message_filters(filters)
    kths = [_probe(conn, phrase) for phrase in phrases]
    text_joins = (
        joins if " JOIN messages m " in joins else " JOIN messages m ON m.id = f.rowid" + joins
    )
    window = max(RERANK, limit)
    candidates = conn.execute(
        f"SELECT f.rowid, m.text, m.cjk FROM messages_fts f{text_joins}"
        f" WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
        [match, *params, window],
    ).fetchall()
    if len(candidates) == window and all(kth is None for kth in kths):
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
    details: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(ids), 500):  # within SQLite's limit on bound values
        chunk = ids[start : start + 500]
        details.update(
            (row[0], row[1:])
            for row in conn.execute(
                "SELECT m.id, s.session_id, m.timestamp, m.role, s.project, m.text"
                " FROM messages m JOIN sessions s ON s.id = m.session_pk"
                f" WHERE m.id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
        )
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
