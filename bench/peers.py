"""Bench: subrosa against the tools a user would pick instead, same data, whole processes.

    python bench/peers.py            # 2,000 notes; 100 and 10,000 facts; 100 and 500 MB
    python bench/peers.py --quick    # 300 notes; 100 and 1,000 facts; 10 and 50 MB

The peers are installed from PyPI into a venv made here (removed at the end, with every
file this bench writes); a peer that cannot be installed is skipped with pip's reason.
Both run offline, with no API key and no model:

  - claude-memory-engine reads the same notes (Claude Code's auto-memory format, which is
    subrosa's leaf format) and catalogues them into CATALOG.md with
    `python -m claude_memory.catalog_generate --write` (what its SessionStart hook runs).
    It keeps no database: every build re-reads every note, so its re-sync is the same
    command. It does not ingest transcripts.
  - claude-mem indexes Claude Code transcripts into an FTS5 database with
    `claude-mem cc-index` (incremental: a file older than its last run is skipped). It
    has no notes.

Each figure is the median of whole-process runs, subrosa and its yardstick in turn
(A B A B ...) after one warm-up each, every run's state prepared outside the timing. The
ratio is the median of the pair-by-pair ratios subrosa / yardstick, so drift in the
machine's speed cancels. Each figure also gives the children's CPU seconds (user + system):
on a shared machine they move far less than wall time. Targets are issue 19's.

The full run takes about 15 minutes and 1.5 GB of temporary disk, most of it claude-mem's
first index of 500 MB (its per-session DELETE on an FTS5 column it cannot look up grows
with the index); --quick takes under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table import print_table  # noqa: E402
from gen_transcripts import EVERYDAY, FILLER, Generator  # noqa: E402

# The versions whose source was read to find the commands used here.
PEERS = {"claude-memory-engine": "0.24.1", "claude-mem": "1.0.3"}
TYPES = ("user", "feedback", "project", "reference")
SEARCH_QUERY, SEARCH_LIMIT = "the", 5000


@dataclass
class Cmd:
    """One command to time: its argv for run i, its environment, and what to do before
    run i (untimed). Run -1 is the warm-up."""

    argv: Callable[[int], list[str]]
    env: dict[str, str]
    prepare: Callable[[int], None] | None = None
    cwd: Path | None = None


@dataclass
class Figure:
    """Medians of one interleaved measurement, wall and CPU seconds; the ratios are the
    medians of the pair-by-pair ratios A/B."""

    a: float
    b: float | None = None
    ratio: float | None = None
    cpu_a: float | None = None
    cpu_b: float | None = None
    cpu_ratio: float | None = None


def fixed(argv: list[str]) -> Callable[[int], list[str]]:
    return lambda _run: argv


def run_once(cmd: Cmd, run: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own accounting) of one run."""
    if cmd.prepare:
        cmd.prepare(run)
    argv = cmd.argv(run)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=cmd.env, cwd=cmd.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: exit {proc.returncode}\n{err.decode()[-2000:]}")
    warnings = [line for line in err.decode().splitlines() if "warning" in line.lower()]
    if run == -1 and warnings:  # the data set is not what the figure claims: say so
        print(f"{Path(argv[0]).name} {' '.join(argv[1:3])}: {warnings[0]}", file=sys.stderr)
    return elapsed, usage.ru_utime + usage.ru_stime


def interleave(a: Cmd, b: Cmd | None, runs: int) -> Figure:
    """A and B in turn, `runs` times each after one warm-up each (B may be None)."""
    run_once(a, -1)
    if b:
        run_once(b, -1)
    times_a: list[tuple[float, float]] = []
    times_b: list[tuple[float, float]] = []
    for run in range(runs):
        times_a.append(run_once(a, run))
        if b:
            times_b.append(run_once(b, run))
    return figure(times_a, times_b)


