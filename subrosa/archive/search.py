"""Archived messages for a query: SQL over messages_fts, bm25 over a bounded set of
candidates in two tiers, near-duplicates collapsed, snippets. Standard library only
(sqlite3: subrosa.archive.connection says why); the query language is subrosa.query,
shared with the facts' search.

subrosa.recall composes this with the facts' search; `subrosa search` runs it
straight from the entry point when it can (subrosa.cli.fastsearch). Why the query
runs the way it does: docs/search.md.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from subrosa.query import (
    Alt,
    Filters,
    Unit,
    one_line,
    pieces,
    significant,
    snippet_pattern,
    text_snippet,
)

# A unit in fewer messages than this is "selective": all its matches can be listed,
# and FTS5's own bm25 ranks them exactly and cheaply. Otherwise bm25 would count the
# unit's documents over its whole doclist (~0.1-0.3 s for a word in most of a million
# messages) and score every match: the newest RERANK matches are ranked here instead.
SELECTIVE = 4000
RERANK = 1000
BM25_K1, BM25_B = 1.2, 0.75
# A match by another form than the one typed ("costs" for "cost", "pre commit" for
# "precommit") counts this much of an exact one: the exact form ranks first.
VARIANT = 0.6
# A word typed as one is also looked for cut in two ("precommit": "pre commit") when
# it is in fewer messages than this: cuts of a common word are mostly noise.
SPLIT_BELOW = 10
# Messages whose first DUP_PREFIX characters are the same (lowercase, spaces and
# digits folded) are copies of one text: one result says how many and where.
DUP_PREFIX = 200
_DIGITS = re.compile(r"\d+")
# A tool call or a tool's output ranks below what was said, by this much: people look
# for the conversation (what was explained, decided, reported); tool output is most of
# an archive, long and repetitive, and still found, only after the words around it.
TOOL_IO = 0.5
_TOOL_CALL = re.compile(r"\[(?!image\])[A-Za-z][\w.:-]*\] ")
_TOOL_OUTPUT = ("[tool result]", "[tool error]")


class Stats(NamedTuple):
    """A query unit as the archive sees it: the alternatives the index holds, its FTS5
    expression, and how many messages hold it."""

    unit: Unit
    expr: str  # "" when no alternative is in the index
    alts: tuple[Alt, ...]
    kth: int | None  # the rowid of its SELECTIVE-th newest match; None: fewer
    df: float
    idf: float


Row = tuple[int, str, "str | None", str]  # a candidate: row id, text, terms, role


class Hit(NamedTuple):
    """A ranked message: its row id, score, tier (1: every required unit, 2: some)."""

    rowid: int
    score: float
    tier: int


# ---------------------------------------------------------------- SQL


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


def _count_upto(conn: sqlite3.Connection, expr: str, cap: int) -> int:
    """How many messages match `expr`, counted up to `cap` (newest first, lazily)."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT ?)",
        [expr, cap],
    ).fetchone()
    return int(row[0])


def _probe(conn: sqlite3.Connection, expr: str) -> int | None:
    """The rowid of the expression's SELECTIVE-th newest match, or None when it has
    fewer (FTS5 walks doclists newest-first lazily: this reads SELECTIVE entries at most)."""
    row = conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        [expr, SELECTIVE - 1],
    ).fetchone()
    return None if row is None else int(row[0])


def _newest_id(conn: sqlite3.Connection) -> int:
    # Ids are dense (ingest hands them out in order), so the newest id is the count;
    # count(*) would read the whole table.
    row = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
    return int(row[0])


def unit_stats(conn: sqlite3.Connection, units: Iterable[Unit]) -> list[Stats]:
    """Each unit with the alternatives the index holds and its document frequency:
    counted when selective, else estimated from how far back its SELECTIVE newest
    matches reach. Alternatives that are nowhere (most generated forms) are dropped
    here, so the queries that follow look up only real terms."""
    total = _newest_id(conn)
    out = []
    for unit in units:
        alts = tuple(alt for alt in unit.alts if _count_upto(conn, alt.expr("terms"), 1))
        seen = _count_upto(conn, unit.expr("terms", alts), SPLIT_BELOW) if alts else 0
        if unit.splits and seen < SPLIT_BELOW:
            alts += tuple(alt for alt in unit.splits if _count_upto(conn, alt.expr("terms"), 1))
        expr = unit.expr("terms", alts) if alts else ""
        kth = _probe(conn, expr) if expr else None
        if not expr:
            df = 0.0
        elif kth is None:
            df = float(_count_upto(conn, expr, SELECTIVE))
        else:
            df = min(float(total), SELECTIVE * total / max(1, total - kth + 1))
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        out.append(Stats(unit, expr, alts, kth, df, idf))
    return out


