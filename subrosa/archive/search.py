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
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, repeat
from operator import ge

from subrosa.archive.conversation import session_label
from subrosa.fold import fold
from subrosa.lazyre import compile_lazily
from subrosa.query import (
    MAX_UNITS,
    Alt,
    Filters,
    Runs,
    Unit,
    alt_shown,
    any_of,
    one_line,
    pieces,
    significant,
    snippet_pattern,
    text_snippet,
)
from subrosa.terms import EMOJI, SYMBOL, TYPO_MAX, TYPO_MIN, is_stopword, one_typo_away

# Not typing at run time: `subrosa search` imports this module (subrosa.tuples says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from subrosa.tuples import NamedTuple

Spans = tuple[tuple[int, int], ...]
# A project (Filters.runs) holding less than this share of the messages is searched
# span by span or by a walk of its matches' ids (for_project, _spans()); runs fewer
# than MERGE_GAP ids apart are one span.
SPAN_SHARE = 0.125
MERGE_GAP = 64
# A project holding 2 * SPAN_SHARE of the sessions or more is searched within its first
# and last id when they are among the ENDS oldest and newest messages (for_project()).
ENDS = 256
# A span's query costs about as much as reading this many ids of a walk (at 1 GB,
# ~0.2-0.3 ms against ~0.5 µs: with it, each choice for bench/projects.py's queries was
# the faster). A walk reads at first WALK_AHEAD times as many ids as the project's share
# says hold the matches wanted, WALK_BATCH at least, then twice as many each time
# (_walk_spans()).
SPAN_COST = 400
WALK_AHEAD = 1.25
WALK_BATCH = 2000
# A unit in fewer messages than this is "selective": all its matches can be listed,
# and FTS5's own bm25 ranks them exactly and cheaply. Otherwise bm25 would count the
# unit's documents over its whole doclist (~0.1-0.3 s for a word in most of a million
# messages) and score every match: the newest RERANK matches are ranked here instead.
SELECTIVE = 4000
# In an archive of more messages than this, a phrase is counted to its RERANK-th match
# only, not SELECTIVE: FTS5 tests its positions in every message holding its words, and
# counting a phrase of common words walks them all (_counted()). In a smaller archive
# that walk costs little (~11 ms for 100,000 messages of the 1 GB bench's, its words in
# 85 % of them), and a phrase is counted as a word is.
PHRASES_COUNTED = 100_000
# In an archive of more messages than this, a search of one project whose messages lie
# in one span of ids (a project holding SPAN_SHARE of them or more: for_project())
# counts a unit whose matches cost to walk (a phrase, a prefix: _costly()) within that
# span, not over the archive: its newest matches there are what the first tier ranks,
# so one walk gives both its count and its candidates (_probe_listing()), where counting
# over the archive walked the newest messages of every project first (`"dependency
# the"` in the oldest of the 1 GB bench's four projects: 40 ms, then 48 ms for the
# project's own). Its document frequency is then the span's, over the span's ids.
PROJECT_COUNTED = 100_000
# A --limit past these windows (RERANK, RERANK_BEST, RERANK_SOME) widens them to the
# limit, so `--limit 5000` returns 5,000 results when that many messages match.
RERANK = 1000
# When every unit is selective, FTS5's bm25 picks this many of all matches, to be ranked
# here (forms, tool output, copies).
RERANK_BEST = 200
# The second tier ranks this many of the messages holding some units, those holding the
# rarest (by the sum of the idf of the units each holds; ties: the newest).
RERANK_SOME = 300
# Windows of `limit` messages may make fewer results (copies fold into one, a session's
# messages into one with --sessions): they widen to this many times `limit` at most.
WIDEN = 8
BM25_K1, BM25_B = 1.2, 0.75
# A match by another form than the one typed ("costs" for "cost", "pre commit" for
# "precommit") counts this much of an exact one: the exact form ranks first.
VARIANT = 0.6
# A word typed as one is also looked for cut in two ("precommit": "pre commit") when
# it is in fewer messages than this: cuts of a common word are mostly noise.
SPLIT_BELOW = 10
# Messages whose first or last DUP_PREFIX characters are the same (lowercase, spaces
# and digits left out: line numbers, times, counts) are copies of one text: one result
# says how many and where, counted among the best DUP_WINDOW matches (a common word
# has thousands of matches).
DUP_PREFIX = 200
DUP_WINDOW = 300
_SPACES_DIGITS = b"0123456789 \t\n\r\f\v"
# The assistant's reply to one of the REPLY_PARENTS best first-tier messages that are
# the user's (words typed or pasted, or a tool's output) is ranked among them: its own
# bm25 plus REPLY of that message's score. The explanation of an error rarely repeats
# the error. The reply is the assistant's first words after it (after any tool calls)
# and, to a prompt, also its last words before the next prompt (within REPLY_REACH
# messages): "let me look" comes first, what was found and fixed last.
REPLY = 0.5
REPLY_PARENTS = 20
REPLY_REACH = 100
# The messages after each parent are read REPLY_FIRST at first (most replies come
# within a few), the rest up to REPLY_REACH only for the parents whose walk did not end
# in those: on a server each message read costs, where most walks end in a few.
REPLY_FIRST = 12
_PREFIX = 200  # enough of a text to tell a tool call or output (is_tool_io)
# Every word of the query in one message is evidence that the message is about them
# together only when they stand near each other: a long summary, plan or log that
# holds each word somewhere (a page apart) ranks in the second tier, by its bm25 among
# the messages holding some of the words. "Near": within NEAR characters, about a
# paragraph. The best NEAR_CHECKED first-tier messages are checked (the rest are below
# the page, and finding the words' places costs Python time).
NEAR = 600
NEAR_CHECKED = 100
_PLACES = 100  # the places of one unit looked at in a text
# A tool call or a tool's output ranks below what was said, by this much: people look
# for the conversation (what was explained, decided, reported); tool output is most of
# an archive, long and repetitive, and still found, only after the words around it.
TOOL_IO = 0.5
# A word the archive holds in no form is read as at most READ_AS of the archive's words
# one typo away, those in the most messages first (read_misspelt()).
READ_AS = 3
# ... leaving out a reading in fewer than 1/READ_RARER of the messages the first is in:
# an archive holds stray fragments one edit from a real word (`kubernete`, `webpa`: a
# cut-off tool output's last word), which a person never meant when the word is there.
READ_RARER = 100
# The first MISSPELT such words of a query are read so (a person misspells a word or
# two; a pasted page of unknown words would cost ~50 lookups a letter each).
MISSPELT = 4
_TOOL_CALL = compile_lazily(r"\[(?!image\])[A-Za-z][\w.:-]*\] ")
_TOOL_OUTPUT = ("[tool result]", "[tool error]")


class Stats(NamedTuple):
    """A query unit as the archive sees it: the alternatives the index holds, its FTS5
    expression, and how many messages hold it."""

    unit: Unit
    expr: str  # "" when no alternative is in the index
    alts: tuple[Alt, ...]
    # The rowid of its newest match counted last (the SELECTIVE-th, a phrase's RERANK-th:
    # _counted()) when it has more; None: every match was counted.
    kth: int | None
    df: float
    idf: float
    # The ids of its newest matches (RERANK or SELECTIVE of them), as FTS5 listed them
    # ("3,2,1"), when its probe's walk read them (_probe_listing(): a phrase or a
    # prefix, whose matches cost to walk): the tiers take its newest matches from them
    # (_newest_listed()), not from a walk again.
    newest: str = ""


Row = tuple[int, str, "str | None", str]  # a candidate: row id, text, terms, role


class Hit(NamedTuple):
    """A ranked message: its row id, score, tier (1: every required unit, 2: some), and
    whether it gained as the reply to a first-tier message."""

    rowid: int
    score: float
    tier: int
    reply: bool = False


# ---------------------------------------------------------------- SQL


def _untested(filters: Filters) -> Filters:
    """`filters` without its project when its runs say every id in them is the
    project's (Runs.whole): the rowid range alone keeps the project's messages, and a
    match needs no join to its session (~0.5-4 ms of a project's search at 1 GB)."""
    if filters.runs is not None and filters.runs.whole:
        return filters._replace(transcript_project=None)
    return filters


def _message_filters(filters: Filters, ranged: bool = True) -> tuple[str, str, list[Any]]:
    """The joins, conditions and parameters that keep the messages `filters` allows
    (`ranged`: within its runs' first and last id too)."""
    filters = _untested(filters)
    joins, where = "", ""
    params: list[Any] = []
    if filters.narrows_messages:
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
    if filters.runs and ranged:
        where += " AND f.rowid BETWEEN ? AND ?"
        params += filters.runs.bounds
    return joins, where, params


