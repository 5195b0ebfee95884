"""Ingest: Claude Code transcripts (JSONL files) into the archive, incrementally.

Per file the archive remembers where the last complete line ended, and the file's
inode, size, mtime and a hash of its first bytes. A file whose size and mtime did not
change is not opened at all (a no-op re-ingest of gigabytes is a stat per file); a
file that grew is read from the remembered offset; a file that was replaced or
truncated is read again from the start (messages already stored are recognized by
uuid and stored once). A last line without its newline is only taken when it is a
whole JSON object (some tools write files without the final newline); otherwise it is
still being written and waits for the next ingest. With the offset goes the state of the
file's queue of prompts typed while Claude worked (transcripts.queue_state): a prompt
still queued where a read ends is kept then, and the next read, starting from that
state, does not keep it again when it finds it taken up.

Writes go through the DB-API connection (subrosa.archive.connection): executemany into
SQLite is what keeps ingest near the speed of a bare FTS5 insert; the ORM would
spend more time building objects than SQLite spends indexing them. On SQLite, each
transaction's index is built by one statement at its commit, and for each transaction
of a large ingest but its last, that statement and the commit run in a writer thread
while this one parses the next files (Ingester._commit_behind).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, cast

from subrosa.archive import pending
from subrosa.archive.connection import archive_lock, open_archive
from subrosa.errors import ReadOnlyRole
from subrosa.identity import ingested_by, sessions_key
from subrosa.paths import (
    checkout_root,
    claude_root,
    encode_project_path,
    former_project_folder,
    in_project_folder,
    named_project_folder,
    project_root,
    project_transcript_dir,
)

# The parser and the redactor (msgspec, ahocorasick, the secret rules: ~30 ms of CPU to
# import) load when a file has something new to read: a no-op ingest is a stat per file.
if TYPE_CHECKING:
    from threading import Event, Thread

    from subrosa.archive.redact import Redactor
    from subrosa.archive.transcripts import Message, Parsed, SessionInfo

CHUNK_BYTES = 4 << 20
# Bytes of transcript per write transaction. FTS5 writes a new index segment per
# transaction and merges them later, so many small transactions cost far more than
# a few large ones; the offsets are saved in the same transaction as the messages.
COMMIT_BYTES = 32 << 20
# While a writer thread indexes and commits one transaction (Ingester._commit_behind),
# ingest reads and parses on, holding up to this much transcript parsed and not yet
# stored (its memory: the texts of a transaction, about).
BACKLOG_BYTES = COMMIT_BYTES
HEAD_BYTES = 4096
# FTS5's in-memory buffer of pending index entries (see tune_index): room for
# what one transaction (COMMIT_BYTES of transcript, ~14 MB of text in the bench corpus)
# leaves pending, so FTS5 writes one segment per transaction. At 8 MB it wrote two,
# and merging the extra ones was a tenth of an ingest's instructions (docs/search.md).
# A bound, not an allocation: the buffer holds what is pending, up to this.
FTS_HASH_BYTES = 32 << 20
# A transcript line longer than this is skipped (and counted), not stored: no real
# message comes near it (a pasted screenshot is a few MB), and a 100 MB line held in
# memory, redacted and indexed costs seconds and most of a GB for nothing.
MAX_LINE_BYTES = 32 << 20

Progress = Callable[[int], None]


class IngestReport:
    """What one ingest did; `--json` prints it. (The classes of this module are not
    dataclasses: importing dataclasses, and inspect with it, cost a no-op ingest ~15 ms
    of CPU, a tenth of its budget.)"""

    def __init__(self) -> None:
        self.files_seen = 0
        self.files_read = 0
        self.files_restarted = 0
        self.bytes_read = 0
        self.new_messages = 0
        self.duplicate_messages = 0
        self.sessions: set[str] = set()
        self.skipped: Counter[str] = Counter()
        # Lines read in spite of a flaw (bad UTF-8 bytes replaced), by kind.
        self.repaired: Counter[str] = Counter()
        self.redacted: Counter[str] = Counter()
        self.missing: list[str] = []

    def to_dict(self) -> dict[str, object]:
        return {
            "files_seen": self.files_seen,
            "files_read": self.files_read,
            "files_restarted": self.files_restarted,
            "bytes_read": self.bytes_read,
            "new_messages": self.new_messages,
            "duplicate_messages": self.duplicate_messages,
            "sessions": len(self.sessions),
            "skipped": dict(sorted(self.skipped.items())),
            "repaired": dict(sorted(self.repaired.items())),
            "redacted": sum(self.redacted.values()),
            "redacted_by_kind": dict(sorted(self.redacted.items())),
            "missing": self.missing,
        }


class Source(NamedTuple):
    """A transcript file and the project its sessions belong to. The path is a string:
    a no-op re-ingest of thousands of files must not pay for building Path objects.
    `absolute` is the path already absolute and normalized, when discovery knows it."""

    path: str
    project: str
    absolute: str = ""

    @property
    def key(self) -> str:
        """The file's absolute path, normalized without touching the disk (a no-op
        re-ingest of thousands of files must not pay for resolving each one)."""
        return self.absolute or os.path.abspath(self.path)


class _FileState(NamedTuple):
    inode: int
    size: int
    mtime_ns: int
    offset: int
    head_hash: str
    # The queue's state where the last read ended (transcripts.queue_state), or None.
    queue_state: str | None


def project_of(path: str | Path, default: str, env: dict[str, str] | None = None) -> str:
    """The encoded project folder a transcript lives in under `<claude root>/projects/`,
    else `default` (a file ingested from elsewhere joins the current project)."""
    return _project_under(os.path.abspath(path), _projects_prefix(env), default)


def _projects_prefix(env: dict[str, str] | None = None) -> str:
    """`<claude root>/projects/`, absolute, ending in the separator."""
    return os.path.join(os.path.abspath(claude_root(env)), "projects") + os.sep


_COPIED_ROOT = os.sep + os.path.join(".claude", "projects") + os.sep


def _project_under(absolute: str, projects: str, default: str) -> str:
    """project_of for an absolute, normalized path and the projects folder's prefix.
    A file under another `.claude/projects/` (a home folder copied from an old machine,
    a backup) belongs to its project folder's project too, as it did there."""
    if absolute.startswith(projects):
        rest = absolute[len(projects) :]
    else:
        at = absolute.rfind(_COPIED_ROOT)
        if at < 0:
            return default
        rest = absolute[at + len(_COPIED_ROOT) :]
    parts = rest.split(os.sep)
    return parts[0] if len(parts) > 1 else default


