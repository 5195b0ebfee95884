"""The Claude Code commands: `hook`, `install`, and the checkpoint queue
(`checkpoint-mark`, `checkpoint-clear`, `checkpoint-list`).

None of them needs the database: the queue and the marks are files in
`<memory dir>/.extract/` (see subrosa.claude.checkpoint), because the hooks that write them
must not pay for SQLAlchemy.
"""

from __future__ import annotations

import shutil
import sys

import click

from subrosa.claude import checkpoint
from subrosa.claude.install import (
    INSTALL_HINT,
    SCOPES,
    Plan,
    plan_install,
    plan_uninstall,
    target_for,
)
from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.cli.fastpath import show_marked
from subrosa.memory.marker import foreign_index
from subrosa.paths import extract_dir
from subrosa.text import sanitize_line


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("event", metavar="session-start|stop|session-end")
def hook(event: str) -> None:
    """Run one Claude Code hook, reading Claude Code's JSON on stdin.

    \b
    session-start  remembers the session (so checkpoint-mark needs no argument);
                   prints additionalContext saying how many ended sessions wait
                   for extraction, and the MEMORY.md index when Claude Code will
                   not load it by itself (the memory dir is not its auto-memory
                   dir, or auto memory is off). At most 10,000 characters.
    stop           counts the session's turns; every Nth (SUBROSA_NUDGE_EVERY or
                   nudge_every in the config file, default 15) it blocks once,
                   asking for the memory-extraction skill. Never when
                   stop_hook_active is set.
    session-end    hands the transcript to the archive (a background
                   `subrosa ingest --pending`), and queues the session unless
                   its checkpoint mark covers the transcript.

    Hooks always exit 0: on any problem they print one line on stderr and
    nothing on stdout. `subrosa install` puts them into settings.json.
    """
    from subrosa.claude.hooks import run_hook

    sys.exit(run_hook([event]))


@click.command("checkpoint-mark")
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="The session to mark (default: the newest one the SessionStart hook saw here).",
)
@json_option
@pass_app
def checkpoint_mark(app: AppContext, session_id: str | None, as_json: bool) -> None:
    """Mark a session as extracted up to now: stamp its transcript's current size.

    When that session ends, the SessionEnd hook queues it only if its transcript
    grew past this mark. Run it at the end of the memory-extraction skill, before
    `subrosa checkpoint-clear`. It also takes the session off the queue and restarts
    its turn count (the next Stop nudge comes N turns from now).
    """
    # subrosa.cli.fastpath runs it without click too, and prints it for both entries.
    show_marked(checkpoint.mark_session(app.memory_dir, session_id), as_json)


@click.command("checkpoint-clear")
@json_option
@pass_app
def checkpoint_clear(app: AppContext, as_json: bool) -> None:
    """Empty the queue of sessions that ended without extraction; say how many went.

    Run it after the memory-extraction skill caught up (after checkpoint-mark), or to
    dismiss the queue. Sessions that end while it runs stay queued.
    """
    removed = checkpoint.clear_queue(app.memory_dir)
    if as_json:
        print_json({"cleared": removed})
    else:
        say(f"cleared {removed} queued session{'' if removed == 1 else 's'}")


@click.command("checkpoint-list")
@json_option
@pass_app
def checkpoint_list(app: AppContext, as_json: bool) -> None:
    """List the sessions that ended without extraction, oldest first.

    `--json` prints an array of objects with session_id, transcript_path, reason
    (Claude Code's SessionEnd reason), ended_at (ISO 8601, UTC), size (bytes of
    transcript at the end) and cwd.
    """
    entries = checkpoint.queue_listing(app.memory_dir)
    if as_json:
        print_json(entries)
        return
    if not entries:
        say(f"no sessions queued in {extract_dir(app.memory_dir)}")
        return
    for entry in entries:
        reason = sanitize_line(entry["reason"]) or "?"
        say(f"{sanitize_line(entry['session_id'])}  ended {entry['ended_at']} ({reason})")
        say(f"    {sanitize_line(entry['transcript_path'], keep_links=True)}")


def _print_plan(plan: Plan, dry_run: bool) -> None:
    target = plan.target
    if plan.write_settings:
        verb = "would update" if dry_run else "updated"
        if plan.settings_text is None:
            verb = "would remove" if dry_run else "removed"
    else:
        verb = "unchanged:"
    say(f"{verb} {target.settings_path}")
    for line in plan.settings_changes:
        say(f"  {line}")
    if plan.skill_changes:
        skills_verb = (
            "would change skills in"
            if dry_run and (plan.copies or plan.removals)
            else ("skills in")
        )
        say(f"{skills_verb} {target.skills_path}")
        for line in plan.skill_changes:
            say(f"  {line}")


@click.command()
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="project",
    show_default=True,
    help="project: .claude/settings.json (shared); local: .claude/settings.local.json "
    "(this machine); user: ~/.claude/settings.json (every project).",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@click.option("--uninstall", is_flag=True, help="Take subrosa's hooks and skills out again.")
@pass_app
def install(app: AppContext, scope: str, dry_run: bool, uninstall: bool) -> None:
    """Set up Claude Code: the three hooks in settings.json, the skills beside it.

    Merges SessionStart, Stop and SessionEnd hooks running `subrosa hook …` into the
    scope's settings.json, keeping every other key and hook as it was (running it
    again changes nothing), and copies the memory-extraction and memory-compact
    skills into the matching .claude/skills/. A settings.json that is not valid JSON
    is refused and left untouched (exit 2). Lines start with + (added), ~ (updated),
    = (already there) or - (removed).

    --uninstall takes them out again: settings.json gets back its content from
    before the first install when nobody changed it since, else only subrosa's
    entries go; skill files you edited stay.

    Use either this or the plugin (the repository root is a Claude Code plugin),
    not both: the hooks would run twice.
    """
    target = target_for(scope)
    plan = plan_uninstall(target) if uninstall else plan_install(target)
    if not dry_run:
        plan.apply()
    _print_plan(plan, dry_run)
    if not plan.changed:
        say(f"nothing to change ({scope} scope).")
    if uninstall:
        return
    index = foreign_index(app.memory_dir)
    if index is not None:
        say(
            f"{index} was not written by subrosa and is left untouched: run "
            "`subrosa adopt` to take it over before `subrosa generate`."
        )
    if shutil.which("subrosa") is None:
        warn(f"`subrosa` is not on your PATH, so the hooks will skip until it is: {INSTALL_HINT}.")
