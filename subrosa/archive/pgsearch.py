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

`VECTOR` is the column migration 0007 stores that vector in (computed by the server
when a row is written) and `ix_messages_words` indexes: a phrase or a prefix, which a
GIN index cannot settle alone, is rechecked against the stored vector, not against a
vector rebuilt from the text for every candidate row.

FTS5 walks a term's matches newest first and stops when it has enough; a GIN index
hands over all of a term's matches at once, in no order, and each row it finds is read
from the table for its id. Each question ("the newest thousand holding `error`") is one
statement, its walk chosen for the word: the ids newest first, each row's stored vector
tested, for a common word; the index's matches (among the newest ids, for a word in a
few percent of the messages) sorted for a rarer one. The planner's statistics (ANALYZE
keeps the column's most common lexemes) tell which, but its guess for a word they do
not list (most generated forms: absent) is a few hundred rows, so existing() and
_probe_ahead() set the walk themselves. One statement per question also keeps the
round trips (a tenth of a millisecond or more each, where FTS5's are microseconds)
few: the probe brings the count, the SELECTIVE-th newest match, the ids and a rare
word's rows (or a one-word query's candidates) at once, and what it sent is not asked
again (docs/team.md, "The archive on PostgreSQL").

Since migration 0008 each range of RANGE ids has a GIN index of its own: a word the
statistics list finds its newest matches range by range, newest first, down to a
floor and deeper only when needed (_newest_by_range()); only those ranges' matches are
read. Where a range has no index yet, the walks above are taken.

Since migration 0018 the ids of each word are also kept per sealed chunk of ids
(subrosa.archive.pgpostings): a unit of single words the statistics list is probed from
those few rows and the ids past them (_from_postings()), with the same answers; the
index answers for the rest (phrases, prefixes, CJK runs, rare words, ANDs of units),
except that a phrase of words each in half the messages or more (`"in the"`) is first
looked for by walking the newest ids (_walk_newest()), again with the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice

from subrosa.archive.pgpostings import CHUNK
from subrosa.archive.search import PHRASES_COUNTED, RERANK, SELECTIVE, SPAN_SHARE, inside_runs
from subrosa.fold import fold
from subrosa.lazyre import compile_lazily
from subrosa.libpq import parse_array
from subrosa.query import Alt, Filters, Runs, Unit

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VECTOR = "m.words"
# How much dearer testing a row's stored vector is than reading a row the index found.
WALK_COST = 4
# Past this many remembered queries, the memory of their match counts starts afresh.
REMEMBER = 4096
# existing() tests a common word on this many newest messages before asking the index,
NEWEST = 16
# ... or, for a word in WALK_EXISTS of the messages or more (where ~1/share rows walked
# cost less than its posting list's bitmap), on as many as hold it EXIST_TRIES times at
# its share (EXIST_WALK_MAX at most).
WALK_EXISTS = 0.004
EXIST_TRIES = 20
EXIST_WALK_MAX = 5000
# A unit's query in this share of the messages or more is found by walking the ids
# newest first (_probe_ahead()).
WALK_SHARE = 0.25
# ... else among the newest ids, this many times as many as its share says hold SELECTIVE
# matches (a word comes in bursts; when they hold fewer, the older ones are read too).
SPAN = 1.25
_TOKEN = compile_lazily(r"'((?:[^']|'')*)'")
# _probe_ahead() sends a query's matches along when it has at most this many (a rare
# word's ~250 at 1 GB).
PREFETCH = 300
# Each RANGE ids have a GIN index of their own besides the whole table's
# (RANGE_INDEX + k for ids k * RANGE to (k + 1) * RANGE - 1; subrosa.archive.pgstore
# builds the next one before ids reach it, migration 0008 those of an archive). The
# newest SELECTIVE matches of a word in some percent of the messages are found in the
# newest ranges' indexes: the whole table's would hand over all its matches, and
# keeping only the newest (`id > floor`) costs a bitmap of the primary key's newest
# few hundred thousand ids (20-40 ms at 1 GB).
RANGE = 131072
RANGE_INDEX = "ix_messages_words_r"
# Built ahead of the newest id, empty, by migration 0008 and `subrosa db upgrade` (a
# member's role may not build indexes; the owner's upgrade does).
RANGES_AHEAD = 8
# A range is cut at the floor (see _newest_by_range()) when at least this many of its
# ids are below it: the primary key's bitmap of the ids above costs more than the
# few rows below would.
CUT_BELOW = RANGE // 4
# _newest_by_range() asks this many parts of the ids in one statement (a common word's
# newest matches are in the first, a rarer one's in the first few; each part more
# costs its planning, ~0.05 ms).
SEGMENTS = 4
_RANGES = (
    "(SELECT array_agg(c.relname::text) FROM pg_index i JOIN pg_class c"
    " ON c.oid = i.indexrelid WHERE i.indrelid = 'messages'::regclass AND i.indisvalid"
    " AND c.relname LIKE 'ix\\_messages\\_words\\_r%')"
)
# The first id the sealed chunks' postings do not hold, those from the first id on
# (subrosa.archive.pgpostings): the first chunk not sealed whole, and how far into it
# postings reach (its `upto`, when it is sealed in part).
# (The first chunk not sealed whole: the first whose number is not its place among
# those sealed whole; a join of the table with itself on `chunk + 1` would be
# planned as a nested loop of every pair where its statistics are thin.)
_FIRST_OPEN = (
    "(SELECT coalesce(min(x.i) FILTER (WHERE x.chunk <> x.i), count(*))::int FROM"
    " (SELECT s.chunk, (row_number() OVER (ORDER BY s.chunk) - 1)::int AS i"
    f" FROM sealed_chunks s WHERE s.upto = (s.chunk::bigint + 1) * {CHUNK}) x)"
)
_SEALED = (
    "(SELECT coalesce((SELECT s.upto FROM sealed_chunks s WHERE s.chunk = f.c),"
    f" f.c::bigint * {CHUNK})"
    f" FROM (SELECT {_FIRST_OPEN} AS c) f)"
)
# A unit's query made of single words only (`'postgres' | 'postgre'`): one of them.
_PLAIN = compile_lazily(r"'((?:[^'\\]|'')+)'")
# A word's matches in the ids past the sealed chunks are read through the range indexes
# (_from_postings()); past this many such ids, all of them are (the sealed chunks are
# behind: a chunk written again, or an ingest not yet done sealing).
TAIL_MAX = 4 * CHUNK
# ... and when the statistics say that part holds this share of the SELECTIVE newest
# matches or more (a common word's, `the`), the index reads them all: reading that many
# rows through it costs most of the probe either way, and the postings' rows are more.
TAIL_SHARE = 0.5
# A phrase whose words are each in WALK_PHRASE of the messages or more (`"in the"`) is
# looked for first among the newest ids, newest first, each row's stored vector tested
# (_walk_newest()): at most WALK_SPAN times as many as the share of its least common word
# says hold SELECTIVE matches (the phrase's own share is unknown: it is in at most as
# many messages as its words). Its newest matches are then the first few thousand rows,
# where the range's index would build both words' bitmaps of tens of thousands of
# matches, read and test the rows they share, and sort what it found. (A unit of single
# words needs no test of a row's vector: the index's matches are the answer.)
WALK_PHRASE = 0.5
WALK_SPAN = 2