def transcripts_under(directory: Path) -> list[str]:
    """Every `*.jsonl` file under `directory`, at any depth (a project folder, a folder
    of project folders, a copy of `projects/`), in a stable order: a folder's files by
    name, then its folders by name, each walked the same way. Symlinked folders are not
    followed (no loops), nor hidden ones (`.subrosa/facts.jsonl` is no transcript) but
    `.claude`, Claude Code's own (a copied home folder's transcripts are in it).

    os.walk's order and rules, by hand: one scandir per folder and nothing built per
    entry but what is kept (a no-op re-ingest of thousands of files is mostly this)."""
    found: list[str] = []
    todo = [str(directory)]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue  # gone or unreadable: as os.walk skips it
        files, folders = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                if entry.name.endswith(".jsonl"):
                    files.append(entry.name)
            elif (
                not entry.name.startswith(".") or entry.name == ".claude"
            ) and not entry.is_symlink():
                folders.append(entry.name)
        found += [os.path.join(folder, name) for name in sorted(files)]
        todo += [os.path.join(folder, name) for name in sorted(folders, reverse=True)]
    return found


def discover(paths: Iterable[Path], default_project: str) -> list[Source]:
    """The transcripts named by `paths`: files, or folders searched at every depth as
    `--all-projects` searches `<claude root>/projects/`. A transcript under that root
    belongs to its project folder's project; one elsewhere to the folder's (the default)."""
    sources: list[Source] = []
    projects = _projects_prefix()
    for path in paths:
        if not path.is_dir():
            sources.append(Source(str(path), project_of(path, default_project)))
            continue
        # Its paths are the folder's, made absolute once, joined with names: absolute
        # already (a no-op re-ingest of thousands of files resolves none of them). A
        # folder inside a project folder gives all its transcripts that project.
        folder = os.path.abspath(path)
        project = _project_under(os.path.join(folder, "x.jsonl"), projects, default_project)
        files = transcripts_under(Path(folder))
        if folder.startswith(projects):
            sources += [Source(file, project, file) for file in files]
        else:
            sources += [
                Source(file, _project_under(file, projects, project), file) for file in files
            ]
    return sources


def all_project_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """Every project folder under `<claude root>/projects/`."""
    root = Path(claude_root(env), "projects")
    if not root.is_dir():
        return []
    return sorted(path for path in root.iterdir() if path.is_dir())


def project_dirs_around(folder: Path) -> list[Path]:
    """A project's transcript folder, and the folders of sessions started in its
    subfolders (`<folder>-src-api`: Claude Code names them after the subfolder). A
    name alone cannot tell `/repo/src` from a sibling `/repo-src`; each session is
    filed by its own working directory when ingested (Ingester._project_of_session)."""
    try:
        names = os.listdir(folder.parent)
    except OSError:
        return []
    return [
        folder.parent / name
        for name in sorted(names)
        if in_project_folder(name, folder.name) and (folder.parent / name).is_dir()
    ]


def _head_hash_of(path: str, length: int) -> str:
    """A hash of the file's first `length` bytes (at most HEAD_BYTES)."""
    import hashlib  # here: its OpenSSL start-up (~6 ms) is for files with news only

    try:
        with open(path, "rb") as handle:
            return hashlib.sha1(handle.read(min(length, HEAD_BYTES))).hexdigest()
    except OSError:
        return ""


def _ends_a_line(path: str, offset: int) -> bool:
    """Whether `offset` (where the last read ended) still follows a line's end: a file
    rewritten in place (`cp` and `rsync --inplace` keep the inode) past its first
    HEAD_BYTES can hold a longer line there now, which a read from `offset` would cut.
    (A last line kept without its newline, a whole object, ends in "}", or in the "\\r"
    of a CRLF.)"""
    if offset == 0:
        return True
    try:
        with open(path, "rb") as handle:
            handle.seek(offset - 1)
            return handle.read(1) in (b"\n", b"\r", b"}")
    except OSError:
        return False


class _Plan(NamedTuple):
    """A file to read, its stat when planned, the offset to read from, and the queue's
    state there (a prompt still queued when the last read ended: kept once)."""

    source: Source
    stat: os.stat_result
    start: int
    queue_state: str | None = None


def _load_stats(conn: sqlite3.Connection) -> dict[str, tuple[int, int, int]]:
    """Each ingested file's inode, size and mtime: all a no-op ingest compares (the rest
    of a file's state is read when its stat changed, _load_state)."""
    cursor = conn.execute("SELECT path, inode, size, mtime_ns FROM ingested_files")
    return {path: (inode, size, mtime_ns) for path, inode, size, mtime_ns in cursor}


def _load_state(conn: sqlite3.Connection, key: str) -> _FileState | None:
    row = conn.execute(
        'SELECT inode, size, mtime_ns, "offset", head_hash, queue_state FROM ingested_files'
        " WHERE path = ?",
        (key,),
    ).fetchone()
    return None if row is None else _FileState(*row)


def _is_whole_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def tune_index(conn: sqlite3.Connection) -> None:
    """Give FTS5 a bigger in-memory buffer (SQLite's default is 1 MB): each time it
    fills, FTS5 writes a segment and later merges it, so a bigger buffer means fewer
    and larger segments and less time in the index (docs/search.md). The setting is
    stored in the index; it is written by the first ingest or re-index (and by the
    first after FTS_HASH_BYTES changed), inside its write transaction."""
    row = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'hashsize'").fetchone()
    if row is None or row[0] != FTS_HASH_BYTES:
        conn.execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('hashsize', ?)",
            (FTS_HASH_BYTES,),
        )


def _nothing() -> None:
    pass


