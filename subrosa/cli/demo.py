"""`subrosa demo`: the whole flow on built-in example data, in a throwaway place."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from subrosa.cli.common import note

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# Each example leaf and the hook its index line carries.
HOOKS = {
    "feedback_no_mocks_in_tests.md": "Tests run the real CLI on real SQLite; no mocks",
    "user_prefers_pnpm.md": "pnpm only, never npm or yarn",
    "project_release_train.md": "Ship every 2nd Tuesday; freeze the Friday before",
    "reference_status_dashboard.md": "Health: Grafana svc-overview; alerts in #ops-alerts",
    "project_migration_spike.md": "Postgres search spike: Done 2026-09-01, stay on FTS5",
}


def _steps(memory_dir: Path, db: Path) -> list[tuple[str, list[str]]]:
    base = ["--memory-dir", str(memory_dir), "--db", str(db)]
    steps: list[tuple[str, list[str]]] = []
    for name, hook in HOOKS.items():
        pin = ["--pin"] if name.startswith("feedback_") else []
        steps.append(
            (f"register {name}", [*base, "fact", "upsert", "--leaf", name, "--hook", hook, *pin])
        )
    steps.append(("the facts, in curated order", [*base, "fact", "list"]))
    steps.append(
        (
            "move the dashboard fact first",
            [
                *base,
                "fact",
                "move",
                "reference_status_dashboard",
                "--before",
                "feedback_no_mocks_in_tests",
            ],
        )
    )
    steps.append(("check the wikilinks", [*base, "fact", "link", "--all"]))
    steps.append(("review staleness (dry run)", [*base, "stale", "--today", "2026-11-29"]))
    steps.append(("generate MEMORY.md within its budget", [*base, "generate"]))
    steps.append(("the witness", [*base, "check", "--dir", str(memory_dir)]))
    session = str(EXAMPLES / "demo_session.jsonl")
    steps.append(
        ("archive an example Claude Code session (secrets redacted)", [*base, "ingest", session])
    )
    steps.append(("search the facts and the archive", [*base, "search", "pnpm"]))
    steps.append(("Japanese text is found by any part", [*base, "search", "本番"]))
    steps.append(("read the session back", [*base, "transcript", "show", "demo-session"]))
    return steps


@click.command()
@click.option(
    "--dir",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to build the demo (default: a temporary directory, removed afterwards).",
)
def demo(target: Path | None) -> None:
    """Run the whole subrosa flow on example leaves, in a throwaway memory dir and database.

    Nothing in your real memory or database is touched. Pass --dir to keep the result.
    """
    from subrosa.cli.app import COMMANDS, _load, cli

    workdir = target or Path(tempfile.mkdtemp(prefix="subrosa-demo-"))
    memory_dir = workdir / "memory"
    memory_dir.mkdir(parents=True, exist_ok=True)
    for leaf in sorted(EXAMPLES.glob("*.md")):
        shutil.copy2(leaf, memory_dir / leaf.name)
    db = workdir / "subrosa.db"
    note(f"demo memory dir: {memory_dir}")
    try:
        for title, args in _steps(memory_dir, db):
            command = args[4]
            if command not in COMMANDS or _load(command) is None:  # not built yet
                continue
            click.secho(f"\n$ subrosa {' '.join(args[4:])}", bold=True)
            click.echo(f"  ({title})")
            try:
                cli.main(args, prog_name="subrosa", standalone_mode=False)
            except click.ClickException as exc:
                exc.show()
        index = memory_dir / "MEMORY.md"
        if index.exists():
            click.secho("\n--- MEMORY.md ---", bold=True)
            click.echo(index.read_text(encoding="utf-8"))
    finally:
        if target is None:
            from subrosa.db import dispose_all

            dispose_all()
            shutil.rmtree(workdir, ignore_errors=True)
