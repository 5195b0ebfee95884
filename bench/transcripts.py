"""Transcript archive bench: ingest speed and memory, no-op re-ingest, search latency.

    python bench/transcripts.py                 # 100 MB
    python bench/transcripts.py --size 1000     # 1 GB (long: run it with nohup)
    python bench/transcripts.py --pg URL        # and the same on PostgreSQL (an empty database)
    python bench/transcripts.py --search-only --pg URL   # searches only, archives reused
    python bench/transcripts.py --size 1000 --rounds 3  # ingest against the floor 3 times

Generates a deterministic corpus (bench/gen_transcripts.py) under bench/out/ (never
committed), then in the same run measures, each against a baseline measured here too:
  - ingest MB/s of `subrosa ingest` (a real process, into an archive created just
    before) against a floor: the same extracted text inserted into a bare FTS5 table
    with the same tokenizer and prefix index (target >= 50 % of the floor). A shared
    machine's speed drifts by a third within minutes (the same 1 GB ingest took 63 and
    85 CPU-seconds ten minutes apart), so with --rounds N the two are measured N times,
    ingest and floor in turn (each further round into an archive of its own), and the
    figure is the median of the rounds' ratios, their range beside it;
  - the ingest process's peak RSS (target <= 200 MB, independent of corpus size);
  - a no-op re-ingest (target <= 2 s at 1 GB);
  - the re-index in place that migration 0003 asks for (`subrosa db upgrade` on a copy of
    the archive taken back to revision 0002), against the ingest (target: no slower);
  - 75 fixed queries (20 rare, 20 medium, 10 very common, 5 phrases of very common
    words that are themselves rare, 10 whose words are never all
    in one message, so that search falls back to its second tier, "some words", 10 of
    two or three words found together, "all words": a medium word with a common or
    another medium one, the shape people type most) in-process
    and as a whole `subrosa search` process (the median of three), against `grep -rF` over
    the raw JSONL (grep looks for the query's rarest word there; targets at 1 GB: p95 <=
    50 ms rare and medium, every query <= 150 ms, the process >= 3x faster than grep for
    every class);
  - with --pg, the same corpus ingested into an empty PostgreSQL database and the same
    queries asked of it, in-process and as a process, each query timed on SQLite and on
    PostgreSQL in turn, run by run, so that a burst of load on a shared machine falls on
    both (target: every query <= 2x SQLite's).
  - the same queries searched in one project (the oldest), against every project:
    what `subrosa search` does by default.

It measures whatever `subrosa` is importable, through its command line and
`subrosa.recall.search` only, so the same script measures an older checkout (put it
first on PYTHONPATH) on the same corpus.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_transcripts import MEDIUM, RARE, Generator  # noqa: E402

from subrosa.archive.connection import connect  # noqa: E402
from subrosa.query import Filters  # noqa: E402
from subrosa.recall import search  # noqa: E402

COMMON = [
    "the",
    "and",
    "it",
    "deploy",
    "check",
    "dependency",
    '"in the"',
    "dep*",
    '"deploy it"',
    "the dependency",
]
# Phrases of very common words that are themselves rare: each row holding both words
# must have its positions tested (on a server: no positions in a GIN index; docs/team.md,
# "Round twelve").
RARE_PHRASES = [
    '"the in"',
    '"it deploy"',
    '"of the"',
    '"to a"',
    '"dependency the"',
]
# Prefixes of one or two letters. Until migration 0020 the index held 3-letter prefixes
# only (prefix='3'), and FTS5 merged the doclists of every word each of these starts, over
# the whole index, in every statement (docs/search.md, "Short prefixes"); it now holds
# 2-letter ones too (prefix='2 3'), and one letter is asked as its two-letter prefixes
# (subrosa.archive.search._one_letter). A GIN index reads a range's.
SHORT_PREFIXES = ["co*", "de*", "ch*", "fi*", "t*"]
# Words never all in one message (rare with rare or medium, stopwords around them): the
# first tier is empty, the second ranks what holds some of them.
SOME_WORDS = [
    "zanzibarite quokkaflux",
    "mordantix fjordline",
    "velociraptorium postgres webpack",
    "how to fix glimmerwick with the linter",
    "thundersnout vs paraboloxx",
    "snorkelgate quillotron deadlock",
    "wobbleframe and the xylocarp",
    "crystalfen hollowbyte deploy dependency",
    "kubernetes zanzibarite quokkaflux mordantix",
    "obsidianqueue marzipantry blimpstack",
]
# Words found together in some messages (the first tier): a medium word with a common
# word or with another medium one.
ALL_WORDS = [
    "kubernetes deploy",
    "postgres check",
    "webpack dependency",
    "flaky test",
    "migration rollback",
    "postgres deadlock",
    "websocket error",
    "tokenizer fix",
    "sharding postgres",
    "deploy postgres migration",
]
CLASSES = {
    "rare": RARE,
    "medium": MEDIUM,
    "common": COMMON,
    "rare phrases": RARE_PHRASES,
    "short prefixes": SHORT_PREFIXES,
    "some words": SOME_WORDS,
    "all words": ALL_WORDS,
}
_QUERY_TERM = re.compile(r'"[^"]*"\*?|\S+')
TOKENIZE = "unicode61 remove_diacritics 2"


def corpus(size_mb: int, out: Path) -> tuple[Path, int]:
    root = out / f"corpus-{size_mb}mb"
    marker = root / ".complete"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        files, written = Generator(42).write(root, size_mb * 1_000_000)
        marker.write_text(f"{files} {written}\n")
    written = sum(p.stat().st_size for p in (root / "projects").rglob("*.jsonl"))
    return root, written


def run_measured(args: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """Wall time, peak RSS (bytes) and CPU seconds (its workers included) of a child."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{args}: exit {proc.returncode}\n{err.decode()[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def floor(db: Path, work: Path) -> tuple[float, float]:
    """Wall and CPU seconds to insert the archive's extracted text into a bare FTS5 table with the
    same tokenizer and prefix index, in transactions of the same size as ingest's."""
    target = work / "floor.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    src = sqlite3.connect(db)
    dst = sqlite3.connect(target, isolation_level=None)
    dst.execute("PRAGMA journal_mode = WAL")
    dst.execute("PRAGMA synchronous = NORMAL")
    # The prefix index the measured archive's messages_fts has (migration 0020 added
    # two-letter prefixes: an older checkout's archive gives its own floor).
    fts = src.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()[0]
    prefix = re.search(r"prefix='([^']*)'", fts)
    options = f", prefix='{prefix.group(1)}'" if prefix else ""
    dst.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, terms, tokenize='{TOKENIZE}'{options})")
    spent = cpu = 0.0
    columns = {row[1] for row in src.execute("PRAGMA table_info(messages)")}
    extra = "terms" if "terms" in columns else "cjk"  # the column's name before 0003
    cursor = src.execute(f"SELECT text, {extra} FROM messages ORDER BY id")
    pending = 0
    dst.execute("BEGIN")
    while True:
        rows = cursor.fetchmany(2000)
        if not rows:
            break
        start, start_cpu = time.perf_counter(), time.process_time()
        dst.executemany("INSERT INTO t(text, terms) VALUES (?, ?)", rows)
        pending += sum(len(r[0]) for r in rows)
        if pending >= 32 << 20:
            dst.execute("COMMIT")
            dst.execute("BEGIN")
            pending = 0
        spent += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
    start, start_cpu = time.perf_counter(), time.process_time()
    dst.execute("COMMIT")
    spent += time.perf_counter() - start
    cpu += time.process_time() - start_cpu
    dst.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    return spent, cpu


