"""`subrosa ingest`, `subrosa transcript …`, `subrosa search`: the transcript archive."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from subrosa.cli.common import (
    AppContext,
    click_options,
    is_terminal,
    json_option,
    note,
    pass_app,
    print_json,
    say,
)
from subrosa.cli.fastsearch import SEARCH_OPTIONS
from subrosa.errors import InvalidInput, NotFound


@contextmanager
def archive(app: AppContext) -> Iterator[sqlite3.Connection]:
    """The archive's DB-API connection (the database migrated first when due)."""
    from subrosa.archive.connection import open_archive

    with open_archive(app.db_url) as conn:
        yield conn


@contextmanager
def ingest_lock(app: AppContext) -> Iterator[None]:
    """One ingest at a time (a background `ingest --pending` and a search may race)."""
    from subrosa.archive import connection

    with connection.ingest_lock(connection.archive_path(app.db_url)):
        yield


def _current_project() -> str:
    return _project_dir().name


def _drain(app: AppContext, conn: sqlite3.Connection) -> Any:
    from subrosa.archive.ingest import drain_pending

    return drain_pending(conn, _current_project(), app.settings.tool_result_chars)


# ---------------------------------------------------------------- ingest


def _describe(report: Any) -> str:
    data = report.to_dict()
    line = (
        f"{data['new_messages']} new messages from {data['files_read']} of "
        f"{data['files_seen']} files ({data['sessions']} sessions, "
        f"{data['bytes_read'] / 1e6:.1f} MB read)"
    )
    if data["duplicate_messages"]:
        line += f"; {data['duplicate_messages']} already archived"
    line += f"; {data['redacted']} secrets redacted"
    if data["files_restarted"]:
        line += f"; {data['files_restarted']} replaced or truncated files read again"
    skipped = sum(data["skipped"].values())
    if skipped:
        kinds = ", ".join(f"{k} {v}" for k, v in data["skipped"].items())
        line += f"; {skipped} records skipped ({kinds})"
    return line


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--all-projects", is_flag=True, help="Every project under <claude root>/projects/.")
@click.option(
    "--pending",
    "pending_only",
    is_flag=True,
    help="Only the sessions that ended since the last ingest, quietly (for a background run).",
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
    from subrosa.archive.ingest import Ingester, IngestReport, all_project_dirs, discover

    with archive(app) as conn, ingest_lock(app):
        drained = _drain(app, conn)
        if pending_only:
            report = drained or IngestReport()
            if as_json:
                print_json(report.to_dict())
            return
        if paths:
            roots = list(paths)
        elif all_projects:
            roots = all_project_dirs()
        else:
            roots = [p for p in [_project_dir()] if p.is_dir()]
        sources = discover(roots, _current_project())
        ingester = Ingester(conn, app.settings.tool_result_chars, report=drained)
        if is_terminal() and not as_json:
            report = _ingest_with_progress(ingester, sources)
        else:
            report = ingester.ingest(sources)
    if as_json:
        print_json(report.to_dict())
        return
    if not sources and not paths:
        note(f"no transcripts in {roots[0] if roots else _project_dir()}")
    say(_describe(report))


def _project_dir() -> Path:
    from subrosa.paths import project_transcript_dir

    return project_transcript_dir()


def _ingest_with_progress(ingester: Any, sources: list[Any]) -> Any:
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from subrosa.cli.common import err_console

    total = ingester.bytes_to_read(sources)
    columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console(), transient=True) as progress:
        task = progress.add_task("ingest", total=total)
        ingester.progress = lambda n: progress.advance(task, n)
        return ingester.ingest(sources)


# ---------------------------------------------------------------- transcript list / show


@click.group()
def transcript() -> None:
    """Browse the archived sessions."""


