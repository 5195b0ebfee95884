"""The Claude Code commands: `hook`, `install`, and the checkpoint queue
(`checkpoint-mark`, `checkpoint-clear`, `checkpoint-list`).

None of them needs the database: the queue and the marks are files in
`<memory dir>/.extract/` (see subrosa.claude.checkpoint), because the hooks that write them
must not pay for SQLAlchemy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from subrosa.claude import checkpoint
from subrosa.claude.install import (
    SCOPES,
    McpPlan,
    Plan,
    Target,
    install_hint,
    mcp_target_for,
    plan_install,
    plan_mcp_install,
    plan_mcp_uninstall,
    plan_uninstall,
    plugin_advice,
    target_for,
    this_runner,
)
from subrosa.claude.settings import registrations
from subrosa.cli.common import AppContext, json_option, pass_app, print_json, say, warn
from subrosa.cli.fastpath import show_marked
from subrosa.errors import InvalidInput
from subrosa.memory.generate import written_by_claude_code
from subrosa.memory.marker import foreign_index
from subrosa.paths import extract_dir
from subrosa.text import escape_block_start, sanitize_line


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("event", metavar="session-start|stop|session-end")
def hook(event: str) -> None:
    """Run one Claude Code hook, reading Claude Code's JSON on stdin.

    \b
    session-start  remembers the session and its Claude Code process (CLAUDE_PID),
                   queues the project's sessions whose process is gone without
                   a SessionEnd (killed outright), and exports
                   SUBROSA_MEMORY_DIR to the session's Bash commands
                   (CLAUDE_ENV_FILE); prints
                   additionalContext saying how many ended sessions wait for
                   extraction, and the MEMORY.md index when Claude Code will
                   not load it by itself (the memory dir is not its auto-memory
                   dir, or auto memory is off): at most 10,000 characters, the
                   highest-ranked facts first when it must be cut.
    stop           counts the session's turns; every Nth (SUBROSA_NUDGE_EVERY or
                   nudge_every in the config file, default 15) it blocks once,
                   asking for the memory-extraction skill. Never when
                   stop_hook_active is set.
    session-end    hands the transcript to the archive (a background
                   `subrosa ingest --pending`), and queues the session unless
                   its checkpoint mark covers it (nobody talked after the mark);
                   then, like session-start, the sessions killed outright.

    Hooks always exit 0: on any problem they print one line on stderr and
    nothing on stdout. Registered twice (plugin and settings.json), each acts
    once per event. `subrosa install` puts them into settings.json.
    """
    from subrosa.claude.hooks import run_hook

    sys.exit(run_hook([event]))


@click.command("checkpoint-mark")
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="The session to mark (default: $CLAUDE_CODE_SESSION_ID, else the newest one the "
    "SessionStart hook saw here).",
)
@json_option
@pass_app
def checkpoint_mark(app: AppContext, session_id: str | None, as_json: bool) -> None:
    """Mark a session as extracted up to now: stamp its transcript's current size.

    When that session ends, the SessionEnd hook queues it only if the conversation
    went on after this mark (a new prompt), not for the rest of the extraction's own
    turn. Run it at the end of the memory-extraction skill, before `subrosa
    checkpoint-clear`. Without --session it marks the session it runs in
    (CLAUDE_CODE_SESSION_ID), else the newest one SessionStart saw here. It also takes
    the session off the queue and restarts its turn count (the next Stop nudge comes
    N turns from now).
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
    (Claude Code's SessionEnd reason, or `killed`: its Claude Code process ended
    without one, found by a later hook), ended_at (ISO 8601, UTC), size (bytes of
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
        session = sanitize_line(entry["session_id"])
        say(escape_block_start(f"{session}  ended {entry['ended_at']} ({reason})"))
        # A path, but one a planted queue entry (`.extract/` may be in git) can name:
        # no link either (`--json` keeps it as it is).
        say(f"    {sanitize_line(entry['transcript_path'])}")


def _print_plan(plan: Plan, dry_run: bool) -> None:
    target = plan.target
    if plan.memory_dir is not None:
        say(f"{'would create' if dry_run else 'created'} the memory dir {plan.memory_dir}")
    for number, edit in enumerate(plan.files):
        if number and not edit.changes:
            continue  # only the scope's own file is always named
        _say_file(edit.path, edit.write, edit.text is None, edit.changes, dry_run)
    if plan.skill_changes:
        skills_verb = (
            "would change skills in"
            if dry_run and (plan.copies or plan.removals)
            else ("skills in")
        )
        say(f"{skills_verb} {target.skills_path}")
        for line in plan.skill_changes:
            say(f"  {line}")
    for warning in plan.warnings:
        warn(warning)


def _warn_if_run_in_a_subfolder(target: Target) -> None:
    """Installed from a subfolder with the project scope: Claude Code started in that
    subfolder reads the subfolder's .claude/settings.json, not the one written, so the
    sessions the person starts there would run no hook."""
    here = Path.cwd()
    top = target.settings_path.parent.parent
    if os.environ.get("CLAUDE_PROJECT_DIR") or here == top:
        return
    warn(
        f"a Claude Code session started in {here} does not read {target.settings_path} "
        "(started in a subfolder, it reads that folder's .claude/settings.json), so these "
        "hooks will not run for it: `subrosa install --scope local` (read from every "
        f"subfolder) or `--scope user` covers it; or start Claude Code in {top}."
    )


def _say_if_private_on_a_server(app: AppContext) -> None:
    """On a team's server, a memory dir outside the repository (Claude Code's
    auto-memory dir, which install creates when the repository has no .claude/memory)
    has its facts filed under this machine's path, not under the project's name: the
    team sees them, but as another project's (docs/team.md, "Setting up a team")."""
    from subrosa.identity import facts_key, project_identity
    from subrosa.paths import project_root, resolved
    from subrosa.pg import is_server

    if not is_server(app.db_url):
        return
    name = project_identity(project_root())
    if name is None or facts_key(app.memory_dir) != resolved(app.memory_dir):
        return  # no name for this folder at all; or the facts are filed under one
    say(
        f"the memory dir {app.memory_dir} is private to this machine (outside the "
        "repository): on the team's server its facts are filed under that path, not "
        f"under {name}. To share them, create .claude/memory in the repository, "
        'commit it and run `subrosa install` again (docs/team.md, "Setting up a team").'
    )


def _mcp_plan(scope: str, uninstall: bool) -> McpPlan:
    target = mcp_target_for(scope)
    return plan_mcp_uninstall(target) if uninstall else plan_mcp_install(target)


def _print_mcp_plan(plan: McpPlan, dry_run: bool) -> None:
    _say_file(plan.target.path, plan.write, plan.text is None, plan.changes, dry_run)


def _say_file(path: Path, write: bool, removed: bool, changes: list[str], dry_run: bool) -> None:
    """One file of a plan: what happens to it (updated, removed or unchanged), then its
    changes, one a line."""
    if write:
        verb = ("would remove" if dry_run else "removed") if removed else None
        verb = verb or ("would update" if dry_run else "updated")
    else:
        verb = "unchanged:"
    say(f"{verb} {path}")
    for line in changes:
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
@click.option(
    "--mcp",
    "with_mcp",
    is_flag=True,
    help="Also register the `subrosa mcp` server (project: .mcp.json; user and local: "
    "~/.claude.json).",
)
@pass_app
def install(app: AppContext, scope: str, dry_run: bool, uninstall: bool, with_mcp: bool) -> None:
    """Set up Claude Code: the three hooks in settings.json, the skills beside it.

    Merges SessionStart, Stop and SessionEnd hooks running `subrosa hook …` into the
    scope's settings.json, keeping every other key and hook as it was (running it
    again changes nothing; the file keeps its own formatting), copies the
    memory-extraction and memory-compact skills into the matching .claude/skills/,
    and creates the project's memory dir when there is none yet. When that memory
    dir is the project's .claude/memory, the project and local scopes also add
    "autoMemoryDirectory": <its absolute path> to .claude/settings.local.json, so
    Claude Code's own auto memory goes there too (unless a settings file already
    sends it elsewhere: then a warning, and nothing changed). A settings.json
    that is not valid JSON, or read-only, is refused and left untouched (exit 2).
    Lines start with + (added), ~ (updated), = (already there) or - (removed).

    --uninstall takes them out again: settings.json gets back its content from
    before the first install when nobody changed it since, else only subrosa's
    entries go; skill files you edited stay.

    --mcp also registers the MCP server (`subrosa mcp`: search, get, timeline, facts,
    remember as tools) in the scope's MCP settings; --uninstall takes it out too.

    When `subrosa` is not on the PATH (installed in a venv), the hooks name this
    install's absolute path instead, so they run whatever PATH Claude Code has.

    Use either this or the plugin (the repository root is a Claude Code plugin),
    not both: install says so when settings.json enables the subrosa plugin. (Each
    hook acts once per event even when registered twice.)
    """
    target = target_for(scope)
    runner = this_runner()
    if uninstall:
        plan = plan_uninstall(target)
    else:  # the user scope serves every project: no memory dir of this one
        memory_dir = None if scope == "user" else app.memory_dir
        plan = plan_install(target, runner, memory_dir)
    mcp_plan = None
    if with_mcp or uninstall:
        try:
            mcp_plan = _mcp_plan(scope, uninstall)
        except InvalidInput as exc:
            if with_mcp:
                raise
            # Not asked for: a ~/.claude.json subrosa cannot read must not keep the
            # hooks from coming out.
            warn(f"the MCP server was left alone: {exc}")
    if not dry_run:
        plan.apply()
        if mcp_plan is not None:
            mcp_plan.apply()
    _print_plan(plan, dry_run)
    if mcp_plan is not None and (mcp_plan.changes or with_mcp):
        _print_mcp_plan(mcp_plan, dry_run)
    if not plan.changed and not (mcp_plan and mcp_plan.write):
        say(f"nothing to change ({scope} scope).")
    if uninstall:
        return
    if scope != "user":
        _say_if_private_on_a_server(app)
    index = foreign_index(app.memory_dir)
    if index is not None and not written_by_claude_code(app.memory_dir):
        say(
            f"{index} was not written by subrosa and is left untouched: run "
            "`subrosa adopt` to take it over before `subrosa generate`."
        )
    advice = plugin_advice(registrations())
    if advice is not None:
        warn(advice)
    if scope == "project":
        _warn_if_run_in_a_subfolder(target)
    if runner.argv is not None:
        say(
            f"`subrosa` is not on your PATH, so the hooks run {runner.argv[0]} by its full "
            f"path. To have the command in your shell too: {install_hint()}."
        )
        if scope == "project":
            warn(
                f"{target.settings_path} is shared through git, and now names a path on this "
                "machine: `subrosa install --uninstall` then `subrosa install --scope local` "
                "keeps it to this machine; or put subrosa on the PATH and run "
                "`subrosa install` again."
            )
