"""generate's quick path (sqlite3, subrosa.memory.quick) and its full path (SQLAlchemy,
the take-over) give the same facts, files and report from the same disk: each scenario
runs generate both ways from one saved state, and compares everything but the stat
cache. The fast entries of the per-fact commands are held to the click commands the
same way (options, output, errors)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from subrosa.config import resolve_db_url
from subrosa.db import dispose_all
from subrosa.memory import quick, store, values
from subrosa.memory.generate import Outcome, run_generate
from subrosa.memory.project import Project
from subrosa.memory.state import SEEN_DIR, render_state
from subrosa.paths import data_dir
from tests.conftest import RunCli, subrosa_process, write_leaf

NOW = datetime(2026, 12, 1, 12, 0, 0)
WEIGHTS = {"feedback": 4, "user": 3, "project": 2, "reference": 1}


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """One clock for both runs: facts registered by each get the same created_at."""
    monkeypatch.setattr(values, "utcnow", lambda: NOW)
    monkeypatch.setattr(store, "utcnow", lambda: NOW)


class Workspace:
    """A memory dir, its database and this clone's record of the sidecar (in the data
    dir, state.seen_path), saved once and restored before each run."""

    def __init__(self, memory_dir: Path, db: Path, saved: Path) -> None:
        self.memory_dir, self.db, self.saved = memory_dir, db, saved
        self.seen = Path(data_dir(), SEEN_DIR)

    def save(self) -> None:
        _quiesce(self.db)
        shutil.rmtree(self.saved, ignore_errors=True)
        shutil.copytree(self.memory_dir, self.saved / "memory")
        if self.seen.exists():
            shutil.copytree(self.seen, self.saved / "seen")
        if self.db.exists():
            shutil.copy2(self.db, self.saved / "db")

    def restore(self) -> None:
        _quiesce(self.db)
        shutil.rmtree(self.memory_dir)
        shutil.copytree(self.saved / "memory", self.memory_dir)
        shutil.rmtree(self.seen, ignore_errors=True)
        if (self.saved / "seen").exists():
            shutil.copytree(self.saved / "seen", self.seen)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        if (self.saved / "db").exists():
            shutil.copy2(self.saved / "db", self.db)

    def state(self) -> dict[str, Any]:
        """Every fact (all but id and the stat cache) and every file of the memory dir."""
        _quiesce(self.db)
        conn = sqlite3.connect(self.db)
        conn.row_factory = sqlite3.Row
        try:
            facts = {
                row["slug"]: {k: row[k] for k in row.keys() if k not in ("id", "leaf_stat")}  # noqa: SIM118
                for row in conn.execute("SELECT * FROM facts")
            }
            # The full-text index holds exactly the facts' text (else this raises).
            conn.execute("INSERT INTO facts_fts(facts_fts, rank) VALUES ('integrity-check', 1)")
        finally:
            conn.close()
        files = {
            str(p.relative_to(self.memory_dir)): p.read_bytes()
            for p in sorted(self.memory_dir.rglob("*"))
            if p.is_file() and p.name != "lock"
        }
        return {"facts": facts, "files": files}


def _quiesce(db: Path) -> None:
    dispose_all()
    if db.exists():
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()


@pytest.fixture
def space(memory_dir: Path, tmp_path: Path, frozen: None) -> Workspace:
    return Workspace(memory_dir, tmp_path / "subrosa.db", tmp_path / "saved")


@pytest.fixture
def quick_answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether each quick reconcile answered (True) or left it to the take-over."""
    answers: list[bool] = []
    real = quick.reconcile

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        answers.append(result is not None)
        return result

    monkeypatch.setattr(quick, "reconcile", spy)
    yield answers


def _generate(space: Workspace, quickly: bool, **options: Any) -> Outcome:
    return run_generate(
        resolve_db_url(str(space.db)),
        Project(space.memory_dir),
        budget=options.pop("budget", 23_000),
        max_lines=200,
        weights=WEIGHTS,
        quickly=quickly,
        **options,
    )


