"""The archive's connection kept by a long-lived process: the MCP server's, one per
Claude Code session, answering many tool calls.

archive_ready() (subrosa.archive.ingest) opens the archive for each call and closes it.
On a PostgreSQL server that costs each call a new backend: its connect (4-5 ms) and
cold catalog caches (a rare word's search 29-42 ms as a connection's first, 17-19 ms
as its second, at 1 GB); on SQLite a cold page cache and a second connection that
reads the schema's revision. KeptArchive opens the archive at the first call that
needs it and keeps it; each call still gets what must stay per call:

  - the sessions that ended since drained first (drain_pending, under the ingest lock
    when the call asks, as archive_ready does); listing the queue is a directory read;
  - the schema still right. On SQLite every call asks the kept connection (two small
    queries in process, microseconds). On a server a check is a round trip, so it is
    asked at most once per RECHECK_S, and at once when a statement fails on the kept
    connection: then it is closed, the archive opened anew (migrated when due, as
    archive_ready does) and the call run again, once;
  - a connection that can no longer answer replaced before it is used: a server's
    socket that has something to read while idle (subrosa.pg.idle_ended: the backend
    terminated, the server restarted, a pooler closed it, TCP's keepalives gave up on
    a dead path), one idle for longer than IDLE_S (a firewall or NAT may drop an idle
    connection without a word), an SQLite file replaced (`subrosa rebuild`: another
    inode) or gone. A path that died since the last call, not yet found by the
    keepalives: the statement fails within the TCP user timeout
    (subrosa.pg.TCP_DEFAULTS: 30 s), and the call runs again on a new connection.

A call that fails on a connection opened for it raises as archive_ready's would (a
server that cannot be reached is one sentence, its password hidden). One call at a
time uses the connection (a lock; the MCP server runs its tools on one worker thread
anyway). Standard library only on SQLite (on a server, subrosa.pg's psycopg).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# A server's schema revision is asked again after this long (a round trip; see above).
RECHECK_S = 30.0
# A server's connection idle for longer than this is replaced before it is used: below
# the idle timeouts of common middleboxes (Azure's load balancer 4 min, AWS's NAT
# gateway 350 s), which drop a connection without telling either end.
IDLE_S = 180.0


class KeptArchive:
    """The archive at `db_url`, opened once and kept (see the module's docstring)."""

    def __init__(self, db_url: str, tool_result_chars: int = 2000) -> None:
        from subrosa.pg import is_server

        self.db_url = db_url
        self.tool_result_chars = tool_result_chars
        self.server = is_server(db_url)
        self.conn: Any = None
        self.inode: int | None = None  # SQLite: the file's, when it was opened
        self.checked = 0.0  # when the schema's revision was last known right
        self.used = 0.0  # when a call last used the connection
        self.opened = 0  # connections opened so far (the tests count them)
        self.lock = threading.Lock()

    def run(self, use: Callable[[sqlite3.Connection], T], *, lock: bool = True) -> T:
        """`use(conn)` on the kept archive, made ready as archive_ready(lock=`lock`) makes
        it; on a connection kept from an earlier call that fails, once more on a new one."""
        with self.lock:
            kept = self._current()
            try:
                return self._use(use, lock)
            except Exception as exc:
                broken = self._after_failure(exc)
                if not (kept and broken):
                    raise
            self.close()
            return self._use(use, lock)

    def close(self) -> None:
        """Close the kept connection (a new one is opened when next needed)."""
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a dead connection may fail to close
                conn.close()

    # ---------------------------------------------------------------- the steps

    def _use(self, use: Callable[[sqlite3.Connection], T], lock: bool) -> T:
        from subrosa.archive import pending

        conn = self._connection()
        if pending.list_pending():
            from subrosa.archive.ingest import drain

            drain(conn, self.db_url, self.tool_result_chars, lock=lock)
        result = use(conn)
        self.used = time.monotonic()
        return result

    def _current(self) -> bool:
        """Whether a connection is kept that may serve this call (one that cannot is
        closed here); the revision asked again when due."""
        if self.conn is None:
            return False
        now = time.monotonic()
        if self.server:
            from subrosa.pg import idle_ended

            if now - self.used > IDLE_S or idle_ended(self.conn.raw):
                self.close()
                return False
            if now - self.checked > RECHECK_S:
                if not self._revision_right():
                    self.close()
                    return False
                self.checked = now
            return True
        if self._inode() != self.inode or not self._revision_right():
            self.close()
            return False
        return True

    def _connection(self) -> Any:
        if self.conn is None:
            from subrosa.archive.connection import archive_connection

            self.conn = archive_connection(self.db_url)
            self.inode = None if self.server else self._inode()
            self.opened += 1
            self.checked = self.used = time.monotonic()
        return self.conn

    def _inode(self) -> int | None:
        import os

        from subrosa.archive.connection import archive_path

        try:
            return os.stat(archive_path(self.db_url)).st_ino
        except OSError:
            return None

    def _revision_right(self) -> bool:
        """Whether the kept connection's database is at this subrosa's schema and (on
        SQLite) fully indexed; False too when asking fails."""
        conn = self.conn
        try:
            if self.server:
                from subrosa.pg import schema_revision
                from subrosa.schema import SCHEMA_HEAD

                return schema_revision(conn) == SCHEMA_HEAD
            from subrosa.schema import connection_state

            current, reindexing = connection_state(conn)
            return current and not reindexing
        except Exception:  # noqa: BLE001 - a connection that cannot say is not kept
            return False

    def _after_failure(self, exc: Exception) -> bool:
        """After a call failed: whether the failure may be the kept connection's (it
        died, or the schema changed under it), so that a new one may answer. A
        connection left inside a transaction, or dead, is not kept."""
        from subrosa.errors import SubrosaError

        conn = self.conn
        if conn is None:
            return False
        if self.server:
            raw = conn.raw
            broken = bool(raw.closed or raw.broken)
            if not broken and raw.info.transaction_status != 0:  # not idle
                self.close()
            if broken:
                self.close()
                return True
            state = str(getattr(exc, "sqlstate", "") or "")
            # 42: a table, column or function that is not there; 0A000: a cached plan
            # whose columns changed: the schema changed under the connection.
            return state.startswith("42") or state == "0A000"
        if conn.in_transaction:
            self.close()
        if isinstance(exc, SubrosaError) or not isinstance(exc, sqlite3.Error):
            return False
        busy = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
        return not busy  # a busy database waited its timeout already