def unit_query(unit: Unit, alts: tuple[Alt, ...] | None = None) -> str:
    """A unit as a tsquery: any of `alts` (default: its own); CJK runs included (their
    characters are in the vector, from the terms column)."""
    return unit_query_of(unit.alts if alts is None else alts)


def unit_query_of(alts: tuple[Alt, ...]) -> str:
    """Any of `alts`, as a tsquery."""
    queries = [alt.tsquery() for alt in alts]
    if not queries:
        return ""
    return queries[0] if len(queries) == 1 else "(" + " | ".join(queries) + ")"


def all_of(queries: list[str]) -> str:
    """Texts holding every one of the queries."""
    return " & ".join(queries)


def _filters(filters: Filters) -> tuple[str, str, list[Any]]:
    joins, where = "", ""
    params: list[Any] = []
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
    if filters.runs:
        where += " AND m.id BETWEEN ? AND ?"
        params += filters.runs.bounds
    return joins, where, params


def newest_id(conn: Any) -> int:
    """The newest message's id (ids grow with ingest; search.py counts with it). It
    is the first question of every search: what the last one learnt ahead is dropped.
    The id ranges whose own index is built come along (see RANGE_INDEX); the first
    time on a connection, the column's most common lexemes too."""
    conn.answers.clear()
    if conn.common is None:
        stats = (
            "FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'messages'"
            " AND attname = 'words'"
        )
        row = conn.execute(
            f"SELECT (SELECT coalesce(max(id), 0) FROM messages), {_RANGES}, {_SEALED},"
            f" (SELECT most_common_elems::text::text[] {stats}),"
            f" (SELECT most_common_elem_freqs {stats})"
        ).fetchone()
        conn.common = dict(zip(row[3] or (), row[4] or (), strict=False))
    else:
        row = conn.execute(
            f"SELECT coalesce(max(id), 0), {_RANGES}, {_SEALED} FROM messages"
        ).fetchone()
    newest, conn.ranges, conn.sealed = int(row[0]), _ranges_of(row[1]), int(row[2])
    _remember(conn, "", newest)
    conn.answers["newest"] = newest  # for _target(): the search's own
    return newest


def _ranges_of(names: Any) -> set[int]:
    """The id ranges (their k) of the range indexes named."""
    cut = len(RANGE_INDEX)
    return {int(name[cut:]) for name in names or () if name[cut:].isdigit()}


def index_ranges(conn: Any) -> set[int]:
    """The id ranges whose own index is built and valid (see RANGE_INDEX)."""
    return _ranges_of(conn.execute(f"SELECT {_RANGES}").fetchone()[0])


def newest_and_ranges(conn: Any) -> tuple[int, set[int]]:
    """The newest message's id and the id ranges whose own index is built, in one
    statement (what newest_id() asks, without the search's memory)."""
    row = conn.execute(f"SELECT coalesce(max(id), 0), {_RANGES} FROM messages").fetchone()
    return int(row[0]), _ranges_of(row[1])


def range_index(k: int) -> tuple[str, str]:
    """The name of the index of the k-th id range and the statement that builds it."""
    name = f"{RANGE_INDEX}{k}"
    return name, (
        f"CREATE INDEX IF NOT EXISTS {name} ON messages USING gin (words)"
        f" WHERE {_in_range('id', k)}"
    )


def _in_range(column: str, k: int) -> str:
    """The condition of the k-th id range, spelled as its index's predicate is (so the
    planner finds the index) and not as bounds on the id (so the planner may still
    combine the index with the primary key's for a bound of the query's own)."""
    return f"({column} / {RANGE}) = {k}"


def reach(ranges: set[int]) -> int:
    """The first id past the ranges built one after the other from the first."""
    k = 0
    while k in ranges:
        k += 1
    return k * RANGE


def _by_range(conn: Any, newest: int) -> bool:
    """Whether every id range up to the newest id has its own index."""
    return newest < reach(conn.ranges or set())


def _summary(want: int, room: int) -> str:
    """The select list that sums up the matches `x` (id, ctid) a statement found, newest
    first: how many, the last one's id, and their ids (all when fewer than `want`, else
    the newest `room`)."""
    return (
        f"count(*) AS n, min(id) AS kth, CASE WHEN count(*) < {want} THEN array_agg(id)"
        f" ELSE (array_agg(id))[1:{room}] END AS ids"
    )


# After a statement's matches `x` (id, ctid) and their summary `s` (_summary()): the
# summary as one row, its role NULL, then, with _SENT_ROWS, the rows of the ids it sends
# (read by the ctid the statement found each at; each column more would be read for
# every row: a thousand values more to read through subrosa.libpq).
_SUMMED = " SELECT n, ids::text, kth::text, NULL::varchar FROM s"
_SENT_ROWS = (
    " UNION ALL SELECT m.id, m.text, m.terms, m.role FROM messages m"
    " WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM x"
    " WHERE id >= (SELECT ids[cardinality(ids)] FROM s)))"
)


def _summed(found_rows: list[Any]) -> tuple[int, int | None, list[int], list[Any]]:
    """What a statement of _SUMMED (and _SENT_ROWS) sent: how many matches, the last
    one's id, the ids sent, the rows sent."""
    head = next(row for row in found_rows if row[3] is None)
    sent = [tuple(row) for row in found_rows if row[3] is not None]
    return int(head[0]), None if head[2] is None else int(head[2]), _ids(head[1]), sent


def _segments(
    newest: int, floor: int, bounded: bool = False, target: int | None = None
) -> Iterator[str]:
    """The parts of the ids _newest_by_range() asks in turn, newest first, each as a
    condition on `m.id`: a range (RANGE_INDEX), whole or cut (see there). `newest` is
    the newest id there is, unless `bounded` (ids above it are asked elsewhere): then
    the first part is cut there too."""
    top = newest + 1  # the ids below this one are left to ask
    # ... down to this one, at first (`target` matches need as many ids at least)
    target = SELECTIVE if target is None else target
    depth = top if not floor else max(target, top - floor - 1)
    bottom = max(0, top - depth)
    while top > 0:
        k = (top - 1) // RANGE
        start = k * RANGE
        low = max(start, bottom)
        if low - start < CUT_BELOW:
            low = start
        part = _in_range("m.id", k)
        if low > start:
            part += f" AND m.id >= {low}"
        if top < (start + RANGE if bounded else min(start + RANGE, newest + 1)):
            part += f" AND m.id < {top}"
        yield part
        top = low
        if top <= bottom:  # down to the floor: on to one twice as deep
            depth *= 2
            bottom = max(0, top - depth)