class CommitBehind:
    """The end of a write transaction on an SQLite connection (its last statements,
    `finish`, then COMMIT) made by a writer thread while the caller's thread works on:
    SQLite runs a statement from start to end without the interpreter's lock, so one
    statement that does much (FTS5's index of a whole transaction) overlaps the
    caller's Python. The connection is the thread's until wait(). Ingest's
    (Ingester._commit_behind) and the re-index's (subrosa.archive.reindex)."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn, self.name = conn, name
        self._thread: Thread | None = None
        self._done: Event | None = None  # set when the thread's work is over
        self._finish: Callable[[], None] = _nothing
        self._error: BaseException | None = None
        # The connection is held to the thread that opened it (check_same_thread): the
        # thread refused it before any SQL and wait() made the end in place. For good:
        # the caller hands no more.
        self.refused = False

    @property
    def running(self) -> bool:
        """A transaction was handed and not waited for yet."""
        return self._thread is not None

    @property
    def finished(self) -> bool:
        """Handed, and its thread done (wait() returns at once)."""
        return self._done is not None and self._done.is_set()

    def start(self, finish: Callable[[], None], target: Callable[[], None] | None = None) -> None:
        """`finish()` and COMMIT in a new thread, which runs `target` (one that calls
        commit(); commit itself by default)."""
        import signal
        import threading

        self._finish, self._error = finish, None
        done = threading.Event()
        thread = threading.Thread(
            target=self._run, args=(target or self.commit, done), name=self.name
        )
        thread.daemon = True
        # Handed only once it runs: a Ctrl-C between handing it and its start left
        # wait() waiting for a thread that never ran (an ingest that hung after Ctrl-C).
        # SIGINT waits, blocked, until the thread is started and handed; one that came
        # before is raised at start()'s first instruction, before any thread exists.
        mask = getattr(signal, "pthread_sigmask", None)
        # (No pthread_sigmask, as on Windows: nothing blocked, nothing to unblock.)
        blocked = mask(signal.SIG_BLOCK, {signal.SIGINT}) if mask else {signal.SIGINT}
        try:
            thread.start()
            self._thread, self._done = thread, done
        finally:
            if mask and signal.SIGINT not in blocked:
                mask(signal.SIG_UNBLOCK, {signal.SIGINT})

    @staticmethod
    def _run(target: Callable[[], None], done: Event) -> None:
        try:
            target()
        finally:
            done.set()

    def commit(self) -> None:
        """In the writer thread: the transaction's end; what it raises waits for wait()."""
        try:
            self.conn.cursor()  # a connection held to its thread refuses before any SQL
        except sqlite3.ProgrammingError:
            self.refused = True
            return
        try:
            self._finish()
            self.conn.execute("COMMIT")
        except BaseException as error:  # raised in the caller's thread (wait)
            self._error = error

    def wait(self) -> None:
        """Wait for the thread, and raise what it raised (the caller rolls the
        transaction back, as one that failed in its own thread). A thread refused by
        the connection left the end to this one: it is made here."""
        if self._thread is None or self._done is None:
            return
        # Not join() alone: a Ctrl-C in Python 3.11's join() can leave the thread marked
        # as stopped while it runs on (its lock released by the interrupted join), and
        # the next join() would not wait. A Ctrl-C here leaves it handed: interrupt(),
        # then wait() again.
        self._done.wait()
        self._thread.join()
        self._thread = self._done = None
        finish, self._finish = self._finish, _nothing
        error, self._error = self._error, None
        if self.refused:
            finish()
            self.conn.execute("COMMIT")
        elif error is not None:
            raise error

    def interrupt(self) -> None:
        """Ctrl-C: the statement running in the thread stops, and SQLite rolls its
        transaction back (wait() then raises that)."""
        if self._thread is not None:
            self.conn.interrupt()


