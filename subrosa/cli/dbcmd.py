"""`subrosa db …`: the database behind the facts and the transcript archive."""

from __future__ import annotations

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say
from subrosa.db import SCHEMA_HEAD, current_revision, get_engine, upgrade


@click.group()
def db() -> None:
    """Inspect or migrate the database (migrations also run by themselves on first use)."""


@db.command(name="upgrade")
@pass_app
def upgrade_cmd(app: AppContext) -> None:
    """Migrate the database to the newest schema."""
    engine = get_engine(app.db_url)
    before = current_revision(engine)
    upgrade(engine)
    after = current_revision(engine)
    if before == after:
        say(f"already at revision {after}")
    else:
        say(f"migrated from {before or 'a blank database'} to {after}")


@db.command()
@json_option
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Show where the database is and which schema revision it has."""
    engine = get_engine(app.db_url)
    revision = current_revision(engine)
    data = {
        "url": engine.url.render_as_string(hide_password=True),
        "revision": revision,
        "head": SCHEMA_HEAD,
        "current": revision == SCHEMA_HEAD,
    }
    if as_json:
        print_json(data)
    else:
        state = "current" if data["current"] else "needs `subrosa db upgrade`"
        say(f"{data['url']}: revision {revision or 'none'} (head {SCHEMA_HEAD}, {state})")