def _newest_by_range(
    conn: Any,
    query: str,
    newest: int,
    floor: int = 0,
    keep: int = SELECTIVE,
    rows: list[Any] | None = None,
    have: int = 0,
    bounded: bool = False,
    target: int | None = None,
) -> tuple[list[int], int, int | None]:
    """The ids of the query's SELECTIVE newest matches, newest first (the newest `keep`
    of them: all when they are fewer than SELECTIVE), how many they are and the id of
    the last (the SELECTIVE-th newest match, when there are that many), asked of each id
    range's index in turn, the newest range first, until SELECTIVE are found: only
    those ranges' matches are read from the table (see RANGE_INDEX). Above a `floor`
    (where the SELECTIVE newest matches likely begin: for a common word, in the
    newest range), a range's matches are taken down to the floor first, the index's
    bitmap combined with the primary key's for the ids above it; when they are too
    few, down to a floor twice as deep, and so on: the rows holding the word below
    are read only when needed (walking the ids newest first, as the server would,
    reads and tests every row's vector). A range cut less than CUT_BELOW above its
    start is taken whole.

    SEGMENTS parts are asked in one statement, a UNION ALL under one LIMIT: the
    server runs its branches one after the other and stops at the branch that
    brings the last id wanted (parallel workers are off on subrosa's connections,
    subrosa.pg), so no part past it is read; the ids come back as one array (one
    value to read, not thousands).

    With `rows` (a list), the rows of the ids returned (id, text, terms, role) come
    along in the same statement and are added to it: the query's candidates when it
    is a search's only required unit (texts_ahead()). They are read by the address
    the statement found each match at (its ctid, valid within the statement), not
    looked up again through the primary key: a thousand lookups cost ~1.5 ms.

    `bounded`: there are ids above `newest`, asked elsewhere (_walk_newest()), and
    `have` matches were found among them: only SELECTIVE less those are looked for, at
    `newest` and below, and counted on from there.

    `target` stands for SELECTIVE where a phrase is counted to RERANK only
    (_target())."""
    target = SELECTIVE if target is None else target
    ids: list[int] = []
    count, last = have, None
    segments = _segments(newest, floor, bounded, target)
    while count < target:
        parts = list(islice(segments, SEGMENTS))
        if not parts:
            break
        want = target - count
        room = max(0, keep - len(ids))
        columns = "m.id, m.ctid" if rows is not None else "m.id"
        branches = " UNION ALL ".join(
            f"(SELECT {columns} FROM messages m WHERE {VECTOR} @@ ?::tsquery AND {part}"
            f" ORDER BY m.id DESC LIMIT {want})"
            for part in parts
        )
        summary = _summary(want, room)
        if rows is None:
            found, lowest, some = conn.execute_without(
                "enable_seqscan, enable_indexscan",
                f"SELECT {summary} FROM (SELECT id FROM ({branches}) u LIMIT {want}) x",
                [query] * len(parts),
            )[0]
        else:  # the rows of the ids sent too
            found, lowest, some, sent = _summed(
                conn.execute_without(
                    "enable_seqscan, enable_indexscan",
                    f"WITH x AS MATERIALIZED (SELECT id, ctid FROM ({branches}) u LIMIT {want}),"
                    f" s AS MATERIALIZED (SELECT {summary} FROM x){_SUMMED}{_SENT_ROWS}",
                    [query] * len(parts),
                )
            )
            rows += sent
        if found:
            count, last = count + int(found), int(lowest)
            ids += some or []
    kept = ids[:keep] if count >= target else ids
    if rows is not None:
        wanted = set(kept)
        rows[:] = sorted((row for row in rows if row[0] in wanted), reverse=True)
    return kept, count, last


def _walk_newest(
    conn: Any,
    query: str,
    newest: int,
    keep: int,
    rows: list[Any] | None,
    target: int | None = None,
) -> tuple[list[int], int, int | None] | None:
    """_newest_by_range()'s answer (and `rows`, as there) for a phrase of common words
    (WALK_PHRASE): the newest ids walked newest first, down to WALK_SPAN times as many
    as its words' share says hold SELECTIVE matches, each row's stored vector tested,
    in one statement that stops at the SELECTIVE-th match. When they hold fewer, the
    older ids are asked of the range indexes, from a floor set by the share of the
    walked ids that matched (the phrase's own, where its words' share would set it too
    shallow and the ranges be asked again and again deeper). None for a unit to ask the
    indexes alone.

    `ts_match_vq()` is `@@` spelled as a function: the same test, which no GIN index
    offers to answer, so the planner walks the primary key for it (the statement's
    bitmap scans off), where for a phrase of two words it would otherwise build both
    words' bitmaps in the newest range (5.5 ms for `"in the"` at 1 GB: 39,656
    matches), read and test what they share, then sort it: 14.5 ms against 8.7 ms
    walked (4,000 of the newest 5,836 messages), the same for `"deploy it"`. A phrase
    is counted to RERANK, not SELECTIVE (`target`: _target())."""
    share = _share(conn, query)
    if plain_lexemes(query) is not None or not share or share < WALK_PHRASE:
        return None
    target = SELECTIVE if target is None else target
    span = math.ceil(WALK_SPAN * target / min(share, 1.0))
    floor = max(0, newest - span)  # the ids above are walked
    sql = (
        "WITH x AS MATERIALIZED (SELECT m.id, m.ctid FROM messages m WHERE m.id > ?"
        f" AND m.id <= ? AND ts_match_vq({VECTOR}, ?::tsquery) ORDER BY m.id DESC"
        f" LIMIT {target}), s AS MATERIALIZED (SELECT {_summary(target, keep)} FROM x)"
        + _SUMMED
        + (_SENT_ROWS if rows is not None else "")
    )
    count, kth, ids, walked = _summed(
        conn.execute_without("enable_seqscan, enable_bitmapscan", sql, [floor, newest, query])
    )
    if count >= target or not floor:
        if rows is not None:
            rows[:] = sorted(walked, reverse=True)
        return ids, count, kth
    # Fewer than SELECTIVE among the walked ids (all of them sent): the older ones', from
    # where the share found among the walked ids says the rest begin (none found: the
    # ranges whole).
    deeper = 0
    if count:
        deeper = max(0, floor - math.ceil(SPAN * (target - count) * (newest - floor) / count))
    older: list[Any] | None = None if rows is None else []
    more, total, last = _newest_by_range(
        conn,
        query,
        floor,
        deeper,
        max(0, keep - len(ids)),
        older,
        have=count,
        bounded=True,
        target=target,
    )
    kept = (ids + more)[:keep] if total >= target else ids + more
    if rows is not None:
        wanted = set(kept)
        rows[:] = sorted((row for row in walked + (older or []) if row[0] in wanted), reverse=True)
    return kept, total, kth if last is None else last