def _candidates(conn: sqlite3.Connection, match: str, filters: Filters, limit: int) -> list[Row]:
    """The newest `limit` messages matching `match`, with their text and terms."""
    joins, where, params = _message_filters(filters)
    text_joins = (
        joins if " JOIN messages m " in joins else " JOIN messages m ON m.id = f.rowid" + joins
    )
    return conn.execute(
        f"SELECT f.rowid, m.text, m.terms, m.role FROM messages_fts f{text_joins}"
        f" WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
        [match, *params, limit],
    ).fetchall()


def _rowids(conn: sqlite3.Connection, match: str, filters: Filters, limit: int) -> list[int]:
    joins, where, params = _message_filters(filters)
    return [
        int(row[0])
        for row in conn.execute(
            f"SELECT f.rowid FROM messages_fts f{joins}"
            f" WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
            [match, *params, limit],
        )
    ]


def _texts(conn: sqlite3.Connection, rowids: list[int]) -> list[Row]:
    found: list[Row] = []
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found += conn.execute(
            f"SELECT id, text, terms, role FROM messages WHERE id IN ({marks})", chunk
        ).fetchall()
    return found


# ---------------------------------------------------------------- ranking


def is_tool_io(role: str, text: str) -> bool:
    """Whether a message is a tool call (an assistant message that starts with one) or
    a tool's output (subrosa.archive.transcripts writes them `[Name] …`, `[tool result]
    …`)."""
    if role == "assistant":
        return _TOOL_CALL.match(text) is not None
    return text.startswith(_TOOL_OUTPUT)


def _needles(stats: Stats) -> list[tuple[tuple[str, ...], bool, bool]]:
    """What to count in a text for a unit: each alternative's tokens, whether it is the
    form typed, whether it is CJK (counted in the original text)."""
    return [(alt.tokens, alt.exact, alt.cjk) for alt in stats.alts]


def _frequency(lowered: str, text: str, needles: list[tuple[tuple[str, ...], bool, bool]]) -> float:
    """A unit's term frequency in a text, roughly and at C speed (substring counts: a
    Python tokenizer over a thousand messages would cost more than the whole query):
    exact occurrences count 1, other forms VARIANT."""
    exact = variant = 0
    counts: list[tuple[str, bool, int]] = []
    for tokens, is_exact, cjk in needles:
        if cjk:
            count = text.count("".join(tokens))
        elif len(tokens) == 1:
            count = lowered.count(tokens[0])
        else:
            count = lowered.count(" ".join(tokens)) or min(lowered.count(t) for t in tokens)
        counts.append((tokens[0], is_exact, count))
    typed = next((first for first, is_exact, _ in counts if is_exact), None)
    for first, is_exact, count in counts:
        if is_exact:
            exact += count
        else:
            variant += count
            if typed is not None and first.startswith(typed) and first != typed:
                exact -= count  # "cost" also counted inside "costs"
    return max(0, exact) + VARIANT * variant


def _rank(
    stats: list[Stats],
    candidates: list[Row],
    matched: Callable[[int, int, float], bool],
    tier: int,
) -> list[Hit]:
    """bm25 (Okapi, with Lucene's always-positive idf) over the candidates, computed
    here from their text: FTS5's bm25() would first count documents over the whole
    doclist of every unit, then score every match. `matched(rowid, i, tf)` says
    whether candidate `rowid` holds unit i."""
    needles = [_needles(s) for s in stats]
    documents = []
    for rowid, text, terms, role in candidates:
        lowered = text.lower()
        length = lowered.count(" ") + lowered.count("\n") + 1 + len(terms or "") // 2
        tfs = []
        for i, unit_needles in enumerate(needles):
            tf = _frequency(lowered, text, unit_needles) if unit_needles else 0.0
            tfs.append(max(VARIANT, tf) if matched(rowid, i, tf) else 0.0)
        documents.append((rowid, tfs, length, TOOL_IO if is_tool_io(role, text) else 1.0))
    average = sum(d[2] for d in documents) / max(1, len(documents)) or 1.0
    hits = []
    for rowid, tfs, length, prior in documents:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
        score = prior * sum(
            s.idf * tf * (BM25_K1 + 1) / (tf + norm) for s, tf in zip(stats, tfs, strict=True) if tf
        )
        hits.append(Hit(rowid, score, tier))
    hits.sort(key=lambda hit: (-hit.score, -hit.rowid))
    return hits