class Ingester:
    """Reads transcripts into an open archive connection."""

    @staticmethod
    def stored_key(value: str) -> str:
        """A session id or message uuid as this archive stores it (SQLite: as it is)."""
        return value

    def __init__(
        self,
        conn: sqlite3.Connection,
        tool_result_chars: int = 2000,
        progress: Progress | None = None,
        report: IngestReport | None = None,
    ) -> None:
        """`report`, when given, is added to (e.g. by what a drain of pending sessions read)."""
        self.conn = conn
        self._tune_connection()
        self.tool_result_chars = tool_result_chars
        self.progress = progress
        self.report = report if report is not None else IngestReport()
        self._redactor: Redactor | None = None
        self._stats = _load_stats(conn)
        self._session_pks: dict[str, int] = {}
        self._projects: dict[str, str] = {}
        # The checkouts (project root, top) whose older keys this ingest asked about.
        self._filed: set[tuple[str, str | None]] = set()
        self._in_transaction = False
        self._uncommitted = 0
        self._next_id = 0
        # The runs of ids this transaction stored, by session (message_runs: _write_runs()).
        self._runs: dict[int, list[tuple[int, int]]] = {}
        self._hash_size_checked = False
        # The first id this transaction hands out: the index takes the transaction's
        # rows from `messages` in one statement when it commits (_index_new).
        self._fts_from = 1
        # SQLite only: a transaction of COMMIT_BYTES is indexed and committed by a writer
        # thread while this one reads on (_commit_behind); what it parses meanwhile waits
        # in the backlog, in order, as the calls that store it.
        self._pipeline = isinstance(conn, sqlite3.Connection)
        self._writer = CommitBehind(conn, "ingest writer")
        self._backlog: deque[tuple[Callable[..., None], tuple[object, ...], int]] = deque()
        self._backlog_bytes = 0
        self._backlog_keys: set[str] = set()
        # Which machine and member ingest (a session keeps the first ones to archive it).
        self.ingested_by: tuple[str | None, str | None] = ingested_by()

    def _tune_connection(self) -> None:
        # 32 MB of page cache (SQLite's default is 2 MB): the uuid index takes random
        # inserts, and at a million messages most would otherwise miss the cache.
        self.conn.execute("PRAGMA cache_size = -32768")

    @property
    def redactor(self) -> Redactor:
        """The redactor, made on first use (see the imports)."""
        if self._redactor is None:
            from subrosa.archive.redact import Redactor

            self._redactor = Redactor(self.report.redacted)
        return self._redactor

    def bytes_to_read(self, sources: list[Source]) -> int:
        """An estimate for the progress bar: what changed since the last ingest."""
        total = 0
        for source in sources:
            try:
                stat = os.stat(source.path)
            except OSError:
                continue
            size = stat.st_size
            known = self._stats.get(source.key)
            if known == (stat.st_ino, size, stat.st_mtime_ns):
                continue
            state = _load_state(self.conn, source.key) if known is not None else None
            total += size - state.offset if state and size >= state.offset else size
        return total

    def ingest(self, sources: list[Source]) -> IngestReport:
        """Ingest `sources`; committed when it returns, rolled back when it raises."""
        self.report.files_seen += len(sources)
        stats, stat_of, isreg, abspath = self._stats, os.stat, S_ISREG, os.path.abspath
        try:
            for source in sources:
                # The common case, inlined: one stat, and the file is as it was.
                key = source.absolute or abspath(source.path)
                try:
                    stat = stat_of(key)
                except OSError:
                    self.report.missing.append(key)
                    continue
                known = stats.get(key)
                if known == (stat.st_ino, stat.st_size, stat.st_mtime_ns) and isreg(stat.st_mode):
                    continue
                plan = self._plan(source, key, stat)
                if plan is not None:
                    self._ingest_inline(plan)
            self._settle()
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                self._writer.interrupt()  # its transaction rolls back, as the one here does
            self.abort()
            raise
        self.commit()
        return self.report

    def _plan(self, source: Source, key: str, stat: os.stat_result) -> _Plan | None:
        """Where to start reading `source` (at `key`, as `stat` found it), or None when it
        has not changed or cannot be read."""
        if not S_ISREG(stat.st_mode):  # a FIFO would block, /dev/zero never end
            self.report.skipped["not a regular file"] += 1
            return None
        known = self._stats.get(key)
        if self._writer.running and (known is not None or key in self._backlog_keys):
            # The connection is the writer's until it is done, and the file's state may
            # wait in the backlog (a file named twice): both first.
            self._settle()
            known = self._stats.get(key)
        if known is None:
            return _Plan(source, stat, 0)
        if known == (stat.st_ino, stat.st_size, stat.st_mtime_ns):
            return None
        state = _load_state(self.conn, key)
        if state is None:
            return _Plan(source, stat, 0)
        if (
            state.inode == stat.st_ino
            and stat.st_size >= state.offset
            and _head_hash_of(key, state.offset) == state.head_hash
            and _ends_a_line(key, state.offset)
        ):
            return _Plan(source, stat, state.offset, state.queue_state)
        self.report.files_restarted += 1
        return _Plan(source, stat, 0)

    def _ingest_inline(self, plan: _Plan) -> None:
        """Read, parse and store one file here, batch by batch (any size, little memory)."""
        from subrosa.archive.transcripts import parse_lines, queue_state, resume_queue

        source = plan.source
        offset = stored = plan.start
        # The batch before, or the read before's queue: what it kept (a prompt once).
        parsed = resume_queue(plan.queue_state)  # None for a read from the start (_plan)
        with open(source.path, "rb") as handle:
            for lines, offset in _batches(handle, plan.start, self.progress):
                parsed = parse_lines(
                    lines,
                    _default_session(source.path),
                    self.tool_result_chars,
                    self.redactor,
                    parsed,
                )
                if not self._pipeline:
                    self._store_batch(plan, parsed, offset)
                    continue
                # The queue's state now: the next batch's parse changes what it is
                # built from (parse_lines' carry), and this one's store may wait.
                state = queue_state(parsed)
                self._stage(plan, self._store_read, (parsed, offset, state), offset - stored)
                stored = offset
        if self._pipeline:
            self._stage(plan, self._finish_file, (offset,), 0)
        else:
            self._finish_file(plan, offset)

    def _stage(
        self, plan: _Plan, call: Callable[..., None], args: tuple[object, ...], size: int
    ) -> None:
        """`call(plan, *args)` now, or after the writer thread's commit when one runs: in
        the backlog, while it holds less than BACKLOG_BYTES (`size`: the bytes of
        transcript the call stores). Calls run in the order they were staged."""
        while self._writer.running and (
            self._backlog_bytes >= BACKLOG_BYTES or self._writer.finished
        ):
            self._drain()
        if not self._writer.running:  # the backlog is empty then (_drain)
            call(plan, *args)
            return
        self._backlog.append((call, (plan, *args), size))
        self._backlog_bytes += size
        self._backlog_keys.add(plan.source.key)

    def _drain(self) -> None:
        """Wait for the writer thread, then run the backlog, until a call in it hands a
        commit to a new writer thread (what is left then waits for that one)."""
        self._wait_writer()
        backlog = self._backlog
        while backlog and not self._writer.running:
            call, args, size = backlog.popleft()
            self._backlog_bytes -= size
            call(*args)
        if not backlog:
            self._backlog_keys.clear()

    def _settle(self) -> None:
        """The writer thread done and the backlog stored: the connection is this
        thread's, and what was read is in the open transaction or committed."""
        while self._writer.running or self._backlog:
            self._drain()

    def _store_batch(self, plan: _Plan, parsed: Parsed, offset: int) -> None:
        from subrosa.archive.transcripts import queue_state

        self._store_read(plan, parsed, offset, queue_state(parsed))

    def _store_read(self, plan: _Plan, parsed: Parsed, offset: int, state: str | None) -> None:
        """Store a batch, the file's offset after it and the queue's `state` there."""
        self._begin()
        self._store(plan.source, parsed)
        self._save_state(plan, offset, state)

    def _finish_file(self, plan: _Plan, offset: int) -> None:
        self.report.files_read += 1
        if offset == plan.start:  # nothing complete was added: remember the new stat
            self._begin()
            self._save_state(plan, offset, plan.queue_state)
        self.report.bytes_read += offset - plan.start
        self._uncommitted += offset - plan.start
        if self._uncommitted >= COMMIT_BYTES:
            if self._pipeline:
                self._commit_behind()
            else:
                self.commit()

    def _begin(self) -> None:
        if self._writer.running:
            self._wait_writer()
        if not self._in_transaction:
            # Each message's session_pk comes from the sessions row upserted in the same
            # transaction, so the per-row foreign key lookup proves nothing and costs a
            # sixth of the write path. (The pragma cannot change inside a transaction.)
            self.conn.execute("PRAGMA foreign_keys = OFF")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.conn.execute("PRAGMA foreign_keys = ON")
                raise
            self._in_transaction = True
            self._tune_index()
            # We hold the write lock from here on: ids can be handed out in advance.
            row = self.conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()
            self._next_id = int(row[0])
            self._fts_from = self._next_id + 1

    def _tune_index(self) -> None:
        """tune_index(), once per ingest."""
        if self._hash_size_checked:
            return
        self._hash_size_checked = True
        tune_index(self.conn)

    def commit(self) -> None:
        """Make what was read durable (messages and offsets together)."""
        self._settle()
        if self._in_transaction:
            self._write_runs()
            self._index_new()
            self.conn.execute("COMMIT")
            self._in_transaction = False
            self.conn.execute("PRAGMA foreign_keys = ON")
        self._uncommitted = 0

    def _index_new(self) -> None:
        """Index the messages this transaction stored, in one statement: its ids are
        those from `_fts_from` on (handed out in order under the write lock), and FTS5
        takes them in that order into its in-memory buffer, which it writes out as one
        segment at the commit. One statement, not a row each: it runs in SQLite from
        start to end, without the interpreter's lock (what lets a writer thread do it
        while this one parses, _commit_behind). It comes last before the commit: a
        statement after it that opens a statement savepoint (an INSERT … SELECT, an
        upsert's) would make FTS5 write its buffer out early, as a second segment."""
        if self._next_id >= self._fts_from:
            self.conn.execute(
                "INSERT INTO messages_fts(rowid, text, terms)"
                " SELECT id, text, terms FROM messages WHERE id >= ? ORDER BY id",
                (self._fts_from,),
            )

    def _commit_behind(self) -> None:
        """commit(), its index and commit done by a writer thread while this one reads on
        (SQLite's own work, about as long as our parse: docs/search.md, "Ingest").
        The connection is the writer's until _wait_writer; what this thread parses
        meanwhile waits in the backlog (_stage). A read shorter than COMMIT_BYTES never
        gets here: a hook's ingest of a few lines starts no thread."""
        if not self._in_transaction:
            self._uncommitted = 0
            return
        self._write_runs()  # before the index: see _index_new
        self._writer.start(self._index_new, self._write_behind)
        self._uncommitted = 0

    def _write_behind(self) -> None:
        """The writer thread: the transaction's index, and its commit."""
        self._writer.commit()

    def _wait_writer(self) -> None:
        """Wait for the writer thread; raise what it raised (the transaction is then
        rolled back by abort(), as one that failed in this thread)."""
        if not self._writer.running:
            return
        self._writer.wait()
        if self._writer.refused:  # a connection opened for one thread: committed here
            self._pipeline = False
        self._in_transaction = False
        self.conn.execute("PRAGMA foreign_keys = ON")

    def _write_runs(self) -> None:
        """The transaction's runs of ids (message_runs), written in one statement at its
        end, before the index (_index_new): an upsert written after FTS5's inserts in a
        transaction makes FTS5 write out the index it holds in memory (a quarter more
        time in ingest when each session's run was written as it came, between the
        batches' inserts). A run whose session's last run ends right before it grows
        that run."""
        if self._runs:
            self.conn.executemany(
                "INSERT INTO message_runs (session_pk, lo, hi) SELECT ?, coalesce((SELECT lo"
                " FROM message_runs WHERE session_pk = ? AND hi = ?), ?), ? WHERE true"
                " ON CONFLICT (session_pk, lo) DO UPDATE SET hi = excluded.hi",
                [
                    (pk, pk, lo - 1, lo, hi)
                    for pk, runs in sorted(self._runs.items())
                    for lo, hi in runs
                ],
            )
            self._runs.clear()

    def abort(self) -> None:
        """Forget the uncommitted part (the offsets go back with it)."""
        self._backlog.clear()
        self._backlog_bytes = 0
        self._backlog_keys.clear()
        if self._writer.running:
            # Its commit stands, as one made here would have; its error, if any, is not
            # the one that brought us here, which is raised.
            with suppress(Exception):
                self._wait_writer()
        self._runs.clear()
        if self._in_transaction:
            if self.conn.in_transaction:  # SQLite rolls back some failures itself
                self.conn.execute("ROLLBACK")
            self._in_transaction = False
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._stats = _load_stats(self.conn)
        self._uncommitted = 0

    def _save_state(self, plan: _Plan, offset: int, queue_state: str | None) -> None:
        """Where the file was read to, and the queue's state there (in the transaction
        that stores what was read)."""
        key, project, stat = plan.source.key, plan.source.project, plan.stat
        head = _head_hash_of(key, offset)
        self.conn.execute(
            "INSERT INTO ingested_files(path, project, inode, size, mtime_ns, offset, head_hash,"
            " queue_state, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, datetime('now'))"
            " ON CONFLICT(path) DO UPDATE SET project = excluded.project,"
            " inode = excluded.inode, size = excluded.size, mtime_ns = excluded.mtime_ns,"
            " offset = excluded.offset, head_hash = excluded.head_hash,"
            " queue_state = excluded.queue_state, updated_at = excluded.updated_at",
            (key, project, stat.st_ino, stat.st_size, stat.st_mtime_ns, offset, head, queue_state),
        )
        self._stats[key] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _store(self, source: Source, parsed: Parsed) -> None:
        """Store one batch (inside the caller's transaction, with the new offset)."""
        self.report.skipped.update(parsed.skipped)
        self.report.repaired.update(parsed.repaired)
        by_session: dict[str, list[Message]] = {}
        for message in parsed.messages:
            by_session.setdefault(message.session_id, []).append(message)
        from subrosa.archive.transcripts import SessionInfo

        # In the order the file holds them (a set's order changes with the hash seed, and
        # with it which session's messages get the lower ids: two ingests of one file
        # would store it differently).
        for session_id in dict.fromkeys([*by_session, *parsed.sessions]):
            info = parsed.sessions.get(session_id) or SessionInfo(session_id)
            pk = self._upsert_session(info, self._project_of_session(info, source.project))
            messages = by_session.get(session_id, [])
            if messages:
                self._insert_messages(pk, messages)
            self.report.sessions.add(session_id)

    def store_session(
        self,
        info: SessionInfo,
        project: str,
        messages: list[Message],
        ingested_by: tuple[str | None, str | None],
    ) -> None:
        """Store a session and its messages as ingest does (the same ids, index rows and
        counts, a message already stored left out), inside the open transaction: the
        way `subrosa import` writes an archive. `ingested_by` is who archived it first."""
        self._begin()
        mine, self.ingested_by = self.ingested_by, ingested_by
        try:
            pk = self._upsert_session(info, project)
        finally:
            self.ingested_by = mine
        if messages:
            self._insert_messages(pk, messages)
        self.report.sessions.add(info.session_id)

    def _project_of_session(self, info: SessionInfo, folder_project: str) -> str:
        """The project a session belongs to: the repository, when the session ran in a
        git checkout whose folder (or a subfolder's) the transcript is filed under.
        Claude Code files a session started in `repo/src`, or in a worktree, under that
        folder's own name; subrosa files it with the repository (the project every
        command run inside it resolves). A folder the host named
        (`CLAUDE_CODE_PROJECT_DIR_NAME`) holds every project's sessions: each is filed
        by its own working directory. Anything else (a transcript copied from another
        machine, a checkout since deleted) keeps its folder's project."""
        cwd = info.cwd
        if not cwd or not os.path.isabs(cwd):
            return folder_project
        key = f"{cwd}\0{folder_project}"
        project = self._projects.get(key)
        if project is None:
            top = checkout_root(cwd)
            encoded = encode_project_path(top) if top is not None else None
            if folder_project == named_project_folder() or (
                encoded and in_project_folder(folder_project, encoded)
            ):
                project = sessions_key(cwd)
                self._file_older_keys(project_root(cwd), top, project)
            else:
                project = folder_project
            self._projects[key] = project
        return project

    def file_checkout(self, cwd: str) -> None:
        """The sessions of the checkout around `cwd` still filed under a key it had
        before, filed under its key now though nothing new was read (`subrosa ingest`
        run in it); nothing is written when there are none."""
        top = checkout_root(cwd)
        if top is None:
            return
        root = project_root(cwd)
        moves = self._misfiled(root, top, sessions_key(cwd))
        if moves:
            self._begin()
            self._move(moves)
            self.commit()

    def _file_older_keys(self, root: str, top: str | None, project: str) -> None:
        """Sessions of the project at `root` (run in the checkout at `top`) filed under a
        key it had before join its key `project`, in the open transaction: once per
        checkout and ingest, in one indexed query at most (older_keys)."""
        self._move(self._misfiled(root, top, project))

    def _misfiled(
        self, root: str, top: str | None, project: str
    ) -> list[tuple[str, str | None, str]]:
        """The moves that file this checkout's sessions under `project` (Refiling), once
        per checkout and ingest: none asked for a project that had no other key."""
        if (root, top) in self._filed:
            return []
        self._filed.add((root, top))
        older = older_keys(root, top, project)
        keys = sorted(older.whole | older.by_cwd)
        if not keys:
            return []
        marks = ", ".join("?" * len(keys))
        rows = self.conn.execute(
            f"SELECT DISTINCT project, cwd FROM sessions WHERE project IN ({marks})", keys
        ).fetchall()
        return older.moves([(str(key), where) for key, where in rows])

    def _move(self, moves: list[tuple[str, str | None, str]]) -> None:
        """Each (key, working directory or None for all, new key): indexed updates."""
        for old, where, new in moves:
            if where is None:
                self.conn.execute("UPDATE sessions SET project = ? WHERE project = ?", (new, old))
            else:
                self.conn.execute(
                    "UPDATE sessions SET project = ? WHERE project = ? AND cwd = ?",
                    (new, old, where),
                )

    def _upsert_session(self, info: SessionInfo, project: str) -> int:
        # The project is settled by the first batch that knows the session's folder.
        self.conn.execute(
            "INSERT INTO sessions(session_id, project, cwd, git_branch, title, summary,"
            " message_count, host, username) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET"
            " project = CASE WHEN cwd IS NULL AND excluded.cwd IS NOT NULL"
            " THEN excluded.project ELSE project END,"
            " cwd = coalesce(excluded.cwd, cwd), git_branch = coalesce(excluded.git_branch,"
            " git_branch), title = coalesce(excluded.title, title),"
            " summary = coalesce(excluded.summary, summary)",
            (info.session_id, project, info.cwd, info.git_branch, info.title, info.summary)
            + self.ingested_by,
        )
        pk = self._session_pks.get(info.session_id)
        if pk is None:
            row = self.conn.execute(
                "SELECT id FROM sessions WHERE session_id = ?", (info.session_id,)
            ).fetchone()
            pk = self._session_pks[info.session_id] = int(row[0])
        return pk

    def _insert_messages(self, pk: int, messages: list[Message]) -> None:
        first_id = self._next_id + 1
        rows = [
            (message_id, pk, uuid, role, timestamp, text, terms)
            for message_id, (uuid, _, role, timestamp, text, terms) in enumerate(messages, first_id)
        ]
        self._next_id += len(rows)
        # A message already stored (resumed and forked sessions repeat history) or
        # repeated within the batch is left out by the uuid's unique index itself: a
        # lookup of every uuid first would search the same index twice.
        added = self.conn.executemany(
            "INSERT INTO messages(id, session_pk, uuid, role, timestamp, text, terms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(uuid) DO NOTHING",
            rows,
        ).rowcount
        shared = 0
        if added < len(rows):
            # The ids from `first_id` on were handed out in this transaction (we hold the
            # write lock): those present are the rows that went in.
            stored = {
                row[0]
                for row in self.conn.execute("SELECT id FROM messages WHERE id >= ?", (first_id,))
            }
            shared = self._share(pk, [(r[0], r[2]) for r in rows if r[0] not in stored])
            rows = [row for row in rows if row[0] in stored]
        # The index takes these rows when the transaction commits (_index_new), not
        # from an insert trigger: FTS5 flushes its in-memory index at every statement
        # savepoint, and a trigger runs inside one, so trigger-fed bulk inserts are four
        # times slower (docs/search.md). Deletes and updates are kept in step by triggers.
        if rows:
            # One session's ids, handed out in a row (those left out were taken by no
            # message): one run, the session's last one when it ends right before.
            runs = self._runs.setdefault(pk, [])
            if runs and runs[-1][1] == rows[0][0] - 1:
                runs[-1] = (runs[-1][0], rows[-1][0])
            else:
                runs.append((rows[0][0], rows[-1][0]))
        self.report.new_messages += added
        self.report.duplicate_messages += len(messages) - added
        times = [m.timestamp for m in messages if m.timestamp]
        first, last = (min(times), max(times)) if times else (None, None)
        self.conn.execute(
            "UPDATE sessions SET message_count = message_count + ?,"
            " first_at = CASE WHEN first_at IS NULL OR ? < first_at THEN ? ELSE first_at END,"
            " last_at = CASE WHEN last_at IS NULL OR ? > last_at THEN ? ELSE last_at END"
            " WHERE id = ?",
            (added + shared, first, first or None, last, last or None, pk),
        )

    def _share(self, pk: int, left_out: list[tuple[int, str]]) -> int:
        """Record that session `pk` holds the messages `left_out` ((id, uuid) of rows
        whose uuid was stored already) that are stored under another session: a fork's
        copied history, or its parent's when the fork was archived first. Each at the
        place (position) of the id its row was handed. A session repeating its own
        history (resumed, a file read again) records nothing. How many rows this added
        (the session's message count grows by them: they are its messages too).

        The stored ids are looked up first, then inserted row by row: an INSERT … SELECT
        opens a statement savepoint, at which FTS5 flushes its in-memory index (as an
        insert trigger would, see _insert_messages): ~70 µs a row instead of ~10
        (bench/forks.py: a corpus where a quarter of the sessions are forked)."""
        stored: dict[str, tuple[int, int]] = {}
        for start in range(0, len(left_out), 10_000):  # under SQLite's 32,766 variables
            chunk = [uuid for _, uuid in left_out[start : start + 10_000]]
            marks = ",".join("?" * len(chunk))
            for uuid, message_id, session_pk in self.conn.execute(
                f"SELECT uuid, id, session_pk FROM messages WHERE uuid IN ({marks})", chunk
            ):
                stored[uuid] = (message_id, session_pk)
        shared = [
            (pk, stored[uuid][0], position)
            for position, uuid in left_out
            if uuid in stored and stored[uuid][1] != pk
        ]
        if not shared:
            return 0
        return int(
            self.conn.executemany(
                "INSERT INTO shared_messages(session_pk, message_id, position) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                shared,
            ).rowcount
        )