def _spans(
    conn: sqlite3.Connection, match: str, filters: Filters, limit: int, df: float | None = None
) -> str:
    """How to find the newest `limit` matches of `match` in a project (Filters.runs):
    "all" (test each match newest first against its project: the project holds
    SPAN_SHARE of the messages or more, ~1/share matches tested for each kept), else
    "spans" (ask the index within each span of the project, newest first: a query
    each, ~0.2-0.3 ms at 1 GB) or "walk" (read the matches' ids newest first, keep
    those in one of its runs: ~0.5 µs each), whichever is expected to cost less: a
    common word fills `limit` in its first few spans, a rarer one's matches are fewer
    than the spans."""
    runs = filters.runs
    if runs is None or runs.share >= SPAN_SHARE or not runs.exact:
        return "all"
    if df is None:  # how many messages match (a unit's: unit_stats() counted them)
        kth, matches = _probe(conn, match)
        total = _newest_id(conn)
        df = float(matches) if kth is None else SELECTIVE * total / max(1, total - kth + 1)
    walked = min(df, limit / max(runs.share, 1e-9))
    asked = min(len(runs.spans), len(runs.spans) * limit / max(1.0, df * runs.share))
    return "spans" if asked * SPAN_COST < walked else "walk"


def _in_spans(
    conn: sqlite3.Connection, select: str, match: str, filters: Filters, limit: int
) -> list[Any]:
    """The newest `limit` rows of `select` (ending in its FROM and joins) for `match`,
    asked of each span of the project in turn, newest first, until there are enough."""
    assert filters.runs is not None
    _, where, params = _message_filters(filters, ranged=False)
    out: list[Any] = []
    for lo, hi in filters.runs.spans:
        out += conn.execute(
            f"{select} WHERE messages_fts MATCH ?{where} AND f.rowid BETWEEN ? AND ?"
            " ORDER BY f.rowid DESC LIMIT ?",
            [match, *params, lo, hi, limit - len(out)],
        ).fetchall()
        if len(out) >= limit:
            break
    return out


def _walk_spans(conn: sqlite3.Connection, match: str, filters: Filters, limit: int) -> list[int]:
    """The ids of the newest `limit` matches of `match` in the project: the index's
    ids read newest first, those inside one of the project's runs kept (Runs.exact:
    no other project's message is in one, so the project needs no test; the other
    filters are tested, a batch at a time). The batches' sizes: see WALK_AHEAD; each
    is read as one string (_listed())."""
    assert filters.runs is not None and filters.runs.exact
    los = [lo for lo, _ in filters.runs.exact]
    his = [hi for _, hi in filters.runs.exact]
    others = filters._replace(transcript_project=None)
    size = max(WALK_BATCH, math.ceil(WALK_AHEAD * limit / max(filters.runs.share, 1e-9)))
    top = his[-1]
    out: list[int] = []
    while len(out) < limit:
        found, lowest, count = _listed(conn, match, size, los[0], top)
        if not count:
            break
        inside = _passing(conn, inside_runs(sorted(map(int, found.split(","))), los, his), others)
        out += reversed(inside)
        if count < size:
            break
        top, size = lowest - 1, 2 * size
    return out[:limit]


def _passing(
    conn: sqlite3.Connection, ids: list[int], filters: Filters, enough: int | None = None
) -> list[int]:
    """The `ids`, in their order, of the messages passing `filters`' role, time and
    project (not its runs), tested on the rows 500 at a time; only the first batches'
    once `enough` pass."""
    _, where, params = _message_filters(filters, ranged=False)
    if not where:
        return ids
    # CROSS JOIN: the messages by id first (the planner would start from the project).
    tested = _untested(filters).transcript_project
    joins = " CROSS JOIN sessions s ON s.id = m.session_pk" if tested else ""
    test = f"SELECT m.id FROM messages m{joins} WHERE 1{where} AND m.id IN"
    kept: list[int] = []
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        passed = {int(row[0]) for row in _by_id(conn, test, batch, params)}
        kept += [rowid for rowid in batch if rowid in passed]
        if enough is not None and len(kept) >= enough:
            break
    return kept


def inside_runs(ids: list[int], los: list[int], his: list[int]) -> list[int]:
    """The `ids` (ascending) inside one of the runs `los[k]` to `his[k]` (ascending,
    apart), at C speed: each run's ids found by bisecting the ids (a walk reads about
    1/share ids for each kept, and a project's runs in their range are fewer), or,
    when the runs are more, each id's run found by bisecting theirs."""
    if not ids:
        return []
    first, last = bisect_left(his, ids[0]), bisect_right(los, ids[-1])
    if last - first > len(ids):
        below = [-1, *his]  # below[k]: the last id of the run from los[k - 1] (-1: none)
        return list(
            compress(ids, map(ge, map(below.__getitem__, map(bisect_right, repeat(los), ids)), ids))
        )
    out: list[int] = []
    at = 0
    for k in range(first, last):
        start = bisect_left(ids, los[k], at)
        at = bisect_right(ids, his[k], start)
        out += ids[start:at]
    return out


def _pg() -> Any:
    """The same questions asked of a PostgreSQL server (subrosa.archive.pgsearch): each
    function below that speaks FTS5 hands a server's connection over to it."""
    from subrosa.archive import pgsearch

    return pgsearch


# Where a CJK phrase of single characters is looked for: the terms column (a message's
# CJK characters one per token) and the text column, where unicode61 makes a run of one
# character (a Korean word like 두 or 번) a token of its own, as a PostgreSQL server's
# words column does (its text part): "두번" finds "두, 번" on both engines alike.
CJK_COLUMNS = "{text terms}"


def _expr(conn: sqlite3.Connection, unit: Unit, alts: tuple[Alt, ...], total: int = 0) -> str:
    """The index expression matching any of a unit's `alts` (a prefix of one letter, or
    of one character the index folds to a letter, as the OR of its two-letter prefixes:
    _letter(), _one_letter(); in an archive of more than LONG_FROM messages, `total`,
    a prefix past the index's prefixes as the OR of the words it starts:
    _long_prefix())."""
    if not isinstance(conn, sqlite3.Connection):
        return str(_pg().unit_query(unit, alts))
    long = total > LONG_FROM
    if not any(_is_one_letter(alt) or (long and _is_long(alt)) for alt in alts):
        return unit.expr(CJK_COLUMNS, alts)
    return any_of(
        [
            (_one_letter(conn, letter) if (letter := _letter(alt)) else None)
            or (_long_prefix(conn, alt.tokens[0].lower()) if long and _is_long(alt) else None)
            or alt.expr(CJK_COLUMNS)
            for alt in alts
        ]
    )


# What may follow a token's first character in the index, in ASCII: unicode61 keeps
# letters and digits (categories L*, N*, Co) and folds case; all else separates tokens.
_SECONDS = "0123456789abcdefghijklmnopqrstuvwxyz"
# A one-letter prefix followed in the index by more than this many characters past
# ASCII (a Latin letter rarely is: remove_diacritics folds é to e) is merged by FTS5
# as before: its expression would be too long to be worth it.
WIDE_SECONDS = 32
_VOCABULARY = "temp.subrosa_vocabulary"
# A prefix of LONG_MIN characters or more is past the index's own prefixes; in an
# archive of more than LONG_FROM messages it is asked as the words it starts, unless
# they are more than LONG_WORDS (each a seek of the vocabulary and an iterator of the
# query, ~0.1 ms together at 1 GB: merging such a prefix is then the cheaper way, and
# the seeks are what is lost). In a smaller archive the merge costs a few ms at most.
LONG_MIN = 4
LONG_FROM = 100_000
LONG_WORDS = 400
_INSTANCES = "temp.subrosa_instances"


def _is_one_letter(alt: Alt) -> bool:
    """Whether `alt` is a prefix of one character (not CJK): one of _SECONDS, or one the
    index may fold to one (`é*` is `e*`: remove_diacritics)."""
    return alt.prefix and not alt.cjk and len(alt.tokens) == 1 and len(alt.tokens[0]) == 1


def _letter(alt: Alt) -> str | None:
    """The letter or digit of _SECONDS a one-character prefix is in the index (None:
    none, FTS5 merges it as before): itself, or a character past ASCII as the index's
    tokenizer folds it (é, É and ä to e, e and a; ł and ø stay as they are:
    subrosa.fold, FTS5's own table). Without it `ä*` was merged as `a*` is, over the
    whole index (~410 ms at 1 GB, against ~20 ms asked as its two-letter prefixes)."""
    if not _is_one_letter(alt):
        return None
    letter = fold(alt.tokens[0].lower())
    return letter if letter in _SECONDS else None


