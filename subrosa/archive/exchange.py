"""The archive's sessions and messages as plain records, out of a database and back in
(`subrosa export` / `subrosa import`, composed by subrosa.transfer).

Out: read with SQLAlchemy Core on either engine (an export is rare and not hot; one
reader serves both). In: on SQLite through ingest's own write path
(Ingester.store_session), so imported messages get their ids, their terms (computed
again here by subrosa.terms: what the target's index expects) and their rows in
`messages_fts` exactly as ingested ones do, and a message or a session already there
(by uuid, by session id) is left alone: importing twice adds nothing.

`archive_writer` writes through ingest's Ingester (subrosa.archive.pgstore's on a
server): one function taking a batch of sessions with their messages, returning what
it added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple

from subrosa.archive.transcripts import Message, SessionInfo, normalize_time
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
    """One session (SESSION_KEYS) and messages of it (MESSAGE_KEYS each), in the order
    to store them. A session's messages may come in several runs, in several batches
    (the file keeps the source's order across sessions); storing a session again is
    a no-op upsert."""

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


def count_messages(conn: Any, projects: list[str] | None) -> int:
    """How many messages the sessions of `projects` (or all) hold."""
    from sqlalchemy import text

    where, params = _projects_filter(projects)
    where = where.replace("project", "s.project")
    own = f"SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_pk{where}"
    shared = f"SELECT count(*) FROM shared_messages m JOIN sessions s ON s.id = m.session_pk{where}"
    return int(conn.execute(text(own), params).scalar_one()) + int(
        conn.execute(text(shared), params).scalar_one()
    )


def _projects_filter(projects: list[str] | None) -> tuple[str, dict[str, Any]]:
    if projects is None:
        return "", {}
    marks = ", ".join(f":p{i}" for i in range(len(projects)))
    return f" WHERE project IN ({marks})", {f"p{i}": p for i, p in enumerate(projects)}


def read_sessions(conn: Any, projects: list[str] | None) -> list[dict[str, Any]]:
    """Every session of `projects` (or all), SESSION_KEYS each, in the order archived."""
    from sqlalchemy import text

    where, params = _projects_filter(projects)
    rows = conn.execute(
        text(f"SELECT {', '.join(SESSION_KEYS)} FROM sessions{where} ORDER BY id"), params
    )
    return [{k: _text(v) for k, v in zip(SESSION_KEYS, row, strict=True)} for row in rows]


def read_messages(conn: Any, projects: list[str] | None) -> Iterator[dict[str, Any]]:
    """Every message of the sessions of `projects` (or all), its session's id and
    MESSAGE_KEYS, in the order archived (search's recency order: an import writes them
    in this order, so the target ranks ties as the source does). A message a session
    shares with another (a fork's copied history: shared_messages) comes under each
    session that holds it, at its place: the import stores it once, under the first,
    and records it as shared by the others, as ingest does. Streamed."""
    from sqlalchemy import text

    where, params = _projects_filter(projects)
    where = where.replace("project", "s.project")
    columns = ", ".join(f"m.{key}" for key in MESSAGE_KEYS)
    rows = conn.execution_options(stream_results=True, yield_per=2000).execute(
        text(
            f"SELECT session_id, {', '.join(MESSAGE_KEYS)} FROM ("
            f"SELECT s.session_id, {columns}, m.id AS place, m.id FROM messages m"
            f" JOIN sessions s ON s.id = m.session_pk{where} UNION ALL"
            f" SELECT s.session_id, {columns}, x.position AS place, m.id FROM shared_messages x"
            " JOIN messages m ON m.id = x.message_id"
            f" JOIN sessions s ON s.id = x.session_pk{where}) AS held ORDER BY place, id"
        ),
        params,
    )
    for row in rows:
        yield {
            "session_id": row[0],
            **{k: _text(v) for k, v in zip(MESSAGE_KEYS, row[1:], strict=True)},
        }


# ---------------------------------------------------------------- in


@contextmanager
def archive_writer(db_url: str) -> Iterator[BatchWriter]:
    """A writer of session batches into the archive at `db_url` (an SQLite file or a
    PostgreSQL server), all in one transaction committed when the block ends (rolled
    back when it raises), through ingest's own write path."""
    from subrosa.archive.connection import archive_lock, open_archive
    from subrosa.archive.ingest import new_ingester

    with open_archive(db_url) as conn, archive_lock(db_url):
        ingester = new_ingester(conn)
        try:
            yield lambda batch: _write(ingester, batch)
        except BaseException:
            ingester.abort()
            raise
        ingester.commit()


def _stored_time(value: str | None) -> str | None:
    """A message's time as ingest stores it ("YYYY-MM-DD HH:MM:SS"), whatever the file
    says (the common case, already so, without parsing it)."""
    if value is not None and len(value) == 19 and value[10] == " ":
        return value
    return normalize_time(value)


def _present(conn: Any, sql: str, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(keys), 10_000):  # under SQLite's 32,766 variables
        chunk = keys[start : start + 10_000]
        marks = ",".join("?" * len(chunk))
        found.update(row[0] for row in conn.execute(sql.format(marks=marks), chunk))
    return found


def _write(ingester: Any, batch: list[SessionBatch]) -> Written:
    key = ingester.stored_key
    ids = list(dict.fromkeys(key(b.session["session_id"]) for b in batch))
    known = _present(
        ingester.conn, "SELECT session_id FROM sessions WHERE session_id IN ({marks})", ids
    )
    # Messages the target holds already get no terms (most of the cost of importing a
    # file a second time): ingest leaves them out by their uuid, and records them as
    # shared when another session holds them (a fork's history).
    uuids = [key(m["uuid"]) for b in batch for m in b.messages]
    held = _present(ingester.conn, "SELECT uuid FROM messages WHERE uuid IN ({marks})", uuids)
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
                _stored_time(m["timestamp"]),
                m["text"],
                None if key(m["uuid"]) in held else index_terms(m["text"]),
            )
            for m in messages
        ]
        by = (session.get("host"), session.get("username"))
        ingester.store_session(info, session["project"], rows, by)
    added = ingester.report.new_messages - before[0]
    present = ingester.report.duplicate_messages - before[1]
    return Written(len(set(ids) - known), added, present)