class Refiling(NamedTuple):
    """The keys a project's sessions may still be filed under from before, besides its
    key now (`project`), and how each row under them is filed now (moves()).

    `whole`: the project's folder, from before it had a name (or before its repository
    got a remote): every session under it is the project's. `by_cwd`: where subrosa
    spelled the folder otherwise before it spelled it as Claude Code does (an emoji, a
    name over 200 characters: paths.former_project_folder), that spelling, and Claude
    Code's folders of the checkout and of its subfolders, under which that subrosa left
    a session it did not know for the project's. A sibling's folder can be named as a
    subfolder's (`/repo-src`, `/repo/src`): those rows are filed by their working
    directory, as an ingest reading them now files them."""

    root: str
    top: str | None
    project: str
    whole: frozenset[str]
    by_cwd: frozenset[str]

    def moves(self, rows: list[tuple[str, str | None]]) -> list[tuple[str, str | None, str]]:
        """The (key, working directory or None for all, new key) that file `rows`
        ((key, working directory) of the sessions under the older keys)."""
        moves: list[tuple[str, str | None, str]] = [
            (key, None, self.project) for key in sorted(self.whole & {k for k, _ in rows})
        ]
        if self.top is None:
            return moves
        inside = self.top.rstrip(os.sep) + os.sep
        for key, where in sorted({(k, w) for k, w in rows if k in self.by_cwd and w is not None}):
            if where == self.top or where.startswith(inside):
                new = _key_now(key, where)
                if new is not None and new != key:
                    moves.append((key, where, new))
        return moves