def _first_tier(
    conn: sqlite3.Connection, stats: list[Stats], filters: Filters
) -> tuple[list[Hit], dict[int, Row]]:
    """The messages holding every required unit, best first (exact when they are at
    most RERANK or every unit is selective, else the best of the newest RERANK)."""
    required = [s for s in stats if not s.unit.stop]
    if not required or any(not s.expr for s in required):
        return [], {}
    match = " AND ".join(s.expr for s in required)
    candidates = _candidates(conn, match, filters, RERANK)
    if len(candidates) == RERANK and all(s.kth is None for s in required):
        # More matches than RERANK, but every unit's doclist is short: FTS5's bm25
        # picks the best RERANK of them all, exactly and cheaply; they are ranked here.
        joins, where, params = _message_filters(filters)
        best = [
            int(row[0])
            for row in conn.execute(
                f"SELECT f.rowid FROM messages_fts f{joins} WHERE messages_fts MATCH ?{where}"
                " ORDER BY bm25(messages_fts) LIMIT ?",
                [match, *params, RERANK],
            )
        ]
        candidates = _texts(conn, best)
    present = [s for s in stats if s.expr]
    required_ids = {id(s) for s in required}

    def matched(_rowid: int, i: int, tf: float) -> bool:
        return id(present[i]) in required_ids or tf > 0

    texts = {row[0]: row for row in candidates}
    return _rank(present, candidates, matched, 1), texts


def _second_tier(
    conn: sqlite3.Connection, stats: list[Stats], filters: Filters, exclude: set[int]
) -> tuple[list[Hit], dict[int, Row], list[Stats]]:
    """The messages holding some of the units, by bm25 (any word may match): the
    candidates are every match of each selective unit and the newest RERANK of each
    common one, and the RERANK of them holding the rarest units are ranked."""
    wide = list(dict.fromkeys(piece for s in stats for piece in pieces(s.unit)))
    units = [p for p in wide if not p.stop] or wide
    known = {s.unit: s for s in stats}
    fresh = unit_stats(conn, [u for u in units if u not in known])
    by_unit = {**known, **{s.unit: s for s in fresh}}
    present = [by_unit[u] for u in units if by_unit[u].expr]
    holders: list[set[int]] = []
    complete: list[bool] = []
    weight: dict[int, float] = {}
    for s in present:
        cap = SELECTIVE if s.kth is None else RERANK
        ids = _rowids(conn, s.expr, filters, cap)
        holders.append(set(ids))
        complete.append(len(ids) < cap)
        for rowid in ids:
            if rowid not in exclude:
                weight[rowid] = weight.get(rowid, 0.0) + s.idf
    chosen = sorted(weight, key=lambda rowid: (-weight[rowid], -rowid))[:RERANK]
    candidates = _texts(conn, chosen)

    def matched(rowid: int, i: int, tf: float) -> bool:
        return rowid in holders[i] or (not complete[i] and tf > 0)

    texts = {row[0]: row for row in candidates}
    return _rank(present, candidates, matched, 2), texts, present


# ---------------------------------------------------------------- results


def _dup_key(text: str) -> str:
    """Messages with the same key are copies of one text (see DUP_PREFIX)."""
    folded = " ".join(text[: DUP_PREFIX * 3].lower().split())
    return _DIGITS.sub("0", folded)[:DUP_PREFIX]


class Group(NamedTuple):
    """One result: the best of a set of copies, and the copies' row ids (itself first)."""

    hit: Hit
    copies: list[int]


def collapse(hits: list[Hit], texts: dict[int, Row], limit: int) -> list[Group]:
    """The hits with copies of one text folded into the best of them (`limit` groups
    at most; the copies are counted among all hits)."""
    groups: dict[str, Group] = {}
    for hit in hits:
        key = _dup_key(texts[hit.rowid][1])
        group = groups.get(key)
        if group is None:
            groups[key] = Group(hit, [hit.rowid])
        else:
            group.copies.append(hit.rowid)
    return list(groups.values())[:limit]


def _pattern(stats: list[Stats]) -> re.Pattern[str] | None:
    return snippet_pattern([alt for s in stats for alt in s.alts])


