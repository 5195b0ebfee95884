"""`subrosa ingest`, `subrosa transcript …`, `subrosa search`: the transcript archive.

Adapters: each parses its options, calls one use case of the archive half
(subrosa.archive.ingest, subrosa.archive.sessions) or subrosa.recall, and prints.
"""

from __future__ import annotations

from pathlib import Path

import click

from subrosa.cli.common import (
    AppContext,
    click_options,
    is_terminal,
    json_option,
    note,
    pass_app,
    print_json,
    progress_bar,
    reindex_bar,
    say,
)
from subrosa.cli.fastpath import run_ingest, show_ingested
from subrosa.cli.fastsearch import SEARCH_OPTIONS
from subrosa.errors import InvalidInput

# ---------------------------------------------------------------- ingest


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--all-projects", is_flag=True, help="Every project under <claude root>/projects/.")
@click.option(
    "--pending",
    "pending_only",
    is_flag=True,
    help="Only the sessions that ended since the last ingest and what changed in their"
    " project folders, quietly (for a background run).",
)
@json_option
@pass_app
def ingest(
    app: AppContext, paths: tuple[Path, ...], all_projects: bool, pending_only: bool, as_json: bool
) -> None:
    """Archive Claude Code session transcripts, so they stay searchable after Claude Code
    deletes them.

    By default reads this project's transcript folder (<claude root>/projects/<encoded
    project path>/, subagent transcripts included); PATHS may name transcript files or
    folders instead, and --all-projects reads every project. Only what was appended since
    the last ingest is read; a line still being written waits for the next run. Secrets
    (API keys, tokens, private keys, passwords in URLs, ...) are replaced by
    [REDACTED:<kind>] before anything is stored.
    """
    # Without a progress bar (not a terminal) subrosa.cli.fastpath runs it without click
    # too; the ingest and its report are defined there, for both entries.
    bars = is_terminal() and not as_json and not pending_only
    with (
        progress_bar(bars, "ingest", in_bytes=True) as progress,
        reindex_bar(enabled=bars) as reindexing,
    ):
        done = run_ingest(app.db_url, list(paths), all_projects, pending_only, progress, reindexing)
    show_ingested(done, bool(paths), pending_only, as_json)


# ---------------------------------------------------------------- transcript list / show


@click.group()
def transcript() -> None:
    """Browse the archived sessions."""


@transcript.command(name="list")
@click.option("--all-projects", is_flag=True, help="Sessions of every project.")
@click.option(
    "--project",
    metavar="NAME",
    help="Sessions of the project NAME (as --json shows it, e.g. github.com/org/repo).",
)
@click.option(
    "--by",
    "by",
    metavar="USER",
    help="Only the sessions USER archived (a user name, or USER@HOST as the list shows it).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="How many sessions."
)
@json_option
@pass_app
def list_cmd(
    app: AppContext,
    all_projects: bool,
    project: str | None,
    by: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The archived sessions of this project, newest first: id, time, messages, title,
    and who archived it (user@host).

    This project is the one named by its repository's git remote (github.com/org/repo,
    the same in every clone) or by the settings file's [projects] table, else this
    folder. --json adds each session's project, folder, branch, host and username."""
    from subrosa.archive.sessions import list_sessions
    from subrosa.recall import BOTH_SCOPES, EMPTY_PROJECT

    if all_projects and project:
        raise InvalidInput(BOTH_SCOPES)
    if project is not None and not project.strip():
        raise InvalidInput(EMPTY_PROJECT)
    with reindex_bar(enabled=is_terminal() and not as_json) as progress:
        sessions = list_sessions(
            app.db_url,
            all_projects=all_projects,
            project=project,
            by=by,
            limit=limit + 1,  # one more, to know whether --limit left some out
            tool_result_chars=app.settings.tool_result_chars,
            reindex_progress=progress,
        )
    more, sessions = len(sessions) > limit, sessions[:limit]
    if as_json:
        print_json(sessions)
        return
    if not sessions:
        # Under a filter the archive may be full: say what was asked, not "ingest".
        scope = "" if all_projects else f" of project {project}" if project else ""
        by_whom = f" from {by}" if by else ""
        if all_projects:
            say(f"no archived sessions{by_whom} in any project")
        elif scope or by_whom:
            say(f"no archived sessions{scope}{by_whom} (`--all-projects` lists every project's)")
        elif list_sessions(app.db_url, all_projects=True, limit=1):
            # Sessions recorded under another project (another folder, another remote)
            # are not lost: say whose these are and how to see the others.
            from subrosa.archive.ingest import current_project

            say(
                f"no archived sessions of this project ({current_project()}); "
                "other projects have some: `--all-projects` lists them"
            )
        else:
            say("no archived sessions (run `subrosa ingest`)")
    from subrosa.archive.conversation import session_line

    for s in sessions:
        click.echo(session_line(s))
    if more:
        note(f"(the newest {limit}; --limit N shows more)")


