"""Would postings kept in id order close PostgreSQL's in-process gap? (issue 16, a probe)

    python bench/pg_postings_probe.py --pg URL [--runs 7] [--slice 100000] [--keep]

URL is an archive `bench/transcripts.py --size 1000 --pg URL` ingested (the bench's
corpus: its medium, common and "some words" queries are asked). Nothing of subrosa's
schema changes: the probe makes tables of its own (pp_*, dropped at the end unless
--keep) and reads `messages.words`, the stored tsvector the GIN indexes hold.

1. Each query is searched as `subrosa search` does in-process (all projects, limit
   10; the best of three, SQLite's search of it in turn), recording every probe it asks
   (pgsearch._probe_ahead(): a unit's count up to SELECTIVE, its SELECTIVE-th newest id,
   its newest RERANK ids), the search's time and the time spent in those probes (the
   share postings would replace); again after step 3, for the estimate: each search's
   time with its probes' time replaced by the median of a layout's answers to them.
2. Postings are built by SQL from `unnest(words)` for the lexemes those probes ask, as
   ingest would have written them per batch: `file` (a bulk ingest's transaction on a
   server: one file's lines, up to 4 MB; the archive's message_runs, one per batch),
   `turn` (a hook's ingest after a turn: 10 messages) and `merged` (rows of 28,000 ids,
   what 32 MB of transcript holds: a background merge of the small rows, or SQLite's
   commit size). A row is (lexeme, last_id, first_id, n, ids newest first as int8[]),
   keyed (lexeme, last_id).
3. Each probe a postings table can answer (an OR of plain lexemes: no phrase, no
   prefix) is answered from each table by one statement (postings_sql(): a word's rows
   newest first, counted from the key alone, the ids of those needed sent cut to
   SELECTIVE; several words' merged by the client) and compared with today's answers
   (count, SELECTIVE-th id, newest RERANK ids), then timed, today's statement and each
   table's in turn, `--runs` rounds, each twice (cold: after the other probes; warm:
   right after itself): the client's wall time and EXPLAIN ANALYZE's execution time,
   medians. Today's probe also sends rows (a
   one-word query's candidates, texts_ahead(); a rare word's matches, PREFETCH): the
   postings' answers are timed with the same rows asked by id.
4. Size: the three layouts built for every lexeme of the newest `--slice` messages,
   scaled to the archive, against the GIN indexes' size.
5. Ingest: one batch's INSERT as today (the table's generated vector and indexes, into
   an empty copy of `messages`) against the same INSERT writing the batch's postings
   in the same statement, for a 32 MB batch, bulk ingest's file batches and per-turn
   batches; each in a transaction rolled back, in turn.

Findings: docs/team.md, "Round eight (issue 16, `pgpost`)".
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gen_transcripts import MEDIUM  # noqa: E402
from transcripts import COMMON, SOME_WORDS  # noqa: E402

from subrosa.archive import pgsearch  # noqa: E402
from subrosa.archive.connection import connect  # noqa: E402
from subrosa.archive.pgstore import open_server  # noqa: E402
from subrosa.archive.search import RERANK, SELECTIVE  # noqa: E402
from subrosa.pg import _native  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

CLASSES = {"medium": MEDIUM, "common": COMMON, "some words": SOME_WORDS}
# Messages a 32 MB batch of the bench corpus holds (834,658 in 1,000 MB of JSONL).
BIG = 28_000
TURN = 10
LAYOUTS = ("file", "turn", "merged")
_PLAIN = re.compile(r"'((?:[^']|'')*)'")


def lexemes_of(query: str) -> list[str] | None:
    """The lexemes of a probe's tsquery when it is an OR of plain words, else None."""
    out = []
    query = query.strip()
    if query.startswith("(") and query.endswith(")"):
        query = query[1:-1]
    for alt in query.split(" | "):
        match = _PLAIN.fullmatch(alt.strip())
        if match is None:
            return None
        out.append(match.group(1).replace("''", "'"))
    return out


def batch_key(layout: str) -> str:
    """The SQL giving a message's batch in a layout, over `w.id` and the run `r.lo`."""
    return {"file": "r.lo", "turn": f"w.id / {TURN}", "merged": f"w.id / {BIG}"}[layout]


