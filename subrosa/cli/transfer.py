"""`subrosa export` and `subrosa import`: a memory moved into another database and back.

Adapters over subrosa.transfer: options parsed, one use case called, a summary printed.
"""

from __future__ import annotations

from pathlib import Path

import click

from subrosa.cli.common import (
    AppContext,
    is_terminal,
    json_option,
    note,
    pass_app,
    print_json,
    progress_bar,
    say,
)


@click.command(name="export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--all-projects", is_flag=True, help="Every project in the database.")
@click.option(
    "--project",
    "projects",
    metavar="NAME",
    multiple=True,
    help="The project NAME (as `transcript list --json` shows it); repeat for more.",
)
@json_option
@pass_app
def export_cmd(
    app: AppContext, file: Path, all_projects: bool, projects: tuple[str, ...], as_json: bool
) -> None:
    """Write this project's facts, archived sessions and messages to FILE, for `subrosa
    import` into another database (a team's server, a new machine).

    FILE is JSON lines, gzip-compressed when its name ends in .gz. By default this
    project only (its facts and the sessions run in it: see `transcript list`);
    --project NAME or --all-projects for others. What only subrosa knows travels with
    each fact: hook, pin, archived state, order, section, hits. The file appears whole
    or not at all: the temp file of an export killed over an hour ago (.FILE.*.tmp)
    goes at the next export to FILE.
    """
    from subrosa.identity import facts_key, sessions_key
    from subrosa.transfer import export_file

    chosen: list[str] | None
    if all_projects:
        chosen = None
    elif projects:
        chosen = list(projects)
    else:
        chosen = list(dict.fromkeys([facts_key(app.memory_dir), sessions_key()]))
    done = export_file(app.db_url, file, chosen)
    for leftover in done.removed_leftovers:
        note(f"removed {leftover}, left by an export stopped over an hour ago")
    if chosen is not None and not projects and done.sessions == 0:
        # Sessions archived before the repository had a remote keep the folder's key
        # until an ingest archives something new here (docs/team.md).
        note(
            f"no archived sessions of this project ({sessions_key()}) were written: "
            "`transcript list --all-projects` shows which project each session is "
            "filed under, and `export --project NAME` writes one"
        )
    if as_json:
        print_json(done.to_dict())
        return
    say(
        f"{done.facts} facts, {done.sessions} sessions and {done.messages} messages of "
        f"{len(done.projects)} projects written to {file} ({done.bytes / 1e6:.1f} MB)"
    )


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_app
def import_cmd(app: AppContext, file: Path, as_json: bool) -> None:
    """Add the facts, sessions and messages of FILE (written by `subrosa export`) that
    this database does not have yet.

    Every record is checked: a file that is not an export, is cut short or holds a bad
    record is refused, naming the line, and nothing is written. Then what the
    database already has (a fact by project and slug, a session by id, a message by
    uuid) is left as it is, so importing twice adds nothing twice. Imported messages
    are indexed for search as ingested ones are.
    """
    from subrosa.transfer import import_file

    with progress_bar(is_terminal() and not as_json, "import") as progress:
        done = import_file(app.db_url, file, progress)
    if as_json:
        print_json(done.to_dict())
        return
    parts = [
        f"{done.facts['added']} facts",
        f"{done.sessions['added']} sessions",
        f"{done.messages['added']} messages",
    ]
    line = f"{', '.join(parts)} added from {file}"
    present = done.facts["present"] + done.sessions["present"] + done.messages["present"]
    if present:
        line += f"; {present} already here (left as they are)"
    say(line)
