"""`subrosa doctor`."""

from __future__ import annotations

from pathlib import Path

import click

from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say
from subrosa.doctor import Subject, run_checks
from subrosa.errors import ProblemFound


@click.command()
@json_option
@pass_app
def doctor(app: AppContext, as_json: bool) -> None:
    """Check the set-up: memory dir, database and schema, hooks, the Claude Code
    version on PATH, whether Claude Code's own auto memory goes to the memory dir,
    index caps, leaves registered, transcript backlog, file permissions. Each
    problem comes with its fix.

    Exits 1 when an error-level check fails (warnings alone exit 0).
    """
    subject = Subject(memory_dir=app.memory_dir, db_url=app.db_url, cwd=Path.cwd())
    checks = run_checks(subject)
    failed = [c for c in checks if not c.ok and c.severity == "error"]
    if as_json:
        print_json({"ok": not failed, "checks": [c.to_dict() for c in checks]})
    else:
        for check in checks:
            mark = "ok " if check.ok else ("!! " if check.severity == "error" else "?? ")
            say(f"{mark}{check.name}: {check.detail}")
            if not check.ok and check.fix:
                say(f"     fix: {check.fix}")
    if failed:
        raise ProblemFound(f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}.")