def build(conn: Any, name: str, source: str, layout: str) -> float:
    """A postings table `name` from (lexeme, id) rows `source`, per `layout` batch."""
    start = time.perf_counter()
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(
        f"CREATE UNLOGGED TABLE {name} AS SELECT w.lexeme, max(w.id) AS last_id,"
        " min(w.id) AS first_id, count(*)::int AS n, array_agg(w.id ORDER BY w.id DESC) AS ids"
        f" FROM {source} w JOIN pp_batch r ON r.id = w.id"
        f" GROUP BY w.lexeme, {batch_key(layout)}"
    )
    conn.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (lexeme, last_id) INCLUDE (n)")
    conn.execute(f"VACUUM ANALYZE {name}")
    return time.perf_counter() - start


def postings_sql(table: str) -> str:
    """One statement: for each lexeme of $1, the ids of its newest rows, each row's cut
    to what the rows before it leave of SELECTIVE. The rows' counts are read newest
    first from the key alone (an index-only scan of (lexeme, last_id) INCLUDE (n), at
    most SELECTIVE rows: a row holds one id at least), summed as they come; the ids of
    the rows needed are then read by their key."""
    return (
        "SELECT l.lexeme, t.ids[1:" + str(SELECTIVE) + " - x.before]"
        " FROM unnest(%s::text[]) l(lexeme) CROSS JOIN LATERAL"
        " (SELECT last_id, sum(n) OVER (ORDER BY last_id DESC) - n AS before"
        f" FROM {table} k WHERE k.lexeme = l.lexeme ORDER BY last_id DESC LIMIT {SELECTIVE}) x"
        f" JOIN {table} t ON t.lexeme = l.lexeme AND t.last_id = x.last_id"
        f" WHERE x.before < {SELECTIVE} ORDER BY l.lexeme, x.last_id DESC"
    )


def merged(rows: list[Any], words: int) -> list[int]:
    """The newest SELECTIVE ids of the rows postings_sql() sent: one word's rows are in
    id order already (a batch's ids are its own); several words' are merged."""
    if words == 1:
        return [i for _, ids in rows for i in ids]
    return sorted({i for _, ids in rows for i in ids}, reverse=True)[:SELECTIVE]


ROWS_SQL = "SELECT id, text, terms, role FROM messages WHERE id = ANY(%s) ORDER BY id DESC"


class Recorder:
    """Wraps a connection's _run: the statements a probe sends, with their settings."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.original = conn._run
        self.statements: list[tuple[str, Any, tuple[str, ...]]] = []
        conn._run = self._run

    def _run(self, sql: str, params: Any) -> Any:
        self.statements.append((sql, params, self.conn._off))
        return self.original(sql, params)


def today(conn: Any, query: str, texts: bool) -> tuple[tuple[int, int | None, list[int]], float]:
    """Today's probe of `query` (its answers, its wall time), nothing remembered."""
    conn.answers.clear()
    conn.answers["texts"] = texts
    start = time.perf_counter()
    count, kth = pgsearch._probe_ahead(conn, query)
    wall = time.perf_counter() - start
    ids = conn.answers.get(("ids", query)) or []
    keep = RERANK if count >= SELECTIVE else SELECTIVE
    return (count, kth, list(ids[:keep])), wall


def today_server(conn: Any, query: str, texts: bool) -> float:
    """EXPLAIN ANALYZE's execution time of today's probe statements (with its settings)."""
    recorder = Recorder(conn)
    try:
        today(conn, query, texts)
    finally:
        conn._run = recorder.original
    total = 0.0
    for sql, params, off in recorder.statements:
        if "words @@" not in sql:
            continue
        conn._planner(off)
        total += explain(conn, _native(sql), params)
    conn._planner(())
    return total


def explain(conn: Any, sql: str, params: Any) -> float:
    row = conn.raw.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()
    plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return float(plan[0]["Execution Time"]) / 1e3


def posted(
    conn: Any, table: str, words: list[str], texts: bool
) -> tuple[tuple[int, int | None, list[int]], float]:
    """The probe's answers from postings `table`, and its wall time, with the rows the
    probe sends today asked by id: a query's newest RERANK matches' when `texts`, all
    its matches' when they are at most PREFETCH (a rare word's)."""
    start = time.perf_counter()
    ids = merged(conn.raw.execute(postings_sql(table), [words]).fetchall(), len(words))
    count = len(ids)
    sent = ids[:RERANK] if count >= SELECTIVE else ids
    if (texts or count <= pgsearch.PREFETCH) and sent:
        conn.raw.execute(ROWS_SQL, [sent]).fetchall()
    wall = time.perf_counter() - start
    return (count, ids[-1] if ids else None, sent), wall