def _details(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
    found: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        for row in conn.execute(
            "SELECT m.id, s.session_id, m.timestamp, m.role, s.project, m.uuid, s.title,"
            " s.first_at, s.last_at FROM messages m JOIN sessions s ON s.id = m.session_pk"
            f" WHERE m.id IN ({','.join('?' * len(chunk))})",
            chunk,
        ):
            found[row[0]] = row[1:]
    return found


def _ranked(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    enough: Callable[[list[Hit], dict[int, Row]], bool],
) -> tuple[list[Hit], dict[int, Row], list[Stats]]:
    """The first tier, then (unless `enough` of it) the second, best first in each."""
    stats = unit_stats(conn, units)
    hits, texts = _first_tier(conn, stats, filters)
    shown = [s for s in stats if s.expr]
    if not enough(hits, texts) and any(s.expr for s in stats):
        more, more_texts, used = _second_tier(conn, stats, filters, {h.rowid for h in hits})
        hits += more
        texts.update(more_texts)
        shown += [s for s in used if s not in shown]
    return hits, texts, shown


def search_messages(
    conn: sqlite3.Connection, units: list[Unit], filters: Filters, limit: int
) -> list[dict[str, Any]]:
    """The best `limit` messages for the query's units (docs/search.md): those holding
    every required unit first, then, when they are fewer than `limit`, those holding
    some; copies of one text are one result."""
    if not units or limit <= 0:
        return []

    def enough(hits: list[Hit], texts: dict[int, Row]) -> bool:
        return len(collapse(hits, texts, limit)) >= limit

    hits, texts, shown = _ranked(conn, units, filters, enough)
    groups = collapse(hits, texts, limit)
    details = _details(conn, [rowid for group in groups for rowid in group.copies])
    pattern = _pattern(shown)
    results = []
    for group in groups:
        rowid = group.hit.rowid
        session_id, timestamp, role, project, uuid = details[rowid][:5]
        result: dict[str, Any] = {
            "kind": "message",
            "score": significant(group.hit.score),
            "match": "all" if group.hit.tier == 1 else "some",
            "snippet": one_line(text_snippet(texts[rowid][1], pattern)),
            "session_id": session_id,
            "timestamp": timestamp,
            "role": role,
            "message_id": rowid,
            "uuid": uuid,
            "project": project,
        }
        if len(group.copies) > 1:
            result["copies"] = len(group.copies)
            result["copy_sessions"] = list(dict.fromkeys(details[r][0] for r in group.copies))
        results.append(result)
    return results


def search_sessions(
    conn: sqlite3.Connection, units: list[Unit], filters: Filters, limit: int
) -> list[dict[str, Any]]:
    """The best `limit` sessions for the query's units: the messages ranked as by
    search_messages, each session placed by its best message, with that message's
    snippet and how many of its messages matched."""
    if not units or limit <= 0:
        return []

    def enough(hits: list[Hit], _texts: dict[int, Row]) -> bool:
        return len(_by_session(conn, hits)) >= limit

    hits, texts, shown = _ranked(conn, units, filters, enough)
    sessions = _by_session(conn, hits)[:limit]
    details = _details(conn, [group.hit.rowid for group in sessions])
    pattern = _pattern(shown)
    results = []
    for group in sessions:
        rowid = group.hit.rowid
        session_id, timestamp, role, project, uuid, title, first_at, last_at = details[rowid]
        results.append(
            {
                "kind": "session",
                "score": significant(group.hit.score),
                "match": "all" if group.hit.tier == 1 else "some",
                "snippet": one_line(text_snippet(texts[rowid][1], pattern)),
                "session_id": session_id,
                "project": project,
                "title": title,
                "first_at": first_at,
                "last_at": last_at,
                "messages": len(group.copies),
                "timestamp": timestamp,
                "role": role,
                "message_id": rowid,
                "uuid": uuid,
            }
        )
    return results


def _by_session(conn: sqlite3.Connection, hits: list[Hit]) -> list[Group]:
    """The hits grouped by session, in the order of each session's best hit."""
    if not hits:
        return []
    ids = [hit.rowid for hit in hits]
    session_of: dict[int, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        session_of.update(
            conn.execute(
                f"SELECT id, session_pk FROM messages WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        )
    groups: dict[int, Group] = {}
    for hit in hits:
        pk = session_of[hit.rowid]
        if pk in groups:
            groups[pk].copies.append(hit.rowid)
        else:
            groups[pk] = Group(hit, [hit.rowid])
    return list(groups.values())