def _common(conn: Any, alt: Alt) -> bool:
    """Whether an alternative may be in many messages: a prefix, or words all among
    the column's most common lexemes (ANALYZE's list; it only chooses a plan)."""
    return alt.prefix or all(fold(token) in (conn.common or {}) for token in alt.tokens)


def _walk(conn: Any, alt: Alt) -> int:
    """How many of the newest messages existing() tests for an alternative before it
    asks the index: none for a rare one; for a common one, enough to meet it
    EXIST_TRIES times over at the share the statistics give its least common word
    (the walk stops at the first match: ~1/share rows), NEWEST when that share is
    below WALK_EXISTS or unknown (a prefix). A phrase of common words, EXIST_WALK_MAX:
    it may be far rarer than its words (`"of the"` is in ~1 % of the 1 GB bench's
    messages, its words in most), and the index's bitmap of its words, every message
    holding both, cost ~140 ms there where the walk meets it in a few hundred rows."""
    if not _common(conn, alt):
        return 0
    if alt.prefix:
        return NEWEST
    if len(alt.tokens) > 1:
        return EXIST_WALK_MAX
    common: dict[str, float] = conn.common or {}
    share = min(common[fold(token)] for token in alt.tokens)
    if share < WALK_EXISTS:
        return NEWEST
    return max(NEWEST, min(EXIST_WALK_MAX, math.ceil(EXIST_TRIES / share)))


# Whether each alternative is in any message: one statement for any number of them,
# each (a tsquery's text) with its walk (_walk(); 0: none). The `walk` newest messages
# are tested first, newest first, stopping at the first match; then the index, whose
# posting list for a rare or absent word is short (a common word's is long: 81 ms for
# `the` at 1 GB, 2.5 ms for a word in 1.4% of the messages: a GIN index has no cheap
# "any?", it builds the whole bitmap, hence the walk). One subplan of each kind, run
# for each alternative with it as a parameter, is planned once for all of them: a
# select list of one EXISTS per alternative was planned for each (3.0 ms of planning
# and 1.6 ms of running for the 43 forms of `how to fix glimmerwick with the linter`
# at 1 GB, against 0.15 and 0.4 ms). The answer is their truth values as an array's
# text, in the order given.
EXISTING = (
    "SELECT array_agg((a.walk > 0 AND EXISTS (SELECT 1 FROM (SELECT words FROM messages"
    " ORDER BY id DESC LIMIT a.walk) n WHERE n.words @@ a.q::tsquery)) OR EXISTS (SELECT 1"
    f" FROM messages m WHERE {VECTOR} @@ a.q::tsquery) ORDER BY a.i)::text"
    " FROM unnest(?::text[], ?::int[]) WITH ORDINALITY AS a(q, walk, i)"
)


def existing(conn: Any, alts: tuple[Alt, ...]) -> tuple[Alt, ...]:
    """The alternatives the index holds (EXISTING, one statement), asked with
    sequential scans off: a word the column's statistics do not list (most generated
    forms: absent) is estimated at a few hundred rows, and for an EXISTS the planner
    would walk the table expecting to meet one soon: a second at 1 GB, for a word
    that is nowhere. What one search asked already (existing_ahead()) is not asked
    again."""
    known: dict[str, bool] = conn.answers.setdefault("exists", {})
    queries = [alt.tsquery() for alt in alts]
    asked = {query: alt for query, alt in zip(queries, alts, strict=True) if query not in known}
    if asked:
        walks = "{" + ",".join(str(_walk(conn, alt)) for alt in asked.values()) + "}"
        row = conn.execute_without("enable_seqscan", EXISTING, [_text_array(list(asked)), walks])
        known.update(zip(asked, parse_array(row[0][0], lambda hit: hit == "t"), strict=True))
    return tuple(alt for alt, query in zip(alts, queries, strict=True) if known[query])


def existing_ahead(conn: Any, alts: tuple[Alt, ...]) -> None:
    """Ask at once whether the index holds each of the alternatives the search will
    ask of existing() unit by unit (and the cuts it may ask): one round trip, not
    one per unit."""
    existing(conn, alts)


def texts_ahead(conn: Any, wanted: bool) -> None:
    """Whether the probes that follow (one unit's: search.py calls this before and
    after the unit's questions) send along the rows of the newest matches whose ids
    they send: the candidates the search asks for next, when the unit is its only
    required one (a one-word query's first tier), in the same round trip."""
    conn.answers["texts"] = wanted


def texts_usable(filters: Filters, limit: int) -> bool:
    """Whether candidates() takes its rows from a probe's ids (_newest_known()): no
    filter, and no more results wanted than RERANK."""
    return not filters.narrows_messages and limit <= RERANK


def _share(conn: Any, query: str) -> float | None:
    """At most how large a share of the messages a unit's query matches, from the
    column's statistics: an alternative, its least common word; a word they do not
    list, 0 (fewer than the least common they list). None for a prefix (unknown)."""
    if ":*" in query:
        return None
    common: dict[str, float] = conn.common or {}
    return sum(
        min(common.get(token.replace("''", "'"), 0.0) for token in _TOKEN.findall(alt))
        for alt in query.split(" | ")
    )


def _target(conn: Any, query: str) -> int:
    """How many matches a unit's probe counts: SELECTIVE, or RERANK for a phrase (a
    unit with a `<->` and no prefix; search._counted() says why) in an archive of more
    than PHRASES_COUNTED messages, whose walk tests every row holding its words. The
    first tier's AND of units is counted on."""
    phrase = "<->" in query and ":*" not in query and " & " not in query
    large = int(conn.answers.get("newest") or 0) > PHRASES_COUNTED
    return min(RERANK, SELECTIVE) if phrase and large else SELECTIVE