def older_keys(root: str, top: str | None, project: str) -> Refiling:
    """The keys the sessions of the project at `root`, run in the checkout at `top`, may
    still be filed under (Refiling). For a project at an ordinary path that always had
    its name, none: ingest asks nothing."""
    whole = {encode_project_path(root)} - {project}
    by_cwd: set[str] = set()
    if former_project_folder(root) != encode_project_path(root):
        by_cwd.add(former_project_folder(root))
    if top is not None and former_project_folder(top) != encode_project_path(top):
        folder = encode_project_path(top)
        by_cwd.add(folder)
        around = project_dirs_around(Path(claude_root(), "projects", folder))
        by_cwd.update(path.name for path in around)
    return Refiling(root, top, project, frozenset(whole), frozenset(by_cwd - whole - {project}))


def _key_now(key: str, cwd: str) -> str | None:
    """The key an ingest reading it now files a session of `cwd` under that subrosa
    filed under `key` before it spelled folders as Claude Code does (the session ran in
    a checkout whose folder, or a subfolder's, `key` is, or `key` is the old spelling
    of its project's); None when it is not one of those."""
    top = checkout_root(cwd)
    if top is None:
        return None
    if in_project_folder(key, encode_project_path(top)) or key == former_project_folder(
        project_root(cwd)
    ):
        return sessions_key(cwd)
    return None