def posted_server(conn: Any, table: str, words: list[str], texts: bool) -> float:
    total = explain(conn, postings_sql(table), [words])
    rows = conn.raw.execute(postings_sql(table), [words]).fetchall()
    ids = merged(rows, len(words))
    sent = ids[:RERANK] if len(ids) >= SELECTIVE else ids
    if (texts or len(ids) <= pgsearch.PREFETCH) and sent:
        total += explain(conn, ROWS_SQL, [sent])
    return total


def capture(conn: Any, lite: Any) -> tuple[dict[str, list[dict[str, Any]]], set[tuple[str, bool]]]:
    """Each query's search (in-process, its time: the best of three) and the probes it
    asked, with the time spent in each and whether it sent its candidates' rows along;
    the same search on SQLite (`lite`) in turn, run by run."""
    original = pgsearch._probe_ahead
    probes: list[tuple[str, bool, float]] = []

    def recording(conn: Any, query: str) -> tuple[int, int | None]:
        if ("probe", query) in conn.answers:
            return original(conn, query)
        start = time.perf_counter()
        out = original(conn, query)
        probes.append((query, bool(conn.answers.get("texts")), time.perf_counter() - start))
        return out

    pgsearch._probe_ahead = recording
    searches: dict[str, list[dict[str, Any]]] = {}
    asked_all: set[tuple[str, bool]] = set()
    try:
        for cls, queries in CLASSES.items():
            for text in queries:
                runs = []
                lite_runs = []
                for _ in range(3):
                    probes.clear()
                    start = time.perf_counter()
                    search(conn, text, Filters(), 10)
                    runs.append((time.perf_counter() - start, list(probes)))
                    start = time.perf_counter()
                    search(lite, text, Filters(), 10)
                    lite_runs.append(time.perf_counter() - start)
                wall, asked = min(runs, key=lambda run: run[0])
                searches.setdefault(cls, []).append(
                    {"query": text, "wall": wall, "probes": asked, "sqlite": min(lite_runs)}
                )
                asked_all.update((query, texts) for query, texts, _ in asked)
    finally:
        pgsearch._probe_ahead = original
    return searches, asked_all


def sizes(conn: Any, slice_n: int) -> list[str]:
    """The three layouts for every lexeme of the newest `slice_n` messages, scaled."""
    newest, total = conn.execute("SELECT max(id), count(*) FROM messages").fetchone()
    low = int(newest) - slice_n + 1
    start = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS pp_slice")
    conn.execute(
        "CREATE UNLOGGED TABLE pp_slice AS SELECT u.lexeme, m.id FROM messages m,"
        f" unnest(m.words) u WHERE m.id >= {low}"
    )
    entries, in_slice = conn.execute("SELECT count(*), count(DISTINCT id) FROM pp_slice").fetchone()
    lines = [
        f"slice: ids >= {low:,}, {in_slice:,} messages, {entries:,} (lexeme, message) entries"
        f" ({time.perf_counter() - start:.0f} s); scaled x{total / in_slice:.2f} to"
        f" {total:,} messages",
        "",
        "| layout | rows | ids a row (mean) | MB (table + key) | scaled to the archive, MB |",
        "| --- | --- | --- | --- | --- |",
    ]
    scale = total / in_slice
    for layout in LAYOUTS:
        name = f"pp_size_{layout}"
        build(conn, name, "pp_slice", layout)
        rows, ids = conn.execute(f"SELECT count(*), sum(n) FROM {name}").fetchone()
        size = conn.execute(f"SELECT pg_total_relation_size('{name}')").fetchone()[0]
        lines.append(
            f"| {layout} | {rows:,} | {ids / rows:.1f} | {size / 1e6:.0f} |"
            f" {size * scale / 1e6:.0f} |"
        )
        conn.execute(f"DROP TABLE {name}")
    conn.execute("DROP TABLE pp_slice")
    gin = conn.execute(
        "SELECT sum(pg_relation_size(c.oid)) FROM pg_class c"
        " WHERE c.relname LIKE 'ix\\_messages\\_words%'"
    ).fetchone()[0]
    table = conn.execute("SELECT pg_total_relation_size('messages')").fetchone()[0]
    lines.append(
        f"\nthe GIN indexes today (ix_messages_words and its ranges'): {float(gin) / 1e6:.0f}"
        f" MB; messages with its indexes and TOAST: {float(table) / 1e6:.0f} MB"
    )
    return lines