def _both_ways(
    space: Workspace, answers: list[bool], *, quick: bool, clocked: bool = False, **options: Any
) -> tuple[Outcome, dict[str, Any]]:
    """generate the full way and the quick way from the same saved state: the same facts,
    files and report; `quick` says whether the quick path may answer. `clocked`: the run
    writes leaves (a materialized line), whose mtime, the fact's updated_at, is now."""
    space.save()
    full = _generate(space, False, **options)
    want = space.state()
    space.restore()
    answers.clear()
    fast = _generate(space, True, **options)
    assert answers == [quick]
    got = space.state()
    if clocked:
        for state in (got, want):
            for row in state["facts"].values():
                row.pop("updated_at")
    assert got["facts"] == want["facts"]
    assert got["files"].keys() == want["files"].keys()
    for name in want["files"]:
        assert got["files"][name] == want["files"][name], name
    assert fast.to_dict() == full.to_dict()
    assert fast.report.warnings == full.report.warnings
    assert sorted(fast.report.refreshed) == sorted(full.report.refreshed)
    return fast, got


def _leaves(memory_dir: Path, count: int, start: int = 0) -> None:
    types = ("user", "feedback", "project", "reference")
    for n in range(start, start + count):
        path = write_leaf(
            memory_dir,
            f"{types[n % 4]}_fact_{n:03d}.md",
            f"Fact {n} says something worth keeping.",
            fact_type=types[n % 4],
            body=f"# Fact {n}\n\nThe body of fact {n}.",
        )
        os.utime(path, (1_700_000_000 + n * 60, 1_700_000_000 + n * 60))


def test_first_registration(space: Workspace, quick_answers: list[bool]) -> None:
    _leaves(space.memory_dir, 40)
    outcome, state = _both_ways(space, quick_answers, quick=True, budget=3000)
    assert len(outcome.report.adopted) == 40 and len(state["facts"]) == 40
    assert sorted(f["position"] for f in state["facts"].values()) == list(range(1, 41))