def new_ingester(
    conn: sqlite3.Connection,
    tool_result_chars: int = 2000,
    progress: Progress | None = None,
    report: IngestReport | None = None,
) -> Ingester:
    """An Ingester for `conn`: sqlite3's, or a PostgreSQL server's (subrosa.archive.pgstore)."""
    if isinstance(conn, sqlite3.Connection):
        return Ingester(conn, tool_result_chars, progress, report)
    from subrosa.archive.pgstore import PgIngester

    return PgIngester(conn, tool_result_chars, progress, report)


def _default_session(path: str) -> str:
    """The session a record without a sessionId belongs to: the file's own name, or for a
    subagent transcript (`<session>/subagents/agent-….jsonl`) its parent session."""
    parent, name = os.path.split(path)
    grandparent, parent_name = os.path.split(parent)
    if parent_name == "subagents":
        return os.path.basename(grandparent)
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else os.path.splitext(name)[0]


def _batches(
    handle: BinaryIO, start: int, progress: Progress | None
) -> Iterator[tuple[list[bytes], int]]:
    """Batches of complete lines read from `start`, each with the offset just past it.

    A line that grows past MAX_LINE_BYTES is not held in memory: it is read past, and
    stands in its batch as LINE_TOO_LONG, which the parser counts as skipped.
    """
    from subrosa.archive.transcripts import LINE_TOO_LONG

    handle.seek(start)
    offset = start  # just past the last complete line: where `rest` begins
    rest = b""
    skipped = -1  # bytes read so far of a line too long to keep, or -1
    while True:
        chunk: bytes = handle.read(CHUNK_BYTES)
        if not chunk:
            break
        if progress is not None:
            progress(len(chunk))
        if skipped >= 0:
            cut = chunk.find(b"\n")
            if cut < 0:
                skipped += len(chunk)
                continue
            offset += skipped + cut + 1
            skipped = -1
            yield [LINE_TOO_LONG], offset
            chunk = chunk[cut + 1 :]
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_LINE_BYTES:
                skipped, rest = len(data), b""
            else:
                rest = data
            continue
        offset += cut + 1
        # `data` began at the old offset (the unfinished line before it included). Its
        # lines as data[: cut + 1].split(b"\n") gives them (the last one empty), cut
        # where find (memchr) finds each newline: bytes.split looks at every byte,
        # a fiftieth of ingest's instructions.
        lines = []
        find, start = data.find, 0
        while start <= cut:
            end = find(b"\n", start)
            lines.append(data[start:end])
            start = end + 1
        lines.append(b"")
        rest = data[cut + 1 :]
        yield lines, offset
    if skipped < 0 and rest.strip() and _is_whole_object(rest):
        yield [rest], offset + len(rest)


class Reread(NamedTuple):
    """What a read of a whole transcript gives, as ingest reads it, nothing stored
    (read_again): the user messages it keeps, counted by (session, digest of the text),
    and their uuids; the uuid of every record it holds, kept or not; its sessions; and
    the queue's state (transcripts.queue_state) a read that ended at the offset asked
    for would have saved."""

    kept: Counter[tuple[str, str]]
    kept_uuids: set[str]
    seen_uuids: set[str]
    sessions: set[str]
    state_at: str | None