INSERT_COLS = "id, session_pk, uuid, role, timestamp, text, terms"


def ingest_cost(conn: Any, runs: int) -> list[str]:
    """One batch's INSERT today against the same INSERT writing its postings too."""
    conn.execute("DROP TABLE IF EXISTS pp_msg")
    conn.execute("DROP TABLE IF EXISTS pp_ingest")
    conn.execute("CREATE TABLE pp_msg (LIKE messages INCLUDING ALL)")
    conn.execute(
        "CREATE TABLE pp_ingest (lexeme text, last_id bigint, first_id bigint, n int,"
        " ids int8[], PRIMARY KEY (lexeme, last_id) INCLUDE (n))"
    )
    newest = int(conn.execute("SELECT max(id) FROM messages").fetchone()[0])
    plain = (
        f"INSERT INTO pp_msg ({INSERT_COLS}) SELECT {INSERT_COLS} FROM messages"
        " WHERE id BETWEEN %s AND %s"
    )
    with_postings = (
        f"WITH ins AS ({plain} RETURNING id, words) INSERT INTO pp_ingest"
        " SELECT u.lexeme, max(ins.id), min(ins.id), count(*), array_agg(ins.id ORDER BY"
        " ins.id DESC) FROM ins, unnest(ins.words) u GROUP BY u.lexeme"
    )
    # Batches: one of 32 MB; 40 of bulk ingest's (files: message_runs of middling size);
    # 40 of a turn's 10 messages.
    files = conn.execute(
        "SELECT lo, hi FROM message_runs WHERE hi - lo + 1 BETWEEN 40 AND 120"
        " ORDER BY lo DESC LIMIT 40"
    ).fetchall()
    shapes = {
        f"32 MB ({BIG:,} messages)": [(newest - BIG + 1, newest)],
        "a file's batch (bulk ingest)": [(int(lo), int(hi)) for lo, hi in files],
        f"a turn ({TURN} messages)": [
            (newest // 2 + k * 997, newest // 2 + k * 997 + TURN - 1) for k in range(40)
        ],
    }
    lines = [
        "| batch | messages a batch (mean) | postings rows a batch (mean) | INSERT today, ms"
        " | with its postings, ms | postings' share |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    raw = conn.raw
    for shape, batches in shapes.items():
        times: dict[str, list[float]] = {"plain": [], "post": []}
        rows_written: list[int] = []
        for _ in range(runs if len(batches) == 1 else max(1, runs // 3)):
            for lo, hi in batches:
                for kind, sql in (("plain", plain), ("post", with_postings)):
                    raw.execute("BEGIN")
                    start = time.perf_counter()
                    cursor = raw.execute(sql, [lo, hi])
                    times[kind].append(time.perf_counter() - start)
                    if kind == "post":
                        rows_written.append(cursor.rowcount)
                    raw.execute("ROLLBACK")
        per = len(batches)
        plain_ms = statistics.median(times["plain"]) * 1e3
        post_ms = statistics.median(times["post"]) * 1e3
        size = statistics.mean(hi - lo + 1 for lo, hi in batches)
        lines.append(
            f"| {shape} | {size:.0f} | {statistics.mean(rows_written):,.0f} | {plain_ms:.2f}"
            f" | {post_ms:.2f} | {post_ms / plain_ms:.2f}x ({per} batches, median) |"
        )
    conn.execute("DROP TABLE pp_msg")
    conn.execute("DROP TABLE pp_ingest")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", required=True, help="the bench's 1 GB archive's URL")
    parser.add_argument(
        "--sqlite", required=True, type=Path, help="the same corpus's SQLite archive (a copy)"
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--slice", type=int, default=100_000, help="messages sized whole")
    parser.add_argument("--keep", action="store_true", help="keep the pp_* tables")
    parser.add_argument("--skip", default="", help="comma-separated: probes,sizes,ingest")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    with open_server(args.pg) as conn:
        run(conn, args, skip)


def run(conn: Any, args: Any, skip: set[str]) -> None:
    # Each message's batch in a bulk ingest (one per file's read: its run of ids).
    conn.execute(
        "CREATE UNLOGGED TABLE IF NOT EXISTS pp_batch AS SELECT i AS id, lo, hi"
        " FROM message_runs, generate_series(lo, hi) i"
    )
    conn.execute("ANALYZE pp_batch")
    for query in CLASSES["medium"][:2]:  # warm: the statistics, the id ranges, the pages
        search(conn, query, Filters(), 10)
    if "probes" not in skip:
        probes(conn, args.runs, args.sqlite)
    if "sizes" not in skip:
        print("\n## Size on disk\n")
        print("\n".join(sizes(conn, args.slice)), flush=True)
    if "ingest" not in skip:
        print("\n## Cost at ingest\n")
        print("\n".join(ingest_cost(conn, args.runs)), flush=True)
    if not args.keep:
        for layout in LAYOUTS:
            conn.execute(f"DROP TABLE IF EXISTS pp_post_{layout}")
        conn.execute("DROP TABLE IF EXISTS pp_words")
        conn.execute("DROP TABLE IF EXISTS pp_batch")


def probes(conn: Any, runs: int, sqlite: Path) -> None:
    lite = connect(sqlite)
    searches, asked = capture(conn, lite)
    lite.close()
    pairs = sorted(asked)  # (the probe's tsquery, whether it sent its candidates' rows)
    plain = {q: lexemes_of(q) for q, _ in pairs}
    words = sorted({w for ws in plain.values() if ws for w in ws})
    print(f"{len(plain)} probes asked, {sum(1 for w in plain.values() if w)} of plain words;")
    print(f"lexemes: {', '.join(words)}\n", flush=True)
    start = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS pp_words")
    conn.execute(
        "CREATE UNLOGGED TABLE pp_words AS SELECT u.lexeme, m.id FROM messages m,"
        " unnest(m.words) u WHERE u.lexeme = ANY(?::text[])",
        [words],
    )
    print(f"(lexeme, id) rows of those lexemes: {time.perf_counter() - start:.0f} s")
    for layout in LAYOUTS:
        took = build(conn, f"pp_post_{layout}", "pp_words", layout)
        rows = conn.execute(f"SELECT count(*), sum(n) FROM pp_post_{layout}").fetchone()
        print(f"pp_post_{layout}: {rows[0]:,} rows, {rows[1]:,} ids, built in {took:.1f} s")
    # Identical answers?
    answerable = [(q, texts) for q, texts in pairs if plain[q]]
    mismatches = []
    for query in sorted({q for q, _ in answerable}):
        want, _ = today(conn, query, False)
        for layout in LAYOUTS:
            got, _ = posted(conn, f"pp_post_{layout}", plain[query] or [], False)
            if got != want:
                mismatches.append((query, layout, want[:2], got[:2]))
    print(
        f"\nanswers compared (count, {SELECTIVE}th newest id, newest {RERANK} ids):"
        f" {len({q for q, _ in answerable})} probes x {len(LAYOUTS)} layouts,"
        f" {len(mismatches)} differ {mismatches[:3]}",
        flush=True,
    )
    # Timed, interleaved: each probe, today's statement and each layout in turn, each
    # twice: the first after the other probes' statements (its rows likely out of the
    # server's 128 MB of buffers: "cold"), the second right after it ("warm", as the
    # bench's best of three searches are), then EXPLAIN ANALYZE'd.
    sides = ("today", *LAYOUTS)
    wall: dict[tuple[str, bool, str], list[float]] = {}
    cold: dict[tuple[str, bool, str], list[float]] = {}
    server: dict[tuple[str, bool, str], list[float]] = {}
    for _ in range(runs):
        for query, texts in answerable:
            for side in sides:
                key = (query, texts, side)
                for times in (cold, wall):
                    if side == "today":
                        took = today(conn, query, texts)[1]
                    else:
                        took = posted(conn, f"pp_post_{side}", plain[query] or [], texts)[1]
                    times.setdefault(key, []).append(took)
                if side == "today":
                    spent = today_server(conn, query, texts)
                else:
                    spent = posted_server(conn, f"pp_post_{side}", plain[query] or [], texts)
                server.setdefault(key, []).append(spent)
    med_wall = {key: statistics.median(v) for key, v in wall.items()}
    med_cold = {key: statistics.median(v) for key, v in cold.items()}
    med_server = {key: statistics.median(v) for key, v in server.items()}
    print(
        f"\n## Each probe (median of {runs}, ms: warm wall / EXPLAIN ANALYZE's execution"
        " (cold wall))\n\n"
        "| probe | count | rows sent | today | file | turn | merged |\n"
        "| --- | --- | --- | --- | --- | --- | --- |"
    )
    for query, texts in answerable:
        count = today(conn, query, False)[0][0]
        cells = " | ".join(
            f"{med_wall[(query, texts, s)] * 1e3:.2f} / {med_server[(query, texts, s)] * 1e3:.2f}"
            f" ({med_cold[(query, texts, s)] * 1e3:.1f})"
            for s in sides
        )
        print(f"| `{query[:60]}` | {count} | {'yes' if texts else 'no'} | {cells} |")
    print("\nmedians over the probes (ms, warm wall / server / cold wall):")
    for texts in (False, True):
        for rare in (True, False):
            keys = [
                (q, t)
                for q, t in answerable
                if t == texts and (today(conn, q, False)[0][0] < SELECTIVE) == rare
            ]
            if not keys:
                continue
            cells = ", ".join(
                f"{s} {statistics.median(med_wall[(q, t, s)] for q, t in keys) * 1e3:.2f}"
                f" / {statistics.median(med_server[(q, t, s)] for q, t in keys) * 1e3:.2f}"
                f" / {statistics.median(med_cold[(q, t, s)] for q, t in keys) * 1e3:.1f}"
                for s in sides
            )
            kind = "fewer than SELECTIVE" if rare else "SELECTIVE or more"
            print(f"  {len(keys)} probes, {kind}, rows {'sent' if texts else 'not sent'}: {cells}")

    # The searches again, now the tables are built (the first pass found the probes).
    lite = connect(sqlite)
    searches, _ = capture(conn, lite)
    lite.close()

    def estimate(item: dict[str, Any], layout: str) -> float:
        """A search's time with the time its probes took in it replaced by the median
        of the layout's answers to them (`today`: today's statement timed alone);
        probes postings cannot answer (phrases, prefixes) keep theirs."""
        total: float = item["wall"]
        common_only = layout.endswith("+")  # a word in fewer than SELECTIVE keeps GIN
        layout = layout.rstrip("+")
        for q, texts, took in item["probes"]:
            if common_only and counts.get(q, 0) < SELECTIVE:
                continue
            if plain.get(q) and (q, texts, layout) in med_wall:
                total += med_wall[(q, texts, layout)] - took
        return total

    counts = {q: today(conn, q, False)[0][0] for q, _ in answerable}
    estimates = (*sides, "merged+")

    print(
        "\n## Each class's searches, in-process p50 (ms): measured, the probes' share,"
        " and with the probes' time replaced by each layout's\n\n"
        "| class | SQLite p50 | PostgreSQL p50 (÷ SQLite) | probes' share (p50 of each"
        " search's) | today's probes timed alone | file (÷ SQLite) | turn | merged |"
        " merged, words in fewer than SELECTIVE on GIN |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    for cls, items in searches.items():
        measured = statistics.median(item["wall"] for item in items)
        shares = [sum(took for _, _, took in item["probes"]) / item["wall"] for item in items]
        lite_p50 = statistics.median(item["sqlite"] for item in items)
        estimated = []
        for layout in estimates:
            p50 = statistics.median(estimate(item, layout) for item in items)
            estimated.append(f"{p50 * 1e3:.1f} ({p50 / lite_p50:.2f}x)")
        print(
            f"| {cls} ({len(items)}) | {lite_p50 * 1e3:.1f} | {measured * 1e3:.1f}"
            f" ({measured / lite_p50:.2f}x) | {statistics.median(shares):.0%}"
            f" | {' | '.join(estimated)} |",
            flush=True,
        )
    print(
        "\nper search (ms: SQLite, PostgreSQL, then the estimate with today's probes timed"
        " alone and per layout; its probes):"
    )
    for cls, items in searches.items():
        for item in items:
            parts = " / ".join(f"{estimate(item, layout) * 1e3:.1f}" for layout in estimates)
            probes_s = ", ".join(
                f"{q[:30]}{'' if plain.get(q) else ' (GIN)'}{' +rows' if texts else ''}"
                f" {took * 1e3:.1f}"
                for q, texts, took in item["probes"]
            )
            print(
                f"  {cls}: {item['query']!r} {item['sqlite'] * 1e3:.1f},"
                f" {item['wall'] * 1e3:.1f} -> {parts}  [{probes_s}]"
            )


if __name__ == "__main__":
    main()
