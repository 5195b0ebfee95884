"""`subrosa demo`: the whole flow on built-in example data, in a throwaway place.

The example data and the place are subrosa.demo; this module runs the real commands
over them, one after the other, as a user would type them."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from subrosa.cli.common import note
from subrosa.demo import HOOKS, SESSION, workspace


def _steps(memory_dir: Path, db: Path) -> list[tuple[str, list[str]]]:
    base = ["--memory-dir", str(memory_dir), "--db", str(db)]
    steps: list[tuple[str, list[str]]] = []
    for name, hook in HOOKS.items():
        pin = ["--pin"] if name.startswith("feedback_") else []
        steps.append(
            (
                f"register {name}",
                [*base, "fact", "upsert", name.removesuffix(".md"), "--hook", hook, *pin],
            )
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
    session = str(SESSION)
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
    from subrosa.cli.app import cli

    with workspace(target) as place:
        note(f"demo memory dir: {place.memory_dir}")
        for title, args in _steps(place.memory_dir, place.db):
            # Quoted as a shell needs it, so a reader can paste the line.
            click.secho(f"\n$ subrosa {shlex.join(args[4:])}", bold=True)
            click.echo(f"  ({title})")
            try:
                cli.main(args, prog_name="subrosa", standalone_mode=False)
            except click.ClickException as exc:
                exc.show()
        index = place.index_text()
        if index is not None:
            click.secho("\n--- MEMORY.md ---", bold=True)
            click.echo(index)