def _one_letter(conn: sqlite3.Connection, letter: str) -> str | None:
    """`t*` as the OR of the word `t` and of every two-letter prefix the index may hold
    for it (`"t" OR "ta"* OR ... OR "tz"*`): the same matches, each read lazily as a
    word's doclist (the index holds two-letter prefixes: migration 0020), where FTS5
    would merge the doclists of every word starting with t, over the whole index, in
    every statement (`t*`: ~240 ms at 1 GB, however few rows are read). The characters
    past ASCII that follow the letter in the index (`tł`) are read from FTS5's
    vocabulary, one seek each; None (merge as before) when there are more than
    WIDE_SECONDS of them, or the vocabulary cannot be read."""
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCABULARY}"
            " USING fts5vocab(main, messages_fts, row)"
        )
        seconds = list(_SECONDS)
        after, end = letter + "\x80", chr(ord(letter) + 1)
        while True:
            row = conn.execute(
                f"SELECT term FROM {_VOCABULARY} WHERE term >= ? AND term < ? LIMIT 1",
                [after, end],
            ).fetchone()
            if row is None:
                break
            if len(seconds) >= len(_SECONDS) + WIDE_SECONDS:
                return None
            second = row[0][1]
            seconds.append(second)
            following = ord(second) + 1
            if 0xD800 <= following < 0xE000:  # no surrogate is a character
                following = 0xE000
            if following > 0x10FFFF:
                break
            after = letter + chr(following)
    except sqlite3.Error:
        return None
    words = [Alt((letter,), True), *(Alt((letter + c,), True, prefix=True) for c in seconds)]
    return any_of([word.expr(None) for word in words])


def _is_long(alt: Alt) -> bool:
    """Whether `alt` is a prefix past the index's prefixes (two and three characters:
    migration 0020) that _long_prefix() may ask as its words: one token of LONG_MIN
    ASCII letters and digits or more (FTS5 folds those to lowercase and nothing else,
    so the words it starts are those the vocabulary lists after it, byte for byte)."""
    token = alt.tokens[0]
    return (
        alt.prefix
        and not alt.cjk
        and len(alt.tokens) == 1
        and len(token) >= LONG_MIN
        and token.isascii()
        and token.isalnum()
    )