def _probe_ahead(conn: Any, query: str) -> tuple[int, int | None]:
    """How many messages match a unit's query, up to SELECTIVE, and the id of the last
    of them (its SELECTIVE-th newest match when it has that many), with what
    count_upto(), probe(), candidates() and rowids() ask next, in one round trip: the
    ids of those matches, newest first, and their rows when they are at most
    PREFETCH (a rare word's candidates).

    How the server finds them depends on how common the query is (_share()): in
    WALK_SHARE of the messages or more, the ids newest first, each row's vector
    tested (the planner's choice for a common word); else the index's matches among
    the newest ids likely to hold SELECTIVE of them (SPAN times the span the share says),
    then, only when they are fewer, among the older ones: with plain index scans off,
    the server reads only those rows, not the tens of thousands a walk would test
    for a word in a few percent of the messages (330 ms at 1 GB)."""
    known: tuple[int, int | None] | None = conn.answers.get(("probe", query))
    if known is not None:
        return known
    share = _share(conn, query)
    newest = int(conn.matches.get("") or newest_id(conn))
    target = _target(conn, query)  # SELECTIVE, but RERANK for a phrase
    if share and _by_range(conn, newest):
        floor = max(0, newest - math.ceil(SPAN * target / share))
        return _probe_by_range(conn, query, newest, floor, target)
    walk = share is None or share >= WALK_SHARE
    floor = 0 if walk or not share else max(0, newest - math.ceil(SPAN * target / share))
    # The ids come along: all of them, or a common query's newest RERANK (what search
    # ranks of it; 4,000 would cost more to send and read than they save).
    if floor:
        hits = (
            "near AS MATERIALIZED (SELECT m.id, m.ctid FROM messages m WHERE"
            f" {VECTOR} @@ ?::tsquery AND m.id > ? ORDER BY m.id DESC LIMIT ?), far AS"
            " MATERIALIZED (SELECT m.id, m.ctid FROM messages m WHERE"
            " (SELECT count(*) FROM near) < ? AND m.id <= ? AND"
            f" {VECTOR} @@ ?::tsquery ORDER BY m.id DESC LIMIT ?),"
            " hits AS MATERIALIZED (SELECT id, ctid FROM near UNION ALL SELECT id, ctid FROM far"
            " ORDER BY id DESC LIMIT ?)"
        )
        params: list[Any] = [query, floor, target, target, floor, query, target]
        params.append(target)
    else:  # every match is wanted, or a common query's newest: one walk
        hits = (
            "hits AS MATERIALIZED (SELECT m.id, m.ctid FROM messages m WHERE"
            f" {VECTOR} @@ ?::tsquery ORDER BY m.id DESC LIMIT ?)"
        )
        params = [query, target]
    # The ids sent: all when fewer than SELECTIVE (search ranks them all), else the
    # newest RERANK of a walked query (4,000 would cost more to send and read than they
    # save), SELECTIVE of another. Rows: all the matches of a query in at most PREFETCH
    # messages (a rare word's), or asked ahead (texts_ahead()) those of the newest
    # RERANK (the candidates). The rows are read by the ctid the statement found each
    # match at; the summary rides as one row more in their columns, its role NULL.
    sent = RERANK if walk else target
    texts = bool(conn.answers.get("texts"))
    sql = (
        f"WITH {hits}, counted AS (SELECT count(*) AS n, min(id) AS kth FROM hits)"
        " SELECT c.n, (SELECT array_agg(id) FROM (SELECT id FROM hits ORDER BY id DESC"
        f" LIMIT CASE WHEN c.n >= {target} THEN {sent} END) x)::text, c.kth::text,"
        " NULL::varchar FROM counted c"
        " UNION ALL SELECT m.id, m.text, m.terms, m.role FROM messages m"
        " WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM hits ORDER BY id DESC"
        f" LIMIT CASE WHEN (SELECT n FROM counted) >= {target} THEN {RERANK} END))"
        " AND (SELECT n FROM counted) <= ?"
    )
    params.append(SELECTIVE if texts else PREFETCH)
    if walk:
        rows = conn.execute(sql, params).fetchall()
    else:
        rows = conn.execute_without("enable_seqscan, enable_indexscan", sql, params)
    head = next(row for row in rows if row[3] is None)
    count, kth = int(head[0]), None if head[2] is None else int(head[2])
    conn.answers[("probe", query)] = (count, kth)
    if head[1] is not None:  # an array of integers' text: {3,2,1}
        conn.answers[("ids", query)] = parse_array(head[1], int)
    if count <= PREFETCH or texts:
        matches = sorted((tuple(row) for row in rows if row[3] is not None), reverse=True)
        conn.answers[("rows", query)] = matches
    return count, kth


def _probe_by_range(
    conn: Any, query: str, newest: int, floor: int = 0, target: int | None = None
) -> tuple[int, int | None]:
    """_probe_ahead()'s answers for a query the column's statistics list, its newest
    matches found in the postings (_from_postings()), by walking the newest ids
    (_walk_newest()) or range by range (_newest_by_range()); their rows too when the
    search asked for them ahead (texts_ahead())."""
    # The ids search asks of a unit with more matches: its newest RERANK (rowids()).
    rows: list[Any] | None = [] if conn.answers.get("texts") else None
    found = _from_postings(conn, query, newest, keep=RERANK)
    if found is not None:
        ids, count, kth = found
        if rows is not None:
            rows[:] = texts(conn, ids)  # newest first, as the ids are
    else:
        found = _walk_newest(conn, query, newest, RERANK, rows, target)
        if found is None:
            found = _newest_by_range(
                conn, query, newest, floor, keep=RERANK, rows=rows, target=target
            )
        ids, count, kth = found
    conn.answers[("probe", query)] = (count, kth)
    conn.answers[("ids", query)] = ids
    if rows is not None:
        conn.answers[("rows", query)] = rows
    elif count <= PREFETCH:
        rows = (
            conn.execute(
                "SELECT id, text, terms, role FROM messages WHERE id = ANY(?) ORDER BY id DESC",
                [ids],
            ).fetchall()
            if ids
            else []
        )
        conn.answers[("rows", query)] = [tuple(row) for row in rows]
    return count, kth


def plain_lexemes(query: str) -> list[str] | None:
    """The words of a unit's query made of single words only (`'postgres' | 'postgre'`),
    as the vectors hold them; None for one with a phrase, a prefix or a CJK run (or a
    backslash, left to the index rather than unescaped)."""
    body = query[1:-1] if query.startswith("(") and query.endswith(")") else query
    lexemes = []
    for alt in body.split(" | "):
        match = _PLAIN.fullmatch(alt)
        if match is None:
            return None
        lexemes.append(match.group(1).replace("''", "'"))
    return lexemes