def test_a_run_with_nothing_changed_writes_nothing(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    _leaves(space.memory_dir, 12)
    run("generate")
    run("generate")  # the stat cache filled
    _quiesce(space.db)
    before = space.db.read_bytes(), space.state()
    quick_answers.clear()
    _generate(space, True)
    assert quick_answers == [True]
    _quiesce(space.db)
    assert (space.db.read_bytes(), space.state()) == before


def test_edited_added_deleted_and_unreadable_leaves(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    _leaves(space.memory_dir, 16)
    run("generate")
    run("fact", "upsert", "--leaf", "user_fact_000.md", "--hook", "a hook of its own", "--pin")
    run("fact", "archive", "--leaf", "feedback_fact_001.md", "--reason", "done")
    run("fact", "move", "project_fact_002", "--section", "Builds")
    run("generate")
    memory_dir = space.memory_dir
    write_leaf(memory_dir, "reference_fact_003.md", "A new description.", fact_type="user",
               body="# A New Title\n\nChanged.")  # fmt: skip
    write_leaf(memory_dir, "user_fact_004.md", "Same title, other words.", body="# Fact 4\n\nNew.")
    (memory_dir / "feedback_fact_005.md").unlink()
    _leaves(memory_dir, 3, start=40)
    (memory_dir / "project_fact_006.md").write_bytes(b"---\nname: x\n---\n\xff\xfe not UTF-8\n")
    (memory_dir / "notes_without_frontmatter.md").write_text("# Loose notes\n\nJust text.\n")
    (memory_dir / "reference_fact_007.md").write_text("---\ndescription: [unclosed\n---\nBody\n")
    outcome, _ = _both_ways(space, quick_answers, quick=True)
    report = outcome.to_dict()
    assert report["missing"] == ["feedback_fact_005"]
    assert report["unreadable"] == ["project_fact_006.md"]
    assert "notes_without_frontmatter" in report["adopted"]
    assert sorted(outcome.report.refreshed) == [
        "reference_fact_003",
        "reference_fact_007",
        "user_fact_004",
    ]


@pytest.mark.parametrize("heading", ["# Fact 5", "# A Title Of Its Own"])
def test_one_edited_leaf_alone(
    space: Workspace, quick_answers: list[bool], run: RunCli, heading: str
) -> None:
    """One edit and nothing else: the sidecar changes only when the title did."""
    _leaves(space.memory_dir, 8)
    run("generate")
    write_leaf(space.memory_dir, "feedback_fact_005.md", "Other words.", fact_type="feedback",
               body=f"{heading}\n\nThe body, edited.")  # fmt: skip
    _both_ways(space, quick_answers, quick=True)


def test_a_clone_registers_with_the_sidecar_it_brought(
    space: Workspace, quick_answers: list[bool], run: RunCli, tmp_path: Path
) -> None:
    """A memory dir from another machine (git clone): no database rows, a sidecar with
    hooks, pins, positions, sections and archive status for its leaves."""
    _leaves(space.memory_dir, 10)
    run("generate")
    run("fact", "upsert", "--leaf", "user_fact_008.md", "--hook", "pinned elsewhere", "--pin")
    run("fact", "archive", "--leaf", "feedback_fact_009.md", "--reason", "superseded")
    run("fact", "move", "project_fact_002", "--before", "user_fact_000", "--section", "Top")
    run("generate")
    _quiesce(space.db)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{space.db}{suffix}").unlink(missing_ok=True)
    outcome, state = _both_ways(space, quick_answers, quick=True)
    assert state["facts"]["user_fact_008"]["pinned"] == 1
    assert state["facts"]["feedback_fact_009"]["status"] == "archived"
    assert state["facts"]["project_fact_002"]["section"] == "Top"


def test_facts_upserted_since_the_last_generate(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    """The fact commands replace or append sidecar lines; generate sorts them back."""
    _leaves(space.memory_dir, 8)
    run("generate")
    _leaves(space.memory_dir, 2, start=20)
    run("fact", "upsert", "--leaf", "user_fact_020.md", "--hook", "new one")
    run("fact", "upsert", "--leaf", "reference_fact_003.md", "--hook", "a better hook")
    run("fact", "pin", "--leaf", "user_fact_004.md")
    _both_ways(space, quick_answers, quick=True)


def test_a_sidecar_changed_under_the_database_is_the_full_path(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    """A git pull brought another machine's hooks and pins: the take-over syncs them."""
    _leaves(space.memory_dir, 6)
    run("generate")
    sidecar = space.memory_dir / ".subrosa" / "facts.jsonl"
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    rows[2]["hook"], rows[3]["pinned"] = "their hook", True
    sidecar.write_text(render_state(rows))
    outcome, state = _both_ways(space, quick_answers, quick=False)
    assert sorted(outcome.report.synced) == sorted([rows[2]["slug"], rows[3]["slug"]])
    assert state["facts"][rows[2]["slug"]]["hook"] == "their hook"


def test_lines_written_into_the_index_are_the_full_path(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    _leaves(space.memory_dir, 6)
    run("generate")
    with (space.memory_dir / "MEMORY.md").open("a") as index:
        index.write("- Appended by hand: deploys need the VPN\n")
    outcome, _ = _both_ways(space, quick_answers, quick=False, clocked=True)
    assert outcome.report.materialized


def test_a_dry_run_reports_the_same_and_writes_nothing(
    space: Workspace, quick_answers: list[bool], run: RunCli
) -> None:
    _leaves(space.memory_dir, 10)
    run("generate")
    _leaves(space.memory_dir, 3, start=30)
    write_leaf(space.memory_dir, "user_fact_000.md", "Edited.", fact_type="user")
    space.save()
    before = space.state()
    outcome, after = _both_ways(space, quick_answers, quick=True, dry_run=True)
    assert after == before and not outcome.written


# ---------------------------------------------------------------- the fast entries


def _click_params(command: Any) -> dict[str, tuple[str, bool]]:
    import click

    found = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            for name in param.opts:
                found[name] = (param.name, param.is_flag)
    return found


@pytest.mark.parametrize(
    ("words", "command"),
    [
        (("fact", "upsert"), "subrosa.cli.fact:upsert"),
        (("fact", "pin"), "subrosa.cli.fact:pin"),
        (("fact", "unpin"), "subrosa.cli.fact:unpin"),
        (("fact", "archive"), "subrosa.cli.fact:archive_cmd"),
        (("checkpoint-mark",), "subrosa.cli.claude:checkpoint_mark"),
        (("generate",), "subrosa.cli.index:generate"),
        (("ingest",), "subrosa.cli.transcripts:ingest"),
    ],
)
def test_each_fast_entry_takes_the_click_commands_options(
    words: tuple[str, ...], command: str
) -> None:
    """Every option the fast entry reads is the click command's, by name, destination
    and kind (an option the fast entry does not know sends the command to click)."""
    import importlib

    from subrosa.cli import fastpath

    module, attribute = command.split(":")
    clicked = _click_params(getattr(importlib.import_module(module), attribute))
    fast = next(c for c in fastpath.COMMANDS if c.words == words)
    for option in fast.options:
        assert clicked.get(option.name) == (option.dest, option.kind == "flag"), option.name
        if option.kind == "count":  # the same bounds (generate's caps: 25,000 B, 200 lines)
            bounds = _click_bounds(getattr(importlib.import_module(module), attribute))
            assert bounds[option.name] == (1, option.maximum), option.name


def _click_bounds(command: Any) -> dict[str, tuple[int | None, int | None]]:
    import click

    return {
        name: (param.type.min, param.type.max)
        for param in command.params
        if isinstance(param.type, click.IntRange)
        for name in param.opts
    }


def _invalid_leaf(memory_dir: Path) -> None:
    (memory_dir / "bad.md").write_text("---\n1: x\ndescription: y\n---\n\nBody.\n")


def _secret_description(memory_dir: Path) -> None:
    write_leaf(memory_dir, "d.md", "The key is AKIAQWERTYUIOPASDFGH.", name="d")


def _note_in_a_subfolder(memory_dir: Path) -> None:
    (memory_dir / "notes").mkdir(exist_ok=True)
    write_leaf(memory_dir / "notes", "n.md", "A note kept in a subfolder.", name="n")
    with (memory_dir / "MEMORY.md").open("a") as index:
        index.write("- [The note](notes/n.md) — a note in a subfolder\n")


def _gone(name: str) -> Callable[[Path], None]:
    return lambda memory_dir: (memory_dir / name).unlink(missing_ok=True)


# "MEMORY_DIR" in a case's arguments stands for the memory dir.
CASES: list[tuple[list[str], Callable[[Path], None]]] = [
    (["fact", "upsert", "--leaf", "a.md", "--hook", "first"], lambda _: None),
    (["fact", "upsert", "--leaf=a.md", "--pin", "--json"], lambda _: None),
    (["fact", "upsert", "--leaf", "b.md"], lambda _: None),  # new without a hook: exit 2
    (["fact", "upsert", "--leaf", "c.md", "--hook", "AKIAQWERTYUIOPASDFGH"], lambda _: None),
    (["fact", "upsert", "--leaf", "../outside.md", "--hook", "x"], lambda _: None),
    (["fact", "pin", "--leaf", "a.md"], lambda _: None),
    (["fact", "unpin", "--leaf", "a"], lambda _: None),
    (["fact", "pin", "--leaf", "ghost.md"], lambda _: None),
    (["fact", "archive", "--leaf", "a.md", "--reason", "done\nand dusted"], lambda _: None),
    (["generate", "--json"], lambda _: None),
    (["generate", "--budget", "400"], lambda _: None),  # pins that do not fit: exit 1
    (["generate", "--max-lines", "0"], lambda _: None),  # click refuses it
    (["checkpoint-mark"], lambda _: None),  # no live session: exit 2
    (["fact", "upsert", "--leaf", "a.md", "--hook"], lambda _: None),  # no value
    (["fact", "upsert", "--leaf", "a.md", "--hook", "x", "extra"], lambda _: None),
    (["ingest", "--json"], lambda _: None),
    (["ingest"], lambda _: None),
    (["ingest", "--all-projects", "nowhere"], lambda _: None),  # click: no such path
    # What main's later issues added, held on the fast entries too:
    (["fact", "upsert", "b", "--hook", "named by its slug"], lambda _: None),
    (["fact", "pin", "b.md"], lambda _: None),  # a SLUG ending in .md is a file
    (["fact", "unpin", "b", "--leaf", "b.md"], lambda _: None),  # both: click's usage error
    (["fact", "archive"], lambda _: None),  # neither
    (["fact", "upsert", "c", "--hook", "x", "--memory-dir", "MEMORY_DIR"], lambda _: None),
    (["fact", "upsert", "--leaf", "bad.md", "--hook", "x"], _invalid_leaf),  # invalid: exit 2
    (["generate"], lambda _: None),  # warns: invalid leaf, skipped
    (["generate"], _gone("bad.md")),  # nothing to write: MEMORY.md unchanged
    (["fact", "upsert", "--leaf", "d.md", "--hook", "d"], _secret_description),  # exit 2
    (["generate", "--budget", "25001"], lambda _: None),  # past the witness's cap
    (["generate", "--max-lines", "201"], lambda _: None),  # past what Claude Code loads
    (["generate", "--max-lines", "200", "--json"], _gone("d.md")),
    (["generate"], _note_in_a_subfolder),  # the line taken over: the note registered
    (["fact", "pin", "--leaf", "notes/n.md"], lambda _: None),  # a note by its path
    (["fact", "archive", "--leaf", "notes/n.md", "--reason", "old"], lambda _: None),
    (["generate"], lambda _: None),
    (["fact", "upsert", "--leaf", "notes/n.md", "--hook", "x"], lambda _: None),  # exit 2
]


def test_the_fast_entries_answer_as_the_click_commands_do(
    memory_dir: Path, run: RunCli, tmp_path: Path
) -> None:
    """The same arguments through `python -m subrosa` (the fast entry, where it answers)
    and through click in-process give the same exit code, stdout and stderr; the state
    after each is the same too, so the sequence goes on from it."""
    from subrosa.cli import fastpath

    write_leaf(memory_dir, "a.md", "The a fact.", name="a")
    write_leaf(memory_dir, "b.md", "The b fact.", name="b")
    write_leaf(memory_dir, "c.md", "The c fact.", name="c")
    (tmp_path / "outside.md").write_text("---\ndescription: x\nmetadata:\n  type: user\n---\n")
    for case, prepare in CASES:
        args = [str(memory_dir) if arg == "MEMORY_DIR" else arg for arg in case]
        prepare(memory_dir)
        saved = tmp_path / "saved"
        Workspace(memory_dir, tmp_path / "subrosa.db", saved).save()
        fast = subrosa_process(*args)
        after_fast = Workspace(memory_dir, tmp_path / "subrosa.db", saved).state()
        Workspace(memory_dir, tmp_path / "subrosa.db", saved).restore()
        clicked = run(*args, expect=None)
        if fastpath.parse(args) is None:  # click answered both (its prog name differs)
            assert fast.returncode == clicked.exit_code == 2, args
        else:
            assert (fast.returncode, fast.stdout.decode(), fast.stderr.decode()) == (
                clicked.exit_code,
                clicked.stdout,
                clicked.stderr,
            ), args
        after_click = Workspace(memory_dir, tmp_path / "subrosa.db", saved).state()
        assert _without_times(after_fast) == _without_times(after_click), args
        shutil.rmtree(saved)


def _without_times(state: dict[str, Any]) -> dict[str, Any]:
    """A state with the times a command stamps (now, to the second) left out."""
    facts = {
        slug: {k: v for k, v in row.items() if k not in ("created_at", "archived_at")}
        for slug, row in state["facts"].items()
    }
    files = {}
    for name, data in state["files"].items():
        if name == ".subrosa/facts.jsonl":
            rows = [json.loads(line) for line in data.decode().splitlines()]
            data = json.dumps(
                [
                    {k: v for k, v in r.items() if k not in ("created_at", "archived_at")}
                    for r in rows
                ]
            ).encode()
        files[name] = data
    return {"facts": facts, "files": files}


def test_the_per_fact_commands_import_the_standard_library_only(
    memory_dir: Path, tmp_path: Path
) -> None:
    """On a current SQLite database the commands the skill runs once per fact, generate
    after them and a no-op ingest load neither click nor SQLAlchemy nor Alembic (nor rich,
    filelock, yaml for plain frontmatter, nor ingest's parser): the fast paths."""
    write_leaf(memory_dir, "a.md", "The a fact.", name="a")
    write_leaf(memory_dir, "b.md", "The b fact.", name="b")
    live = memory_dir / ".extract" / "live.json"
    transcript = tmp_path / "s-1.jsonl"
    transcript.write_text('{"type": "user"}\n')
    report = tmp_path / "modules.json"
    script = (
        "import json, sys\n"
        "from subrosa.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"json.dump([code, sorted(sys.modules)], open({str(report)!r}, 'w'))\n"
    )
    heavy = {"sqlalchemy", "alembic", "click", "rich", "filelock", "yaml", "frontmatter"}
    heavy |= {"msgspec", "ahocorasick_rs", "dataclasses"}
    steps = [
        ["fact", "upsert", "--leaf", "a.md", "--hook", "the a hook", "--json"],
        ["fact", "upsert", "--leaf", "b.md", "--hook", "the b hook"],
        ["fact", "pin", "--leaf", "a.md"],
        ["fact", "unpin", "--leaf", "a.md"],
        ["fact", "archive", "--leaf", "b.md", "--reason", "done"],
        ["checkpoint-mark"],
        ["ingest", "--pending"],
        ["generate"],
        ["generate", "--json"],
    ]
    for args in steps:
        if args == ["checkpoint-mark"]:
            live.parent.mkdir(exist_ok=True)
            live.write_text(json.dumps({"session_id": "s-1", "transcript_path": str(transcript)}))
        if args == ["generate"]:
            heavy.discard("dataclasses")  # the generator's Entry and Plan are dataclasses
        result = subprocess.run(
            [sys.executable, "-c", script, *args], capture_output=True, timeout=60
        )
        code, modules = json.loads(report.read_text())
        assert code == 0, (args, result.stderr)
        loaded = {module.split(".")[0] for module in modules}
        assert not loaded & heavy, (args, loaded & heavy)


def test_the_fast_entries_keep_the_rules_added_since(memory_dir: Path) -> None:
    """What later issues taught the click commands holds on the fast entries (each of
    these is answered there, not by click): a fact named by SLUG, root options after the
    command, an invalid leaf refused and warned about by name, a secret in a leaf's
    description refused, a note in a subfolder pinned by its path, an unchanged MEMORY.md
    said to be unchanged."""
    from subrosa.cli import fastpath

    def fast(*args: str, code: int = 0) -> tuple[str, str]:
        assert fastpath.parse(list(args)) is not None, args
        done = subrosa_process(*args)
        assert done.returncode == code, (args, done.stderr)
        return done.stdout.decode(), done.stderr.decode()

    write_leaf(memory_dir, "a.md", "The a fact.", name="a")
    assert fast("fact", "upsert", "a", "--hook", "the a hook")[0] == "added a (position 1)\n"
    out, _ = fast("fact", "pin", "a", "--memory-dir", str(memory_dir))
    assert out == "pinned a\n"
    _invalid_leaf(memory_dir)
    _, err = fast("fact", "upsert", "--leaf", "bad.md", "--hook", "x", code=2)
    assert "invalid leaf: " in err and "key '1' is a number" in err
    _, err = fast("generate")
    assert "warning: invalid leaf: bad.md: " in err
    assert fast("generate")[0].startswith("MEMORY.md unchanged: ")
    _secret_description(memory_dir)
    _, err = fast("fact", "upsert", "d", "--hook", "d", code=2)
    assert "the description holds a secret" in err
    _gone("d.md")(memory_dir)
    _note_in_a_subfolder(memory_dir)
    fast("generate")
    assert fast("fact", "pin", "--leaf", "notes/n.md")[0] == "pinned notes/n\n"
    assert fast("generate")[0].startswith("MEMORY.md unchanged: ")
