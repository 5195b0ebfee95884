"""`subrosa mcp` bench: start-up, the search tool's latency, and what an answer costs.

    python bench/mcp_server.py                 # the 100 MB corpus
    python bench/mcp_server.py --size 1000     # 1 GB (the corpus and its ingest take a while)
    python bench/mcp_server.py --pg URL        # on PostgreSQL too (an empty database)
    python bench/mcp_server.py --pg URL --baseline ../main   # each engine, against main

Uses bench/transcripts.py's deterministic corpus under bench/out/ (never committed),
ingests it once into a work archive beside it, registers the example facts, then in
the same run measures, each against a baseline measured here too:
  - ready: a fresh `subrosa mcp` process answering `initialize` (wall and CPU), against
    a bare interpreter and against importing the MCP SDK alone (target <= 1 s);
  - the search tool's round trip over stdio for the 50 fixed queries of
    bench/transcripts.py (20 rare, 20 medium, 10 very common, every project), against
    the CLI's own search: the same use case in-process, and `subrosa search` as a
    whole process (target: p95 <= 100 ms at 1 GB);
  - tokens (characters / 4) per search hit and per get(), next to claude-mem's
    documented ~50-100 per hit and ~500-1,000 per detail;
  - with --pg, the same corpus ingested into that empty PostgreSQL database (as
    bench/transcripts.py does), and the search tool's round trip there, against the
    same use case in-process on one connection;
  - with --baseline DIR, on each engine, the search tool of a server running DIR's
    subrosa (another checkout, e.g. main: PYTHONPATH=DIR) against this checkout's, the
    two servers asked each query in turn (who goes first alternating): the ratio is the
    figure, both under the same load.
The client is a few lines of JSON-RPC over pipes (standard library), so the figures
are the server's, not an SDK client's. (Not named mcp.py: with bench/ on sys.path, as
the tests put it, that would hide the SDK's package `mcp`.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table import print_table  # noqa: E402
from transcripts import CLASSES, corpus, pct  # noqa: E402

from subrosa.archive.connection import connect  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

SUBROSA = str(Path(sys.executable).parent / "subrosa")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


class Client:
    """A minimal MCP client: one `subrosa mcp` process, requests answered in order."""

    def __init__(self, env: dict[str, str], code: Path | None = None) -> None:
        if code is not None:  # another checkout's subrosa, this venv's packages
            env = {**env, "PYTHONPATH": str(code)}
        self.process = subprocess.Popen(
            [SUBROSA, "mcp"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            answer = json.loads(self.process.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer  # type: ignore[no-any-return]

    def start(self) -> None:
        self.request("initialize", INITIALIZE["params"])
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["content"][0]["text"], bool(result.get("isError"))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_ready(env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds to the `initialize` answer, and CPU seconds of the whole process."""
    walls, cpus = [], []
    for _ in range(runs):
        before = _children_cpu()
        start = time.perf_counter()
        process = subprocess.Popen(
            [SUBROSA, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        walls.append(time.perf_counter() - start)
        assert answer["result"]["serverInfo"]["name"] == "subrosa"
        process.stdin.close()
        process.wait(timeout=30)
        cpus.append(_children_cpu() - before)
    return walls, cpus


def time_process(
    argv: list[str], env: dict[str, str], runs: int
) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        before = _children_cpu()
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - before)
    return walls, cpus


def prepare(size_mb: int, out: Path) -> tuple[Path, dict[str, str]]:
    """The corpus, ingested once into a work archive (kept for the next run), and a
    memory dir holding the example facts."""
    root, _ = corpus(size_mb, out)
    work = out / f"mcp-work-{size_mb}mb"
    db = work / "subrosa.db"
    env = {
        **os.environ,
        "HOME": str(work),
        "CLAUDE_CONFIG_DIR": str(root),
        "SUBROSA_DB": str(db),
        "SUBROSA_MEMORY_DIR": str(work / "memory"),
        "XDG_DATA_HOME": str(work / "data"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "subrosa")],
        env=env,
        check=True,
        capture_output=True,
    )
    marker = work / ".ingested"
    if not marker.exists():
        shutil.rmtree(work, ignore_errors=True)
        (work / "memory").mkdir(parents=True)
        print(f"ingesting the {size_mb} MB corpus once into {db} …", flush=True)
        subprocess.run([SUBROSA, "ingest", "--all-projects"], env=env, check=True)
        for leaf in (HERE.parent / "subrosa" / "examples").glob("*.md"):
            shutil.copy(leaf, work / "memory" / leaf.name)
        subprocess.run([SUBROSA, "generate"], env=env, check=True, capture_output=True)
        marker.write_text("done\n")
    return db, env


