"""kill -9 at random points: files are old or new, never partial; the database passes
its integrity check; running the command again completes the work; nothing twice.

See tests/crash.py for how the processes are started and killed. Each test prints a
tally (`pytest -s` shows it): how many kills, over which range of times.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
from pathlib import Path

import pytest

from tests import crash
from tests.conftest import RunCli, write_leaf

pytestmark = pytest.mark.slow

KILLS = 30  # per command, processes forked from this one (see tests/crash.py)
EXEC_KILLS = 3  # per command, `python -m subrosa` started afresh
SPAWNS = pytest.mark.parametrize(
    ("spawn", "kills", "window"),
    [(crash.run_forked, KILLS, (0.0, 1.0)), (crash.run_exec, EXEC_KILLS, (0.5, 1.0))],
    ids=["forked", "python -m subrosa"],
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> crash.Workspace:
    space = crash.Workspace(tmp_path / "work")
    space.memory_dir.mkdir(parents=True)
    monkeypatch.setenv("SUBROSA_MEMORY_DIR", str(space.memory_dir))
    monkeypatch.setenv("SUBROSA_DB", str(space.db))
    return space


def _sidecar(memory_dir: Path) -> dict[str, dict[str, object]]:
    """The sidecar by slug; every line must be a whole JSON object."""
    path = memory_dir / ".subrosa" / "facts.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["slug"]: row for row in rows}


def _facts(run: RunCli) -> dict[str, dict[str, object]]:
    """Every fact by slug, without the times it was registered and its leaf written (a
    rerun does both later)."""
    listed = json.loads(run("fact", "list", "--all", "--json").stdout)
    times = ("created_at", "updated_at")
    return {f["slug"]: {k: v for k, v in f.items() if k not in times} for f in listed}


def _diff(got: tuple[bytes | None, ...], want: tuple[bytes | None, ...]) -> str:
    """What differs between two sets of index files, as a unified diff (for failures)."""
    out = []
    for a, b in zip(got, want, strict=True):
        if a != b:
            old = (b or b"").decode().splitlines(keepends=True)
            new = (a or b"").decode().splitlines(keepends=True)
            out.append("".join(difflib.unified_diff(old, new, "expected", "got")))
    return "\n".join(out)


def _index_files(memory_dir: Path) -> tuple[bytes | None, bytes | None]:
    def read(name: str) -> bytes | None:
        path = memory_dir / name
        return path.read_bytes() if path.exists() else None

    return read("MEMORY.md"), read("MEMORY_archive.md")


@SPAWNS
def test_kill_during_fact_upsert(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    memory_dir = workspace.memory_dir
    for name in ("alpha", "beta"):
        write_leaf(memory_dir, f"{name}.md", f"The {name} fact.")
        run("fact", "upsert", "--leaf", f"{name}.md", "--hook", name)
    write_leaf(memory_dir, "gamma.md", "The gamma fact.", fact_type="feedback")
    workspace.save()
    old_sidecar = (workspace.template / "memory" / ".subrosa" / "facts.jsonl").read_bytes()
    args = ["fact", "upsert", "--leaf", "gamma.md", "--hook", "gamma", "--pin"]

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        raw = (memory_dir / ".subrosa" / "facts.jsonl").read_bytes()
        sidecar = _sidecar(memory_dir)  # whole lines only
        if raw != old_sidecar:
            assert set(sidecar) == {"alpha", "beta", "gamma"}
            assert sidecar["gamma"]["hook"] == "gamma" and sidecar["gamma"]["pinned"]
        assert set(_facts(run)) in ({"alpha", "beta"}, {"alpha", "beta", "gamma"})
        run(*args)
        facts = _facts(run)
        assert [facts[s]["position"] for s in ("alpha", "beta", "gamma")] == [1, 2, 3]
        assert facts["gamma"]["pinned"] and facts["gamma"]["hook"] == "gamma"
        sidecar = _sidecar(memory_dir)
        assert {s: r["hook"] for s, r in sidecar.items()} == {
            s: f["hook"] for s, f in facts.items()
        }

    tally = crash.trials(
        "fact upsert",
        args,
        workspace,
        kills=kills,
        seed=8,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())


# --- generate ---------------------------------------------------------------------


def _generate_workspace(workspace: crash.Workspace, run: RunCli) -> None:
    """Twelve facts, an index generated from them, then changes for the next generate:
    new facts, an archived one, a new hook and a pin, a leaf nobody registered, and a
    line someone appended to MEMORY.md by hand."""
    memory_dir = workspace.memory_dir
    types = ("user", "feedback", "project", "reference")
    for i in range(12):
        write_leaf(memory_dir, f"fact_{i:02d}.md", f"Fact {i}.", fact_type=types[i % 4])
        run("fact", "upsert", "--leaf", f"fact_{i:02d}.md", "--hook", f"hook {i} " + "x" * 40)
    run("generate", "--budget", "1500")
    for i in range(12, 15):
        write_leaf(memory_dir, f"fact_{i:02d}.md", f"Fact {i}.", fact_type="feedback")
        run("fact", "upsert", "--leaf", f"fact_{i:02d}.md", "--hook", f"new hook {i}")
    run("fact", "archive", "--leaf", "fact_03.md", "--reason", "done")
    run("fact", "upsert", "--leaf", "fact_05.md", "--hook", "a changed hook", "--pin")
    write_leaf(memory_dir, "stray_leaf.md", "Written by hand, never registered.")
    with (memory_dir / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.write("- Appended by hand: staging deploys need the VPN\n")
    workspace.save()


@SPAWNS
def test_kill_during_generate(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    memory_dir = workspace.memory_dir
    _generate_workspace(workspace, run)
    old = _index_files(memory_dir)
    args = ["generate", "--budget", "1500"]
    run(*args)
    new = _index_files(memory_dir)
    clean_facts = _facts(run)
    clean_leaves = sorted(p.name for p in memory_dir.glob("*.md"))
    assert new != old and None not in new
    workspace.restore()

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        index, archive = _index_files(memory_dir)
        assert index in (old[0], new[0]), "MEMORY.md is neither the old nor the new file"
        assert archive in (old[1], new[1]), "MEMORY_archive.md is neither old nor new"
        run(*args)
        got = _index_files(memory_dir)
        assert got == new, (
            f"killed {outcome}, MEMORY.md was {'old' if index == old[0] else 'new'}\n"
            + _diff(got, new)
        )
        assert _facts(run) == clean_facts
        assert sorted(p.name for p in memory_dir.glob("*.md")) == clean_leaves
        run("check", "--dir", str(memory_dir))

    tally = crash.trials(
        "generate",
        args,
        workspace,
        kills=kills,
        seed=9,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())


def test_every_crash_point_between_generate_writes(workspace: crash.Workspace, run: RunCli) -> None:
    """Every state a kill between two of generate's writes can leave, built exactly: the
    first N of its writes done, in the order it makes them (a materialized leaf, the
    sidecar inside the transaction, the commit, the cold tier, the hot tier, the copies
    of both that tell the next run which lines others added). A rerun must reach the
    clean result from each; random kills rarely land in the microseconds between two."""
    memory_dir = workspace.memory_dir
    _generate_workspace(workspace, run)
    run("generate", "--budget", "1500")
    new = _index_files(memory_dir)
    clean_facts = _facts(run)
    clean_leaves = sorted(p.name for p in memory_dir.glob("*.md"))
    crash.checkpoint(workspace.db)
    materialized = sorted(
        set(clean_leaves) - {p.name for p in workspace.template.glob("memory/*.md")}
    )
    assert len(materialized) == 1  # the appended line became a leaf
    written = {
        name: (workspace.root / name).read_bytes()
        for name in (
            f"memory/{materialized[0]}",
            "memory/.subrosa/facts.jsonl",
            "subrosa.db",
            "memory/MEMORY_archive.md",
            "memory/MEMORY.md",
            "memory/.subrosa/last-index.txt",
            "memory/.subrosa/last-archive.txt",
        )
    }
    order = list(written)
    for count in range(len(order) + 1):
        workspace.restore()
        for name in order[:count]:
            (workspace.root / name).write_bytes(written[name])
        run("generate", "--budget", "1500")
        got = _index_files(memory_dir)
        assert got == new, f"{order[:count]}\n" + _diff(got, new)
        assert _facts(run) == clean_facts, order[:count]
        assert sorted(p.name for p in memory_dir.glob("*.md")) == clean_leaves, order[:count]


# --- adopt ------------------------------------------------------------------------

FOREIGN_INDEX = """# Memory