@transcript.command(name="list")
@click.option("--all-projects", is_flag=True, help="Sessions of every project.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="How many sessions."
)
@json_option
@pass_app
def list_cmd(app: AppContext, all_projects: bool, limit: int, as_json: bool) -> None:
    """The archived sessions of this project, newest first: id, time, messages, title."""
    with archive(app) as conn:
        _drain(app, conn)
        where, params = ("", []) if all_projects else (" WHERE project = ?", [_current_project()])
        rows = conn.execute(
            "SELECT session_id, project, cwd, git_branch, title, summary, first_at, last_at,"
            f" message_count FROM sessions{where}"
            " ORDER BY last_at IS NULL, last_at DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
    keys = (
        "session_id",
        "project",
        "cwd",
        "git_branch",
        "title",
        "summary",
        "first_at",
        "last_at",
        "message_count",
    )
    sessions = [dict(zip(keys, row, strict=True)) for row in rows]
    if as_json:
        print_json(sessions)
        return
    if not sessions:
        say("no archived sessions (run `subrosa ingest`)")
    from subrosa.archive.conversation import session_line

    for s in sessions:
        click.echo(session_line(s))


def _find_session(conn: sqlite3.Connection, session: str) -> tuple[int, str]:
    rows = conn.execute(
        "SELECT id, session_id FROM sessions WHERE session_id = ? OR session_id LIKE ?"
        " ESCAPE '\\' LIMIT 2",
        [session, session.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"],
    ).fetchall()
    exact = [row for row in rows if row[1] == session]
    if exact:
        return int(exact[0][0]), str(exact[0][1])
    if not rows:
        raise NotFound(f"{session}: no archived session has this id.")
    if len(rows) > 1:
        raise InvalidInput(f"{session}: more than one archived session starts with this.")
    return int(rows[0][0]), str(rows[0][1])


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
    with archive(app) as conn:
        _drain(app, conn)
        pk, session_id = _find_session(conn, session)
        rows = conn.execute(
            # Time order: a session's lines can arrive from several files (a resumed
            # session, a fork), so the order of insertion is not the conversation's.
            "SELECT id, uuid, role, timestamp, text FROM messages WHERE session_pk = ?"
            " ORDER BY timestamp IS NULL, timestamp, id",
            [pk],
        ).fetchall()
        info = conn.execute(
            "SELECT project, cwd, git_branch, title, summary, first_at, last_at, message_count"
            " FROM sessions WHERE id = ?",
            [pk],
        ).fetchone()
    if around is not None:
        at = next((i for i, r in enumerate(rows) if str(r[0]) == around or r[1] == around), None)
        if at is None:
            raise NotFound(f"{around}: no message of session {session_id} has this number.")
        rows = rows[max(0, at - context) : at + context + 1]
    from subrosa.archive.conversation import message_kind, render_conversation

    messages = [
        {
            "message_id": r[0],
            "uuid": r[1],
            "role": r[2],
            "kind": message_kind(r[2], r[4]),
            "timestamp": r[3],
            "text": r[4],
        }
        for r in rows
    ]
    if as_json:
        keys = ("project", "cwd", "git_branch", "title", "summary", "first_at", "last_at")
        print_json(
            {"session_id": session_id, **dict(zip(keys, info, strict=False)), "messages": messages}
        )
        return
    keys = ("project", "cwd", "git_branch", "title", "summary", "first_at", "last_at")
    details = {**dict(zip(keys, info, strict=False)), "message_count": info[-1]}
    click.echo(render_conversation(session_id, details, messages))


# ---------------------------------------------------------------- search


@click.command()
@click.argument("query", nargs=-1, required=True)
@click_options(SEARCH_OPTIONS)  # the fast path (subrosa.cli.fastsearch) reads them too
@pass_app
def search(
    app: AppContext,
    query: tuple[str, ...],
    limit: int,
    all_projects: bool,
    since: str | None,
    role: str | None,
    facts_only: bool,
    transcripts_only: bool,
    as_json: bool,
) -> None:
    """Search facts (title, description, hook, body) and archived messages, best first.

    Words must all appear (in any order); "a phrase" in quotes must appear as written; a
    word ending in * matches as a prefix (dep* finds deploy and dependency). Anything else
    is searched as plain text, never as syntax. Chinese, Japanese and Korean text is found
    by any part of it. Each result shows its kind, score, where it is (a fact's slug, or a
    message's session, time and number for `transcript show --around`) and a snippet with
    the match in **bold**. Every fact found counts a hit. Sessions that ended since the
    last ingest are ingested first.
    """
    from subrosa import recall
    from subrosa.cli.fastsearch import emit
    from subrosa.query import QueryError

    try:
        filters = recall.filters_for(
            since=since, role=role, all_projects=all_projects, memory_dir=app.memory_dir
        )
    except QueryError as exc:
        raise InvalidInput(str(exc)) from None
    with archive(app) as conn:
        with ingest_lock(app):
            _drain(app, conn)
        results = recall.search(
            conn,
            " ".join(query),
            filters,
            limit,
            facts_only=facts_only,
            transcripts_only=transcripts_only,
        )
    emit(results, as_json)
