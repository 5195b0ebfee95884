"""The facts table through the DB-API (sqlite3): the memory half's second way in.

Why: the extraction skill runs `fact upsert` once per fact, and `generate` after; each
is a whole process, and importing SQLAlchemy (~0.4 s of CPU) cost more than all their
work. So on an SQLite file at the newest schema (or a blank one, which
subrosa.schema.ensure_current makes so directly) these commands go through sqlite3, as
`subrosa search` already did; on PostgreSQL, or a file whose schema is older, they go
through subrosa.memory.store (SQLAlchemy, Alembic), the way every other use case does.

What may drift between the two is kept out of both: every value written comes from
subrosa.memory.values, and tests run each command both ways and compare the rows,
the sidecar and the output. Values are stored as SQLAlchemy stores them on SQLite
(times as `YYYY-MM-DD HH:MM:SS.ffffff`, booleans as 0 and 1), so each path reads what
the other wrote. Changes run under the project lock in a BEGIN IMMEDIATE transaction,
and the sidecar is brought in step before the commit, as store.mutation does.
Standard library only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from subrosa.errors import InvalidInput
from subrosa.memory import values
from subrosa.memory.project import Project
from subrosa.memory.state import (
    STATE_KEYS,
    record_seen,
    save_state,
    sqlite_database,
    update_state,
)

if TYPE_CHECKING:
    from subrosa.memory.leaf import Leaf

# The facts table's columns (subrosa.models.Fact; a test holds the two together).
COLUMNS = (
    "id",
    "project",
    "slug",
    "path",
    "title",
    "type",
    "description",
    "hook",
    "body",
    "section",
    "pinned",
    "status",
    "archive_reason",
    "archived_at",
    "hits",
    "position",
    "created_at",
    "updated_at",
    "last_hit_at",
    "content_hash",
    "leaf_stat",
)
TIMES = frozenset({"archived_at", "created_at", "updated_at", "last_hit_at"})
NO_BODY = tuple(c for c in COLUMNS if c != "body")


class FactRow(SimpleNamespace):
    """One row of the facts table, with the attributes of subrosa.models.Fact (built by
    SimpleNamespace's C constructor: thousands are made per `generate`)."""

    id: int
    project: str
    slug: str
    path: str
    title: str
    type: str
    description: str
    hook: str
    body: str
    section: str | None
    pinned: bool
    status: str
    archive_reason: str | None
    archived_at: datetime | None
    hits: int
    position: int
    created_at: datetime
    updated_at: datetime
    last_hit_at: datetime | None
    content_hash: str
    leaf_stat: str | None


def to_sql(column: str, value: Any) -> Any:
    """A value as SQLAlchemy stores it in column `column` on SQLite."""
    if column in TIMES and isinstance(value, datetime):
        return (
            f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
        )
    if isinstance(value, bool):
        return int(value)
    return value


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _row(columns: tuple[str, ...], raw: tuple[Any, ...]) -> FactRow:
    data = dict(zip(columns, raw, strict=True))
    for column in TIMES:
        if data[column] is not None:
            data[column] = _time(data[column])
    data["pinned"] = bool(data["pinned"])
    data.setdefault("body", "")
    return FactRow(**data)


# --- the connection ----------------------------------------------------------------------


def database_file(db_url: str) -> Path | None:
    """The SQLite file behind `db_url` when this path may serve it: a plain file URL (no
    query options SQLAlchemy would read) whose schema is the newest, made so here when
    the file is blank; None otherwise (subrosa.memory.store serves it)."""
    from subrosa.paths import sqlite_path
    from subrosa.schema import ensure_current

    path = sqlite_path(db_url)
    if path is None or "?" in db_url or not ensure_current(path):
        return None
    return Path(path)


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection for reads."""
    from subrosa.schema import connect

    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()


# --- reads -------------------------------------------------------------------------------


def _select(columns: tuple[str, ...]) -> str:
    return "SELECT " + ", ".join(columns) + " FROM facts"


def get(conn: sqlite3.Connection, project: Project, slug: str) -> FactRow | None:
    """The fact `slug` of `project`, or None."""
    raw = conn.execute(
        _select(COLUMNS) + " WHERE project = ? AND slug = ?", (project.key, slug)
    ).fetchone()
    return None if raw is None else _row(COLUMNS, raw)


def require(conn: sqlite3.Connection, project: Project, slug: str) -> FactRow:
    fact = get(conn, project, slug)
    if fact is None:
        raise values.no_such_fact(slug, project.memory_dir)
    return fact


def all_without_body(conn: sqlite3.Connection, key: str) -> list[FactRow]:
    """Every fact of the project `key` (a Project.key), its body left out."""
    cursor = conn.execute(_select(NO_BODY) + " WHERE project = ?", (key,))
    return [_row(NO_BODY, raw) for raw in cursor]


def state_rows(conn: sqlite3.Connection, key: str) -> list[dict[str, Any]]:
    """The sidecar's rows as the database has them (subrosa.memory.state writes them)."""
    cursor = conn.execute(
        _select(STATE_KEYS) + " WHERE project = ? ORDER BY position, slug", (key,)
    )
    return [values.state_row(_StateRow(raw)) for raw in cursor]


class _StateRow:
    """A row of STATE_KEYS, with attributes, for values.state_row."""

    def __init__(self, raw: tuple[Any, ...]) -> None:
        for key, value in zip(STATE_KEYS, raw, strict=True):
            setattr(self, key, _time(value) if key in TIMES else value)


def listed_number(conn: sqlite3.Connection, fact: FactRow) -> int:
    """The number `fact list` shows `fact` at: its place among its project's facts of its
    status (store.listed_number's twin)."""
    row = conn.execute(
        "SELECT count(*) FROM facts WHERE project = ? AND status = ?"
        " AND (position < ? OR (position = ? AND slug <= ?))",
        (fact.project, fact.status, fact.position, fact.position, fact.slug),
    ).fetchone()
    return int(row[0])


def max_position(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT max(position) FROM facts WHERE project = ?", (key,)).fetchone()
    return int(row[0] or 0)


# --- writes ------------------------------------------------------------------------------


def insert(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert new facts (each a dict of every column but id), many rows per statement.

    Not executemany: facts_fts is fed by a trigger, and FTS5 flushes its pending index
    at the end of each statement, so 2,000 one-row statements took twice as long as
    40 statements of 50 rows (measured; each statement stays within SQLite's limit on
    bound values, 999 before 3.32)."""
    columns = [c for c in COLUMNS if c != "id"]
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    per_statement = max(1, min(200, limit // len(columns)))
    one = "(" + ", ".join("?" * len(columns)) + ")"
    for start in range(0, len(rows), per_statement):
        batch = rows[start : start + per_statement]
        conn.execute(
            f"INSERT INTO facts ({', '.join(columns)}) VALUES " + ", ".join([one] * len(batch)),
            [to_sql(c, row[c]) for row in batch for c in columns],
        )


def update(conn: sqlite3.Connection, fact_id: int, changes: dict[str, Any]) -> None:
    """Set `changes` (column -> value) on the fact with id `fact_id`."""
    if not changes:
        return
    assignments = ", ".join(f"{column} = ?" for column in changes)
    conn.execute(
        f"UPDATE facts SET {assignments} WHERE id = ?",
        [*(to_sql(c, v) for c, v in changes.items()), fact_id],
    )


def update_many(conn: sqlite3.Connection, column: str, pairs: Iterable[tuple[Any, int]]) -> None:
    """Set `column` to each value on the fact with each id: [(value, id), ...]."""
    conn.executemany(
        f"UPDATE facts SET {column} = ? WHERE id = ?",
        [(to_sql(column, value), fact_id) for value, fact_id in pairs],
    )


def apply(fact: FactRow, changes: dict[str, Any]) -> None:
    """What `update` wrote, on the row in hand too."""
    for column, value in changes.items():
        setattr(fact, column, value)


class Change:
    """The facts of one project in a write transaction, under its lock; the slugs it
    touched have their sidecar lines rewritten before the commit."""

    def __init__(self, conn: sqlite3.Connection, project: Project) -> None:
        self.conn = conn
        self.project = project
        self.touched: set[str] = set()
        self.added: set[str] = set()  # facts this transaction inserted

    def upsert(self, leaf: Leaf, *, hook: str | None, pin: bool | None) -> tuple[str, FactRow]:
        """store.Registrar.upsert, one leaf: (added|updated|restored, the row after)."""
        fact = get(self.conn, self.project, leaf.slug)
        self.touched.add(leaf.slug)
        if fact is None:
            if hook is None:
                raise InvalidInput(f"{leaf.path}: is not registered yet; a new fact needs --hook.")
            position = max_position(self.conn, self.project.key) + 1
            new = values.new_fact_values(
                self.project.key,
                leaf,
                hook=hook,
                pinned=bool(pin),
                position=position,
                now=values.utcnow(),
            )
            insert(self.conn, [new])
            self.added.add(leaf.slug)
            return "added", require(self.conn, self.project, leaf.slug)
        action, changes = values.upsert_values(fact, leaf, hook=hook, pin=pin)
        update(self.conn, fact.id, values.changed(fact, changes))
        apply(fact, changes)
        return action, fact

    def set(self, slug: str, changes_of: Any) -> FactRow:
        """Apply `changes_of(fact)` (a dict of column values) to the fact `slug`."""
        fact = require(self.conn, self.project, slug)
        self.touched.add(slug)
        changes = changes_of(fact)
        update(self.conn, fact.id, values.changed(fact, changes))
        apply(fact, changes)
        return fact

    def write_sidecar(self, *, whole: bool = False) -> list[dict[str, Any]] | None:
        """The sidecar in step with this transaction: the line of each fact it touched
        (state.update_state), or the whole file (`whole`, or no sidecar yet). Returns the
        lines written, or None for the whole file (what state.record_seen takes)."""
        memory_dir = self.project.memory_dir
        lines = [] if whole else [values.state_row(require(self.conn, self.project, slug))
                                  for slug in sorted(self.touched)]  # fmt: skip
        if whole or (lines and not update_state(memory_dir, lines, frozenset(self.added))):
            save_state(memory_dir, state_rows(self.conn, self.project.key))
            return None
        return lines


def has_legacy_rows(conn: sqlite3.Connection, project: Project) -> bool:
    """Whether facts are still filed under the memory dir's path (store.move_legacy_rows)."""
    if project.key == project.path_key:
        return False
    row = conn.execute("SELECT 1 FROM facts WHERE project = ? LIMIT 1", (project.path_key,))
    return row.fetchone() is not None


def move_legacy_rows(conn: sqlite3.Connection, project: Project) -> bool:
    """store.move_legacy_rows' twin: the facts still filed under the memory dir's path
    filed under the project's name (a fact both hold keeps the named row and gains the
    other's hits). Whether any row changed."""
    if not has_legacy_rows(conn, project):
        return False
    named = dict(
        conn.execute("SELECT slug, id FROM facts WHERE project = ?", (project.key,)).fetchall()
    )
    old = conn.execute(
        "SELECT id, slug, hits FROM facts WHERE project = ?", (project.path_key,)
    ).fetchall()
    for fact_id, slug, hits in old:
        twin = named.get(slug)
        if twin is None:
            conn.execute("UPDATE facts SET project = ? WHERE id = ?", (project.key, fact_id))
        else:
            conn.execute("UPDATE facts SET hits = hits + ? WHERE id = ?", (hits, twin))
            conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
    return True


@contextmanager
def change(path: Path, project: Project, *, whole: bool = False) -> Iterator[Change]:
    """A write transaction on the facts of `project` under its lock (store.mutation's
    twin): BEGIN IMMEDIATE, the changes, the sidecar brought in step, COMMIT, and this
    clone's record of the sidecar (state.record_seen)."""
    from subrosa.schema import connect

    with project.lock():
        conn = connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                changing = Change(conn, project)
                moved = move_legacy_rows(conn, project)
                yield changing
                written = changing.write_sidecar(whole=whole or moved)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()
        if written != []:
            record_seen(project.memory_dir, sqlite_database(path), written)