def _long_prefix(conn: sqlite3.Connection, prefix: str) -> str | None:
    """`deploy*` as the OR of the words the index holds that start with it
    (`"deploy" OR "deployed" OR ...`): the same matches, each word's doclist read lazily,
    newest first, where FTS5 merges the doclists of every such word, over the whole
    index, in every statement (`depend*` at 1 GB: ~150-250 ms for its newest 4,000,
    against ~45 ms so). The words are read from FTS5's vocabulary of instances, one
    seek each, in one recursive statement (its rows are read lazily: the vocabulary of
    rows would count each word's doclist first, and `term > w` would read every
    instance of w; `term >= w || char(1)` is the next word, none holding a control
    character); None (merge as before) past LONG_WORDS of them, or when the vocabulary
    cannot be read."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # ASCII: no surrogate, no overflow
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_INSTANCES}"
            " USING fts5vocab(main, messages_fts, instance)"
        )
        words = [
            str(row[0])
            for row in conn.execute(
                "WITH RECURSIVE w(term) AS (SELECT (SELECT term FROM"
                f" {_INSTANCES} WHERE term >= :prefix AND term < :end LIMIT 1) UNION ALL"
                f" SELECT (SELECT v.term FROM {_INSTANCES} v WHERE v.term >= w.term || char(1)"
                " AND v.term < :end LIMIT 1) FROM w WHERE w.term IS NOT NULL)"
                " SELECT term FROM w WHERE term IS NOT NULL LIMIT :most",
                {"prefix": prefix, "end": end, "most": LONG_WORDS + 1},
            )
        ]
    except sqlite3.Error:
        return None
    if not words or len(words) > LONG_WORDS:
        return None  # nowhere (merged: FTS5 finds nothing at once), or too many
    return any_of([Alt((word,), False).expr(None) for word in words])


def _all_of(conn: sqlite3.Connection, exprs: list[str]) -> str:
    if not isinstance(conn, sqlite3.Connection):
        return str(_pg().all_of(exprs))
    return " AND ".join(exprs)


def _count_upto(conn: sqlite3.Connection, expr: str, cap: int) -> int:
    """How many messages match `expr`, counted up to `cap` (newest first, lazily)."""
    if not isinstance(conn, sqlite3.Connection):
        return int(_pg().count_upto(conn, expr, cap))
    row = conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT ?)",
        [expr, cap],
    ).fetchone()
    return int(row[0])


def _probe(conn: sqlite3.Connection, expr: str, cap: int = SELECTIVE) -> tuple[int | None, int]:
    """The rowid of the expression's `cap`-th newest match (None when it has fewer)
    and how many matches it has up to `cap` (FTS5 walks doclists newest-first lazily:
    this reads `cap` entries at most). A server answers both at once, counting a unit
    to what pgsearch._target() says, as _counted() does here."""
    if not isinstance(conn, sqlite3.Connection):
        found: tuple[int | None, int] = _pg().probe(conn, expr, SELECTIVE)
        return found
    row = conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        [expr, cap - 1],
    ).fetchone()
    if row is not None:
        return int(row[0]), cap
    return None, _count_upto(conn, expr, cap)


def _costly(alts: tuple[Alt, ...]) -> bool:
    """Whether walking the matches of `alts` costs: FTS5 tests a phrase's positions in
    every message holding all its words (`"dependency the"`: ~90 ms for all its 4,026
    matches at 1 GB, its two words each in 84-86 % of the messages) and merges the
    doclists of every word a prefix of one letter or of four or more starts (the index
    holds those of two and three: migration 0020); a word's doclist is read straight
    (0.4 ms)."""
    return any(len(alt.tokens) > 1 or alt.prefix for alt in alts)


def _listed(
    conn: sqlite3.Connection, expr: str, cap: int, lo: int = 0, hi: int | None = None
) -> tuple[str, int, int]:
    """The ids of the newest `cap` matches of `expr` (from `lo` to `hi` when given),
    as FTS5 lists them ("3,2,1": one string, read at ~0.1 µs an id where a row each
    would cost Python ~0.4 µs), the lowest (0: none) and how many."""
    within = "" if hi is None else " AND rowid BETWEEN ? AND ?"
    found, lowest, count = conn.execute(
        "SELECT group_concat(rowid), min(rowid), count(*) FROM (SELECT rowid FROM"
        f" messages_fts WHERE messages_fts MATCH ?{within} ORDER BY rowid DESC LIMIT ?)",
        [expr, *([] if hi is None else [lo, hi]), cap],
    ).fetchone()
    return found or "", int(lowest or 0), int(count)


def _probe_listing(
    conn: sqlite3.Connection,
    expr: str,
    alts: tuple[Alt, ...],
    total: int,
    span: tuple[int, int] | None = None,
) -> tuple[int | None, int, str]:
    """_probe() for an expression whose matches cost to walk (_costly()), listing the
    ids the walk reads for the tiers to take (Stats.newest, _newest_known()) instead of
    walking again. A prefix lists its newest SELECTIVE at once: past the index's 2- and
    3-letter prefixes each statement merges the doclists of every word it starts
    (`config*`: ~14 ms at 1 GB), however few matches it reads. A phrase lists its
    newest RERANK (the first tier's window) in a large archive and is counted no
    further (_counted()). Within a project's `span` of ids (PROJECT_COUNTED) on either
    engine, the same count there; a server sends no list ("": its tiers ask again).
    Returns the rowid of the last match listed when the walk stopped there (None: it
    listed every match), how many it listed, and the list."""
    first = _counted(alts, total)
    if isinstance(conn, sqlite3.Connection):
        found, lowest, count = _listed(conn, expr, first, *(span or ()))
    else:
        assert span is not None  # a server's unit is listed only within a span
        ids: list[int] = _pg().newest_in_span(conn, expr, *span, first)
        found, lowest, count = "", (ids[-1] if ids else 0), len(ids)
    return (lowest if count >= first else None), count, found


def project_span(filters: Filters | None) -> tuple[int, int] | None:
    """The first and last id of the project a search is limited to, when its messages
    are searched as one span (Runs without `exact`: for_project())."""
    runs = None if filters is None else filters.runs
    return runs.bounds if runs is not None and not runs.exact else None


def _counted(alts: tuple[Alt, ...], total: int) -> int:
    """How many matches a unit's probe counts: SELECTIVE, or RERANK for a phrase (or an
    identifier, also looked for as the phrase of its parts) in an archive of more than
    PHRASES_COUNTED messages (`total`, the newest id). FTS5 tests a phrase's
    positions in every message holding all its words, so counting its matches walks
    every such message: `"deploy the"` has 3,685 matches at 1 GB, spread over the whole
    archive, its words each in 84-86 % of the messages; its count took ~90 ms, and
    FTS5's bm25() over them (every unit selective) walked twice more, 288 ms in all.
    With more than RERANK matches a phrase is ranked as a common word is, by its newest
    RERANK matches, its document frequency estimated from how far back they reach. A
    server's probe counts a phrase to RERANK as well (pgsearch._target(), told by its
    query): both engines rank alike."""
    phrase = any(len(alt.tokens) > 1 for alt in alts) and not any(alt.prefix for alt in alts)
    return min(RERANK, SELECTIVE) if phrase and total > PHRASES_COUNTED else SELECTIVE


def _newest_id(conn: sqlite3.Connection) -> int:
    # Ids are dense (ingest hands them out in order), so the newest id is the count;
    # count(*) would read the whole table.
    if not isinstance(conn, sqlite3.Connection):
        return int(_pg().newest_id(conn))
    row = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
    return int(row[0])


def _existing(conn: sqlite3.Connection, alts: tuple[Alt, ...]) -> tuple[Alt, ...]:
    """The alternatives the index holds (one statement per hundred: a lookup each;
    SQLite allows 2,000 columns in a result)."""
    if not isinstance(conn, sqlite3.Connection):
        return tuple(_pg().existing(conn, alts))
    probe = "(SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1)"
    found: list[Alt] = []
    for start in range(0, len(alts), 100):
        batch = alts[start : start + 100]
        row = conn.execute(
            f"SELECT {', '.join([probe] * len(batch))}", [alt.expr(CJK_COLUMNS) for alt in batch]
        ).fetchone()
        found += [alt for alt, hit in zip(batch, row, strict=True) if hit]
    return tuple(found)


Cache = dict[Unit, Stats]


def unit_stats(
    conn: sqlite3.Connection,
    units: Iterable[Unit],
    cache: Cache | None = None,
    texts_of: Unit | None = None,
    span: tuple[int, int] | None = None,
) -> list[Stats]:
    """Each unit with the alternatives the index holds and its document frequency:
    counted when selective, else estimated from how far back its newest matches reach
    (SELECTIVE of them, RERANK of a phrase's: _counted()). Alternatives that are
    nowhere (most generated forms) are dropped here, so the queries that follow look
    up only real terms. `cache` keeps what one
    search already asked. On a server, the probe of `texts_of` (the first tier's only
    required unit) sends its candidates' rows along (pgsearch.texts_ahead()).
    `span`: the first and last id of the project searched, when its messages are one
    span (project_span()): a unit that costs to walk is counted there (PROJECT_COUNTED).
    Every call of one search passes the same `span` with the same `cache`."""
    cache = {} if cache is None else cache
    units = list(units)
    total = -1
    out = []
    for unit in units:
        if unit in cache:
            out.append(cache[unit])
            continue
        if total < 0:
            total = _newest_id(conn)
            if not isinstance(conn, sqlite3.Connection):  # one round trip for all units
                ahead = [u for u in units if u not in cache]
                _pg().existing_ahead(conn, tuple(a for u in ahead for a in (*u.alts, *u.splits)))
        if texts_of is not None:
            _pg().texts_ahead(conn, unit == texts_of)
        # A prefix alone on SQLite: its probe's one walk says whether the index holds
        # it (past the index's prefixes each statement merges every word it starts:
        # _probe_listing()).
        prefix = isinstance(conn, sqlite3.Connection) and all(alt.prefix for alt in unit.alts)
        alts = unit.alts if prefix else _existing(conn, unit.alts)
        if unit.splits and not (
            alts and _count_upto(conn, _expr(conn, unit, alts, total), SPLIT_BELOW) >= SPLIT_BELOW
        ):
            alts += _existing(conn, unit.splits)
        expr = _expr(conn, unit, alts, total) if alts else ""
        newest = ""
        size, top = total, total  # the ids counted over, and the newest of them
        within = span if span and total > PROJECT_COUNTED and _costly(alts) else None
        if not expr:
            kth, matches = None, 0
        elif within is not None:
            kth, matches, newest = _probe_listing(conn, expr, alts, total, within)
            size, top = within[1] - within[0] + 1, within[1]
        elif isinstance(conn, sqlite3.Connection) and _costly(alts):
            kth, matches, newest = _probe_listing(conn, expr, alts, total)
        else:
            kth, matches = _probe(conn, expr, _counted(alts, total))
        if prefix and not matches and within is None:  # nowhere, as _existing() would say
            alts, expr = (), ""
        if not expr:
            df = 0.0
        elif kth is None:
            df = float(matches)
        else:
            df = min(float(size), matches * size / max(1, top - kth + 1))
        idf = math.log(1 + (size - df + 0.5) / (df + 0.5))
        cache[unit] = Stats(unit, expr, alts, kth, df, idf, newest)
        out.append(cache[unit])
    if texts_of is not None and total >= 0:
        _pg().texts_ahead(conn, False)
    return out


def _misspellable(unit: Unit) -> bool:
    """Whether a unit is a plain word a typo may be in: typed bare (no quote, prefix,
    CJK run, symbol word or stopword), one word of TYPO_MIN to TYPO_MAX ASCII letters."""
    label = unit.label
    return (
        not (unit.as_typed or unit.cjk or unit.stop or unit.bare)
        and TYPO_MIN <= len(label) <= TYPO_MAX
        and label.isascii()
        and label.isalpha()
    )


def read_misspelt(
    conn: sqlite3.Connection,
    units: list[Unit],
    cache: Cache | None = None,
    filters: Filters | None = None,
    limit: int = 10,
) -> tuple[list[Unit], list[tuple[str, tuple[str, ...]]]]:
    """The query's units with each plain word the archive holds in no form (nor cut
    in two) read as the archive's words one typo away (subrosa.terms.one_typo_away),
    READ_AS at most, those in the most messages first: they become other forms of its
    unit (not the form typed, so they rank as another form does, below it); and which
    word was read as which, for the person. A word the archive holds is never read as
    another. Costs nothing more for a query whose words are all there: the units'
    stats are what the search asks first anyway, kept in `cache` for it (with the
    `filters` and `limit` of the messages' search, when one follows: on a server, the
    probe that sends its candidates' rows along is the same)."""
    typed = [unit for unit in units if _misspellable(unit)]
    if not typed:
        return units, []
    texts_of = None if filters is None else _texts_of(conn, units, filters, limit)
    stats = unit_stats(conn, units, cache, texts_of, project_span(filters))
    absent = [s.unit for s in stats if not s.expr and s.unit in typed][:MISSPELT]
    out: list[Unit] = []
    read: list[tuple[str, tuple[str, ...]]] = []
    for unit in units:
        if unit in absent:
            near = _nearest(conn, unit.label)
            if near:
                alts = (*unit.alts, *(Alt((word,), False) for word in near))
                unit = unit._replace(alts=alts, read=True)
                read.append((unit.label, near))
        out.append(unit)
    return out, read


def _nearest(conn: sqlite3.Connection, word: str) -> tuple[str, ...]:
    """The archive's words one typo away from `word` (no stopword), READ_AS at most,
    those in the most messages first (the estimate unit_stats() makes; ties: in
    alphabetical order), none in fewer than 1/READ_RARER of the first's. Each is
    looked up in the index as any word of a query is, a hundred a statement: ~50 per
    letter of the word; a server asks its table of the archive's words instead, all in
    one statement (pgsearch.in_lexicon)."""
    near = tuple(Alt((w,), True) for w in one_typo_away(word) if not is_stopword(w))
    if isinstance(conn, sqlite3.Connection):
        found = _existing(conn, near)
    else:
        held = set(_pg().in_lexicon(conn, [alt.tokens[0] for alt in near]))
        found = tuple(alt for alt in near if alt.tokens[0] in held)
    if not found:
        return ()
    stats = unit_stats(conn, [Unit(alt.tokens[0], (alt,)) for alt in found])
    best = sorted((s for s in stats if s.df), key=lambda s: (-s.df, s.unit.label))
    kept = [s for s in best[:READ_AS] if s.df * READ_RARER >= best[0].df]
    return tuple(s.unit.label for s in kept)


def _texts_of(
    conn: sqlite3.Connection, units: list[Unit], filters: Filters, limit: int
) -> Unit | None:
    """On a server, the unit whose newest matches are the first tier's candidates (the
    query's only required unit), when candidates() will read them by the ids its
    probe sends: its probe sends their rows too, one round trip less."""
    if isinstance(conn, sqlite3.Connection) or not _pg().texts_usable(filters, limit):
        return None
    required = [unit for unit in units if not unit.stop]
    return required[0] if len(required) == 1 else None


def _candidates(
    conn: sqlite3.Connection, match: str, filters: Filters, limit: int, df: float | None = None
) -> list[Row]:
    """The newest `limit` messages matching `match`, with their text and terms."""
    if not isinstance(conn, sqlite3.Connection):
        return list(_pg().candidates(conn, match, filters, limit))
    joins, where, params = _message_filters(filters)
    text_joins = (
        joins if " JOIN messages m " in joins else " JOIN messages m ON m.id = f.rowid" + joins
    )
    select = f"SELECT f.rowid, m.text, m.terms, m.role FROM messages_fts f{text_joins}"
    how = _spans(conn, match, filters, limit, df)
    if how == "spans":
        return _in_spans(conn, select, match, filters, limit)
    if how == "walk":
        return _texts(conn, _walk_spans(conn, match, filters, limit))
    return conn.execute(
        f"{select} WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
        [match, *params, limit],
    ).fetchall()


def _rowids(
    conn: sqlite3.Connection, match: str, filters: Filters, limit: int, df: float | None = None
) -> list[int]:
    if not isinstance(conn, sqlite3.Connection):
        return list(_pg().rowids(conn, match, filters, limit))
    joins, where, params = _message_filters(filters)
    how = _spans(conn, match, filters, limit, df)
    if how == "spans":
        select = f"SELECT f.rowid FROM messages_fts f{joins}"
        return [int(row[0]) for row in _in_spans(conn, select, match, filters, limit)]
    if how == "walk":
        return _walk_spans(conn, match, filters, limit)
    return [
        int(row[0])
        for row in conn.execute(
            f"SELECT f.rowid FROM messages_fts f{joins}"
            f" WHERE messages_fts MATCH ?{where} ORDER BY f.rowid DESC LIMIT ?",
            [match, *params, limit],
        )
    ]


def _newest_listed(
    conn: sqlite3.Connection, s: Stats, filters: Filters, limit: int
) -> tuple[list[int], int] | None:
    """Of the ids its probe listed (Stats.newest), those of the newest `limit` matches
    of `s` that pass `filters`, newest first, and the id below which the index must
    be asked for the rest (0: none, they are all there); None when the probe listed
    none, or for a project of a small share (Runs.exact) whose listed matches hold too
    few: its spans or walk read the index better (_spans())."""
    if not s.newest:
        return None
    ids = sorted(map(int, s.newest.split(",")), reverse=True)
    complete = s.kth is None and len(ids) >= s.df  # every match is listed
    lowest = ids[-1]
    runs = filters.runs
    tested = filters
    if runs is not None:  # outside its spans, no message of the project
        within = runs.exact or runs.spans[::-1]
        ids = inside_runs(ids[::-1], [lo for lo, _ in within], [hi for _, hi in within])[::-1]
        if runs.exact:  # and inside a run, only the project's
            tested = filters._replace(transcript_project=None)
    ids = _passing(conn, ids, tested, limit)  # a role, a time, a project
    if len(ids) >= limit or complete:
        return ids[:limit], 0
    if runs is not None and runs.exact:
        return None
    return ids, lowest


def _below(
    conn: sqlite3.Connection, select: str, expr: str, filters: Filters, below: int, limit: int
) -> list[Any]:
    """The rows of `select` (ending in FROM messages_fts f) for the newest `limit`
    matches of `expr` that pass `filters` among the ids below `below`."""
    # One range for FTS5 to walk: given two upper bounds, it may keep the looser.
    lo, hi = filters.runs.bounds if filters.runs is not None else (0, below)
    joins, where, params = _message_filters(filters, ranged=False)
    if " m." in select and " JOIN messages m " not in joins:
        joins = " JOIN messages m ON m.id = f.rowid" + joins
    return conn.execute(
        f"{select}{joins} WHERE messages_fts MATCH ?{where}"
        " AND f.rowid BETWEEN ? AND ? ORDER BY f.rowid DESC LIMIT ?",
        [expr, *params, lo, min(hi, below - 1), limit],
    ).fetchall()


def _newest_known(
    conn: sqlite3.Connection, s: Stats, filters: Filters, limit: int
) -> list[int] | None:
    """The ids of the newest `limit` matches of `s` that pass `filters`, newest first:
    _newest_listed(), and the rest from the index below them."""
    listed = _newest_listed(conn, s, filters, limit)
    if listed is None:
        return None
    ids, below = listed
    if below:
        ids += (
            int(row[0])
            for row in _below(
                conn, "SELECT f.rowid FROM messages_fts f", s.expr, filters, below, limit - len(ids)
            )
        )
    return ids


def _newest_rows(
    conn: sqlite3.Connection, s: Stats, filters: Filters, limit: int
) -> list[Row] | None:
    """_newest_known()'s messages with their text and terms (as _candidates() reads
    them): the rest below the listed ids read with their text, not by id after."""
    listed = _newest_listed(conn, s, filters, limit)
    if listed is None:
        return None
    ids, below = listed
    rows = sorted(_texts(conn, ids), reverse=True)
    if below:
        select = "SELECT f.rowid, m.text, m.terms, m.role FROM messages_fts f"
        rows += _below(conn, select, s.expr, filters, below, limit - len(ids))
    return rows


def _by_id(
    conn: sqlite3.Connection, select: str, ids: list[int], params: list[Any] | None = None
) -> Iterator[Any]:
    """The rows of `select` (a statement ending in `IN`, its other parameters `params`)
    for `ids`, 500 ids a statement (sqlite3's limit on values; a server gets each as one
    array: subrosa.pg)."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        yield from conn.execute(
            f"{select} ({','.join('?' * len(chunk))})", [*(params or []), *chunk]
        )


def _texts(conn: sqlite3.Connection, rowids: list[int]) -> list[Row]:
    if not isinstance(conn, sqlite3.Connection):  # what its probes sent is not asked again
        return list(_pg().texts(conn, rowids))
    return list(_by_id(conn, "SELECT id, text, terms, role FROM messages WHERE id IN", rowids))


# ---------------------------------------------------------------- ranking


def terms_length(terms: str | None) -> int:
    """How much a message's terms column adds to its length for bm25: its CJK
    characters and camelCase parts, not the tokens of its symbol words and emoji, which
    stand for a character or two the text's length counts already (they are last in the
    column: subrosa.terms.index_terms)."""
    if not terms:
        return 0
    cut = [at for at in (terms.find(SYMBOL), terms.find(EMOJI)) if at >= 0]
    return min(cut) if cut else len(terms)


def is_tool_io(role: str, text: str) -> bool:
    """Whether a message is a tool call (an assistant message that starts with one) or
    a tool's output (subrosa.archive.transcripts writes them `[Name] …`, `[tool result]
    …`)."""
    if not text.startswith("["):
        return False
    if role == "assistant":
        return _TOOL_CALL.match(text) is not None
    return text.startswith(_TOOL_OUTPUT)


class Held(NamedTuple):
    """Which candidates hold a unit: all of them (`ids` None: a unit the query required),
    those listed, or (when the list was cut at the newest matches) also those whose
    text shows it."""

    ids: set[int] | None
    complete: bool = True


ALL = Held(None)
SHOWN = Held(set(), complete=False)  # as the text shows (a stopword in the first tier)


def _frequencies(stats: Stats, lowered: list[str], texts: list[str]) -> list[float]:
    """A unit's term frequency in each text, roughly and at C speed (substring counts:
    a Python tokenizer over a thousand messages would cost more than the whole query):
    the form typed counts 1, other forms VARIANT (a form that contains the one typed,
    "costs" for "cost", is counted inside it too, and taken back out)."""
    only = stats.alts[0] if len(stats.alts) == 1 else None
    if only and len(only.tokens) == 1 and not only.cjk and alt_shown(only) is None:
        word = only.tokens[0]
        weight = 1.0 if stats.alts[0].exact else VARIANT
        return [weight * low.count(word) for low in lowered]
    typed = next((alt.tokens[0] for alt in stats.alts if alt.exact and not alt.cjk), None)
    total = [0.0] * len(lowered)
    for alt in stats.alts:
        written = alt_shown(alt)
        if alt.cjk:
            run = "".join(alt.tokens)
            counts = [text.count(run) for text in texts]
        elif written is not None:  # a symbol word or emoji: as the text writes it
            counts = [min(low.count(w) for w in written) for low in lowered]
        elif len(alt.tokens) == 1:
            word = alt.tokens[0]
            counts = [low.count(word) for low in lowered]
        else:
            phrase, tokens = " ".join(alt.tokens), alt.tokens
            counts = [low.count(phrase) or min(low.count(t) for t in tokens) for low in lowered]
        if alt.exact:
            weight = 1.0
        elif typed is not None and typed in alt.tokens[0]:
            weight = VARIANT - 1.0
        else:
            weight = VARIANT
        total = [t + weight * c for t, c in zip(total, counts, strict=True)]
    return [max(0.0, t) for t in total]


def _rank(
    stats: list[Stats],
    candidates: list[Row],
    held: list[Held],
    tier: int,
    average: float | None = None,
) -> list[Hit]:
    """bm25 (Okapi, with Lucene's always-positive idf) over the candidates, computed
    here from their text: FTS5's bm25() would first count documents over the whole
    doclist of every unit, then score every match. A tool call or a tool's output
    counts TOOL_IO of its score."""
    if not candidates:
        return []
    texts = [row[1] for row in candidates]
    lowered = [text.lower() for text in texts]
    # Lengths in characters (a CJK character counts about as much as a word: its terms
    # count it again, twice): bm25 only compares them, and counting words costs more.
    lengths = [len(row[1]) + terms_length(row[2]) for row in candidates]
    if average is None:
        average = sum(lengths) / len(lengths) or 1.0
    norms = [BM25_K1 * (1 - BM25_B + BM25_B * length / average) for length in lengths]
    scores = [0.0] * len(candidates)
    for s, holds in zip(stats, held, strict=True):
        gain = s.idf * s.unit.weight * (BM25_K1 + 1)
        tfs = _frequencies(s, lowered, texts)
        if holds.ids is not None:
            ids, complete = holds.ids, holds.complete
            tfs = [
                tf if row[0] in ids or (not complete and tf > 0) else 0.0
                for tf, row in zip(tfs, candidates, strict=True)
            ]
            held_tfs = [
                max(VARIANT, tf) if tf or row[0] in ids else 0.0
                for tf, row in zip(tfs, candidates, strict=True)
            ]
        else:
            held_tfs = [max(VARIANT, tf) for tf in tfs]
        scores = [
            score + gain * tf / (tf + norm) if tf else score
            for score, tf, norm in zip(scores, held_tfs, norms, strict=True)
        ]
    hits = [
        Hit(row[0], score * (TOOL_IO if is_tool_io(row[3], row[1]) else 1.0), tier)
        for row, score in zip(candidates, scores, strict=True)
    ]
    hits.sort(key=lambda hit: (-hit.score, -hit.rowid))
    return hits


def _first_tier(
    conn: sqlite3.Connection, stats: list[Stats], filters: Filters, limit: int
) -> tuple[list[Hit], dict[int, Row]]:
    """The messages holding every required unit, best first (exact when they are at
    most the window, RERANK or `limit`, or every unit is selective, else the best of
    the newest in the window)."""
    required = [s for s in stats if not s.unit.stop]
    if not required or any(not s.expr for s in required):
        return [], {}
    match = _all_of(conn, [s.expr for s in required])
    window = max(RERANK, limit)
    df = required[0].df if len(required) == 1 else None
    selective = all(s.kth is None for s in required)
    # The only required unit's probe may have listed its newest matches (Stats.newest).
    only = required[0] if df is not None and required[0].newest else None
    newest = None  # with every unit selective, the newest window + 1 matches' ids
    if isinstance(conn, sqlite3.Connection) and selective:
        newest = _newest_known(conn, only, filters, window + 1) if only else None
        newest = _rowids(conn, match, filters, window + 1, df) if newest is None else newest
    if not isinstance(conn, sqlite3.Connection) and selective:
        # A server has no bm25(): all the matches (fewer than SELECTIVE, as every unit
        # is selective) are ranked here, a superset of what FTS5's bm25 would pick.
        candidates = _candidates(conn, match, filters, max(SELECTIVE, limit))
    elif newest is not None and len(newest) > window:
        # More matches than RERANK, but every unit's doclist is short: FTS5's bm25
        # picks the best RERANK_BEST of them all, exactly and cheaply, to rank here.
        # The units as typed: bm25() scores each phrase of an expression on its own,
        # so a one-letter prefix asked as its two-letter ones (_one_letter()) would rank
        # otherwise (its matches are few here: merging them costs little).
        plain = _all_of(conn, [s.unit.expr(CJK_COLUMNS, s.alts) for s in required])
        joins, where, params = _message_filters(filters)
        best = [
            int(row[0])
            for row in conn.execute(
                f"SELECT f.rowid FROM messages_fts f{joins} WHERE messages_fts MATCH ?{where}"
                " ORDER BY bm25(messages_fts) LIMIT ?",
                [plain, *params, max(RERANK_BEST, limit)],
            )
        ]
        candidates = _texts(conn, best)
    elif newest is not None and only:
        candidates = sorted(_texts(conn, newest), reverse=True)
    else:
        rows = _newest_rows(conn, only, filters, window) if only else None
        candidates = rows if rows is not None else _candidates(conn, match, filters, window, df)
    present = [s for s in stats if s.expr]
    held = [SHOWN if s.unit.stop else ALL for s in present]
    texts = {row[0]: row for row in candidates}
    return _rank(present, candidates, held, 1), texts


def _second_tier(
    conn: sqlite3.Connection,
    stats: list[Stats],
    filters: Filters,
    exclude: set[int],
    cache: Cache,
    limit: int,
) -> tuple[list[Hit], dict[int, Row], list[Stats]]:
    """The messages holding some of the units, by bm25 (any word may match): the
    candidates are every match of each selective unit and the newest RERANK (or
    `limit`) of each common one, and the RERANK_SOME (or `limit`) of them holding the
    rarest units are ranked."""
    wide = list(dict.fromkeys(piece for s in stats for piece in pieces(s.unit)))[: 2 * MAX_UNITS]
    known = {s.unit: s for s in stats}
    fresh = unit_stats(conn, [u for u in wide if u not in known], cache, span=project_span(filters))
    by_unit = {**known, **{s.unit: s for s in fresh}}
    # Stopwords look for candidates only when no other word of the query is anywhere.
    present = [by_unit[u] for u in wide if by_unit[u].expr and not u.stop]
    present = present or [by_unit[u] for u in wide if by_unit[u].expr]
    held: list[Held] = []
    weight: dict[int, float] = {}
    for s in present:
        cap = SELECTIVE if s.kth is None else max(RERANK, limit)
        listed = _newest_known(conn, s, filters, cap)
        ids = listed if listed is not None else _rowids(conn, s.expr, filters, cap, s.df)
        held.append(Held(set(ids), complete=len(ids) < cap))
        for rowid in ids:
            if rowid not in exclude:
                weight[rowid] = weight.get(rowid, 0.0) + s.idf * s.unit.weight
    chosen = sorted(weight, key=lambda rowid: (-weight[rowid], -rowid))[: max(RERANK_SOME, limit)]
    candidates = _texts(conn, chosen)
    texts = {row[0]: row for row in candidates}
    # The stopwords found nothing, but add to a score as in the first tier: "before
    # each", "at the bottom" tell one message holding some words from another.
    stops = [by_unit[u] for u in wide if by_unit[u].expr and by_unit[u] not in present]
    present += stops
    held += [SHOWN] * len(stops)
    return _rank(present, candidates, held, 2), texts, present


# ---------------------------------------------------------------- results


def dup_keys(text: str) -> tuple[bytes, bytes]:
    """A message is a copy of another when their first or last DUP_PREFIX characters
    are the same (see DUP_PREFIX): the same error under a different banner, the same
    question after an editor's note of the open file."""
    head = text[:DUP_PREFIX].encode().translate(None, _SPACES_DIGITS).lower()
    tail = text[-DUP_PREFIX:].encode().translate(None, _SPACES_DIGITS).lower()
    return b"<" + head, b">" + tail


class Group(NamedTuple):
    """One result: the best of a set of copies, and the copies' row ids (itself first)."""

    hit: Hit
    copies: list[int]


def collapse(
    hits: list[Hit],
    texts: dict[int, Row],
    limit: int,
    *,
    count_all: bool = True,
    keys: dict[int, tuple[bytes, bytes]] | None = None,
) -> list[Group]:
    """The hits with copies of one text folded into the best of them (`limit` groups
    at most; the copies are counted among the best DUP_WINDOW hits, or not at all
    unless `count_all`). `keys` keeps the keys computed, for the next call."""
    keys = {} if keys is None else keys
    by_key: dict[bytes, Group] = {}
    groups: list[Group] = []
    for i, hit in enumerate(hits):
        if len(groups) >= limit and (i >= DUP_WINDOW or not count_all):
            break
        pair = keys.get(hit.rowid)
        if pair is None:
            pair = keys[hit.rowid] = dup_keys(texts[hit.rowid][1])
        head, tail = pair
        group = by_key.get(head) or by_key.get(tail)
        if group is None:
            group = Group(hit, [hit.rowid])
            groups.append(group)
        else:
            group.copies.append(hit.rowid)
        by_key.setdefault(head, group)
        by_key.setdefault(tail, group)
    return groups[:limit]


def _pattern(stats: list[Stats]) -> re.Pattern[str] | None:
    return snippet_pattern([alt for s in stats for alt in s.alts])


def _match(hit: Hit) -> str:
    """How a result matched: "all" the words, "some", or as the "reply" to a message
    holding all (ranked among those)."""
    return "reply" if hit.reply else "all" if hit.tier == 1 else "some"


def _details(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
    select = (
        "SELECT m.id, s.session_id, m.timestamp, m.role, s.project, m.uuid, s.title,"
        " s.first_at, s.last_at, s.summary, s.username, s.host FROM messages m"
        " JOIN sessions s ON s.id = m.session_pk WHERE m.id IN"
    )
    return {row[0]: tuple(row[1:]) for row in _by_id(conn, select, rowids)}


def for_project(conn: sqlite3.Connection, filters: Filters) -> Filters | None:
    """`filters` with where its project's messages are (Filters.runs: its sessions'
    runs, message_runs), or None when the project has no archived message (the first
    search in a new project: nothing to rank). A project is tested match by match, so
    without them a word common in other projects is walked through every newer match
    of theirs first (~0.1 s in-process at 1 GB on SQLite for a project holding 1 % of
    the messages, seconds on a server). The runs are kept for a project holding less
    than SPAN_SHARE of the messages (Runs.exact; runs fewer than MERGE_GAP ids apart
    are one span, the ids between tested): a larger one is searched match by match
    within its first and last id. A project holding twice that share of the sessions
    or more takes those from the archive's ends (_ends(): its runs would cost ~1 µs
    each, 5 ms at 1 GB for 40 % of the messages), its share then being that of the
    sessions (it only chooses how to search); one holding that share of the sessions
    or more (else the ends are elsewhere) sums its runs in one statement first."""
    if not filters.transcript_project or filters.runs:
        return filters
    project = filters.transcript_project
    # (The newest id asked here, not by _newest_id(): on a server that is a round trip
    # more, and it starts the search's own questions.)
    row = conn.execute(
        "SELECT count(*), (SELECT max(id) FROM sessions), (SELECT coalesce(max(id), 0)"
        " FROM messages) FROM sessions WHERE project = ?",
        [project],
    ).fetchone()
    if not row[0]:
        return None
    tables = " FROM sessions s JOIN message_runs r ON r.session_pk = s.id WHERE s.project = ?"
    newest = max(1, int(row[2]))
    if row[0] >= SPAN_SHARE * row[1]:
        ends = _ends(conn, project) if row[0] >= 2 * SPAN_SHARE * row[1] else None
        if ends is not None:
            return filters._replace(runs=Runs((ends,), row[0] / row[1]))
        # Likely searched as one span: its bounds summed in SQL (~2 ms for 3,272 runs
        # at 1 GB, where listing and sorting them costs ~6 ms).
        bounds = conn.execute(
            f"SELECT min(r.lo), max(r.hi), sum(r.hi - r.lo + 1){tables}", [project]
        ).fetchone()
        if bounds is None or bounds[0] is None:
            return None
        if bounds[2] >= SPAN_SHARE * newest:
            first, last, covered = (int(value) for value in bounds)
            whole = covered == last - first + 1  # its runs fill the span
            return filters._replace(runs=Runs(((first, last),), covered / newest, whole=whole))
    listed = conn.execute(f"SELECT r.lo, r.hi, s.id{tables}", [project]).fetchall()
    if not listed:
        return None
    exact = sorted((int(lo), int(hi)) for lo, hi, _ in listed)
    covered = sum(hi - lo + 1 for lo, hi in exact)
    share = covered / newest
    if share >= SPAN_SHARE:
        first, last = exact[0][0], exact[-1][1]
        whole = covered == last - first + 1  # its runs fill the span
        return filters._replace(runs=Runs(((first, last),), share, whole=whole))
    spans: list[tuple[int, int]] = []
    for lo, hi in reversed(exact):
        if spans and spans[-1][0] - hi - 1 <= MERGE_GAP:
            spans[-1] = (lo, spans[-1][1])
        else:
            spans.append((lo, hi))
    sessions = tuple(sorted({int(pk) for _, _, pk in listed}))
    return filters._replace(runs=Runs(tuple(spans), share, tuple(exact), sessions))


def _ends(conn: sqlite3.Connection, project: str) -> tuple[int, int] | None:
    """A project's first and last message id, when they are among the archive's
    ENDS oldest and newest messages (a project holding a large share of the
    sessions, still searched: ~0.1 ms, where its runs cost ~1 µs each)."""
    mine = "(SELECT project FROM sessions WHERE id = x.session_pk) = ?"
    row = conn.execute(
        f"SELECT (SELECT min(x.id) FROM (SELECT id, session_pk FROM messages ORDER BY id"
        f" LIMIT {ENDS}) x WHERE {mine}), (SELECT max(x.id) FROM (SELECT id, session_pk"
        f" FROM messages ORDER BY id DESC LIMIT {ENDS}) x WHERE {mine})",
        [project, project],
    ).fetchone()
    if row is None or row[0] is None or row[1] is None:
        return None
    return int(row[0]), int(row[1])


def _ranked(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    enough: Callable[[list[Hit], dict[int, Row]], bool],
    cache: Cache | None,
    limit: int,
) -> tuple[list[Hit], dict[int, Row], list[Stats]]:
    """The first tier, then (unless `enough` of it) the second, best first in each
    (`limit` results wanted: it widens their windows past it)."""
    cache = {} if cache is None else cache
    texts_of = _texts_of(conn, units, filters, limit)
    stats = _as_typed_first(unit_stats(conn, units, cache, texts_of, project_span(filters)))
    hits, texts = _first_tier(conn, stats, filters, limit)
    hits, apart = _words_apart(stats, hits, texts)
    shown = [s for s in stats if s.expr]
    hits = _with_replies(conn, shown, hits, texts, filters)
    if not enough(hits, texts):  # the pieces of a unit may be there when it is not
        exclude = {h.rowid for h in hits} | {h.rowid for h in apart}
        more, more_texts, used = _second_tier(conn, stats, filters, exclude, cache, limit)
        texts.update(more_texts)
        apart = sorted(more + apart, key=lambda hit: (-hit.score, -hit.rowid))
        shown += [s for s in used if s not in shown]
    return hits + apart, texts, shown


def _widening(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    enough: Callable[[list[Hit], dict[int, Row]], bool],
    cache: Cache | None,
    limit: int,
    counted: Callable[[list[Hit], dict[int, Row]], int],
) -> tuple[list[Hit], dict[int, Row], list[Stats]]:
    """_ranked(), its windows widened while the results its messages make (`counted`:
    copies of one text are one, a session's messages one) are fewer than `limit` and
    the windows were full: `--limit N` gives N results when N match. Twice as wide
    each time, past RERANK_SOME at once (narrower windows change nothing), up to
    WIDEN times `limit` (or RERANK) messages; at `limit` 10 that is one more round at
    most, and only when the windows' messages made fewer than 10 results."""
    cache = {} if cache is None else cache
    want = limit
    ranked = _ranked(conn, units, filters, enough, cache, want)
    while counted(ranked[0], ranked[1]) < limit and len(ranked[0]) >= want:
        wider = max(2 * want, 2 * RERANK_SOME)
        if wider > max(RERANK, WIDEN * limit):
            break
        again = _ranked(conn, units, filters, enough, cache, wider)
        if len(again[0]) <= len(ranked[0]):
            break  # no more messages match
        want, ranked = wider, again
    return ranked


def _as_typed_first(stats: list[Stats]) -> list[Stats]:
    """The stats with a misspelt word's (Unit.read) idf no higher than that of any
    word of the query the archive holds as typed: a text holding the reading of a
    misspelt word never gains more from it than one holding a word typed right."""
    typed = [s.idf for s in stats if s.expr and not s.unit.read and not s.unit.stop]
    if not typed or not any(s.unit.read for s in stats):
        return stats
    least = min(typed)
    return [s._replace(idf=min(s.idf, least)) if s.unit.read else s for s in stats]


def _places(stats: Stats, lowered: str, text: str) -> list[int]:
    """Where a unit's alternatives start in a text (the first _PLACES), as the
    substring counts of _frequencies see them."""
    found: list[int] = []
    for alt in stats.alts:
        written = alt_shown(alt)
        if written is not None:  # a symbol word or emoji: where its first part is written
            needle, hay = written[0], lowered
        elif alt.cjk:
            needle, hay = "".join(alt.tokens), text
        else:
            needle, hay = " ".join(alt.tokens), lowered
        at = hay.find(needle)
        while at >= 0 and len(found) < _PLACES:
            found.append(at)
            at = hay.find(needle, at + 1)
    return found


def span(stats: list[Stats], text: str) -> int | None:
    """The length of the shortest stretch of `text` where every unit starts (None when
    a unit's place cannot be told: matched through the terms column only)."""
    lowered = text.lower()
    events: list[tuple[int, int]] = []
    for i, s in enumerate(stats):
        places = _places(s, lowered, text)
        if not places:
            return None
        events += [(place, i) for place in places]
    events.sort()
    inside: dict[int, int] = {}  # unit -> its places in the window
    shortest, left = len(text), 0
    for place, unit in events:
        inside[unit] = inside.get(unit, 0) + 1
        while len(inside) == len(stats):
            shortest = min(shortest, place - events[left][0])
            first = events[left][1]
            inside[first] -= 1
            if not inside[first]:
                del inside[first]
            left += 1
    return shortest


def _words_apart(
    stats: list[Stats], hits: list[Hit], texts: dict[int, Row]
) -> tuple[list[Hit], list[Hit]]:
    """The first tier without the messages among its NEAR_CHECKED best whose words are
    apart (see NEAR), and those, for the second tier."""
    required = [s for s in stats if s.expr and not s.unit.stop]
    if len(required) < 2:
        return hits, []
    kept: list[Hit] = []
    apart: list[Hit] = []
    for i, hit in enumerate(hits):
        text = texts[hit.rowid][1]
        if i < NEAR_CHECKED and len(text) > NEAR and (span(required, text) or 0) > NEAR:
            apart.append(hit._replace(tier=2))
        else:
            kept.append(hit)
    return kept, apart


def _with_replies(
    conn: sqlite3.Connection,
    stats: list[Stats],
    first: list[Hit],
    texts: dict[int, Row],
    filters: Filters,
) -> list[Hit]:
    """The first tier with the assistant's replies to its REPLY_PARENTS best messages
    that are the user's ranked among them (see REPLY): an error pasted or printed
    holds every word of the query; its explanation and fix often only some."""
    if filters.role == "user" or not first:
        return first
    parents = [h for h in first[:REPLY_PARENTS] if texts[h.rowid][3] == "user"]
    if not parents:
        return first
    heads: dict[int, tuple[int, str, str]] = {}  # id -> session, role, the text's start
    after_tool = {h.rowid: is_tool_io("user", texts[h.rowid][1]) for h in parents}
    said: dict[int, list[int]] = {}  # parent -> the assistant's words after it
    done = 0
    for reach in (REPLY_FIRST, REPLY_REACH):
        walking = [h.rowid for h in parents if h.rowid not in said]
        _heads(conn, [rowid + step for rowid in walking for step in range(done, reach + 1)], heads)
        for rowid in walking:
            words, ended = _reply_walk(rowid, heads, reach, after_tool[rowid])
            if ended or reach == REPLY_REACH:
                said[rowid] = words
        done = reach + 1
    # A reply is the first words and the last: "let me look" and what was found.
    replies = {
        h.rowid: list(dict.fromkeys(said[h.rowid][:1] + said[h.rowid][-1:])) for h in parents
    }
    wanted = [r for rowid in replies for r in replies[rowid] if r not in texts]
    rows = {row[0]: row for row in _texts(conn, list(dict.fromkeys(wanted)))}
    rows.update({r: texts[r] for said in replies.values() for r in said if r in texts})
    if not rows:
        return first
    lengths = [len(row[1]) + terms_length(row[2]) for row in texts.values()]
    average = sum(lengths) / len(lengths) or 1.0
    own = {
        h.rowid: h.score
        for h in _rank(stats, list(rows.values()), [SHOWN] * len(stats), 1, average)
    }
    best = {h.rowid: h for h in first}
    for hit in parents:
        for rowid in replies[hit.rowid]:
            if not own[rowid] and not after_tool[hit.rowid]:
                continue  # to a prompt, a reply showing no word of the query: "got it"
            # Right after its parent at best: the message holding every word is the
            # surer of the two (a decision stated, the error itself).
            score = min(own[rowid] + REPLY * hit.score, hit.score)
            if rowid not in best or best[rowid].score < score:
                best[rowid] = Hit(rowid, score, 1, reply=True)
                texts[rowid] = rows[rowid]
    out = list(best.values())
    out.sort(key=lambda hit: (-hit.score, hit.reply, -hit.rowid))
    return out


def _heads(
    conn: sqlite3.Connection, ids: list[int], heads: dict[int, tuple[int, str, str]]
) -> None:
    """Each message's session, role and the start of its text, for the ids given."""
    select = f"SELECT id, session_pk, role, substr(text, 1, {_PREFIX}) FROM messages WHERE id IN"
    for rowid, session_pk, role, head in _by_id(conn, select, sorted(set(ids))):
        heads[rowid] = (session_pk, role, head)


def _reply_walk(
    parent: int, heads: dict[int, tuple[int, str, str]], reach: int, after_tool: bool
) -> tuple[list[int], bool]:
    """The assistant's words after `parent` in its session, up to the next prompt (the
    first only, after a tool's output), among the `reach` messages after it (read into
    `heads`), and whether the walk ended within them."""
    session = heads[parent][0]
    said: list[int] = []
    for rowid in range(parent + 1, parent + reach + 1):
        found = heads.get(rowid)
        if found is None or found[0] != session:
            return said, True
        _session, role, head = found
        if role == "user" and not is_tool_io(role, head):
            if after_tool and not said:
                # A prompt typed while the tool ran: Claude Code hands it to the model
                # beside the tool's output, and the next words answer both.
                continue
            return said, True  # the next prompt
        if role == "assistant" and not is_tool_io(role, head):
            said.append(rowid)
            if after_tool:
                return said, True  # what a tool printed is answered by the next words
    return said, False


def search_messages(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    limit: int,
    cache: Cache | None = None,
) -> list[dict[str, Any]]:
    """The best `limit` messages for the query's units (docs/search.md): those holding
    every required unit first, then, when they are fewer than `limit`, those holding
    some; copies of one text are one result."""
    scoped = for_project(conn, filters)
    if not units or limit <= 0 or scoped is None:
        return []
    filters = scoped
    keys: dict[int, tuple[bytes, bytes]] = {}

    def enough(hits: list[Hit], texts: dict[int, Row]) -> bool:
        return len(collapse(hits, texts, limit, count_all=False, keys=keys)) >= limit

    def counted(hits: list[Hit], texts: dict[int, Row]) -> int:
        return len(collapse(hits, texts, limit, count_all=False, keys=keys))

    hits, texts, shown = _widening(conn, units, filters, enough, cache, limit, counted)
    groups = collapse(hits, texts, limit, keys=keys)
    details = _details(conn, [rowid for group in groups for rowid in group.copies])
    pattern = _pattern(shown)
    results = []
    for group in groups:
        rowid = group.hit.rowid
        session_id, timestamp, role, project, uuid = details[rowid][:5]
        result: dict[str, Any] = {
            "kind": "message",
            "score": significant(group.hit.score),
            "match": _match(group.hit),
            "snippet": one_line(text_snippet(texts[rowid][1], pattern)),
            "session_id": session_id,
            "timestamp": timestamp,
            "role": role,
            "message_id": rowid,
            "uuid": uuid,
            "project": project,
            # Who archived its session (a team's server holds every member's).
            "username": details[rowid][9],
            "host": details[rowid][10],
            "tier": group.hit.tier,  # for subrosa.recall's merge; not shown
        }
        if len(group.copies) > 1:
            result["copies"] = len(group.copies)
            result["copy_sessions"] = list(dict.fromkeys(details[r][0] for r in group.copies))
        results.append(result)
    return results


def search_sessions(
    conn: sqlite3.Connection,
    units: list[Unit],
    filters: Filters,
    limit: int,
    cache: Cache | None = None,
) -> list[dict[str, Any]]:
    """The best `limit` sessions for the query's units: the messages ranked as by
    search_messages, each session placed by its best message, with that message's
    snippet and how many of its messages matched."""
    scoped = for_project(conn, filters)
    if not units or limit <= 0 or scoped is None:
        return []
    filters = scoped

    def enough(hits: list[Hit], _texts: dict[int, Row]) -> bool:
        return len(_by_session(conn, hits)) >= limit

    def counted(hits: list[Hit], _texts: dict[int, Row]) -> int:
        return len(_by_session(conn, hits))

    hits, texts, shown = _widening(conn, units, filters, enough, cache, limit, counted)
    sessions = _by_session(conn, hits)[:limit]
    details = _details(conn, [group.hit.rowid for group in sessions])
    pattern = _pattern(shown)
    results = []
    for group in sessions:
        rowid = group.hit.rowid
        session_id, timestamp, role, project, uuid, title, first_at, last_at, summary = details[
            rowid
        ][:9]
        username, host = details[rowid][9:]
        results.append(
            {
                "kind": "session",
                "score": significant(group.hit.score),
                "match": _match(group.hit),
                "snippet": one_line(text_snippet(texts[rowid][1], pattern)),
                "session_id": session_id,
                "project": project,
                "title": session_label(title),
                "summary": session_label(summary),
                "first_at": first_at,
                "last_at": last_at,
                "messages": len(group.copies),
                "timestamp": timestamp,
                "role": role,
                "message_id": rowid,
                "uuid": uuid,
                "username": username,
                "host": host,
            }
        )
    return results


def archived_by(result: dict[str, Any]) -> str:
    """Who archived a message's or a session's result (user@host, as `transcript list`
    shows it); "" for a fact, or a session archived before subrosa recorded it."""
    user, host = result.get("username"), result.get("host")
    if not user and not host:
        return ""
    return f"{user or '?'}@{host or '?'}"


def several_people(results: list[dict[str, Any]]) -> bool:
    """Whether the results were archived by more than one user or machine (a team's
    server): only then do the texts for people say who, on each line."""
    return len({archived_by(r) for r in results if r["kind"] != "fact"}) > 1


def _by_session(conn: sqlite3.Connection, hits: list[Hit]) -> list[Group]:
    """The hits grouped by session, in the order of each session's best hit."""
    if not hits:
        return []
    ids = [hit.rowid for hit in hits]
    session_of = dict(_by_id(conn, "SELECT id, session_pk FROM messages WHERE id IN", ids))
    groups: dict[int, Group] = {}
    for hit in hits:
        pk = session_of[hit.rowid]
        if pk in groups:
            groups[pk].copies.append(hit.rowid)
        else:
            groups[pk] = Group(hit, [hit.rowid])
    return list(groups.values())