def text_digest(text: str) -> str:
    """The digest Reread.kept counts a text by (texts are not held: a transcript's
    tool results may be megabytes)."""
    import hashlib

    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_again(path: str, offset: int, tool_result_chars: int = 2000) -> Reread:
    """Read the transcript at `path` whole, as an ingest reading it from its start would
    (default redaction), keeping what Reread says; the queue's state is the one where a
    read ending at `offset` stopped. For migration 0015, which repairs what an ingest
    from before 0012 stored (OSError when the file cannot be read)."""
    import re

    from subrosa.archive.redact import Redactor
    from subrosa.archive.transcripts import parse_lines, queue_state

    uuid_field = re.compile(rb'"uuid":\s*"([^"\\]+)"')
    again = Reread(Counter(), set(), set(), set(), None)
    redactor = Redactor(Counter())
    session = _default_session(path)
    parsed: Parsed | None = None

    def take(lines: list[bytes]) -> None:
        nonlocal parsed
        parsed = parse_lines(lines, session, tool_result_chars, redactor, parsed)
        for message in parsed.messages:
            if message.role == "user":
                again.kept[(message.session_id, text_digest(message.text))] += 1
                again.kept_uuids.add(message.uuid)
        again.sessions.update(parsed.sessions)
        for line in lines:
            again.seen_uuids.update(m.decode("utf-8", "replace") for m in uuid_field.findall(line))

    with open(path, "rb") as handle:
        for lines, _ in _batches(cast(BinaryIO, _Upto(handle, offset)), 0, None):
            take(lines)
        state = None if parsed is None else queue_state(parsed)
        for lines, _ in _batches(handle, offset, None):
            take(lines)
    return again._replace(state_at=state)


class _Upto:
    """A file read as if it ended at `end` (read_again's first part)."""

    def __init__(self, handle: BinaryIO, end: int) -> None:
        self._handle, self._end, self._at = handle, end, 0

    def seek(self, position: int) -> int:
        self._at = position
        return self._handle.seek(position)

    def read(self, size: int = -1) -> bytes:
        left = max(0, self._end - self._at)
        data = self._handle.read(left if size < 0 else min(size, left))
        self._at += len(data)
        return data


def drain_pending(
    conn: sqlite3.Connection,
    default_project: str,
    tool_result_chars: int = 2000,
    env: dict[str, str] | None = None,
    *,
    beside: bool = False,
) -> IngestReport | None:
    """Ingest the transcripts of sessions that ended since (subrosa.archive.pending), with
    their subagents' (`<session>/subagents/*.jsonl`), or None when there were none. A
    transcript that no longer exists is dropped from the list.

    A transcript outside `<claude root>/projects/` joins the project of the session's
    own working directory (recorded by the hook), not the one this command runs in:
    the background ingest runs in a neutral directory.

    `beside` (the background ingest a session's end starts): then also what changed in
    the project folders of those transcripts. A session killed outright (SIGKILL, the
    OOM killer, a power cut) runs no SessionEnd hook, so no entry names it; its
    transcript is archived when a session of its project next ends, not only by a full
    `subrosa ingest` (Claude Code deletes transcripts after about a month). A file as
    it was is one stat (Ingester.ingest); a search's drain, which waits on this, leaves
    the folders to it."""
    entries = pending.list_pending(env)
    if not entries:
        return None
    try:
        ingester = new_ingester(conn, tool_result_chars)
    except ReadOnlyRole:
        # A reader's role on a team server (docs/team.md): it searches and lists what
        # the members archived; the ended sessions stay queued for a role that may write.
        return None
    projects = _projects_prefix(env)
    folders: set[str] = set()
    for entry_path, data in entries:
        path = Path(data["transcript_path"])
        cwd = data.get("cwd")
        default = (
            sessions_key(cwd) if isinstance(cwd, str) and os.path.isabs(cwd) else default_project
        )
        if path.is_file():
            project = project_of(path, default, env)
            # Its subagents' transcripts too, as the folder's ingest reads them (the
            # session's file, then its folder): Claude Code deletes them with it.
            own = [str(path), *transcripts_under(path.with_suffix(""))]
            ingester.ingest([Source(file, project) for file in own])
            folder = os.path.dirname(os.path.abspath(path))
            if beside and os.path.dirname(folder) + os.sep == projects:
                folders.add(folder)
        pending.remove(entry_path)
    if folders:
        ingester.ingest(discover([Path(folder) for folder in sorted(folders)], default_project))
    return ingester.report


# ---------------------------------------------------------------- the use cases


def current_project() -> str:
    """The project this checkout's sessions are filed under: its name on every machine
    (subrosa.identity.sessions_key), else the name of its folder in
    `<claude root>/projects/`."""
    return sessions_key()


@contextmanager
def archive_ready(
    db_url: str,
    tool_result_chars: int = 2000,
    *,
    lock: bool,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """The archive, migrated when due (a re-index told to `reindex_progress`), with the
    sessions that ended since the last ingest ingested first (under the ingest lock
    when `lock`: a search waits for a running ingest, a listing does not)."""
    with open_archive(db_url, reindex_progress) as conn:
        drain(conn, db_url, tool_result_chars, lock=lock)
        yield conn


def drain(conn: sqlite3.Connection, db_url: str, tool_result_chars: int, *, lock: bool) -> None:
    """The sessions that ended since ingested into the archive `conn` holds (that of
    `db_url`), under the ingest lock when `lock`: a search waits for a running ingest,
    a listing does not (archive_ready(), and the MCP server's kept connection)."""
    if lock:
        with archive_lock(db_url):
            drain_pending(conn, current_project(), tool_result_chars)
    else:
        drain_pending(conn, current_project(), tool_result_chars)


class Ingested(NamedTuple):
    """What `subrosa ingest` did, and where it looked."""

    report: IngestReport
    roots: list[Path]  # the folders or files looked in (none with pending_only)
    transcripts: int  # the transcript files found there


def ingest_transcripts(
    db_url: str,
    paths: list[Path],
    *,
    all_projects: bool = False,
    pending_only: bool = False,
    tool_result_chars: int = 2000,
    progress: Callable[[int, int], None] | None = None,
    reindex_progress: Callable[[int, int], None] | None = None,
) -> Ingested:
    """`subrosa ingest`: the sessions that ended since the last ingest, then (unless
    `pending_only`) the transcripts under `paths`, or of every project, or by default
    of this one's folder when it exists. `progress` is called with the bytes just read
    and the bytes to read in all; `reindex_progress`, with the messages re-indexed and
    to re-index, when a migration asked for it."""
    with open_archive(db_url, reindex_progress) as conn, archive_lock(db_url):
        drained = drain_pending(conn, current_project(), tool_result_chars, beside=pending_only)
        if pending_only:
            return Ingested(drained or IngestReport(), [], 0)
        if paths:
            roots = list(paths)
        elif all_projects:
            roots = all_project_dirs()
        else:
            roots = project_dirs_around(Path(project_transcript_dir()))
        sources = discover(roots, current_project())
        ingester = new_ingester(conn, tool_result_chars, report=drained)
        if progress is not None:
            total = ingester.bytes_to_read(sources)
            ingester.progress = lambda n: progress(n, total)
        report = ingester.ingest(sources)
        ingester.file_checkout(os.getcwd())
        return Ingested(report, roots, len(sources))
