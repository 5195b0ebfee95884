"""The archive's sessions and messages as plain records, out of a database and back in
(`subrosa export` / `subrosa import`, composed by subrosa.transfer).

Out: read with SQLAlchemy Core on either engine (an export is rare and not hot; one
reader serves both). In: on SQLite through ingest's own write path
(Ingester.store_session), so imported messages get their ids, their terms (computed
again here by subrosa.terms: what the target's index expects) and their rows in
`messages_fts` exactly as ingested ones do, and a message or a session already there
(by uuid, by session id) is left alone: importing twice adds nothing.

On PostgreSQL the archive is being built (docs/team.md); `archive_writer` is where
its batch writer plugs in: one function taking a batch of sessions with their
messages, returning what it added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple

from subrosa.archive.transcripts import Message, SessionInfo
from subrosa.terms import index_terms

SESSION_KEYS = (
    "session_id",
    "project",
    "cwd",
    "git_branch",
    "title",
    "summary",
    "first_at",
    "last_at",
    "host",
    "username",
)
MESSAGE_KEYS = ("uuid", "role", "timestamp", "text")


class SessionBatch(NamedTuple):
    """One session (SESSION_KEYS) and its messages (MESSAGE_KEYS each), as exported."""

    session: dict[str, Any]
    messages: list[dict[str, Any]]


class Written(NamedTuple):
    """What a batch added: sessions and messages new to the target, messages it had."""

    sessions: int
    messages: int
    present: int


# The plug: a batch in, what it added out; committed when archive_writer's block ends.
BatchWriter = Callable[[list[SessionBatch]], Written]


def _text(value: Any) -> Any:
    """A stored time as SQLite's archive holds it ("YYYY-MM-DD HH:MM:SS")."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return value


def count_sessions(conn: Any, projects: list[str] | None) -> dict[str, int]:
    """How many sessions each project has (those of `projects`, or all)."""
    from sqlalchemy import text

    where, params = _projects_filter(projects)
    rows = conn.execute(
        text(f"SELECT project, count(*) FROM sessions{where} GROUP BY project"), params
    )
    return {str(project): int(n) for project, n in rows}


def _projects_filter(projects: list[str] | None) -> tuple[str, dict[str, Any]]:
    if projects is None:
        return "", {}
    marks = ", ".join(f":p{i}" for i in range(len(projects)))
    return f" WHERE project IN ({marks})", {f"p{i}": p for i, p in enumerate(projects)}


def read_sessions(conn: Any, projects: list[str] | None) -> Iterator[SessionBatch]:
    """Every session of `projects` (or all) with its messages in id order, one session
    at a time (a session's messages are held, not the archive's)."""
    from sqlalchemy import text

    where, params = _projects_filter(projects)
    sessions = conn.execute(
        text(f"SELECT id, {', '.join(SESSION_KEYS)} FROM sessions{where} ORDER BY id"), params
    ).all()
    for row in sessions:
        session = {key: _text(value) for key, value in zip(SESSION_KEYS, row[1:], strict=True)}
        messages = [
            {key: _text(value) for key, value in zip(MESSAGE_KEYS, m, strict=True)}
            for m in conn.execute(
                text(
                    f"SELECT {', '.join(MESSAGE_KEYS)} FROM messages"
                    " WHERE session_pk = :pk ORDER BY id"
                ),
                {"pk": row[0]},
            )
        ]
        yield SessionBatch(session, messages)


# ---------------------------------------------------------------- in


@contextmanager
def archive_writer(db_url: str) -> Iterator[BatchWriter | None]:
    """A writer of session batches into the archive at `db_url`, all in one transaction
    committed when the block ends (rolled back when it raises); None where the archive
    cannot be written yet (a PostgreSQL server: plug pgstore's batch writer in here)."""
    from subrosa.paths import sqlite_path

    if sqlite_path(db_url) is None:
        yield None
        return
    from subrosa.archive.connection import archive_path, ingest_lock, open_archive
    from subrosa.archive.ingest import Ingester

    with open_archive(db_url) as conn, ingest_lock(archive_path(db_url)):
        ingester = Ingester(conn)
        try:
            yield lambda batch: _write_sqlite(ingester, batch)
        except BaseException:
            ingester.abort()
            raise
        ingester.commit()


def _write_sqlite(ingester: Any, batch: list[SessionBatch]) -> Written:
    ids = [b.session["session_id"] for b in batch]
    marks = ",".join("?" * len(ids))
    known = {
        row[0]
        for row in ingester.conn.execute(
            f"SELECT session_id FROM sessions WHERE session_id IN ({marks})", ids
        )
    }
    before = (ingester.report.new_messages, ingester.report.duplicate_messages)
    for session, messages in batch:
        info = SessionInfo(
            session["session_id"],
            session["cwd"],
            session["git_branch"],
            session["title"],
            session["summary"],
        )
        rows = [
            Message(
                m["uuid"],
                info.session_id,
                m["role"],
                m["timestamp"],
                m["text"],
                index_terms(m["text"]),
            )
            for m in messages
        ]
        by = (session.get("host"), session.get("username"))
        ingester.store_session(info, session["project"], rows, by)
    added = ingester.report.new_messages - before[0]
    present = ingester.report.duplicate_messages - before[1]
    return Written(len(set(ids) - known), added, present)
