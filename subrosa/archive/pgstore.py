"""The transcript archive on a PostgreSQL server: opened, and written by ingest.

Reading and parsing are subrosa.archive.ingest's (offsets per file, batches of lines,
redaction, terms); only the writes differ, and they are made for many writers: every
member's background ingest may write the same project at once, and two of them may
read the same transcript (a session resumed on another machine repeats its history).
  - A batch of lines is one transaction, committed at once: the messages and the
    file's offset together, as on SQLite, but short, so that writers wait for each
    other (on a uuid both insert) for one batch at most.
  - Messages go in by COPY into a temporary table, then one
    `INSERT … SELECT … ON CONFLICT (uuid) DO NOTHING RETURNING`: a message another
    writer stored first is left out by the unique index, and each session's
    message_count grows by what went in, so nothing is lost or counted twice.
  - Ids: each batch takes a block of consecutive ids from the table's sequence (a
    moment under an advisory lock), so one session's messages stay in order without
    another writer's in between (search reads a message's reply as its next ids).
  - Sessions are upserted in session id order, uuids inserted in uuid order, so two
    writers lock rows in one order; a deadlock the server still sees (rows locked by
    an earlier batch of the same transaction cannot happen: one batch, one
    transaction) is retried.
  - Each id range has its own GIN index besides the table's (subrosa.archive.pgsearch,
    RANGE): after a commit that brought the ids within AHEAD of a range without one,
    the writer builds it, while it is still empty (a moment), under an advisory lock
    and a lock timeout: another writer's batch holds it up a moment at most, and a
    writer that cannot have it now leaves it to the next commit (search uses the range
    indexes only when every range up to the newest id has one).
  - The postings of each complete chunk of ids (subrosa.archive.pgpostings): after a
    commit whose ids crossed into a new chunk, and once more at the end of the run (an
    import's too), the writer seals every complete chunk not sealed, each in its own
    transaction; one another writer is writing or sealing is left to a later run.
No other whole-project step needs a lock: there is no FTS index to tune or merge (the
server keeps its GIN indexes in step) and no re-index (migration 0005 made them).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from subrosa.archive.ingest import Ingester, _head_hash_of, _load_stats, _Plan
from subrosa.archive.pgpostings import CHUNK, coverage, seal_ready
from subrosa.archive.pgsearch import (
    RANGE,
    RANGES_AHEAD,
    index_ranges,
    newest_and_ranges,
    range_index,
    reach,
)
from subrosa.archive.transcripts import Message, Parsed, SessionInfo, queue_state
from subrosa.errors import ReadOnlyRole
from subrosa.pg import Connection, connect, schema_revision
from subrosa.schema import SCHEMA_HEAD

# Any number: it only has to differ from subrosa.db's migration lock.
ID_LOCK_KEY = 0x5B_A1C4_1D5
RANGE_LOCK_KEY = 0x5B_A1C4_1D6
# A range's index is built once the ids come this close to it (a quarter of a range:
# more than one ingest of a day's sessions brings).
AHEAD = RANGE // 4
RANGE_LOCK_TIMEOUT = "2s"
RETRIES = 5
# The temporary table a batch's messages are copied into, less what becomes of its rows
# at the commit (DELETE ROWS: kept for the connection's next batch; DROP: behind a pooler).
_MESSAGES_IN = "messages_in (LIKE messages INCLUDING DEFAULTS) ON COMMIT"
_COLUMNS = "id, session_pk, uuid, role, timestamp, text, terms"


def _text(value: str | None) -> str | None:
    """PostgreSQL's text cannot hold NUL: it becomes U+FFFD (as a leaf body's does)."""
    return value.replace("\x00", "\ufffd") if value and "\x00" in value else value


@contextmanager
def open_server(
    db_url: str, progress: Callable[[int, int], None] | None = None
) -> Iterator[sqlite3.Connection]:
    """The archive on the server at `db_url` (server_connection()), closed after."""
    conn = server_connection(db_url, progress)
    try:
        yield conn
    finally:
        conn.close()


def server_connection(
    db_url: str, progress: Callable[[int, int], None] | None = None
) -> sqlite3.Connection:
    """The archive on the server at `db_url`, migrated first when due (the only time
    SQLAlchemy and Alembic are loaded; `progress` as subrosa.db.upgrade's). Typed as
    sqlite3's connection: subrosa.pg's offers the same calls, and the archive's modules
    ask which one they hold where the SQL differs. The caller closes it."""
    conn = connect(db_url)
    try:
        if _revision(conn) != SCHEMA_HEAD:
            from subrosa.db import open_database

            open_database(db_url, progress)
    except BaseException:
        conn.close()
        raise
    return cast(sqlite3.Connection, conn)


def _revision(conn: Connection) -> str | None:
    return schema_revision(conn)


def _check_writable(conn: Connection) -> bool:
    """Raise ReadOnlyRole unless the connection's role may write the archive: insert
    messages, and make the temporary table their COPY fills (docs/team.md, roles).
    Whether it may also record the messages a session shares with another (migration
    0010's table, which a member may write once the owner granted it): a role that may
    not archives as before, each message under the session archived first."""
    user, may_insert, may_temp, may_share = conn.execute(
        "SELECT current_user, has_table_privilege('messages', 'INSERT'),"
        " has_database_privilege(current_database(), 'TEMPORARY'),"
        " has_table_privilege('shared_messages', 'INSERT')"
    ).fetchone()
    if not (may_insert and may_temp):
        lacks = " and ".join(
            what
            for what, has in (
                ("INSERT on the table messages", may_insert),
                ("TEMPORARY on the database", may_temp),
            )
            if not has
        )
        raise ReadOnlyRole(
            f"the database role {user} may read the archive but not write it (it lacks"
            f' {lacks}): archiving needs a member\'s role (docs/team.md, "Security").'
        )
    return bool(may_share)


def build_ranges(conn: Any, ranges: set[int], last: int) -> None:
    """The index of each id range up to the `last`-th not in `ranges` (the ones built),
    built, each in a transaction of its own (see the module's docstring), and added to
    `ranges`. Stops at the first the server will not build now: its lock not had within
    RANGE_LOCK_TIMEOUT (left to a later commit), or a role that may not build indexes
    (a member's: the owner's `db upgrade` builds them ahead)."""
    errors = conn.errors
    for k in range(last + 1):
        if k in ranges:
            continue
        conn.execute("BEGIN")
        try:
            conn.execute(f"SET LOCAL lock_timeout = '{RANGE_LOCK_TIMEOUT}'")
            conn.execute("SELECT pg_advisory_xact_lock(?)", (RANGE_LOCK_KEY,))
            conn.execute(range_index(k)[1])
            conn.execute("COMMIT")
        except (errors.LockNotAvailable, errors.InsufficientPrivilege):
            conn.execute("ROLLBACK")
            return
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        ranges.add(k)


def _if_current(db_url: str, read: Any) -> Any:
    """What `read(conn)` answers on the server, or None when the schema is not current
    (the database's own check says so). Reads only: `subrosa doctor` asks these."""
    conn = connect(db_url)
    try:
        return None if _revision(conn) != SCHEMA_HEAD else read(conn)
    finally:
        conn.close()


def range_coverage(db_url: str) -> tuple[int, int] | None:
    """The archive's newest message id and the first id past the ranges whose indexes
    are built from the first on (search reads them while they reach the newest id);
    None when the schema is not current."""

    def read(conn: Any) -> tuple[int, int]:
        newest, ranges = newest_and_ranges(conn)
        return newest, reach(ranges)

    found: tuple[int, int] | None = _if_current(db_url, read)
    return found


def postings_coverage(db_url: str) -> tuple[int, int] | None:
    """How many chunks of message ids are complete and how many of those are sealed
    (subrosa.archive.pgpostings); None when the schema is not current."""
    found: tuple[int, int] | None = _if_current(db_url, coverage)
    return found


def ranges_ahead(db_url: str) -> tuple[int, int]:
    """`subrosa db upgrade` on a server: the index of each id range the archive's ids
    reach and of RANGES_AHEAD ranges after them, built where missing (when the role may:
    the owner's), and every complete chunk of ids sealed (any role may: the server's
    function runs as the tables' owner); how many ranges were built and chunks sealed.
    One connection for both (each one a pooler hands out is one more to tell apart)."""
    with open_server(db_url) as conn:
        newest, ranges = newest_and_ranges(conn)
        before = len(ranges)
        build_ranges(conn, ranges, newest // RANGE + RANGES_AHEAD)
        return len(ranges) - before, seal_ready(conn)


class PgIngester(Ingester):
    """subrosa.archive.ingest's Ingester, writing to a PostgreSQL server."""

    conn: Any  # a subrosa.pg.Connection

    @staticmethod
    def stored_key(value: str) -> str:
        """A key as the server stores it: NUL as U+FFFD (a server refuses NUL even in a
        query's parameter, so a key is looked up as it was written)."""
        return value.replace("\x00", "\ufffd")

    def _tune_connection(self) -> None:
        # A commit returns before its WAL reaches the disk (docs/team.md, "Writes"): a
        # server crash may lose the last batches, their files' offsets with them, and
        # the next ingest reads those lines again. Nothing else waits for an fsync.
        # Behind a connection pooler each transaction may run on another server
        # connection: the setting and the temporary table are the transaction's own
        # (_begin()), else they would be missing from the next and stay for other clients.
        self._pooled = bool(getattr(self.conn, "pooled", False))
        if not self._pooled:
            self.conn.execute("SET synchronous_commit = off")
        self._may_share = _check_writable(self.conn)
        if not self._pooled:
            self.conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_MESSAGES_IN} DELETE ROWS")
        self._sequence = str(
            self.conn.execute("SELECT pg_get_serial_sequence('messages', 'id')").fetchone()[0]
        )
        self._counts: Counter[str] = Counter()
        self._ranges = index_ranges(self.conn)
        self._last_id = 0
        # The chunk of ids (pgpostings.CHUNK) this writer's newest id was in when it last
        # sealed, or when it took its first ids: a commit past it seals (_seal()).
        self._sealed_at = -1

    def _store_batch(self, plan: _Plan, parsed: Parsed, offset: int) -> None:
        """One batch, one transaction, committed here; retried after a deadlock."""
        errors = self.conn.errors
        for attempt in range(RETRIES):
            self._counts.clear()
            self._begin()
            try:
                self._store(plan.source, parsed)
                self._save_state(plan, offset, queue_state(parsed))
                self.conn.execute("COMMIT")
            except (errors.DeadlockDetected, errors.SerializationFailure):
                self._rollback()
                if attempt == RETRIES - 1:
                    raise
                continue
            except BaseException:
                self._rollback()
                raise
            self._in_transaction = False
            self.report.new_messages += self._counts["new"]
            self.report.duplicate_messages += self._counts["duplicate"]
            self._ranges_ahead()
            if self._last_id // CHUNK > self._sealed_at:
                self._seal()
            return

    def _begin(self) -> None:
        if not self._in_transaction:
            if self._pooled:  # in the transaction's one round trip (_tune_connection())
                self.conn._simple(
                    "BEGIN; SET LOCAL synchronous_commit = off;"
                    f" CREATE TEMPORARY TABLE {_MESSAGES_IN} DROP"
                )
            else:
                self.conn.execute("BEGIN")
            self._in_transaction = True

    def _rollback(self) -> None:
        self.conn.execute("ROLLBACK")
        self._in_transaction = False
        self._session_pks.clear()  # a session row made in the transaction is gone
        # And the sessions it filed under their project's key (_file_older_keys): asked
        # again by the retry.
        self._projects.clear()
        self._filed.clear()
        self._stats = _load_stats(self.conn)

    def commit(self) -> None:
        if self._in_transaction:
            self.conn.execute("COMMIT")
            self._in_transaction = False
            self._ranges_ahead()
        if self._last_id:
            self._seal()
        self._uncommitted = 0

    def _seal(self) -> None:
        """Every complete chunk of ids not sealed yet, sealed (pgpostings.seal_ready():
        each in its own transaction, one being written or sealed elsewhere left to a
        later run). Called after a commit whose ids crossed into a new chunk, and by
        commit() (the end of an ingest or an import, and every COMMIT_BYTES read): a
        run of a few messages (a hook's) asks the server once, at its end."""
        seal_ready(self.conn)
        self._sealed_at = self._last_id // CHUNK

    def _ranges_ahead(self) -> None:
        """The index of each id range up to AHEAD past the newest id this writer took,
        built where missing (build_ranges())."""
        if self._last_id:
            build_ranges(self.conn, self._ranges, (self._last_id + AHEAD) // RANGE)

    def abort(self) -> None:
        if self._in_transaction:
            self._rollback()
        self._uncommitted = 0

    def _save_state(self, plan: _Plan, offset: int, queue_state: str | None) -> None:
        key, project, stat = plan.source.key, plan.source.project, plan.stat
        head = _head_hash_of(key, offset)
        self.conn.execute(
            'INSERT INTO ingested_files(path, project, inode, size, mtime_ns, "offset",'
            " head_hash, queue_state, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
            " (now() AT TIME ZONE 'utc')::timestamp(0))"
            " ON CONFLICT (path) DO UPDATE SET project = excluded.project,"
            " inode = excluded.inode, size = excluded.size, mtime_ns = excluded.mtime_ns,"
            ' "offset" = excluded."offset", head_hash = excluded.head_hash,'
            " queue_state = excluded.queue_state, updated_at = excluded.updated_at",
            (key, project, stat.st_ino, stat.st_size, stat.st_mtime_ns, offset, head, queue_state),
        )
        self._stats[key] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _store(self, source: Any, parsed: Parsed) -> None:
        """A batch's sessions upserted (in id order) and its messages inserted at once."""
        self.report.skipped.update(parsed.skipped)
        self.report.repaired.update(parsed.repaired)
        by_session: dict[str, list[Message]] = {}
        for message in parsed.messages:
            by_session.setdefault(message.session_id, []).append(message)
        pks: dict[str, int] = {}
        for session_id in sorted(parsed.sessions.keys() | by_session.keys()):
            info = parsed.sessions.get(session_id) or SessionInfo(session_id)
            project = self._project_of_session(info, source.project)
            pks[session_id] = self._upsert_session(info, project)
            self.report.sessions.add(session_id)
        if parsed.messages:
            self._insert_all(parsed.messages, pks)

    def _upsert_session(self, info: SessionInfo, project: str) -> int:
        # As on SQLite: the project is settled by the first batch that knows the folder.
        row = self.conn.execute(
            "INSERT INTO sessions(session_id, project, cwd, git_branch, title, summary,"
            " message_count, host, username) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET"
            " project = CASE WHEN sessions.cwd IS NULL AND excluded.cwd IS NOT NULL"
            " THEN excluded.project ELSE sessions.project END,"
            " cwd = coalesce(excluded.cwd, sessions.cwd),"
            " git_branch = coalesce(excluded.git_branch, sessions.git_branch),"
            " title = coalesce(excluded.title, sessions.title),"
            " summary = coalesce(excluded.summary, sessions.summary)"
            " RETURNING id",
            (
                _text(info.session_id),
                _text(project),
                _text(info.cwd),
                _text(info.git_branch),
                _text(info.title),
                _text(info.summary),
                _text(self.ingested_by[0]),
                _text(self.ingested_by[1]),
            ),
        ).fetchone()
        return int(row[0])

    def _insert_messages(self, pk: int, messages: list[Message]) -> None:
        """One session's messages inside the open transaction (Ingester.store_session,
        the way `subrosa import` writes), counted at once. The transaction goes on
        (import commits once, at the file's end), so messages_in is emptied here: left
        to the commit, every session's INSERT would read all the sessions before it
        again (an import of 7,792 messages in 66 sessions: 30 s instead of ~1)."""
        self._counts.clear()
        self._insert_all(messages, {m.session_id: pk for m in messages})
        self.conn.execute("DELETE FROM messages_in")
        self.report.new_messages += self._counts["new"]
        self.report.duplicate_messages += self._counts["duplicate"]

    def _id_block(self, count: int) -> int:
        """The first of `count` consecutive ids no other writer will take: the
        sequence moved on by `count` under an advisory lock, taken and let go in the
        same statement (one round trip; the CTEs run in the order they depend on each
        other)."""
        row = self.conn.execute(
            "WITH locked AS MATERIALIZED (SELECT pg_advisory_lock(?)),"
            " block AS MATERIALIZED (SELECT setval(?::regclass, nextval(?::regclass) + ?)"
            " AS last FROM locked)"
            " SELECT last, pg_advisory_unlock(?) FROM block",
            (ID_LOCK_KEY, self._sequence, self._sequence, count - 1, ID_LOCK_KEY),
        ).fetchone()
        first = int(row[0]) - count + 1
        if not self._last_id:  # the chunk it starts in is no crossing
            self._sealed_at = first // CHUNK
        self._last_id = max(self._last_id, int(row[0]))
        return first

    def _add_runs(self, stored: list[tuple[int, int]]) -> None:
        """message_runs for the (id, session) pairs a batch stored, in id order: a run
        ends where another session's message comes (ids between that no message took
        belong to none). As subrosa.archive.ingest does (_write_runs), in one statement: a
        session's run that ends right before a new one grows, else the run is added."""
        runs: list[list[int]] = []  # [session_pk, lo, hi]
        for rowid, pk in stored:
            if runs and runs[-1][0] == pk:
                runs[-1][2] = rowid
            else:
                runs.append([pk, rowid, rowid])
        if not runs:
            return
        self.conn.execute(
            "WITH new (session_pk, lo, hi) AS (SELECT * FROM unnest(?::int[], ?::int[], ?::int[])),"
            " grown AS (UPDATE message_runs r SET hi = n.hi FROM new n"
            " WHERE r.session_pk = n.session_pk AND r.hi = n.lo - 1 RETURNING n.session_pk, n.lo)"
            " INSERT INTO message_runs (session_pk, lo, hi) SELECT * FROM new n WHERE NOT EXISTS"
            " (SELECT 1 FROM grown g WHERE g.session_pk = n.session_pk AND g.lo = n.lo)",
            ([r[0] for r in runs], [r[1] for r in runs], [r[2] for r in runs]),
        )

    def _insert_all(self, messages: list[Message], pks: dict[str, int]) -> None:
        first = self._id_block(len(messages))
        rows = [
            (
                first + i,
                pks[m.session_id],
                _text(m.uuid),
                m.role,
                m.timestamp,
                _text(m.text),
                m.terms,
            )
            for i, m in enumerate(messages)
        ]
        with self.conn.raw.cursor() as cursor:
            with cursor.copy(f"COPY messages_in ({_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            # In uuid order, the first of repeated uuids first: two writers lock the
            # same uuids in the same order, and a batch keeps a message's first copy.
            cursor.execute(
                f"INSERT INTO messages ({_COLUMNS}) SELECT {_COLUMNS} FROM messages_in"
                " ORDER BY uuid, id ON CONFLICT (uuid) DO NOTHING RETURNING session_pk, id"
            )
            stored = sorted((int(r[1]), int(r[0])) for r in cursor.fetchall())
            added = Counter(pk for _, pk in stored)
            # messages_in empties itself at the commit (ON COMMIT DELETE ROWS); a
            # TRUNCATE here would give it a new file and write the catalog each batch.
            shared = self._share_left_out(cursor) if len(stored) < len(rows) else Counter()
        self._add_runs(stored)
        self._counts["new"] += sum(added.values())
        self._counts["duplicate"] += len(messages) - sum(added.values())
        by_pk: dict[int, list[str]] = {}
        for message in messages:
            times = by_pk.setdefault(pks[message.session_id], [])
            if message.timestamp:
                times.append(message.timestamp)
        for pk in sorted(by_pk):
            times = by_pk[pk]
            self.conn.execute(
                "UPDATE sessions SET message_count = message_count + ?,"
                " first_at = least(first_at, ?::timestamp),"
                " last_at = greatest(last_at, ?::timestamp) WHERE id = ?",
                (
                    added[pk] + shared[pk],
                    min(times) if times else None,
                    max(times) if times else None,
                    pk,
                ),
            )

    def _share_left_out(self, cursor: Any) -> Counter[int]:
        """The rows of messages_in left out (their uuid stored already) that are stored
        under another session, recorded as shared with the row's session at the place of
        the id the row was handed (ingest.Ingester._share says why); how many each
        session gained. In (session, message) order, as two writers lock them."""
        if not self._may_share:
            return Counter()
        cursor.execute(
            "INSERT INTO shared_messages (session_pk, message_id, position)"
            " SELECT i.session_pk, m.id, min(i.id) FROM messages_in i"
            " JOIN messages m ON m.uuid = i.uuid WHERE m.session_pk <> i.session_pk"
            " GROUP BY i.session_pk, m.id ORDER BY i.session_pk, m.id"
            " ON CONFLICT DO NOTHING RETURNING session_pk"
        )
        return Counter(int(r[0]) for r in cursor.fetchall())