def prepare_pg(url: str, env: dict[str, str]) -> dict[str, str]:
    """The corpus ingested once into the PostgreSQL database at `url` (empty the first
    time; an earlier run's archive is reused), its statistics made as autovacuum would
    after a bulk load; the environment that names it."""
    from subrosa.archive.pgstore import open_server

    pg_env = {**env, "SUBROSA_DB": url}
    subprocess.run([SUBROSA, "db", "upgrade"], env=pg_env, check=True, capture_output=True)
    with open_server(url) as conn:
        ingested = bool(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    if not ingested:
        print("ingesting the corpus once into the PostgreSQL database …", flush=True)
        subprocess.run([SUBROSA, "ingest", "--all-projects"], env=pg_env, check=True)
        subprocess.run([SUBROSA, "generate"], env=pg_env, check=True, capture_output=True)
        with open_server(url) as conn:
            conn.execute("VACUUM ANALYZE")
    return pg_env


def tool_times(client: Client, rounds: int = 3) -> dict[str, list[float]]:
    """The search tool's round trip for each query of each class, `rounds` times."""
    times: dict[str, list[float]] = {}
    for cls, queries in CLASSES.items():
        for query in queries:
            for _ in range(rounds):
                start = time.perf_counter()
                text, error = client.tool(
                    "search", {"query": query, "limit": 10, "sessions": "all"}
                )
                times.setdefault(cls, []).append(time.perf_counter() - start)
                assert not error, text
    return times


def compare(env: dict[str, str], baseline: Path, engine: str, rounds: int = 3) -> None:
    """The search tool of this checkout's server against `baseline`'s, each query asked
    of both in turn (who goes first alternating), `rounds` times."""
    ours, theirs = Client(env), Client(env, baseline)
    ours.start()
    theirs.start()
    mine: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    turn = 0
    for cls, queries in CLASSES.items():
        for query in queries:
            for _ in range(rounds):
                pair = [(ours, mine), (theirs, base)]
                for client, into in pair if turn % 2 == 0 else pair[::-1]:
                    start = time.perf_counter()
                    text, error = client.tool(
                        "search", {"query": query, "limit": 10, "sessions": "all"}
                    )
                    into.setdefault(cls, []).append(time.perf_counter() - start)
                    assert not error, text
                turn += 1
    ours.close()
    theirs.close()

    def ms(values: list[float], q: float) -> str:
        return f"{pct(values, q) * 1e3:.1f}"

    print(f"\n### {engine}: the search tool, this checkout against {baseline} (interleaved)\n")
    print(
        "| class (calls) | this checkout p50 / p95 | baseline p50 / p95 |"
        " this / baseline: p50, p95 |\n| --- | --- | --- | --- |"
    )
    every_mine = [t for v in mine.values() for t in v]
    every_base = [t for v in base.values() for t in v]
    for cls, m, b in [*((c, mine[c], base[c]) for c in CLASSES), ("all", every_mine, every_base)]:
        print(
            f"| {cls} ({len(m)}) | {ms(m, 0.5)} / {ms(m, 0.95)} ms | {ms(b, 0.5)} /"
            f" {ms(b, 0.95)} ms | {pct(m, 0.5) / pct(b, 0.5):.2f}x,"
            f" {pct(m, 0.95) / pct(b, 0.95):.2f}x |"
        )


def pg_tool(pg_env: dict[str, str], url: str) -> None:
    """The search tool on the server, against the same use case in-process on one
    connection kept across the searches."""
    from subrosa.archive.pgstore import open_server

    client = Client(pg_env)
    client.start()
    tool = tool_times(client)
    client.close()
    with open_server(url) as conn:
        in_proc = in_process(conn)
    print("\n### PostgreSQL: the search tool over stdio\n")
    print("| class (calls) | tool p50 / p95 | in-process p50 / p95 | tool / in-process p95 |")
    print("| --- | --- | --- | --- |")
    for cls in CLASSES:
        t, i = tool[cls], in_proc[cls]
        print(
            f"| {cls} ({len(t)}) | {pct(t, 0.5) * 1e3:.1f} / {pct(t, 0.95) * 1e3:.1f} ms |"
            f" {pct(i, 0.5) * 1e3:.1f} / {pct(i, 0.95) * 1e3:.1f} ms |"
            f" {pct(t, 0.95) / pct(i, 0.95):.2f}x |"
        )


def in_process(conn: Any) -> dict[str, list[float]]:
    """Each class's queries searched in this process on `conn`, three times each: the
    seconds of every search, by class."""
    times: dict[str, list[float]] = {}
    for cls, queries in CLASSES.items():
        for query in queries:
            for _ in range(3):
                start = time.perf_counter()
                search(conn, query, Filters(), 10)
                times.setdefault(cls, []).append(time.perf_counter() - start)
    return times


def hit_lines(answer: str) -> list[tuple[str, str]]:
    """The (head, snippet) pairs of a search answer."""
    lines = answer.splitlines()[1:]
    return list(zip(lines[0::2], lines[1::2], strict=False))


def bench(
    size_mb: int,
    out: Path,
    runs: int,
    pg: str | None = None,
    baseline: Path | None = None,
    only_search: bool = False,
) -> None:
    db, env = prepare(size_mb, out)
    print(f"\n## `subrosa mcp` at the {size_mb} MB corpus", flush=True)
    pg_env = prepare_pg(pg, env) if pg else None
    if baseline is not None:
        compare(env, baseline, f"SQLite ({size_mb} MB corpus)")
        if pg_env is not None:
            compare(pg_env, baseline, f"PostgreSQL ({size_mb} MB corpus)")
    if pg is not None and pg_env is not None:
        pg_tool(pg_env, pg)
    if only_search:
        return

    # ---- ready
    bare_wall, bare_cpu = time_process([sys.executable, "-c", "pass"], env, runs)
    sdk = "import mcp.server.lowlevel, mcp.server.stdio"
    sdk_wall, sdk_cpu = time_process([sys.executable, "-c", sdk], env, runs)
    ready_wall, ready_cpu = time_ready(env, runs)

    # ---- search: the tool over stdio, the CLI's use case in-process, the CLI process
    client = Client(env)
    client.start()
    tool: dict[str, list[float]] = {}
    answers: list[str] = []
    for cls, queries in CLASSES.items():
        for query in queries:
            for _ in range(3):
                start = time.perf_counter()
                text, error = client.tool(
                    "search", {"query": query, "limit": 10, "sessions": "all"}
                )
                tool.setdefault(cls, []).append(time.perf_counter() - start)
                assert not error, text
            answers.append(text)
    conn = connect(db)
    in_proc = in_process(conn)
    conn.close()
    whole = []
    for queries in CLASSES.values():
        for query in queries[:5]:
            elapsed, _ = time_process([SUBROSA, "search", "--all-projects", query], env, 1)
            whole.extend(elapsed)

    # ---- tokens: per hit, per get
    hits = [pair for answer in answers for pair in hit_lines(answer)]
    fact_hits = [len(h) + len(s) + 2 for h, s in hits if h.startswith("fact ")]
    message_hits = [len(h) + len(s) + 2 for h, s in hits if h.startswith("message ")]
    uuids = [h.split()[1] for h, _ in hits if h.startswith("message ")][::7][:40]
    gets = [len(client.tool("get", {"id": ident})[0]) for ident in uuids]
    gets_around = [len(client.tool("get", {"id": ident, "around": 2})[0]) for ident in uuids[:20]]
    fact_answer, _ = client.tool("search", {"query": "the", "kind": "facts", "limit": 50})
    slugs = [h.split()[1] for h, _ in hit_lines(fact_answer)]
    fact_gets = [len(client.tool("get", {"id": slug})[0]) for slug in slugs]
    session = next(h.split()[4] for h, _ in hits if h.startswith("message "))
    timeline_answer, _ = client.tool("timeline", {"session": session, "limit": 20})
    client.close()

    def ms(values: list[float], q: float) -> str:
        return f"{pct(values, q) * 1e3:.1f} ms"

    every_tool = [t for values in tool.values() for t in values]
    every_in = [t for values in in_proc.values() for t in values]
    rows = [
        (
            "ready: `subrosa mcp` answers initialize (p50 / max, wall)",
            f"{ms(ready_wall, 0.5)} / {max(ready_wall) * 1e3:.0f} ms",
            f"import of the SDK alone {ms(sdk_wall, 0.5)}; python -c pass {ms(bare_wall, 0.5)}",
            f"{pct(ready_wall, 0.5) / pct(sdk_wall, 0.5):.2f}x the SDK import",
            "<= 1 s",
        ),
        (
            "ready, CPU seconds of the process (p50)",
            f"{pct(ready_cpu, 0.5):.2f} s",
            f"SDK import {pct(sdk_cpu, 0.5):.2f} s; python -c pass {pct(bare_cpu, 0.5):.2f} s",
            f"{pct(ready_cpu, 0.5) / pct(sdk_cpu, 0.5):.2f}x",
            "(robust to other load)",
        ),
        (
            f"search tool, {len(every_tool)} calls (p50 / p95 / max)",
            f"{ms(every_tool, 0.5)} / {ms(every_tool, 0.95)} / {max(every_tool) * 1e3:.0f} ms",
            f"CLI's search in-process {ms(every_in, 0.5)} / {ms(every_in, 0.95)}",
            f"{pct(every_tool, 0.95) / pct(every_in, 0.95):.2f}x (p95)",
            "p95 <= 100 ms at 1 GB",
        ),
        (
            f"`subrosa search` whole process, {len(whole)} queries (p50 / max)",
            f"{ms(whole, 0.5)} / {max(whole) * 1e3:.0f} ms",
            "the tool answers inside a running server",
            f"tool p50 is {pct(every_tool, 0.5) / pct(whole, 0.5):.2f}x of it",
            "",
        ),
    ]
    for cls in CLASSES:
        rows.append(
            (
                f"  search tool, {cls} ({len(tool[cls])} calls) p50 / p95",
                f"{ms(tool[cls], 0.5)} / {ms(tool[cls], 0.95)}",
                f"in-process {ms(in_proc[cls], 0.5)} / {ms(in_proc[cls], 0.95)}",
                f"{pct(tool[cls], 0.95) / pct(in_proc[cls], 0.95):.2f}x",
                "",
            )
        )

    def tokens(values: list[int]) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values) / 4:.0f} (p90 {pct(values, 0.9) / 4:.0f})"

    claude_mem = "claude-mem (its docs)"
    rows += [
        (
            f"tokens per search hit, message ({len(message_hits)} hits)",
            tokens(message_hits),
            f"{claude_mem}: ~50-100 per hit",
            "",
            "",
        ),
        (
            f"tokens per search hit, fact ({len(fact_hits)} hits)",
            tokens(fact_hits),
            f"{claude_mem}: ~50-100 per hit",
            "",
            "",
        ),
        (
            f"tokens per get(message uuid) ({len(gets)})",
            tokens(gets),
            f"{claude_mem}: ~500-1,000 per detail",
            "",
            "",
        ),
        (
            f"tokens per get(uuid, around=2) ({len(gets_around)})",
            tokens(gets_around),
            f"{claude_mem}: ~500-1,000 per detail",
            "",
            "",
        ),
        (
            f"tokens per get(fact slug) ({len(fact_gets)})",
            tokens(fact_gets),
            f"{claude_mem}: ~500-1,000 per detail",
            "",
            "",
        ),
        (
            "tokens per timeline line (limit 20)",
            f"{len(timeline_answer) / 4 / max(1, len(timeline_answer.splitlines()) - 1):.0f}",
            "",
            "",
            "",
        ),
    ]
    print_table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, action="append", help="corpus size in MB")
    parser.add_argument("--runs", type=int, default=10, help="fresh processes for `ready`")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--pg", help="an empty PostgreSQL database's URL: measure it too")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. main's): its server's search tool against this one's",
    )
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="only the search tool (--pg, --baseline): no start-up, CLI or token figures",
    )
    args = parser.parse_args()
    for size in args.size or [100]:
        bench(size, args.out, args.runs, args.pg, args.baseline, args.search_only)


if __name__ == "__main__":
    main()
