"""Archived messages for a query on a PostgreSQL server: the index lookups of
subrosa.archive.search, spelled for a GIN index over tsvector instead of FTS5.

Everything else is search.py's, run as it is (the units and their forms, the tiers,
bm25 over the candidates' text, copies, replies, sessions, snippets): only the
questions put to the index differ. So both engines find the same messages, the
index holds the words FTS5's unicode61 holds (migration 0005 cuts the text at
anything not a letter or digit before PostgreSQL's parser sees it, and adds the
terms column's CJK characters and camelCase parts), and the query is built from the
same units: an alternative is a phrase of its tokens (`'pre' <-> 'commit'`, a prefix
`'dep':*`, a CJK run `'東' <-> '京'`), a unit the OR (`|`) of its alternatives, the
first tier the AND (`&`) of the required units. Tokens are put in the tsquery as
lexemes, quoted, so no input is a syntax error (PostgreSQL's own to_tsquery would
cut them again, its way).

`VECTOR` is the index's expression word for word: PostgreSQL uses an expression
index only for a query that spells the same expression.

FTS5 walks a term's matches newest first and stops when it has enough; a GIN index
hands over all of a term's matches at once, in no order. A question about the newest
matches of a common word ("the newest thousand holding `error`") is therefore asked
of a window of the newest ids first, widened fourfold until it holds enough or is the
whole table: the server then reads the word's matches from the index (compressed,
fast) and only the rows in the window from the table.
"""

from __future__ import annotations

from typing import Any

from subrosa.query import Alt, Filters, Unit

VECTOR = (
    "(to_tsvector('simple'::regconfig,"
    " regexp_replace(left(m.text, 250000), '[^[:alnum:]]+', ' ', 'g'))"
    " || to_tsvector('simple'::regconfig, left(coalesce(m.terms, ''), 250000)))"
)
# The first window of newest ids looked in, as a multiple of the matches wanted.
WINDOW = 8
GROWTH = 4


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def alt_query(alt: Alt) -> str:
    """One alternative as a tsquery: a word, or a phrase of words (`<->`), a prefix."""
    parts = [_lexeme(token) for token in alt.tokens]
    if alt.prefix:
        parts[-1] += ":*"
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def unit_query(unit: Unit, alts: tuple[Alt, ...] | None = None) -> str:
    """A unit as a tsquery: any of `alts` (default: its own); CJK runs included (their
    characters are in the vector, from the terms column)."""
    queries = [alt_query(alt) for alt in (unit.alts if alts is None else alts)]
    if not queries:
        return ""
    return queries[0] if len(queries) == 1 else "(" + " | ".join(queries) + ")"


def all_of(queries: list[str]) -> str:
    """Texts holding every one of the queries."""
    return " & ".join(queries)


def _filters(filters: Filters) -> tuple[str, str, list[Any]]:
    joins, where, params = "", "", []
    if filters.role:
        where += " AND m.role = ?"
        params.append(filters.role)
    if filters.since:
        where += " AND m.timestamp >= ?"
        params.append(filters.since)
    if filters.transcript_project:
        joins = " JOIN sessions s ON s.id = m.session_pk"
        where += " AND s.project = ?"
        params.append(filters.transcript_project)
    return joins, where, params


def newest_id(conn: Any) -> int:
    """The newest message's id (ids grow with ingest; search.py counts with it)."""
    row = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
    return int(row[0])


def existing(conn: Any, alts: tuple[Alt, ...]) -> tuple[Alt, ...]:
    """The alternatives the index holds (a hundred lookups per statement)."""
    probe = f"EXISTS (SELECT 1 FROM messages m WHERE {VECTOR} @@ ?::tsquery)"
    found: list[Alt] = []
    for start in range(0, len(alts), 100):
        batch = alts[start : start + 100]
        row = conn.execute(
            f"SELECT {', '.join([probe] * len(batch))}", [alt_query(alt) for alt in batch]
        ).fetchone()
        found += [alt for alt, hit in zip(batch, row, strict=True) if hit]
    return tuple(found)


def _newest(
    conn: Any, columns: str, query: str, filters: Filters, limit: int, offset: int = 0
) -> list[Any]:
    """The rows of the newest `limit` messages matching `query` (after `offset`), newest
    first, asked of ever wider windows of the newest ids (see the module's docstring)."""
    joins, where, params = _filters(filters)
    sql = (
        f"SELECT {columns} FROM messages m{joins} WHERE {VECTOR} @@ ?::tsquery{where}"
        "{window} ORDER BY m.id DESC LIMIT ? OFFSET ?"
    )
    top = newest_id(conn)
    window = WINDOW * (limit + offset)
    while window < top:
        rows = conn.execute(
            sql.format(window=" AND m.id > ?"), [query, *params, top - window, limit, offset]
        ).fetchall()
        if len(rows) >= limit:
            return list(rows)
        window *= GROWTH
    return list(conn.execute(sql.format(window=""), [query, *params, limit, offset]).fetchall())


def count_upto(conn: Any, query: str, cap: int) -> int:
    """How many messages match `query`, counted up to `cap`."""
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM messages m WHERE {VECTOR} @@ ?::tsquery LIMIT ?) x",
        [query, cap],
    ).fetchone()
    return int(row[0])


def probe(conn: Any, query: str, selective: int) -> int | None:
    """The id of the query's `selective`-th newest match, or None when it has fewer."""
    if count_upto(conn, query, selective) < selective:
        return None
    rows = _newest(conn, "m.id", query, Filters(), 1, offset=selective - 1)
    return int(rows[0][0]) if rows else None


def candidates(conn: Any, query: str, filters: Filters, limit: int) -> list[Any]:
    """The newest `limit` messages matching `query`: id, text, terms, role."""
    return _newest(conn, "m.id, m.text, m.terms, m.role", query, filters, limit)


def rowids(conn: Any, query: str, filters: Filters, limit: int) -> list[int]:
    """The ids of the newest `limit` messages matching `query`."""
    return [int(row[0]) for row in _newest(conn, "m.id", query, filters, limit)]
