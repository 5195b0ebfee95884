"""The archived sessions, read back: `transcript list` and `transcript show`.

Both ingest the sessions that ended since the last ingest first (without waiting for
a running ingest), so what a person sees includes the session that just ended. The
text rendering is subrosa.archive.conversation's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, NamedTuple

from subrosa.archive.conversation import message_kind, session_label
from subrosa.archive.ingest import archive_ready, current_project
from subrosa.errors import InvalidInput, NotFound

LIST_KEYS = (
    "session_id",
    "project",
    "cwd",
    "git_branch",
    "title",
    "summary",
    "first_at",
    "last_at",
    "message_count",
    "host",
    "username",
)
DETAIL_KEYS = (
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


def list_sessions(
    db_url: str,
    *,
    all_projects: bool = False,
    project: str | None = None,
    by: str | None = None,
    limit: int = 50,
    tool_result_chars: int = 2000,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """The archived sessions of this project (or of the project named `project`, or of
    all), newest first; with `by`, only those the member `by` archived (a user name, or
    `user@host` as the listing shows it)."""
    with archive_ready(
        db_url, tool_result_chars, lock=False, reindex_progress=reindex_progress
    ) as conn:
        tests, params = [], []
        if not all_projects:
            tests.append("project = ?")
            params.append(project or current_project())
        if by is not None:
            # A member as the listing shows them (`bob@host`) is bob on that host.
            user, at, host = by.rpartition("@")
            if at and user and host:
                tests.append("(username = ? OR (username = ? AND host = ?))")
                params += [by, user, host]
            else:
                tests.append("username = ?")
                params.append(by)
        where = " WHERE " + " AND ".join(tests) if tests else ""
        rows = conn.execute(
            f"SELECT {', '.join(LIST_KEYS)} FROM sessions{where}"
            " ORDER BY last_at IS NULL, last_at DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
    return [_labelled(dict(zip(LIST_KEYS, row, strict=True))) for row in rows]


def _labelled(session: dict[str, Any]) -> dict[str, Any]:
    """`session` with its title and summary as they are shown (an older subrosa stored
    a fork's command caveat as its title: conversation.session_label)."""
    session["title"] = session_label(session["title"])
    session["summary"] = session_label(session["summary"])
    return session


class Shown(NamedTuple):
    """One archived session: its id, what is known about it (DETAIL_KEYS and
    message_count), and its messages in time order: those stored under it and those it
    shares with another session (a fork and the session it was forked from)."""

    session_id: str
    details: dict[str, Any]
    messages: list[dict[str, Any]]


def show_session(
    db_url: str,
    session: str,
    *,
    around: str | None = None,
    context: int = 5,
    tool_result_chars: int = 2000,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> Shown:
    """The session whose id is `session` or starts with it; with `around` (a message's
    number or uuid) only that message and `context` messages either side."""
    with archive_ready(
        db_url, tool_result_chars, lock=False, reindex_progress=reindex_progress
    ) as conn:
        return session_shown(conn, session, around=around, context=context)


def session_shown(
    conn: sqlite3.Connection, session: str, *, around: str | None = None, context: int = 5
) -> Shown:
    """show_session() on an archive already made ready (`conn`)."""
    pk, session_id = _find_session(conn, session)
    rows = conn.execute(
        # Its own messages and those it shares with a session archived before it (a
        # fork's copied history, or its parent's: ingest._share), each shared one
        # at the place its own id would have had: the order ingest read them in,
        # which in_time_order() makes the conversation's.
        "SELECT id, uuid, role, timestamp, text FROM ("
        "SELECT id, uuid, role, timestamp, text, id AS place FROM messages"
        " WHERE session_pk = ? UNION ALL"
        " SELECT m.id, m.uuid, m.role, m.timestamp, m.text, x.position"
        " FROM shared_messages x JOIN messages m ON m.id = x.message_id"
        " WHERE x.session_pk = ?) AS held"
        " ORDER BY place, id",
        [pk, pk],
    ).fetchall()
    rows = in_time_order(rows)
    info = conn.execute(
        f"SELECT {', '.join(DETAIL_KEYS)}, message_count FROM sessions WHERE id = ?", [pk]
    ).fetchone()
    if around is not None:
        at = next((i for i, r in enumerate(rows) if str(r[0]) == around or r[1] == around), None)
        if at is None:
            raise NotFound(
                f"{around}: no message of session {session_id} has this number or uuid "
                "(`subrosa transcript show SESSION` numbers them; `search --json` gives uuids)."
            )
        rows = rows[max(0, at - context) : at + context + 1]
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
    details = _labelled({**dict(zip(DETAIL_KEYS, info, strict=False)), "message_count": info[-1]})
    return Shown(session_id, details, messages)


def in_time_order(rows: list[Any]) -> list[Any]:
    """A session's messages (`rows`, their time fourth) from the order ingest read them
    in to the conversation's: by time, as a session's lines can arrive from several
    files (its subagents'); within one time, as read. A message with no time comes
    where its transcript has it: after the message read before it (with that one's
    time), or first when none before it has one."""
    keyed = []
    last: str | None = None
    for place, row in enumerate(rows):
        if row[3] is not None:
            last = str(row[3])
        keyed.append((last is not None, last or "", place, row))
    keyed.sort(key=lambda item: item[:3])
    return [item[3] for item in keyed]


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
        raise NotFound(
            f"{session}: no archived session has this id (`subrosa transcript list` shows "
            "them; `subrosa ingest` archives the newest transcripts)."
        )
    if len(rows) > 1:
        raise InvalidInput(
            f"{session}: more than one archived session starts with this; give more of the id."
        )
    return int(rows[0][0]), str(rows[0][1])


# ---------------------------------------------------------------- one message


def message_uuids(
    db_url: str, message_ids: list[int], conn: sqlite3.Connection | None = None
) -> dict[int, str]:
    """The uuid of each archived message numbered in `message_ids` (a search result
    names a message by number; an agent's tools name it by its stable uuid). Reads
    the archive as it is (on `conn` when given): the search that found the numbers
    made it ready."""
    from subrosa.archive.connection import archive_path, connect

    if not message_ids:
        return {}
    marks = ",".join("?" * len(message_ids))
    sql = f"SELECT id, uuid FROM messages WHERE id IN ({marks})"
    from subrosa.pg import is_server

    if conn is not None:
        rows = conn.execute(sql, message_ids).fetchall()
    elif is_server(db_url):
        from subrosa.archive.pgstore import open_server

        with open_server(db_url) as server:
            rows = server.execute(sql, message_ids).fetchall()
    else:
        own = connect(archive_path(db_url))
        try:
            rows = own.execute(sql, message_ids).fetchall()
        finally:
            own.close()
    return {int(row[0]): str(row[1]) for row in rows}


def show_message(
    db_url: str, message: str, *, context: int = 0, tool_result_chars: int = 2000
) -> Shown:
    """The archived message `message` (its uuid, or its number as `#N` or `N`) and
    `context` messages either side of it in its session (show_session's view)."""
    with archive_ready(db_url, tool_result_chars, lock=False) as conn:
        return message_shown(conn, message, context=context)


def message_shown(conn: sqlite3.Connection, message: str, *, context: int = 0) -> Shown:
    """show_message() on an archive already made ready (`conn`)."""
    number = message.removeprefix("#")
    row = conn.execute(
        "SELECT s.session_id, m.id FROM messages m JOIN sessions s ON s.id = m.session_pk"
        " WHERE m.uuid = ?",
        [message],
    ).fetchone()
    if row is None and number.isdigit():
        row = conn.execute(
            "SELECT s.session_id, m.id FROM messages m"
            " JOIN sessions s ON s.id = m.session_pk WHERE m.id = ?",
            [int(number)],
        ).fetchone()
    if row is None:
        raise NotFound(f"{message}: no archived message has this id.")
    return session_shown(conn, str(row[0]), around=str(row[1]), context=context)