- [Use pnpm](feedback_pnpm.md) — pnpm only, never npm
- [Release train](project_release.md) — ship every second Tuesday

## Reference
- [Dashboard](reference_dash.md) — Grafana svc-overview
- [Old runbook](reference_runbook.md) — the file is gone but the line is not
- Deploy freezes on Fridays, no exceptions
- [Staging creds rotation] — every 90 days, see vault
"""


def _leaves(memory_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(memory_dir.glob("*.md"))}


@SPAWNS
def test_kill_during_adopt(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    memory_dir = workspace.memory_dir
    write_leaf(memory_dir, "feedback_pnpm.md", "pnpm only.", fact_type="feedback")
    write_leaf(memory_dir, "project_release.md", "The release train.")
    write_leaf(memory_dir, "reference_dash.md", "The dashboard.", fact_type="reference")
    write_leaf(memory_dir, "user_unlinked.md", "A leaf no line names.", fact_type="user")
    (memory_dir / "broken_front.md").write_text("# Just a heading\n\nNo frontmatter.\n")
    (memory_dir / "MEMORY.md").write_text(FOREIGN_INDEX, encoding="utf-8")
    workspace.save()
    old_index = FOREIGN_INDEX.encode()
    args = ["adopt", "--materialize"]
    run(*args)
    new_index, new_archive = _index_files(memory_dir)
    clean_leaves = _leaves(memory_dir)
    clean_facts = _facts(run)
    assert len(clean_leaves) == 5 + 3 + 2  # five leaves, three materialized, two index files
    workspace.restore()

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        index, archive = _index_files(memory_dir)
        assert index in (old_index, new_index), "MEMORY.md is neither the old nor the new file"
        assert archive in (None, new_archive)
        run(*args)
        got = _index_files(memory_dir)
        assert got == (new_index, new_archive), _diff(got, (new_index, new_archive))
        assert _leaves(memory_dir) == clean_leaves, "a leaf was materialized twice, or lost"
        assert _facts(run) == clean_facts
        assert (memory_dir / "MEMORY.md.pre-subrosa").read_bytes() == old_index
        assert not list(memory_dir.glob("MEMORY.md.pre-subrosa.*")), "backed up twice"
        run("check", "--dir", str(memory_dir))

    tally = crash.trials(
        "adopt",
        args,
        workspace,
        kills=kills,
        seed=11,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())


BROKEN_LEAVES = {
    "broken_front.md": b"# Just a heading\n\nNo frontmatter.\n",
    "feedback_unquoted.md": b"---\nname: x\ndescription: a: b\n---\n\nbody: kept\n",
    "project_crlf.md": b"# CRLF note\r\n\r\n  indented first line\r\nsecond\r\n",
}


@SPAWNS
def test_kill_during_adopt_fixing_frontmatter(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    """`--fix-frontmatter` rewrites several leaves one after the other: killed between
    them, each leaf is its original or its fixed form (never a part), its original is
    kept beside before it is rewritten, and running adopt again fixes the rest."""
    memory_dir = workspace.memory_dir
    write_leaf(memory_dir, "feedback_pnpm.md", "pnpm only.", fact_type="feedback")
    for name, data in BROKEN_LEAVES.items():
        (memory_dir / name).write_bytes(data)
    (memory_dir / "MEMORY.md").write_text(FOREIGN_INDEX, encoding="utf-8")
    workspace.save()
    args = ["adopt", "--materialize", "--fix-frontmatter"]
    run(*args)
    clean_index = _index_files(memory_dir)
    clean_leaves = _leaves(memory_dir)
    clean_facts = _facts(run)
    backups = memory_dir / ".subrosa" / "frontmatter-backup"

    def kept() -> dict[str, bytes]:
        """The originals kept (a temp file a kill left goes at a later adopt's sweep,
        once it is older than a running writer's could be)."""
        return {p.name: p.read_bytes() for p in backups.iterdir() if p.suffix != ".tmp"}

    assert kept() == BROKEN_LEAVES
    assert all(clean_leaves[name] != data for name, data in BROKEN_LEAVES.items())
    workspace.restore()

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        for name, data in BROKEN_LEAVES.items():
            now = (memory_dir / name).read_bytes()
            assert now in (data, clean_leaves[name]), f"{name} is neither old nor fixed"
            if now != data:  # rewritten: its original was kept first
                assert (backups / name).read_bytes() == data
        run(*args)
        assert _index_files(memory_dir) == clean_index
        assert _leaves(memory_dir) == clean_leaves, "a leaf was not fixed, or fixed twice"
        assert kept() == BROKEN_LEAVES
        assert _facts(run) == clean_facts
        run("check", "--dir", str(memory_dir))

    tally = crash.trials(
        "adopt --fix-frontmatter",
        args,
        workspace,
        kills=kills,
        seed=12,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())


# --- ingest -----------------------------------------------------------------------


def _record(uuid: str, text: str, session: str, role: str = "user") -> str:
    return json.dumps(
        {
            "type": role,
            "uuid": uuid,
            "sessionId": session,
            "timestamp": "2026-03-01T10:00:00Z",
            "cwd": "/work/app",
            "message": {"role": role, "content": text},
        }
    )


def _archive(db: Path) -> dict[str, object]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        messages, uuids = conn.execute(
            "SELECT count(*), count(DISTINCT uuid) FROM messages"
        ).fetchone()
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        texts = sorted(row[0] for row in conn.execute("SELECT text FROM messages"))
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        hits = conn.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'lorem'"
        ).fetchone()[0]
    finally:
        conn.close()
    return {
        "messages": messages,
        "uuids": uuids,
        "sessions": sessions,
        "texts": texts,
        "hits": hits,
    }