def _fts(query: str, operator: str) -> str:
    """The query's words (or "phrases", prefixes*) joined by `operator`, as FTS5 reads them."""
    terms = []
    for term in _QUERY_TERM.findall(query):
        if term.startswith('"'):
            terms.append(term)
        else:
            prefix = "*" if term.endswith("*") else ""
            terms.append('"' + term.rstrip("*").replace('"', '""') + '"' + prefix)
    return operator.join(terms)


def _count(conn: sqlite3.Connection, query: str, operator: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", [_fts(query, operator)]
    ).fetchone()
    return int(row[0])


def _grep_needle(conn: sqlite3.Connection, query: str) -> str:
    """What grep looks for: the query itself when it is one term, else its rarest word."""
    terms = _QUERY_TERM.findall(query)
    if len(terms) == 1:
        return terms[0].strip('"').rstrip("*")
    return min(terms, key=lambda term: _count(conn, term, ""))


def reindex_run(
    db: Path, work: Path, env: dict[str, str], subrosa: list[str]
) -> tuple[float, int, float] | None:
    """Wall time, peak RSS and CPU of `subrosa db upgrade` on a copy of the archive taken
    back to revision 0002 (migration 0003 and the re-index it asks for), or None for a
    subrosa without that migration."""
    try:
        from subrosa.archive import reindex  # noqa: F401
    except ImportError:
        return None
    copy = work / "reindex.db"
    source = sqlite3.connect(db)
    source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    source.close()
    shutil.copyfile(db, copy)
    # In a process of its own: a child forked from a big process would report the
    # parent's pages as its peak RSS.
    downgrade = (
        "import sys; from alembic import command;"
        " from subrosa.db import alembic_config, get_engine;"
        " engine = get_engine('sqlite:///' + sys.argv[1]); config = alembic_config(engine)\n"
        "with engine.begin() as conn:\n"
        "    config.attributes['connection'] = conn; command.downgrade(config, '0002')"
    )
    subprocess.run([sys.executable, "-c", downgrade, str(copy)], env=env, check=True)
    measured = run_measured([*subrosa, "db", "upgrade"], {**env, "SUBROSA_DB": str(copy)})
    for suffix in ("", "-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    return measured


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


Timings = dict[str, list[float]]


def searches(
    conn: Any, env: dict[str, str], subrosa: list[str]
) -> tuple[Timings, Timings, dict[str, list[int]]]:
    """Each query's time in this process (the best of three) and as a whole `subrosa
    search` process (the median of three), by class; and how many results each found."""
    in_proc: Timings = {}
    whole: Timings = {}
    found: dict[str, list[int]] = {}
    for cls, queries in CLASSES.items():
        for query in queries:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                results = search(conn, query, Filters(), 10)
                times.append(time.perf_counter() - start)
            in_proc.setdefault(cls, []).append(min(times))
            found.setdefault(cls, []).append(len(results))
            # The median of three processes: one run is at the mercy of a busy machine.
            runs = [
                run_measured([*subrosa, "search", "--all-projects", query], env)[0]
                for _ in range(3)
            ]
            whole.setdefault(cls, []).append(statistics.median(runs))
    return in_proc, whole, found


def project_searches(conn: sqlite3.Connection, env: dict[str, str], subrosa: list[str]) -> None:
    """The queries searched in one project (what `subrosa search` does by default), the
    one whose messages are the oldest, against the same queries in every project, in
    turn: the other projects' newer matches are what a project's search must not walk."""
    row = conn.execute(
        "SELECT s.project, count(DISTINCT s.id) FROM sessions s"
        " JOIN messages m ON m.session_pk = s.id GROUP BY s.project ORDER BY max(m.id) LIMIT 1"
    ).fetchone()
    projects = conn.execute("SELECT count(DISTINCT project) FROM sessions").fetchone()[0]
    if row is None or projects < 2:
        return
    project, sessions = row
    print(
        f"\nIn one project (`--project {project}`: the oldest of {projects}, {sessions}"
        " sessions) against every project (`--all-projects`), the same queries in turn:\n"
        "\n| class | in-process p50 / p95, one project | every project | one ÷ every (p50)"
        " | whole process p50 / p95, one project | every project |"
        "\n| --- | --- | --- | --- | --- | --- |"
    )
    for cls, queries in CLASSES.items():
        ip: tuple[list[float], list[float]] = ([], [])
        wp: tuple[list[float], list[float]] = ([], [])
        for query in queries:
            for side, filters in enumerate((Filters(transcript_project=project), Filters())):
                times = []
                for _ in range(3):
                    start = time.perf_counter()
                    search(conn, query, filters, 10)
                    times.append(time.perf_counter() - start)
                ip[side].append(min(times))
                scope = ["--project", project] if side == 0 else ["--all-projects"]
                runs = [run_measured([*subrosa, "search", *scope, query], env)[0] for _ in range(3)]
                wp[side].append(statistics.median(runs))
        print(
            f"| {cls} ({len(queries)})"
            f" | {pct(ip[0], 0.5) * 1e3:.1f} / {pct(ip[0], 0.95) * 1e3:.1f} ms"
            f" | {pct(ip[1], 0.5) * 1e3:.1f} / {pct(ip[1], 0.95) * 1e3:.1f} ms"
            f" | {pct(ip[0], 0.5) / pct(ip[1], 0.5):.2f}x"
            f" | {pct(wp[0], 0.5) * 1e3:.0f} / {pct(wp[0], 0.95) * 1e3:.0f} ms"
            f" | {pct(wp[1], 0.5) * 1e3:.0f} / {pct(wp[1], 0.95) * 1e3:.0f} ms |"
        )


def paired(
    sqlite_conn: Any, env: dict[str, str], pg_conn: Any, pg_env: dict[str, str], subrosa: list[str]
) -> tuple[Timings, Timings, Timings, Timings]:
    """searches() on both engines, interleaved query by query and run by run (SQLite,
    PostgreSQL, SQLite, ...): on a shared machine a burst of load falls on both, so
    each query's ratio is measured under the same conditions. In-process SQLite,
    PostgreSQL; whole process SQLite, PostgreSQL."""
    out: tuple[Timings, Timings, Timings, Timings] = ({}, {}, {}, {})
    for cls, queries in CLASSES.items():
        for query in queries:
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(3):
                for side, conn in enumerate((sqlite_conn, pg_conn)):
                    start = time.perf_counter()
                    search(conn, query, Filters(), 10)
                    times[side].append(time.perf_counter() - start)
            runs: tuple[list[float], list[float]] = ([], [])
            for _ in range(3):
                for side, side_env in enumerate((env, pg_env)):
                    args = [*subrosa, "search", "--all-projects", query]
                    runs[side].append(run_measured(args, side_env)[0])
            for side in (0, 1):
                out[side].setdefault(cls, []).append(min(times[side]))
                out[2 + side].setdefault(cls, []).append(statistics.median(runs[side]))
    return out


def greps(conn: sqlite3.Connection, root: Path) -> Timings:
    """`grep -rF` over the raw JSONL for each query's rarest word, by class."""
    grep: Timings = {}
    for cls, queries in CLASSES.items():
        for query in queries:
            needle = _grep_needle(conn, query)
            start = time.perf_counter()
            subprocess.run(
                ["grep", "-rFc", "--", needle, str(root / "projects")],
                capture_output=True,
                check=False,
            )
            grep.setdefault(cls, []).append(time.perf_counter() - start)
    return grep


def table(engine: str, in_proc: Timings, whole: Timings) -> None:
    print(
        f"\n{engine}:\n\n| class | in-process p50 / p95 / max | whole process p50 / p95 / max |"
        "\n| --- | --- | --- |"
    )
    for cls in CLASSES:
        ip, wp = in_proc[cls], whole[cls]
        print(
            f"| {cls} ({len(ip)}) | {pct(ip, 0.5) * 1e3:.1f} / {pct(ip, 0.95) * 1e3:.1f} /"
            f" {max(ip) * 1e3:.1f} ms | {pct(wp, 0.5) * 1e3:.0f} / {pct(wp, 0.95) * 1e3:.0f} /"
            f" {max(wp) * 1e3:.0f} ms |"
        )


def more_rounds(
    db: Path, work: Path, env: dict[str, str], subrosa: list[str], rounds: int
) -> list[tuple[float, float, float, float]]:
    """Rounds 2..N of ingest against the floor: (ingest wall, ingest CPU, floor wall,
    floor CPU) each, the floor first in even rounds and the ingest first in odd ones,
    each ingest into a new archive (created, unmeasured, before it) in a scratch folder."""
    measured = []
    for number in range(2, rounds + 1):
        scratch = work / "round"
        shutil.rmtree(scratch, ignore_errors=True)
        (scratch / "memory").mkdir(parents=True)
        scratch_env = {
            **env,
            "HOME": str(scratch),
            "SUBROSA_DB": str(scratch / "subrosa.db"),
            "SUBROSA_MEMORY_DIR": str(scratch / "memory"),
            "XDG_DATA_HOME": str(scratch / "data"),
        }
        run_measured([*subrosa, "ingest"], scratch_env)
        if number % 2 == 0:
            floor_s, floor_cpu = floor(db, work)
        ingest_s, _, ingest_cpu = run_measured([*subrosa, "ingest", "--all-projects"], scratch_env)
        if number % 2 == 1:
            floor_s, floor_cpu = floor(db, work)
        measured.append((ingest_s, ingest_cpu, floor_s, floor_cpu))
        shutil.rmtree(scratch, ignore_errors=True)
    return measured


def _share(pairs: list[tuple[float, float]]) -> str:
    """The floor's time over the ingest's: one round's, or the median of the rounds'
    with their range."""
    ratios = sorted(floor_t / ingest_t for ingest_t, floor_t in pairs)
    if len(ratios) == 1:
        return f"{ratios[0]:.0%}"
    return (
        f"{statistics.median(ratios):.0%} (median of {len(ratios)} rounds,"
        f" {ratios[0]:.0%}-{ratios[-1]:.0%})"
    )


def bench(
    size_mb: int,
    out: Path,
    pg: str | None = None,
    search_only: bool = False,
    rounds: int = 1,
) -> None:
    root, jsonl_bytes = corpus(size_mb, out)
    work = out / f"work-{size_mb}mb"
    db = work / "subrosa.db"
    if not (search_only and db.exists()):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    env = {
        **os.environ,
        "HOME": str(work),
        "CLAUDE_CONFIG_DIR": str(root),
        "SUBROSA_DB": str(db),
        "SUBROSA_MEMORY_DIR": str(work / "memory"),
        "XDG_DATA_HOME": str(work / "data"),
    }
    # Measure what an installed subrosa does: pip writes bytecode at install time,
    # so the child processes must not compile every module on every start.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "subrosa")],
        env=env,
        check=True,
        capture_output=True,
    )
    (work / "memory").mkdir(exist_ok=True)
    # The installed console script, as users run it (`python -m` adds runpy).
    subrosa = [str(Path(sys.executable).parent / "subrosa")]
    mb = jsonl_bytes / 1e6
    print(f"\n## {size_mb} MB corpus: {mb:.0f} MB of JSONL", flush=True)
    if search_only:
        # The archives of an earlier run (or a copy of one), searched again: no ingest
        # figures, no grep; what is missing is ingested first, unmeasured.
        if not db.exists():
            run_measured([*subrosa, "ingest", "--all-projects"], env)
        conn = connect(db)
        in_proc, whole, _ = searches(conn, env, subrosa)
        table("SQLite", in_proc, whole)
        project_searches(conn, env, subrosa)
        conn.close()
        if pg is not None:
            postgres(pg, env, subrosa, mb, None, db)
        return

    # The archive is created (and migrated: SQLAlchemy and Alembic load only for that)
    # once per user, not per ingest: an ingest of the current project, which has no
    # transcripts in the corpus, creates it, and is reported on its own row.
    create_s, _, create_cpu = run_measured([*subrosa, "ingest"], env)
    ingest_s, ingest_rss, ingest_cpu = run_measured([*subrosa, "ingest", "--all-projects"], env)
    conn = connect(db)
    messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    floor_s, floor_cpu = floor(db, work)
    noop_s, _, _ = run_measured([*subrosa, "ingest", "--all-projects"], env)
    others = more_rounds(db, work, env, subrosa, rounds)
    walls = [(ingest_s, floor_s)] + [(r[0], r[2]) for r in others]
    cpus = [(ingest_cpu, floor_cpu)] + [(r[1], r[3]) for r in others]
    db_mb = sum(p.stat().st_size for p in work.glob("subrosa.db*")) / 1e6

    rows = [
        ("messages archived", f"{messages:,}", ""),
        ("database size", f"{db_mb:.0f} MB", f"{db_mb / mb:.2f}x the JSONL"),
        (
            "ingest (whole process), wall",
            f"{mb / ingest_s:.1f} MB/s ({ingest_s:.1f} s)",
            f"{_share(walls)} of the floor's speed (target >= 50%)",
        ),
        (
            "ingest, CPU seconds",
            f"{ingest_cpu:.1f} s ({mb / ingest_cpu:.1f} MB per CPU-second)",
            f"{_share(cpus)} of the floor's (robust to other load)",
        ),
        (
            "floor: bare FTS5 insert",
            f"{mb / floor_s:.1f} MB/s ({floor_s:.1f} s wall, {floor_cpu:.1f} s CPU)",
            "",
        ),
        (
            "creating the empty archive (once)",
            f"{create_s:.2f} s wall, {create_cpu:.2f} s CPU",
            "not in the ingest figures above",
        ),
        ("ingest peak RSS", f"{ingest_rss / 1e6:.0f} MB", "target <= 200 MB"),
        ("no-op re-ingest", f"{noop_s:.2f} s", "target <= 2 s at 1 GB"),
    ]
    migrated = reindex_run(db, work, env, subrosa)
    if migrated is not None:
        re_s, re_rss, re_cpu = migrated
        rows.append(
            (
                "re-index in place (db upgrade from 0002)",
                f"{re_s:.1f} s wall, {re_cpu:.1f} s CPU, {re_rss / 1e6:.0f} MB peak RSS",
                f"{ingest_s / re_s:.2f}x the ingest's speed (wall),"
                f" {ingest_cpu / re_cpu:.2f}x (CPU); target >= 1",
            )
        )

    in_proc, whole, found = searches(conn, env, subrosa)
    grep = greps(conn, root)
    # How many messages hold every word of each class's queries (verifies the classes).
    share = {}
    for cls, queries in CLASSES.items():
        fractions = [_count(conn, query, " AND ") / messages for query in queries[:3]]
        share[cls] = f"{min(fractions):.2%}-{max(fractions):.2%}"

    print("\n| figure | value | against the baseline |\n| --- | --- | --- |")
    for name, value, ratio in rows:
        print(f"| {name} | {value} | {ratio} |")
    print(
        "\n| class | share of messages | in-process p50 / p95 / max | whole process p50 / max"
        " | grep -rF p50 | grep / process (p50, worst) |\n| --- | --- | --- | --- | --- | --- |"
    )
    for cls in CLASSES:
        ip, wp, gp = in_proc[cls], whole[cls], grep[cls]
        print(
            f"| {cls} ({len(ip)}) | {share[cls]} | {pct(ip, 0.5) * 1e3:.1f} / "
            f"{pct(ip, 0.95) * 1e3:.1f} / {max(ip) * 1e3:.1f} ms | {pct(wp, 0.5) * 1e3:.0f} / "
            f"{max(wp) * 1e3:.0f} ms | {statistics.median(gp) * 1e3:.0f} ms | "
            f"{statistics.median(gp) / pct(wp, 0.5):.1f}x, {min(gp) / max(wp):.1f}x |"
        )
    empty = [q for cls in CLASSES for q, n in zip(CLASSES[cls], found[cls], strict=True) if not n]
    if empty:
        print(f"\nqueries with no results: {empty}")
    project_searches(conn, env, subrosa)
    conn.close()
    if pg is not None:
        postgres(pg, env, subrosa, mb, ingest_s, db)