def _text_array(values: list[str]) -> str:
    """Strings as an array's text, each quoted (`{"a","b"}`)."""
    quoted = ('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values)
    return "{" + ",".join(quoted) + "}"


def _from_postings(
    conn: Any, query: str, newest: int, keep: int
) -> tuple[list[int], int, int | None] | None:
    """_newest_by_range()'s answer for a unit of single words (its SELECTIVE newest
    matches' ids, the newest `keep` of them when there are that many; how many, up to
    SELECTIVE; the last one's id) from the sealed chunks' postings
    (subrosa.archive.pgpostings): the matches past the sealed chunks (the newest ids,
    at most TAIL_MAX) through the range indexes, then each sealed chunk's ids of the
    unit's words, newest chunk first, as many chunks as the counts in the postings' key
    say are needed (a word's count per chunk, the most of its forms': at least what
    their union holds), all in one statement. A medium word's 4,000 newest matches are
    then a few dozen rows read, not 4,000 rows found through the GIN index and read for
    their ids (docs/team.md, "Round eleven").

    None when the postings cannot answer, or would not answer sooner: not a unit of
    single words, no chunk sealed, too many ids past them (TAIL_MAX) or, by the
    statistics, most of the matches wanted there (TAIL_SHARE), or a chunk unsealed since
    the search's first statement read how many are (the statement checks, in its own
    snapshot): the GIN index then does."""
    low = conn.sealed  # the ids below are in the postings
    lexemes = plain_lexemes(query)
    if lexemes is None or not low or newest + 1 - low > TAIL_MAX:
        return None
    if (_share(conn, query) or 0.0) * (newest + 1 - low) >= SELECTIVE * TAIL_SHARE:
        return None  # most of them past the postings: the index reads them alike
    branches = []
    for k in range(newest // RANGE, low // RANGE - 1, -1):
        part = _in_range("m.id", k) + (f" AND m.id >= {low}" if low > k * RANGE else "")
        branches.append(
            f"(SELECT m.id FROM messages m WHERE {VECTOR} @@ ?::tsquery AND {part}"
            f" ORDER BY m.id DESC LIMIT {SELECTIVE})"
        )
    words = _text_array(lexemes)
    # The chunks holding ids below `low`: those whole below it, and the one it is in,
    # sealed up to it, when it is not at a chunk's start.
    whole = low // CHUNK
    last = whole if low % CHUNK else whole - 1
    # Plain index scans stay on: the postings' counts (`keys`) are then read from their
    # key alone (an index-only scan, `n` is in it), not from one heap page a chunk as a
    # bitmap scan must (0.5 ms of a 1.4 ms probe for `the` at 1 GB, 204 chunks). The
    # tail's branches still take the range index's bitmap, combined with the primary
    # key's for the ids past the postings (measured with 3,170 ids there).
    rows = conn.execute_without(
        "enable_seqscan",
        f"WITH tail AS MATERIALIZED (SELECT id FROM ({' UNION ALL '.join(branches)}) u"
        f" LIMIT {SELECTIVE}),"
        " keys AS MATERIALIZED (SELECT chunk, max(n) AS n FROM postings"
        f" WHERE lexeme = ANY(?::text[]) AND chunk <= {last} GROUP BY chunk),"
        " need AS MATERIALIZED (SELECT chunk FROM (SELECT chunk,"
        " sum(n) OVER (ORDER BY chunk DESC) - n AS before FROM keys) w"
        f" WHERE before < {SELECTIVE} - (SELECT count(*) FROM tail))"
        f" SELECT -1, {_SEALED}, (SELECT array_agg(id ORDER BY id DESC) FROM tail)::text"
        " UNION ALL SELECT p.chunk, p.n, p.ids::text FROM postings p"
        " WHERE p.lexeme = ANY(?::text[]) AND p.chunk IN (SELECT chunk FROM need)",
        [*([query] * len(branches)), words, words],
    )
    head = next(row for row in rows if int(row[0]) < 0)
    if int(head[1]) != low:
        return None  # a chunk was written again or sealed further since newest_id()
    ids = _ids(head[2])
    chunks: dict[int, list[str]] = {}
    for row in rows:
        if int(row[0]) >= 0:
            chunks.setdefault(int(row[0]), []).append(row[2])
    for chunk in sorted(chunks, reverse=True):
        if len(ids) >= SELECTIVE:
            break
        lists = [_ids(text) for text in chunks[chunk]]
        ids += lists[0] if len(lists) == 1 else sorted(set().union(*lists), reverse=True)
    found = ids[:SELECTIVE]
    count = len(found)
    return (found[:keep] if count >= SELECTIVE else found), count, found[-1] if found else None


def _ids(text: str | None) -> list[int]:
    """An array of ids as the server writes it (`{3,2,1}`; never a NULL in it): read at
    once, not item by item as parse_array() must (4,000 ids: ~0.3 ms, not ~3.5)."""
    return [] if not text or text == "{}" else list(map(int, text[1:-1].split(",")))


def _remember(conn: Any, query: str, matches: float) -> None:
    if len(conn.matches) >= REMEMBER:
        conn.matches.clear()
    conn.matches[query] = matches


def _from_the_index(conn: Any, query: str, wanted: int) -> bool:
    """Whether the newest `wanted` matches of `query` are best found by sorting all its
    matches from the index (else: the planner picks, for a common query the ids newest
    first). The planner knows how many rows match but not that testing a row reads
    and decompresses its vector (a few µs): for a query in some percent of the
    messages it walks tens of thousands of rows where the index has a few thousand.
    Sorting M matches costs about M rows read; walking, wanted * total / M rows
    tested, each several times dearer. M comes from probe() (a unit's count, or its
    estimate; an AND of units: its least common one), so it is known only for the
    queries search.py has probed; it only chooses the plan, never the rows."""
    known = [conn.matches.get(part) for part in query.split(" & ")]
    matches = min((m for m in known if m is not None), default=None)
    if matches is None:
        return False
    total = float(conn.matches.get("", 0.0))
    return bool(matches * matches <= WALK_COST * wanted * total)


def _newest(
    conn: Any, columns: str, query: str, filters: Filters, limit: int, offset: int = 0
) -> list[Any]:
    """The rows of the newest `limit` messages matching `query` (after `offset`), newest
    first, in one statement (see the module's docstring). `m.id + 0` hides the order of
    the primary key from the planner, when all the index's matches are to be sorted."""
    joins, where, params = _filters(filters)
    among = _among(conn, query)
    table: tuple[str, list[Any]] = ("messages", [])
    if among is not None and len(among) <= PREFETCH:
        if not among:
            return []  # no message holds every part
        # Those few rows read by id, each one's vector tested: not the other parts'
        # posting lists (OFFSET 0 keeps the planner from merging the two).
        table = ("(SELECT * FROM messages WHERE id = ANY(?) OFFSET 0)", [sorted(among)])
    elif among is not None:
        where += " AND m.id = ANY(?)"
        params.append(sorted(among))
    from_the_index = _from_the_index(conn, query, limit + offset)
    small = filters.runs is not None and filters.runs.share < SPAN_SHARE
    if among is None and not from_the_index and small:
        return _newest_in_spans(conn, columns, query, filters, limit, offset)
    order = "m.id + 0" if from_the_index else "m.id"
    if among is None and from_the_index and filters.runs and not small:
        newest = int(conn.matches.get("") or newest_id(conn))
        if _by_range(conn, newest):
            return _newest_by_range_in(conn, columns, query, filters, limit, offset, newest)
    if among is None and filters.transcript_project and small:
        # The project's messages as a bitmap of the session index, ANDed with the
        # word's: only the project's matches are read from the table, not every
        # match's row to test its session (see _sessions()).
        joins, where, params = _filters(filters._replace(transcript_project=None))
        where += " AND m.session_pk = ANY(?::int[])"
        params.append(_sessions(conn, filters))
        return list(
            conn.execute_without(
                "enable_indexscan, enable_seqscan",
                f"SELECT {columns} FROM messages m{joins} WHERE {VECTOR} @@ ?::tsquery{where}"
                f" ORDER BY {order} DESC LIMIT ? OFFSET ?",
                [query, *params, limit, offset],
            )
        )
    if among is None and from_the_index and not joins:
        newest = int(conn.matches.get("") or newest_id(conn))
        if _by_range(conn, newest):
            return _newest_by_range_rows(
                conn, columns, query, (where, params), limit + offset, newest
            )[offset:]
    return list(
        conn.execute(
            f"SELECT {columns} FROM {table[0]} m{joins} WHERE {VECTOR} @@ ?::tsquery{where}"
            f" ORDER BY {order} DESC LIMIT ? OFFSET ?",
            [*table[1], query, *params, limit, offset],
        ).fetchall()
    )


def _and_floor(conn: Any, query: str, wanted: int, newest: int) -> int:
    """The id above which the `wanted` newest matches of an AND of units likely are:
    its share of the messages taken as the product of its units' shares (those
    probe() counted or estimated; an unknown one as every message), SPAN times the
    span that share says. It only chooses where to look first: when fewer are there,
    _segments() goes on deeper."""
    total = float(conn.matches.get("") or newest) or 1.0
    share = 1.0
    for part in query.split(" & "):
        matches = conn.matches.get(part)
        if matches is not None:
            share *= min(1.0, max(float(matches), 1.0) / total)
    return max(0, newest - math.ceil(SPAN * wanted / share))


def _newest_by_range_rows(
    conn: Any,
    columns: str,
    query: str,
    filtered: tuple[str, list[Any]],
    wanted: int,
    newest: int,
) -> list[Any]:
    """_newest()'s rows for a query whose matches would be sorted from the index and
    no project to test (an AND of units whose least common is in a few percent of
    the messages, `kubernetes deploy`): its newest `wanted` matches asked of each id
    range's index in turn (RANGE_INDEX), newest first, above the floor its units'
    shares give (_and_floor()) and deeper only when needed (_segments()), SEGMENTS
    parts a statement under one LIMIT, as _newest_by_range() asks a unit's. Sorting
    every match instead reads each one's row: at 1 GB 14,759 rows (~100 ms) for the
    thousand newest of `kubernetes deploy`. `filtered` is _filters()' condition on
    the message and its parameters (a role, a time, a project's id bounds)."""
    where, params = filtered
    segments = _segments(newest, _and_floor(conn, query, wanted, newest))
    rows: list[Any] = []
    while len(rows) < wanted:
        parts = list(islice(segments, SEGMENTS))
        if not parts:
            break
        want = wanted - len(rows)
        branches = " UNION ALL ".join(
            f"(SELECT {columns} FROM messages m WHERE {VECTOR} @@ ?::tsquery AND {part}{where}"
            f" ORDER BY m.id DESC LIMIT {want})"
            for part in parts
        )
        rows += conn.execute_without(
            "enable_seqscan, enable_indexscan",
            f"SELECT * FROM ({branches}) u LIMIT {want}",
            [value for _ in parts for value in (query, *params)],
        )
    return rows


def _newest_by_range_in(
    conn: Any, columns: str, query: str, filters: Filters, limit: int, offset: int, newest: int
) -> list[Any]:
    """_newest() for a query whose matches are sorted from the index, in a project
    holding a large share of the messages (Filters.runs): the matches of each id
    range (RANGE_INDEX) in turn, newest first, each tested for the project, in one
    statement (a UNION ALL under one LIMIT: the server stops at the range that brings
    the last row wanted). A project's newest matches are among the newest few
    thousand of the word's, so only those ranges' matches are read, not all of them."""
    assert filters.runs is not None and filters.transcript_project
    # The project tested as a filter on each match's session (a hashed array: a join
    # costs each row a lookup, and its sessions as a bitmap would be most messages').
    joins, where, params = _filters(filters._replace(transcript_project=None))
    where += " AND m.session_pk + 0 = ANY(?::int[])"
    params.append(_sessions(conn, filters))
    first, last = filters.runs.bounds
    ranges = range(min(last, newest) // RANGE, first // RANGE - 1, -1)
    branches = " UNION ALL ".join(
        f"(SELECT {columns} FROM messages m{joins} WHERE {VECTOR} @@ ?::tsquery"
        f" AND {_in_range('m.id', k)}{where} ORDER BY m.id DESC LIMIT ?)"
        for k in ranges
    )
    return list(
        conn.execute_without(
            "enable_indexscan, enable_seqscan",
            f"SELECT * FROM ({branches}) u LIMIT ? OFFSET ?",
            [*(value for _ in ranges for value in (query, *params, limit + offset)), limit, offset],
        )
    )


def _sessions(conn: Any, filters: Filters) -> list[int]:
    """The ids of the project's sessions (those for_project() listed with its runs, else
    asked once a search). Given as an array, the planner estimates from the session
    index's statistics how many messages they hold; as a subquery, it guesses, and
    walks the session index testing every message's vector."""
    if filters.runs is not None and filters.runs.sessions:
        return list(filters.runs.sessions)
    project = filters.transcript_project
    known: list[int] | None = conn.answers.get(("sessions", project))
    if known is None:
        rows = conn.execute("SELECT id FROM sessions WHERE project = ?", [project]).fetchall()
        known = conn.answers[("sessions", project)] = [int(row[0]) for row in rows]
    return known


def _newest_in_spans(
    conn: Any, columns: str, query: str, filters: Filters, limit: int, offset: int
) -> list[Any]:
    """_newest() for a query walked newest first in a project holding a small share of
    the messages (Filters.runs): only its spans' ids are walked, a span at a time,
    newest first, in one statement (a walk of the whole table would test every other
    project's newer rows first: seconds at 1 GB for a project's common word). The
    vector is tested as a filter (coalesce() keeps the planner from asking the
    word's whole posting list for each span); the project is still tested for what
    matches (a span may hold another project's ids)."""
    assert filters.runs is not None
    spans = filters.runs.spans
    joins, where, params = _filters(filters._replace(runs=None))
    return list(
        conn.execute(
            "SELECT x.* FROM unnest(?::int[], ?::int[]) AS r (lo, hi) CROSS JOIN LATERAL"
            f" (SELECT {columns} FROM messages m{joins} WHERE m.id BETWEEN r.lo AND r.hi"
            f" AND coalesce({VECTOR}, ''::tsvector) @@ ?::tsquery{where}"
            " ORDER BY m.id DESC LIMIT ?) AS x LIMIT ? OFFSET ?",
            [
                [lo for lo, _ in spans],
                [hi for _, hi in spans],
                query,
                *params,
                limit + offset,
                limit,
                offset,
            ],
        ).fetchall()
    )


def _among(conn: Any, query: str) -> set[int] | None:
    """The only messages an AND of units' queries can match, when the search's probes
    sent every match of some of them (units in fewer than SELECTIVE messages): the
    messages holding all of those. None when no part's matches are all known. A query
    of a rare word and common ones asks only among the rare word's few matches, not
    of the common words' whole posting lists (10 ms and more at 1 GB), and one whose
    rare words are never together asks nothing."""
    among: set[int] | None = None
    for part in query.split(" & "):
        ids: list[int] | None = conn.answers.get(("ids", part))
        probed = conn.answers.get(("probe", part))
        if (
            ids is None
            or probed is None
            or probed[0] >= _target(conn, part)
            or len(ids) != probed[0]
        ):
            continue
        among = set(ids) if among is None else among & set(ids)
    return among


def count_upto(conn: Any, query: str, cap: int) -> int:
    """How many messages match `query`, counted up to `cap`."""
    if cap <= SELECTIVE:
        count = _probe_ahead(conn, query)[0]
        if count < _target(conn, query) or cap <= count:  # else counted short of `cap`
            return min(count, cap)
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM messages m WHERE {VECTOR} @@ ?::tsquery LIMIT ?) x",
        [query, cap],
    ).fetchone()
    return int(row[0])


def probe(conn: Any, query: str, selective: int) -> tuple[int | None, int]:
    """The id of the query's `selective`-th newest match (None when it has fewer) and
    how many matches it has up to `selective`, in one statement: the server walks the
    ids newest first for a common query and sorts the few matches of a rare one
    (with what count_upto() and candidates() ask next: _probe_ahead())."""
    if selective == SELECTIVE:
        row: Any = _probe_ahead(conn, query)
        selective = _target(conn, query)  # a phrase's probe counts to RERANK
    else:
        row = conn.execute(
            f"SELECT count(*), min(id) FROM (SELECT m.id FROM messages m WHERE {VECTOR}"
            " @@ ?::tsquery ORDER BY m.id DESC LIMIT ?) x",
            [query, selective],
        ).fetchone()
    count = int(row[0])
    if count < selective:
        _remember(conn, query, count)
        return None, count
    kth = int(row[1])
    total = conn.matches.get("") or newest_id(conn)
    _remember(conn, query, selective * total / max(1, total - kth + 1))
    return kth, count


def _newest_known(conn: Any, query: str, filters: Filters, limit: int) -> list[int] | None:
    """The ids of the query's newest `limit` matches, when _probe_ahead() knows them:
    in a project whose runs are known (Runs.exact; no other filter), those of its
    ids inside the runs, when they are all the query's matches or `limit` of them."""
    ids: list[int] | None = conn.answers.get(("ids", query))
    if ids is None:
        return None
    count = conn.answers[("probe", query)][0]
    every = len(ids) == count < _target(conn, query)  # all the query's matches were sent
    if filters.narrows_messages:
        runs = filters.runs
        if filters.role or filters.since or runs is None or not runs.exact:
            return None
        los, his = [lo for lo, _ in runs.exact], [hi for _, hi in runs.exact]
        ids = inside_runs(sorted(ids), los, his)[::-1]
        return ids[:limit] if every or len(ids) >= limit else None
    if limit > len(ids) and not every:
        return None  # more are wanted than were sent
    return ids[:limit]


def candidates(conn: Any, query: str, filters: Filters, limit: int) -> list[Any]:
    """The newest `limit` messages matching `query`: id, text, terms, role."""
    ids = _newest_known(conn, query, filters, limit)
    if ids is None:
        return _newest(conn, "m.id, m.text, m.terms, m.role", query, filters, limit)
    rows: list[Any] | None = conn.answers.get(("rows", query))
    if filters.narrows_messages:  # a project's: those of its ids (texts() knows the rows sent)
        return texts(conn, ids)
    if rows is not None:
        return rows[:limit]
    return list(
        conn.execute(
            "SELECT id, text, terms, role FROM messages WHERE id = ANY(?) ORDER BY id DESC",
            [ids],
        ).fetchall()
    )


def texts(conn: Any, ids: list[int]) -> list[Any]:
    """The rows (id, text, terms, role) of the messages `ids`, in that order: those the
    search's probes sent along already (a rare unit's matches, a one-word query's
    candidates) from memory, the others asked by id. A query of a few rare words ranks
    its second tier among its units' matches, whose rows its probes sent."""
    known: dict[int, Any] = {}
    for key, rows in conn.answers.items():
        if type(key) is tuple and key[0] == "rows":
            known.update((row[0], row) for row in rows)
    missing = [rowid for rowid in ids if rowid not in known]
    if missing:
        known.update(
            (row[0], tuple(row))
            for row in conn.execute(
                "SELECT id, text, terms, role FROM messages WHERE id = ANY(?)", [missing]
            ).fetchall()
        )
    return [known[rowid] for rowid in ids if rowid in known]


def rowids(conn: Any, query: str, filters: Filters, limit: int) -> list[int]:
    """The ids of the newest `limit` messages matching `query`."""
    ids = _newest_known(conn, query, filters, limit)
    if ids is None:
        return [int(row[0]) for row in _newest(conn, "m.id", query, filters, limit)]
    return ids


def newest_in_span(conn: Any, query: str, lo: int, hi: int, limit: int) -> list[int]:
    """The ids of the newest `limit` messages matching `query` among the ids from `lo`
    to `hi` (a project's span: search._probe_listing()), asked of the index: not from
    what a probe over the whole archive sent (_newest_known()), whose ids may lie
    outside the span."""
    span = Filters(runs=Runs(((lo, hi),), 1.0))
    return [int(row[0]) for row in _newest(conn, "m.id", query, span, limit)]


def in_lexicon(conn: Any, words: list[str]) -> list[str]:
    """Which of `words` the archive's words hold (table lexicon, kept by the server's
    triggers: migration 0016), in one statement: a GIN index answers each word with a
    bitmap scan, ~1-6 ms (a query word's misspellings are ~50 per letter)."""
    if not words:
        return []
    folded = sorted({fold(word) for word in words})  # as the lexicon holds them
    found = {
        row[0]
        for row in conn.execute(
            f"SELECT term FROM lexicon WHERE term IN ({','.join('?' * len(folded))})", folded
        ).fetchall()
    }
    return [word for word in words if fold(word) in found]
