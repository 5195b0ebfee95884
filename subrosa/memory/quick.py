"""generate's quick path: the facts brought in step with the leaves through sqlite3,
when nothing needs a take-over.

Most runs of `generate` find little or nothing changed: the same leaves, perhaps a few
edited or added, the index files as subrosa last wrote them, the sidecar as the
database has it. This path does that reconcile on an SQLite file at the newest schema
(subrosa.memory.rows) without SQLAlchemy, whose import alone cost more than the rest:

  - a stat per leaf: a leaf whose size, mtime and inode are those recorded when it was
    last hashed (facts.leaf_stat, subrosa.memory.leaf.stat_key) is not read; one whose
    stat changed is hashed, and parsed only when its hash changed too;
  - leaves nobody registered are registered in one statement, with the values a
    take-over gives them (subrosa.memory.values.registration_values), and the curated
    order made dense again, as takeover._place does;
  - lines of its own the sidecar holds for new facts are used, as take_over uses them.

It gives up (None), having written nothing, whenever the full take-over
(subrosa.memory.takeover) has work this path does not do: an index file someone else
wrote to since the last run, MEMORY.md not subrosa's, a sidecar changed under the
database (a git pull), a new leaf whose slug a fact already has, a note in a subfolder
that only the sidecar names (a clone's). Tests run generate both ways over the same
changes and compare the rows, files and report.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from subrosa.errors import LeafError
from subrosa.fsutil import read_text_if_exists
from subrosa.memory import generator, rows, values
from subrosa.memory.leaf import (
    content_hash,
    leaf_names,
    parse_leaf_lenient,
    parse_note,
    stat_key,
    subfolder_note,
)
from subrosa.memory.marker import ARCHIVE, INDEX, foreign_index
from subrosa.memory.project import Project
from subrosa.memory.report import Report
from subrosa.memory.state import (
    load_state,
    read_last_index,
    record_seen,
    render_state,
    save_state,
    sqlite_database,
    state_path,
)

Reconciled = tuple[Report, list[generator.Entry]]


def reconcile(path: Path, project: Project, *, dry_run: bool) -> Reconciled | None:
    """The facts of `project` in step with its leaves (written unless `dry_run`), and every
    fact as an entry; None when the full take-over must run instead. The caller holds the
    project lock."""
    memory_dir = project.memory_dir
    if foreign_index(memory_dir) is not None or _lines_to_take_over(memory_dir):
        return None
    from subrosa.schema import connect

    conn = connect(path)
    try:
        if rows.has_legacy_rows(conn, project):
            return None  # store.mutation files them under the project's name first
        return _Run(conn, project, path).reconcile(dry_run)
    finally:
        conn.close()


def _lines_to_take_over(memory_dir: Path) -> bool:
    """Whether an index file holds anything subrosa did not write there last."""
    for name in (INDEX, ARCHIVE):
        text = read_text_if_exists(memory_dir / name)
        if text is not None and text != read_last_index(memory_dir, name):
            return True
    return False


def _raw_stat(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


class _Run:
    """One reconcile: the facts as the database has them, and what the disk changes."""

    def __init__(self, conn: sqlite3.Connection, project: Project, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.project = project
        self.key = project.key
        self.facts = rows.all_without_body(conn, self.key)
        self.report = Report()
        self.stats: list[tuple[str | None, int]] = []  # (leaf_stat, id): stat only
        self.refreshed: list[tuple[rows.FactRow, dict[str, Any]]] = []
        self.new: list[dict[str, Any]] = []
        # The sidecar as save_state would write it from the database, and as it is.
        self.state_text = render_state([values.state_row(f) for f in self.facts])
        self.sidecar_text = read_text_if_exists(state_path(project.memory_dir))

    def reconcile(self, dry_run: bool) -> Reconciled | None:
        by_path = {fact.path: fact for fact in self.facts}
        if len(by_path) != len(self.facts):
            return None  # two facts for one file: the take-over sorts that out
        sidecar = self._sidecar_rows()
        if sidecar is None:
            return None
        if not self._read_leaves(by_path, sidecar.get):
            return None
        unreadable = {name for name, _ in self.report.unreadable}
        present = self.report.present
        self.report.missing = sorted(
            f.slug for f in self.facts if f.path not in present and f.path not in unreadable
        )
        if not dry_run:
            self._write()
            # The sidecar now agrees with the database: this clone's record of it.
            record_seen(self.project.memory_dir, sqlite_database(self.path))
        facts = self._after()
        self.report.facts = [f for f in facts if f.path in present]
        return self.report, [values.entry_for(f) for f in self.report.facts]

    # -- the sidecar ------------------------------------------------------------------

    def _sidecar_rows(self) -> dict[str, dict[str, Any]] | None:
        """The sidecar's rows for facts not registered yet (a clone's, say), or None when
        it was changed under the database: its values for a registered fact are not the
        database's (take_over would take them: the full path runs)."""
        if self.sidecar_text is None or self.sidecar_text == self.state_text:
            return {}
        state = load_state(self.project.memory_dir)  # a broken one raises, as take_over's
        for fact in self.facts:
            row = state.get(fact.slug)
            if row is not None and values.changed(fact, values.state_values(row)):
                return None
        registered = {fact.slug for fact in self.facts}
        if any("/" in slug and slug not in registered for slug in state):
            return None  # a note in a subfolder only the sidecar names: take_over finds it
        return state

    # -- the leaves -------------------------------------------------------------------

    def _files(self, by_path: dict[str, rows.FactRow]) -> list[str]:
        """The leaves on disk, and the notes in subfolders facts are registered under
        (`notes/x.md`) that are there, in the take-over's order (takeover.files_on_disk)."""
        memory_dir = self.project.memory_dir
        names = leaf_names(memory_dir)
        notes = [path for path in by_path if "/" in path]
        if not notes:
            return names
        root = memory_dir.resolve()
        names += [rel for rel in notes if subfolder_note(memory_dir, rel, root) is not None]
        return sorted(names)

    def _read_leaves(self, by_path: dict[str, rows.FactRow], sidecar: Any) -> bool:
        """Stat every leaf; hash those whose stat changed, parse those whose hash did.
        False when a new leaf's slug is already a fact's (under another file name)."""
        memory_dir = self.project.memory_dir
        directory = str(memory_dir)
        slugs = {fact.slug for fact in self.facts}
        last_position = max((f.position for f in self.facts), default=0) + 10**6
        now = values.utcnow()
        for name in self._files(by_path):
            fact = by_path.get(name)
            try:
                st = os.stat(os.path.join(directory, name))
                if fact is not None and fact.leaf_stat == _raw_stat(st):
                    self.report.present.add(name)
                    continue
                with open(os.path.join(directory, name), "rb") as handle:
                    raw = handle.read()
            except OSError as exc:
                self.report.unreadable.append((name, f"cannot be read ({exc.strerror})"))
                continue
            if fact is not None and fact.content_hash == content_hash(raw):
                self.report.present.add(name)
                if stat_key(st) != fact.leaf_stat:
                    self.stats.append((stat_key(st), fact.id))
                continue
            path = memory_dir / name
            try:
                if "/" in name:  # a registered note: it is never new here
                    leaf = parse_note(memory_dir, name, read=(raw, st))
                else:
                    leaf = parse_leaf_lenient(path, (raw, st))
            except LeafError as exc:
                self.report.unreadable.append((name, exc.problem))
                continue
            self.report.present.add(name)
            self.report.warnings.extend(f"{path}: {w}" for w in leaf.warnings)
            if fact is not None:
                self.refreshed.append((fact, values.refreshed_values(leaf)))
                self.report.refreshed.append(fact.slug)
                continue
            if leaf.slug in slugs:
                return False
            slugs.add(leaf.slug)
            position = last_position + len(self.new) + 1
            self.new.append(
                values.registration_values(
                    self.key, leaf, sidecar(leaf.slug), position=position, now=now
                )
            )
            self.report.adopted.append(leaf.slug)
        return True

    # -- writing ----------------------------------------------------------------------

    def _write(self) -> None:
        """One write transaction for what changed, the sidecar in step before it commits
        (as store.mutation(whole=True) does); nothing when nothing changed."""
        # A refreshed leaf changes its sidecar line only when its title changed.
        retitled = any(
            fact.title != changes.get("title", fact.title) for fact, changes in self.refreshed
        )
        sidecar_due = bool(self.new) or retitled or self.sidecar_text != self.state_text
        if not (self.stats or sidecar_due):
            return
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows.update_many(conn, "leaf_stat", self.stats)
            for fact, changes in self.refreshed:
                rows.update(conn, fact.id, values.changed(fact, changes))
            rows.insert(conn, self.new)
            if self.new:
                self._renumber()
            if sidecar_due:
                save_state(self.project.memory_dir, rows.state_rows(conn, self.key))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _renumber(self) -> None:
        """Positions dense and 1-based in (position, slug) order, every fact of the
        project, archived ones too (store.renumber, after new facts joined the end)."""
        ordered = self.conn.execute(
            "SELECT id, position FROM facts WHERE project = ? ORDER BY position, slug",
            (self.key,),
        ).fetchall()
        moved = [(index, fid) for index, (fid, pos) in enumerate(ordered, 1) if pos != index]
        rows.update_many(self.conn, "position", moved)

    # -- the facts after ----------------------------------------------------------------

    def _after(self) -> list[rows.FactRow]:
        """Every fact as it is now (or, in a dry run, would be)."""
        for fact, changes in self.refreshed:
            rows.apply(fact, changes)
        facts = list(self.facts)
        for number, new in enumerate(self.new, start=1):
            facts.append(rows.FactRow(id=-number, **new))
        if self.new:
            ordered = sorted(facts, key=lambda f: (f.position, f.slug))
            for index, fact in enumerate(ordered, start=1):
                fact.position = index
        return facts