def figure(times_a: list[tuple[float, float]], times_b: list[tuple[float, float]]) -> Figure:
    wall_a, cpu_a = (statistics.median(x) for x in zip(*times_a, strict=True))
    if not times_b:
        return Figure(wall_a, cpu_a=cpu_a)
    wall_b, cpu_b = (statistics.median(x) for x in zip(*times_b, strict=True))
    pairs = list(zip(times_a, times_b, strict=True))
    return Figure(
        wall_a,
        wall_b,
        statistics.median(x[0] / y[0] for x, y in pairs),
        cpu_a,
        cpu_b,
        statistics.median(x[1] / y[1] for x, y in pairs),
    )


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def row(name: str, fig: Figure, yardstick: str, target: str) -> tuple[str, ...]:
    measured = fmt(fig.a) + (f" (cpu {fmt(fig.cpu_a)})" if fig.cpu_a is not None else "")
    baseline = yardstick
    if fig.b is not None:
        cpu = f" (cpu {fmt(fig.cpu_b)})" if fig.cpu_b is not None else ""
        baseline = f"{yardstick}: {fmt(fig.b)}{cpu}"
    ratio = "—"
    if fig.ratio is not None:
        ratio = f"{fig.ratio:.2f}x" + (f" (cpu {fig.cpu_ratio:.2f}x)" if fig.cpu_ratio else "")
    return (name, measured, baseline, ratio, target)


# ---------------------------------------------------------------- set-up