def postgres(
    url: str,
    env: dict[str, str],
    subrosa: list[str],
    mb: float,
    sqlite_ingest_s: float | None,
    sqlite_db: Path,
) -> None:
    """The PostgreSQL column: the same corpus and queries on the server at `url` (an
    empty database, ingested here; with --search-only, one ingested before is reused),
    each query timed on both engines in turn (paired())."""
    from subrosa.archive.pgstore import open_server

    pg_env = {**env, "SUBROSA_DB": url}
    run_measured([*subrosa, "ingest"], pg_env)  # created and migrated, as for SQLite
    with open_server(url) as conn:
        ingested = bool(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    if sqlite_ingest_s is None and ingested:
        ingest = None
    else:
        ingest = run_measured([*subrosa, "ingest", "--all-projects"], pg_env)
    with open_server(url) as conn:
        if ingest is not None:
            # What autovacuum does after a bulk load (visibility map, planner statistics).
            conn.execute("VACUUM ANALYZE")
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        sqlite_conn = connect(sqlite_db)
        sqlite_in_proc, in_proc, sqlite_whole, whole = paired(
            sqlite_conn, env, conn, pg_env, subrosa
        )
        sqlite_conn.close()
    print(f"\n### PostgreSQL, same corpus ({size / 1e6:.0f} MB database)\n")
    if ingest is not None:
        ingest_s, ingest_rss, ingest_cpu = ingest
        against = (
            f"; SQLite {sqlite_ingest_s:.1f} s: {ingest_s / sqlite_ingest_s:.2f}x"
            if sqlite_ingest_s
            else ""
        )
        print(
            f"ingest: {mb / ingest_s:.1f} MB/s ({ingest_s:.1f} s wall, {ingest_cpu:.1f} s CPU in"
            f" the client, {ingest_rss / 1e6:.0f} MB peak RSS){against}\n"
        )
    print(
        "| class | in-process p50 / p95 / max, SQLite | PostgreSQL | PostgreSQL / SQLite:"
        " p50, p95, worst query | whole process p50 / p95, SQLite | PostgreSQL |"
        " PostgreSQL / SQLite: p50, p95 |\n| --- | --- | --- | --- | --- | --- | --- |"
    )
    for cls in CLASSES:
        sq, pq = sqlite_in_proc[cls], in_proc[cls]
        sw, pw = sqlite_whole[cls], whole[cls]
        worst = max(p / s for p, s in zip(pq, sq, strict=True))
        print(
            f"| {cls} ({len(pq)}) | {pct(sq, 0.5) * 1e3:.1f} / {pct(sq, 0.95) * 1e3:.1f} /"
            f" {max(sq) * 1e3:.1f} ms | {pct(pq, 0.5) * 1e3:.1f} / {pct(pq, 0.95) * 1e3:.1f} /"
            f" {max(pq) * 1e3:.1f} ms | {pct(pq, 0.5) / pct(sq, 0.5):.1f}x,"
            f" {pct(pq, 0.95) / pct(sq, 0.95):.1f}x, {worst:.1f}x (target <= 2) |"
            f" {pct(sw, 0.5) * 1e3:.0f} / {pct(sw, 0.95) * 1e3:.0f} ms |"
            f" {pct(pw, 0.5) * 1e3:.0f} / {pct(pw, 0.95) * 1e3:.0f} ms |"
            f" {pct(pw, 0.5) / pct(sw, 0.5):.2f}x, {pct(pw, 0.95) / pct(sw, 0.95):.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, action="append", help="corpus size in MB")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--pg", help="an empty PostgreSQL database's URL: measure it too")
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="only the searches, on the archives of an earlier run under --out (and --pg)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure ingest against the floor this many times, in turn (default 1)",
    )
    args = parser.parse_args()
    for size in args.size or [100]:
        bench(size, args.out, args.pg, args.search_only, max(1, args.rounds))


if __name__ == "__main__":
    main()