@SPAWNS
def test_kill_during_ingest(
    workspace: crash.Workspace,
    run: RunCli,
    spawn: crash.Spawn,
    kills: int,
    window: tuple[float, float],
) -> None:
    transcripts = workspace.root / "transcripts"
    transcripts.mkdir()
    words = crash.LOREM

    def write(session: str, start: int, count: int) -> None:
        with (transcripts / f"{session}.jsonl").open("a", encoding="utf-8") as handle:
            for i in range(start, start + count):
                text = " ".join(words[(i + k) % len(words)] for k in range(12)) + f" n{i}"
                role = "user" if i % 2 else "assistant"
                handle.write(_record(f"{session}-{i}", text, session, role) + "\n")

    for session in ("s1", "s2", "s3"):
        write(session, 0, 60)
    run("ingest", str(transcripts))
    for session in ("s1", "s2"):
        write(session, 60, 80)  # grew since: read from the saved offset
    write("s4", 0, 80)  # new
    workspace.save()
    args = ["ingest", str(transcripts)]
    run(*args)
    clean = _archive(workspace.db)
    assert clean["messages"] == clean["uuids"] == 3 * 60 + 2 * 80 + 80
    workspace.restore()

    def after_kill(outcome: crash.Outcome) -> None:
        assert crash.integrity(workspace.db) == "ok"
        partial = _archive(workspace.db)  # FTS5 integrity-check raises when broken
        assert partial["messages"] == partial["uuids"] <= clean["messages"]
        run(*args)
        assert _archive(workspace.db) == clean

    tally = crash.trials(
        "ingest",
        args,
        workspace,
        kills=kills,
        seed=10,
        after_kill=after_kill,
        spawn=spawn,
        window=window,
    )
    print(tally.line())