def clean_env(**extra: str | Path) -> dict[str, str]:
    """os.environ without the variables that would point either tool at the user's data,
    and without PYTHONDONTWRITEBYTECODE (installed tools have their bytecode)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUBROSA_", "CLAUDE_", "SESSION_RECALL_", "XDG_"))
        and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def subrosa_env(home: Path, memory: Path, db: Path, claude_root: Path | None = None) -> dict:
    return clean_env(
        HOME=home,
        XDG_DATA_HOME=home / "data",
        XDG_CONFIG_HOME=home / "config",
        CLAUDE_CONFIG_DIR=claude_root or home / ".claude",
        SUBROSA_MEMORY_DIR=memory,
        SUBROSA_DB=db,
    )


def install_peer(name: str, version: str, root: Path) -> tuple[Path | None, str]:
    """(the venv's bin dir, "") or (None, why it could not be installed)."""
    venv = root / f"venv-{name}"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        return None, f"venv: {made.stderr.strip().splitlines()[-1:]}"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    try:
        done = subprocess.run(
            [*pip, "--disable-pip-version-check", f"{name}=={version}"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, "pip install timed out after 600 s"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return None, f"pip install {name}=={version}: {lines[-1] if lines else 'failed'}"
    return venv / "bin", ""


def words(rng: random.Random, count: int) -> str:
    pool = EVERYDAY + FILLER
    return " ".join(rng.choice(pool) for _ in range(count))


def make_notes(directory: Path, count: int) -> None:
    """`count` leaves in subrosa's canonical format: frontmatter name, description and
    metadata.type, then a body of a few paragraphs (about 1 KB each)."""
    rng = random.Random(19)
    directory.mkdir(parents=True)
    for n in range(count):
        kind = TYPES[n % len(TYPES)]
        slug = f"{kind}_note_{n:05d}"
        paragraphs = [words(rng, rng.randint(30, 60)).capitalize() + "." for _ in range(3)]
        body = "\n\n".join(
            [
                f"# Note {n}",
                *paragraphs,
                f"**Why:** {words(rng, 12)}.",
                f"**How to apply:** {words(rng, 10)}.",
            ]
        )
        (directory / f"{slug}.md").write_text(
            f"---\nname: {slug.replace('_', '-')}\n"
            f"description: Note {n} says {words(rng, 12)}\n"
            f"metadata:\n  type: {kind}\n---\n\n{body}\n",
            encoding="utf-8",
        )


def edit_notes(directories: list[Path], count: int, run: int) -> None:
    """Edit `count` notes (other ones each run) the same way in every directory."""
    names = sorted(p.name for p in directories[0].glob("*_note_*.md"))
    for k in range(count):
        name = names[((run + 1) * count + k) * 7 % len(names)]
        for directory in directories:
            path = directory / name
            text = path.read_text(encoding="utf-8")
            path.write_text(text + f"\nEdited in run {run}.\n", encoding="utf-8")


def remove_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db) + suffix).unlink(missing_ok=True)


def quiet(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return proc.stdout


# ---------------------------------------------------------------- the figures


class Bench:
    def __init__(self, root: Path, quick: bool, runs: int | None) -> None:
        self.root = root
        self.quick = quick
        self.runs = runs
        self.subrosa = str(Path(sys.executable).parent / "subrosa")
        self.bins: dict[str, Path] = {}
        self.skipped: dict[str, str] = {}
        self.rows: list[tuple[str, ...]] = []
        self.load: list[str] = []

    def part(self, name: str) -> None:
        """Note the machine's load as a part starts: a busy machine slows wall time."""
        self.load.append(f"{name} {os.getloadavg()[0]:.1f}")

    def n(self, default: int) -> int:
        return self.runs or (3 if self.quick else default)

    def install(self) -> None:
        for name, version in PEERS.items():
            bin_dir, reason = install_peer(name, version, self.root)
            if bin_dir:
                self.bins[name] = bin_dir
                print(f"{name} {version}: installed", flush=True)
            else:
                self.skipped[name] = reason
                print(f"{name} {version}: skipped ({reason})", flush=True)

    def peer(self, name: str) -> tuple[Path | None, str]:
        """(bin dir, yardstick label) or (None, "name skipped: reason")."""
        if name in self.bins:
            return self.bins[name], name
        return None, f"{name} skipped: {self.skipped.get(name, 'not installed')}"

    # -- notes: registration and re-sync against claude-memory-engine's catalog

    def notes(self, count: int) -> None:
        base = self.root / "notes"
        ours, theirs = base / "subrosa", base / "peer"
        make_notes(ours, count)
        shutil.copytree(ours, theirs)
        home, db = base / "home", base / "facts.db"
        env = subrosa_env(home, ours, db)
        bin_dir, label = self.peer("claude-memory-engine")
        peer: Cmd | None = None
        if bin_dir:
            config = base / "cme-config.json"
            config.write_text(json.dumps({"memory_dir": str(theirs), "project_root": str(base)}))
            peer_env = clean_env(HOME=base / "peer-home", CLAUDE_MEMORY_CONFIG=config)
            argv = [str(bin_dir / "python"), "-m", "claude_memory.catalog_generate", "--write"]
            peer = Cmd(fixed(argv), peer_env, cwd=base)

        def fresh(create_schema: bool) -> Callable[[int], None]:
            def prepare(_run: int) -> None:
                remove_db(db)
                shutil.rmtree(ours / ".subrosa", ignore_errors=True)
                for name in ("MEMORY.md", "MEMORY_archive.md"):
                    (ours / name).unlink(missing_ok=True)
                if create_schema:
                    quiet([self.subrosa, "db", "upgrade"], env)

            return prepare

        def peer_fresh(_run: int) -> None:
            (theirs / "CATALOG.md").unlink(missing_ok=True)

        generate = fixed([self.subrosa, "generate"])
        runs = self.n(7)
        first = interleave(
            Cmd(generate, env, fresh(True), base),
            peer and Cmd(peer.argv, peer.env, peer_fresh, base),
            runs,
        )
        self.rows.append(
            row(f"{count:,} notes: first registration", first, label, "<= 2x (issue 19)")
        )
        created = interleave(
            Cmd(generate, env, fresh(False), base),
            peer and Cmd(peer.argv, peer.env, peer_fresh, base),
            runs,
        )
        self.rows.append(row("  same, the database created too", created, label, "—"))
        unchanged = interleave(Cmd(generate, env, None, base), peer, runs)
        self.rows.append(row("  re-sync, nothing changed", unchanged, label, "<= 1x"))

        def edit(run: int) -> None:
            edit_notes([ours, theirs], 10, run)

        edited = interleave(
            Cmd(generate, env, edit, base), peer and Cmd(peer.argv, peer.env, None, base), runs
        )
        self.rows.append(row("  re-sync after 10 notes edited", edited, label, "<= 1x"))
        shutil.rmtree(base)

    # -- one `fact upsert`, whole process, at two sizes

    def upsert(self, sizes: list[int]) -> None:
        medians: dict[int, Figure] = {}
        for size in sizes:
            base = self.root / f"facts-{size}"
            memory, db = base / "memory", base / "facts.db"
            make_notes(memory, size)
            env = subrosa_env(base / "home", memory, db)
            quiet([self.subrosa, "db", "upgrade"], env)
            quiet([self.subrosa, "generate"], env)

            def new_leaf(run: int, memory: Path = memory) -> None:
                kind = TYPES[run % len(TYPES)]
                (memory / f"{kind}_added_{run + 1:03d}.md").write_text(
                    f"---\nname: {kind}-added-{run + 1:03d}\n"
                    f"description: A fact added in run {run}.\n"
                    f"metadata:\n  type: {kind}\n---\n\nWhat the session learnt in run {run}.\n",
                    encoding="utf-8",
                )

            def argv(run: int) -> list[str]:
                name = f"{TYPES[run % len(TYPES)]}_added_{run + 1:03d}.md"
                return [self.subrosa, "fact", "upsert", "--leaf", name, "--hook", f"run {run}"]

            baseline = Cmd(fixed([sys.executable, "-c", "import sqlite3, json"]), env)
            fig = interleave(Cmd(argv, env, new_leaf, base), baseline, self.n(15))
            medians[size] = fig
            self.rows.append(
                row(
                    f"`fact upsert` (new fact) at {size:,} facts",
                    fig,
                    "python -c 'import sqlite3, json'",
                    "<= 5x",
                )
            )
            shutil.rmtree(base)
        small, large = min(medians), max(medians)
        big, little = medians[large], medians[small]
        growth = f"{big.a / little.a:.2f}x (cpu {(big.cpu_a or 0) / (little.cpu_a or 1):.2f}x)"
        base_growth = (big.b or 0) / (little.b or 1)
        self.rows.append(
            (
                f"  upsert growth {small:,} -> {large:,} facts",
                growth,
                f"baseline's: {base_growth:.2f}x",
                "—",
                "0.8-1.2x (flat)",
            )
        )

    # -- transcripts: no-op re-ingest against claude-mem, archive creation, the search cap

    def transcripts(self, sizes_mb: list[int]) -> None:
        bin_dir, label = self.peer("claude-mem")
        last_db: Path | None = None
        for size in sizes_mb:
            base = self.root / f"transcripts-{size}"
            corpus = base / "corpus"
            files, written = Generator(42).write(corpus, size * 1_000_000)
            print(f"{size} MB corpus: {files} files, {written / 1e6:.0f} MB", flush=True)
            db = base / "archive.db"
            env = subrosa_env(base / "home", base / "memory", db, claude_root=corpus)
            (base / "memory").mkdir()
            quiet([self.subrosa, "db", "upgrade"], env, base)
            ingest = Cmd(fixed([self.subrosa, "ingest", "--all-projects"]), env, cwd=base)
            peer: Cmd | None = None
            if bin_dir:
                home = base / "peer-home"
                (home / ".claude").mkdir(parents=True)
                (home / ".claude" / "projects").symlink_to(corpus / "projects")
                peer = Cmd(fixed([str(bin_dir / "claude-mem"), "cc-index"]), clean_env(HOME=home))
            # The first ingest: one run each (it is minutes at 500 MB), for context.
            first = figure([run_once(ingest, 0)], [run_once(peer, 0)] if peer else [])
            self.rows.append(
                row(f"first ingest, {size} MB (1 run; archive existed)", first, label, "—")
            )
            noop = interleave(ingest, peer, self.n(9))
            target = "<= 100 ms" if size >= 500 else "—"
            self.rows.append(row(f"no-op re-ingest, {size} MB", noop, label, target))
            if last_db:
                shutil.rmtree(last_db.parent)
            last_db = db
        if last_db:
            self.search_cap(last_db, sizes_mb[-1])
            shutil.rmtree(last_db.parent)
        self.archive_creation(bin_dir, label)

    def archive_creation(self, bin_dir: Path | None, label: str) -> None:
        base = self.root / "creation"
        Generator(7).write(base / "corpus", 4_000)
        tiny = next((base / "corpus" / "projects").glob("*/*.jsonl"))
        db = base / "archive.db"
        env = subrosa_env(base / "home", base / "memory", db, claude_root=base / "corpus")
        (base / "memory").mkdir()
        ours = Cmd(fixed([self.subrosa, "ingest", str(tiny)]), env, lambda _r: remove_db(db), base)
        peer: Cmd | None = None
        if bin_dir:
            home = base / "peer-home"
            projects = home / ".claude" / "projects" / tiny.parent.name
            projects.mkdir(parents=True)
            shutil.copy(tiny, projects / tiny.name)
            index = home / ".claude" / ".sr-index.db"
            peer = Cmd(
                fixed([str(bin_dir / "claude-mem"), "cc-index"]),
                clean_env(HOME=home),
                lambda _r: remove_db(index),
            )
        fig = interleave(ours, peer, self.n(9))
        size = f"{tiny.stat().st_size / 1000:.0f} KB"
        self.rows.append(row(f"new archive: first ingest of one {size} file", fig, label, "—"))
        shutil.rmtree(base)

    def search_cap(self, db: Path, size: int) -> None:
        base = db.parent
        env = subrosa_env(base / "home", base / "memory", db, claude_root=base / "corpus")
        argv = [self.subrosa, "search", "--all-projects", "--transcripts", "--json"]
        out = quiet([*argv, "--limit", str(SEARCH_LIMIT), SEARCH_QUERY], env, base)
        returned = len(json.loads(out))
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                exists = conn.execute(
                    "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?",
                    [f'"{SEARCH_QUERY}"'],
                ).fetchone()[0]
            matching = f"{exists:,} messages match"
            expected = min(SEARCH_LIMIT, exists)
        except sqlite3.Error as exc:  # the archive's schema moved: say so, keep the count
            matching, expected = f"match count unknown ({exc})", None
        self.rows.append(
            (
                f"`search --limit {SEARCH_LIMIT} {SEARCH_QUERY}` ({size} MB), results",
                f"{returned:,}",
                matching,
                f"{returned / expected:.2f} of them" if expected else "—",
                f"{expected:,} (or a notice)" if expected else "all, or a notice",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, 3 runs each")
    parser.add_argument("--runs", type=int, help="runs per figure (default 7-15; quick 3)")
    parser.add_argument(
        "--only", choices=["notes", "upsert", "transcripts"], action="append", help="a part"
    )
    args = parser.parse_args()
    parts = args.only or ["notes", "upsert", "transcripts"]
    with tempfile.TemporaryDirectory(prefix="subrosa-peers-") as raw:
        bench = Bench(Path(raw), args.quick, args.runs)
        bench.install()
        if "notes" in parts:
            bench.part("notes")
            bench.notes(300 if args.quick else 2_000)
        if "upsert" in parts:
            bench.part("upsert")
            bench.upsert([100, 1_000] if args.quick else [100, 10_000])
        if "transcripts" in parts:
            bench.part("transcripts")
            bench.transcripts([10, 50] if args.quick else [100, 500])
        bench.part("end")
    print()
    print_table(bench.rows)
    print(
        f"\n{os.cpu_count()} cores; 1-minute load average as each part started: "
        + ", ".join(bench.load)
        + ". Wall times are medians; cpu is the child's user + system time (less"
        " sensitive to other load)."
    )
    for name, reason in bench.skipped.items():
        print(f"\n{name} skipped: {reason}")


if __name__ == "__main__":
    main()
