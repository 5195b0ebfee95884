"""A query's probes on two server connections at once, measured (issue 16, round nine:
docs/team.md). A probe, not a feature: it asks what search asks, on the bench's
archive, one after the other on one connection and at once on two.

    .venv/bin/python bench/pg_parallel_probe.py --pg URL [--runs 7] [--driver libpq]

- "units": each query of bench/transcripts.py whose search probes two units or more
  (the probes recorded from a real search: each unit's `_probe_ahead()`), timed on one
  connection one after the other, then on two (a second thread asks the next probe
  not yet asked on its own connection: each connection takes the next one when free);
- "split": each medium word's one-word probe (its newest SELECTIVE matches and the
  1,000 candidates' rows, as `_newest_by_range()` asks them) against the same ids
  split at the middle of the range the floor gives: the newer half on one connection,
  the older on the other, at once (the answer: the newer half's matches, then the
  older's, up to SELECTIVE; checked equal to the one statement's);
- "connect": what a second connection costs to open (libpq's connect and settings).

(Whole searches in one process with the probes shared out by subrosa itself were
measured by this script's `--search` at c92eb32, with round nine's `probes_at_once()`,
since reverted: docs/team.md says why.)

Each case interleaved (one connection, two, in turn), best of `--runs`; the wall time,
the client's CPU (the process's, both threads) and the server's (the two backends'
CPU from /proc/PID/schedstat: the server on this machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_transcripts import MEDIUM  # noqa: E402
from transcripts import CLASSES  # noqa: E402

from subrosa import libpq  # noqa: E402
from subrosa import pg as pgmod  # noqa: E402
from subrosa.archive import pgsearch  # noqa: E402
from subrosa.archive.search import RERANK, SELECTIVE  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402


def connect(url: str, driver: str) -> Any:
    if driver == "psycopg":
        return pgmod.connect(url)
    lib = libpq.load()
    assert lib is not None, "no libpq"
    return libpq.connect(url, lib)


def backend_pid(conn: Any) -> int:
    return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def recorded(conn: Any, query: str) -> list[tuple[str, bool]]:
    """The probes a search of `query` asks (its units' queries, and whether each sends
    its candidates' rows), in order."""
    calls: list[tuple[str, bool]] = []
    real = pgsearch._probe_ahead

    def spy(c: Any, q: str) -> Any:
        if ("probe", q) not in c.answers:
            calls.append((q, bool(c.answers.get("texts"))))
        return real(c, q)

    pgsearch._probe_ahead = spy  # type: ignore[assignment]
    try:
        search(conn, query, Filters(), 10)
    finally:
        pgsearch._probe_ahead = real  # type: ignore[assignment]
    return calls


def fresh(conn: Any) -> None:
    pgsearch.newest_id(conn)  # forgets what the last probes answered, as a search does


def probe_on(conn: Any, query: str, texts: bool) -> tuple[Any, ...]:
    conn.answers["texts"] = texts
    pgsearch._probe_ahead(conn, query)
    return (
        conn.answers[("probe", query)],
        conn.answers.get(("ids", query)),
        conn.answers.get(("rows", query)),
    )


class Meter:
    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def __enter__(self) -> Meter:
        self.server = [cpu_ns(p) for p in self.pids]
        self.client = time.process_time()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall = time.perf_counter() - self.start
        self.client = time.process_time() - self.client
        self.server = sum(cpu_ns(p) - s for p, s in zip(self.pids, self.server, strict=True)) / 1e9


def one_after_other(a: Any, pids: list[int], probes: list[tuple[str, bool]]) -> tuple[Meter, list]:
    fresh(a)
    with Meter(pids) as m:
        out = [probe_on(a, q, t) for q, t in probes]
    return m, out


def at_once(a: Any, b: Any, pids: list[int], probes: list[tuple[str, bool]]) -> tuple[Meter, list]:
    fresh(a)
    fresh(b)
    out: list[Any] = [None] * len(probes)
    todo = list(range(len(probes)))[::-1]
    lock = threading.Lock()

    def work(conn: Any) -> None:
        while True:
            with lock:
                if not todo:
                    return
                n = todo.pop()
            out[n] = probe_on(conn, *probes[n])

    with Meter(pids) as m:
        other = threading.Thread(target=work, args=(b,))
        other.start()
        work(a)
        other.join()
    return m, out


def split_statement(query_parts: list[str], want: int, keep: int, rows: bool) -> str:
    """_newest_by_range()'s statement over `query_parts`, with the rows of the ids it
    sends or without."""
    branches = " UNION ALL ".join(
        f"(SELECT m.id, m.ctid FROM messages m WHERE {pgsearch.VECTOR} @@ ?::tsquery AND {part}"
        f" ORDER BY m.id DESC LIMIT {want})"
        for part in query_parts
    )
    summary = (
        f"count(*) AS n, min(id) AS kth, CASE WHEN count(*) < {want} THEN array_agg(id)"
        f" ELSE (array_agg(id))[1:{keep}] END AS ids"
    )
    if not rows:
        return (
            f"SELECT n, ids::text, kth::text, NULL::varchar FROM (SELECT {summary} FROM"
            f" (SELECT id FROM ({branches}) u LIMIT {want}) x) s"
        )
    return (
        f"WITH x AS MATERIALIZED (SELECT id, ctid FROM ({branches}) u LIMIT {want}),"
        f" s AS MATERIALIZED (SELECT {summary} FROM x)"
        " SELECT n, ids::text, kth::text, NULL::varchar FROM s"
        " UNION ALL SELECT m.id, m.text, m.terms, m.role FROM messages m"
        " WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM x"
        " WHERE id >= (SELECT ids[cardinality(ids)] FROM s)))"
    )


def parts_between(low: int, high: int) -> list[str]:
    """Conditions for the ids low < id <= high, one per id range, newest first."""
    out = []
    k = high // pgsearch.RANGE
    while k >= 0 and (k + 1) * pgsearch.RANGE > low + 1:
        start, end = k * pgsearch.RANGE, (k + 1) * pgsearch.RANGE - 1
        part = pgsearch._in_range("m.id", k)
        if low + 1 > start:
            part += f" AND m.id > {low}"
        if high < end:
            part += f" AND m.id <= {high}"
        out.append(part)
        k -= 1
    return out


def half(
    conn: Any, query: str, low: int, high: int, keep: int, rows: bool = True
) -> tuple[int, list[int], list]:
    parts = parts_between(low, high)
    found = conn.execute_without(
        "enable_seqscan, enable_indexscan",
        split_statement(parts, SELECTIVE, keep, rows),
        [query] * len(parts),
    )
    head = next(r for r in found if r[3] is None)
    ids = pgsearch.parse_array(head[1] or "{}", int)
    return int(head[0]), ids, [tuple(r) for r in found if r[3] is not None]


def merged(conn: Any, newer: tuple, older: tuple) -> tuple[int, list[int], list]:
    """The newer half's matches, then the older's, up to SELECTIVE; the newest RERANK
    ids and their rows (the newer half's sent, the others' asked by id)."""
    count = min(SELECTIVE, newer[0] + older[0])
    ids = (newer[1] + older[1])[:RERANK]
    rows = list(newer[2])
    missing = ids[len(newer[1]) :]
    if missing:
        rows += [
            tuple(r)
            for r in conn.execute(
                "SELECT id, text, terms, role FROM messages WHERE id = ANY(?)", [missing]
            ).fetchall()
        ]
    keep = set(ids)
    return count, ids, sorted((r for r in rows if r[0] in keep), reverse=True)


def split_case(a: Any, b: Any, pids: list[int], query: str, runs: int) -> dict[str, Any]:
    fresh(a)
    fresh(b)
    newest = int(a.matches[""])
    share = pgsearch._share(a, query) or 0.0
    floor = max(0, newest - int(-(-pgsearch.SPAN * SELECTIVE // share)))
    mid = (floor + newest) // 2
    seq: list[Meter] = []
    par: list[Meter] = []
    same = True
    for _ in range(runs):
        fresh(a)
        with Meter(pids) as m:
            whole = probe_on(a, query, True)
        seq.append(m)
        box: dict[str, Any] = {}

        def older(box: dict[str, Any]) -> None:
            box["older"] = half(b, query, floor, mid, RERANK, rows=False)

        with Meter(pids) as m:
            other = threading.Thread(target=older, args=(box,))
            other.start()
            newer = half(a, query, mid, newest, RERANK)
            other.join()
            count, ids, rows = merged(a, newer, box["older"])
        par.append(m)
        (wcount, _), wids, wrows = whole
        same = same and wcount == count and wids == ids and wrows == rows
    return {"seq": seq, "par": par, "same": same, "share": share, "newer": newer[0]}


def best(meters: list[Meter]) -> Meter:
    return min(meters, key=lambda m: m.wall)


def fmt(m: Meter) -> str:
    return f"{m.wall * 1e3:.1f} / {m.client * 1e3:.1f} / {m.server * 1e3:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--driver", choices=("libpq", "psycopg"), default="libpq")
    parser.add_argument("--skip-split", action="store_true")
    args = parser.parse_args()

    # What a second connection costs to open.
    opens = []
    for _ in range(args.runs):
        start = time.perf_counter()
        c = connect(args.pg, args.driver)
        opens.append(time.perf_counter() - start)
        c.close()
    print(
        f"connect ({args.driver}): median {statistics.median(opens) * 1e3:.1f} ms,"
        f" best {min(opens) * 1e3:.1f} ms"
    )

    a, b = connect(args.pg, args.driver), connect(args.pg, args.driver)
    pids = [backend_pid(a), backend_pid(b)]
    print(
        "\nquery | probes | one connection: wall / client CPU / server CPU ms |"
        " two at once | wall ratio | same answers"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    ratios: dict[str, list[float]] = {}
    for cls, queries in CLASSES.items():
        for query in queries:
            probes = recorded(a, query)
            if len(probes) < 2:
                continue
            seq, par = [], []
            same = True
            for _ in range(args.runs):
                m1, o1 = one_after_other(a, pids, probes)
                m2, o2 = at_once(a, b, pids, probes)
                seq.append(m1)
                par.append(m2)
                same = same and o1 == o2
            s, p = best(seq), best(par)
            ratios.setdefault(cls, []).append(p.wall / s.wall)
            print(
                f"| {cls}: `{query}` | {len(probes)} | {fmt(s)} | {fmt(p)} |"
                f" {p.wall / s.wall:.2f}x | {same} |",
                flush=True,
            )
    for cls, r in ratios.items():
        print(f"{cls}: median wall ratio {statistics.median(r):.2f}x over {len(r)} queries")

    if not args.skip_split:
        print(
            "\nmedium word | share | one statement: wall / client / server ms |"
            " split in two at once | wall ratio | newer half's count | same"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        sr = []
        for word in MEDIUM:
            probes = recorded(a, word)
            if not probes:
                continue
            query = probes[0][0]
            if not pgsearch._share(a, query):
                continue
            case = split_case(a, b, pids, query, args.runs)
            s, p = best(case["seq"]), best(case["par"])
            sr.append(p.wall / s.wall)
            print(
                f"| `{word}` | {case['share']:.3%} | {fmt(s)} | {fmt(p)} |"
                f" {p.wall / s.wall:.2f}x | {case['newer']} | {case['same']} |",
                flush=True,
            )
        if sr:
            print(f"split: median wall ratio {statistics.median(sr):.2f}x over {len(sr)} words")
    a.close()
    b.close()


if __name__ == "__main__":
    main()
