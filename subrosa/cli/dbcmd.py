"""`subrosa db …`: the database behind the facts and the transcript archive."""

from __future__ import annotations

import click

from subrosa.cli.common import (
    AppContext,
    is_terminal,
    json_option,
    pass_app,
    print_json,
    reindex_bar,
    say,
)
from subrosa.db import migrate, status


@click.group()
def db() -> None:
    """Inspect or migrate the database (migrations also run by themselves on first use)."""


@db.command(name="upgrade")
@pass_app
def upgrade_cmd(app: AppContext) -> None:
    """Migrate the database to the newest schema (and re-index the transcript archive
    when the new schema asks for it, with a progress bar; on a PostgreSQL server, build
    the archive's id-range indexes ahead of its newest message and seal the postings of
    its complete chunks of message ids)."""
    from subrosa.archive.reindex import reindex_database
    from subrosa.archive.runs import mend_runs

    with reindex_bar(enabled=is_terminal()) as progress:
        before, after = migrate(app.db_url, progress)
        indexed = reindex_database(app.db_url, progress)
    if before == after:
        say(f"already at revision {after}")
    else:
        say(f"migrated from {before or 'a blank database'} to {after}")
    if indexed:
        say(f"re-indexed {indexed} archived messages")
    mended = mend_runs(app.db_url)
    if mended:
        say(
            f"derived each session's runs of ids again: {mended} archived message(s) lay"
            " outside them or inside another session's (a project's search missed them, or"
            " found them in another project)"
        )


@db.command(name="status")
@json_option
@pass_app
def status_cmd(app: AppContext, as_json: bool) -> None:
    """Show where the database is and which schema revision it has."""
    data = status(app.db_url)
    if as_json:
        print_json(data)
    else:
        if not data["exists"]:
            say(f"{data['url']}: does not exist yet (the first command that needs it makes it)")
            return
        state = "current" if data["current"] else "needs `subrosa db upgrade`"
        if data["newer"]:
            state = "written by a newer subrosa: upgrade subrosa to use it"
        say(f"{data['url']}: revision {data['revision'] or 'none'} (head {data['head']}, {state})")