@transcript.command()
@click.argument("session")
@click.option(
    "--around",
    "around",
    metavar="MESSAGE",
    help="Only the messages around this one (its number, as search prints it, or its uuid).",
)
@click.option(
    "--context",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="With --around: how many messages before and after.",
)
@json_option
@pass_app
def show(app: AppContext, session: str, around: str | None, context: int, as_json: bool) -> None:
    """Print an archived session as a readable conversation.

    SESSION is a session id or an unambiguous prefix of one.
    """
    from subrosa.archive.conversation import render_conversation
    from subrosa.archive.sessions import DETAIL_KEYS, show_session

    with reindex_bar(enabled=is_terminal() and not as_json) as progress:
        shown = show_session(
            app.db_url,
            session,
            around=around,
            context=context,
            tool_result_chars=app.settings.tool_result_chars,
            reindex_progress=progress,
        )
    if as_json:
        details = {key: shown.details[key] for key in (*DETAIL_KEYS, "message_count")}
        print_json({"session_id": shown.session_id, **details, "messages": shown.messages})
        return
    click.echo(render_conversation(shown.session_id, shown.details, shown.messages))


# ---------------------------------------------------------------- search


class _SearchCommand(click.Command):
    """`search`, whose query words may start with a dash (`-staging`): click would say
    "No such option '-s'", a letter nobody typed; this names the word and the `--`
    that makes it a query word. A mistyped long option keeps click's own hint."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list it is handed
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            name = exc.option_name
            head = given[: given.index("--")] if "--" in given else given
            word = next((a for a in head if a.startswith(name) and not a.startswith("--")), None)
            if word is None:
                raise
            raise click.UsageError(
                f"{word}: no option of search is named so; to search for a word that starts "
                f"with a dash, put -- before the query: {_with_dashes(head)}",
                ctx,
            ) from None


def _with_dashes(args: list[str]) -> str:
    """`subrosa search ARGS` with its options first, then `--` and the query words."""
    import shlex

    takes_value = {o.name for o in SEARCH_OPTIONS if o.kind != "flag"}
    options: list[str] = []
    words: list[str] = []
    rest = iter(args)
    for arg in rest:
        name = arg.partition("=")[0]
        if arg.startswith("--") and name in {o.name for o in SEARCH_OPTIONS}:
            options.append(arg)
            if name in takes_value and "=" not in arg:
                options.append(next(rest, ""))
        else:
            words.append(arg)
    return shlex.join(["subrosa", "search", *options, "--", *words])


@click.command(cls=_SearchCommand)
@click.argument("query", nargs=-1, required=True)
@click_options(SEARCH_OPTIONS)  # the fast path (subrosa.cli.fastsearch) reads them too
@pass_app
def search(
    app: AppContext,
    query: tuple[str, ...],
    limit: int,
    all_projects: bool,
    project: str | None,
    since: str | None,
    role: str | None,
    facts_only: bool,
    transcripts_only: bool,
    sessions: bool,
    as_json: bool,
) -> None:
    """Search facts (title, description, hook, body) and archived messages, best first.

    What holds every word comes first (in any order, near each other: a long text with the
    words a page apart ranks with the next; stopwords like "how" or "the" are never
    required), then, when that is fewer than --limit, what holds some of them, best first,
    marked "(some words)". A word also finds its other English forms (costs, costing for
    cost) and identifiers made of it: isSyncingBackfill by "syncing", pre-commit by
    "precommit", statusline by "status line". "A phrase" in quotes must appear as written; a
    word ending in * matches as a prefix (dep* finds deploy and dependency). Anything else
    is searched as plain text, never as syntax. Chinese, Japanese and Korean text is found
    by any part of it. A tool call or a tool's output ranks below what was said; the
    assistant's reply to a message of the user's (or a tool's output) holding every word
    ranks right after it.
    Copies of one text (an error pasted many times) are one result that says how many
    there are. --sessions lists the sessions instead, each once, best first. Each
    result shows its kind, score, where it is (a fact's slug, or a message's session,
    time and number for `transcript show --around`; --json adds the message's uuid)
    and a snippet with the match in **bold**.
    Every fact holding every word counts a hit. Sessions that ended since the last
    ingest are ingested first.
    """
    from subrosa import recall
    from subrosa.cli.fastsearch import emit
    from subrosa.query import QueryError

    try:
        filters = recall.filters_for(
            since=since,
            role=role,
            all_projects=all_projects,
            project=project,
            memory_dir=app.memory_dir,
        )
    except QueryError as exc:
        raise InvalidInput(str(exc)) from None
    with reindex_bar(enabled=is_terminal() and not as_json) as progress:
        results = recall.search_database(
            app.db_url,
            " ".join(query),
            filters,
            limit,
            facts_only=facts_only,
            transcripts_only=transcripts_only,
            sessions=sessions,
            tool_result_chars=app.settings.tool_result_chars,
            reindex_progress=progress,
        )
    emit(results, as_json, filters.transcript_project)
