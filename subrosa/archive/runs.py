"""Each archived message inside a run of its own session's ids, and of no other session's
(`message_runs`, migration 0009), checked and mended. Standard library only.

A search in a project holding few of the archive's messages asks the index only within
the project's runs (subrosa.archive.search.for_project), so a message outside every run
of its session would never be found there, and one inside another session's run would
be found in that session's project. Ingest and import keep the runs as they
store messages (the tests hold them to the derivation below); this module is for
`subrosa doctor`, which counts the messages misplaced so, and for `subrosa db upgrade`,
which derives the runs again when any is: a defect's or a hand-edited database's damage.
"""

from __future__ import annotations

from typing import Any

OUTSIDE = (
    "SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM message_runs r"
    " WHERE r.session_pk = m.session_pk AND r.lo <= m.id AND m.id <= r.hi)"
)

# Migration 0009's derivation: along a run, a message's place among all the messages
# minus its place among its session's is one number (gaps and islands).
DERIVE = (
    "INSERT INTO message_runs (session_pk, lo, hi) SELECT session_pk, min(id), max(id)"
    " FROM (SELECT session_pk, id, row_number() OVER (ORDER BY id) - row_number()"
    " OVER (PARTITION BY session_pk ORDER BY id) AS island FROM messages) AS numbered"
    " GROUP BY session_pk, island"
)


# The messages inside a run of another session: only runs that overlap another can
# hold one (each message inside its own session's run), and those are few, so only their
# ids are read (the runs in order of their first id, each against the farthest last id
# before it and the first id after it).
INSIDE_ANOTHER = (
    "SELECT count(*) FROM (SELECT session_pk, lo, hi, max(hi) OVER (ORDER BY lo, hi ROWS"
    " BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach, min(lo) OVER (ORDER BY lo, hi"
    " ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS onward FROM message_runs) AS r"
    " JOIN messages m ON m.id BETWEEN r.lo AND r.hi"
    " WHERE (r.lo <= r.reach OR r.hi >= r.onward) AND m.session_pk <> r.session_pk"
)


def outside_runs(conn: Any) -> int:
    """How many archived messages lie outside every run of their session, or inside a
    run of another session (a small project's search keeps what lies inside its runs
    without testing each message's project: subrosa.archive.search._walk_spans())."""
    outside = int(conn.execute(OUTSIDE).fetchone()[0])
    return outside + int(conn.execute(INSIDE_ANOTHER).fetchone()[0])


def derive_runs(conn: Any, server: bool) -> int:
    """Derive every session's runs again from the messages, in one transaction, when a
    message lies outside them; how many messages did. On a server the runs are locked
    meanwhile (ingests wait to extend theirs, then extend the new ones); on SQLite the
    caller holds the ingest lock."""
    outside = outside_runs(conn)
    if not outside:
        return 0
    if (
        server
        and not conn.execute("SELECT has_table_privilege('message_runs', 'DELETE')").fetchone()[0]
    ):
        from subrosa.errors import DatabaseError

        raise DatabaseError(
            f"{outside} archived message(s) lie outside their session's runs of ids (or"
            " inside another session's: a project's search may miss them); deriving the"
            " runs again deletes them first,"
            " which only the role that owns the tables may do: run `subrosa db upgrade` as"
            ' that role (docs/team.md, "Security").'
        )
    conn.execute("BEGIN" if server else "BEGIN IMMEDIATE")
    try:
        if server:
            conn.execute("LOCK TABLE message_runs IN EXCLUSIVE MODE")
        conn.execute("DELETE FROM message_runs")
        conn.execute(DERIVE)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return outside


def count_outside(db_url: str) -> int | None:
    """`subrosa doctor`: how many archived messages lie outside their session's runs (or
    inside another's); None where there is no archive to ask (no database file yet).
    Reads only."""
    from subrosa.archive.connection import open_archive
    from subrosa.paths import is_file, sqlite_path

    path = sqlite_path(db_url)
    if path is not None and not is_file(path):
        return None
    with open_archive(db_url) as conn:
        return outside_runs(conn)


def mend_runs(db_url: str) -> int:
    """`subrosa db upgrade`: the runs derived again where a message lies outside them
    (or inside another session's); how many messages did (0: nothing written)."""
    from subrosa.archive.connection import archive_lock, open_archive
    from subrosa.paths import is_file, sqlite_path
    from subrosa.pg import is_server

    path = sqlite_path(db_url)
    if path is not None and not is_file(path):
        return 0
    with archive_lock(db_url), open_archive(db_url) as conn:
        return derive_runs(conn, is_server(db_url))
