"""The use cases behind `subrosa fact …`: register a leaf, curate what subrosa knows
about it (hook, pin, status, place), list and show facts, resolve wikilinks.

Each takes plain values (a database URL, a project, the names a user gave) and returns plain
values: a fact as `values.fact_to_dict` shapes it (the `--json` interface), or lists of
them. Changes run under the project lock, with the sidecar lines of the facts they
changed rewritten before the commit.

Upsert, pin, unpin and archive, which the extraction skill runs once per fact, go
through sqlite3 (subrosa.memory.rows) when the database is an SQLite file at the newest
schema, and through SQLAlchemy (subrosa.memory.store) otherwise: this module imports
neither SQLAlchemy nor the store until it needs them, so `subrosa fact upsert` does not
pay ~0.4 s for them. Both ways compute every value with subrosa.memory.values.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from subrosa.errors import InvalidInput
from subrosa.memory import rows, values
from subrosa.memory.leaf import parse_leaf, resolve_leaf_path, subfolder_note
from subrosa.memory.project import Project
from subrosa.secrets import find_secret

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


class Upserted(NamedTuple):
    """A registered or refreshed fact, and the warnings about its leaf and hook."""

    action: str  # added | updated | restored
    fact: dict[str, Any]
    warnings: list[str]
    number: int  # the number `fact list` shows it at (its position counts archived facts)


class Moved(NamedTuple):
    """A moved fact, and the number `fact list` shows it at."""

    fact: dict[str, Any]
    number: int


def upsert(
    db_url: str, project: Project, leaf_arg: str, *, hook: str | None, pin: bool
) -> Upserted:
    """Register the leaf `leaf_arg` (as given, or relative to the memory dir), or refresh
    it; a new fact needs a hook. The leaf is read strictly: a broken one is refused
    before the database is opened."""
    path = resolve_leaf_path(leaf_arg, project.memory_dir)
    leaf = parse_leaf(path)
    _refuse_secrets(path, hook, leaf.description)
    warnings = [f"{path}: {message}" for message in leaf.warnings]
    clean = None
    if hook is not None:
        clean, hook_warnings = values.clean_hook(hook)
        warnings.extend(hook_warnings)
    pinned = True if pin else None
    database = rows.database_file(db_url)
    if database is not None:
        with rows.change(database, project) as change:
            action, row = change.upsert(leaf, hook=clean, pin=pinned)
            number = rows.listed_number(change.conn, row)
        return Upserted(action, values.fact_to_dict(row, project.memory_dir), warnings, number)
    from subrosa.memory import store

    with _orm_mutation(db_url, project) as session:
        action, fact = store.upsert(session, project, leaf, hook=clean, pin=pinned)
        session.flush()
        fact_dict = values.fact_to_dict(fact, project.memory_dir)
        return Upserted(action, fact_dict, warnings, store.listed_number(session, fact))


def _refuse_secrets(path: Path, hook: str | None, description: str) -> None:
    """The hook and the description go into MEMORY.md and the sidecar, both meant for
    git: a secret there would be published with them."""
    for label, text in (("--hook", hook or ""), ("description", description)):
        kind = find_secret(text)
        if kind is not None:
            raise InvalidInput(
                f"{path}: the {label} holds a secret ({kind}); MEMORY.md and "
                ".subrosa/facts.jsonl are meant for git, so it is refused. Keep the secret "
                "out of the leaf and say where it is kept instead."
            )


def slug_for_leaf(leaf_arg: str, registered: Callable[[str], bool] | None = None) -> str:
    """Archive, pin and unpin name a leaf that may be malformed or gone: only its name
    matters (`x.md` and `x` both name the fact `x`); a note in a subfolder is named by its
    path (`notes/x.md` names the fact `notes/x`, when `registered` says there is one)."""
    given = Path(leaf_arg)
    if given.suffix != ".md":
        return leaf_arg
    note = given.as_posix().removeprefix("./")[: -len(".md")]
    if registered is not None and "/" in note and registered(note):
        return note
    return given.stem


def _orm_mutation(db_url: str, project: Project) -> Any:
    """store.mutation on the database at `db_url` (SQLAlchemy, migrated when due)."""
    from subrosa.db import open_database
    from subrosa.memory import store

    return store.mutation(open_database(db_url), project)


def _set(
    db_url: str, project: Project, leaf_arg: str, changes_of: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    """Give the fact of leaf `leaf_arg` (slug_for_leaf) the column values
    `changes_of(fact)`, either way in."""
    database = rows.database_file(db_url)
    if database is not None:
        with rows.change(database, project) as change:
            slug = slug_for_leaf(leaf_arg, lambda s: rows.get(change.conn, project, s) is not None)
            row = change.set(slug, changes_of)
        return values.fact_to_dict(row, project.memory_dir)
    from subrosa.memory import store

    session: Session
    with _orm_mutation(db_url, project) as session:

        def found(slug: str) -> bool:
            return store.get_fact(session, project, slug) is not None

        fact = store.require_fact(session, project, slug_for_leaf(leaf_arg, found))
        for key, value in changes_of(fact).items():
            setattr(fact, key, value)
        return values.fact_to_dict(fact, project.memory_dir)


def archive(db_url: str, project: Project, leaf_arg: str, reason: str | None) -> dict[str, Any]:
    """Archive the fact of leaf `leaf_arg`: it leaves MEMORY.md; the leaf stays on disk."""
    now = values.utcnow()
    return _set(db_url, project, leaf_arg, lambda _: values.archive_values(reason, now))


def set_pinned(db_url: str, project: Project, leaf_arg: str, pinned: bool) -> dict[str, Any]:
    """Pin or unpin the fact of leaf `leaf_arg`."""
    return _set(db_url, project, leaf_arg, lambda _: {"pinned": pinned})


def forget(
    db_url: str, project: Project, slug: str, *, delete_leaf: bool = False
) -> dict[str, Any]:
    """Forget one fact: its row and its sidecar line go; no other fact changes (unlike
    `rebuild`, which loses every fact's hits). Its leaf must be gone already, or
    `delete_leaf` deletes it too: a leaf left on disk would be registered again by the
    next generate. Returns the fact as it was, plus `leaf_deleted`."""
    from subrosa.memory import store

    project.require_dir()
    with _orm_mutation(db_url, project) as session:
        fact = store.require_fact(session, project, slug_for_leaf(slug))
        data = values.fact_to_dict(fact, project.memory_dir)
        leaf = project.memory_dir / fact.path
        present = leaf.is_file() or leaf.is_symlink()
        if present and not delete_leaf:
            raise InvalidInput(
                f"{leaf}: the leaf is still there, and the next generate would register it "
                "again; pass --delete-leaf to delete it too, or archive the fact instead "
                "(`subrosa fact archive`)."
            )
        store.forget(session, project, fact.slug)
        session.flush()
        # A note in a subfolder (`notes/x.md`) is deleted too, when it is one subrosa reads.
        note = "/" in fact.path and subfolder_note(project.memory_dir, fact.path) is not None
        deleted = present and (leaf.parent == project.memory_dir or note)
        if deleted:
            leaf.unlink()
        data["leaf_deleted"] = deleted
        return data


def list_facts(
    db_url: str, project: Project, *, status: str | None, fact_type: str | None
) -> list[dict[str, Any]]:
    """Facts in curated order; `status=None` lists active and archived alike."""
    from subrosa.db import open_database, session_scope
    from subrosa.memory import store

    with session_scope(open_database(db_url)) as session:
        found = store.list_facts(session, project, status=status, fact_type=fact_type)
        return [values.fact_to_dict(row, project.memory_dir) for row in found]


def show(db_url: str, project: Project, slug: str) -> dict[str, Any]:
    """One fact, with when a search last found it."""
    from subrosa.db import open_database, session_scope
    from subrosa.memory import store

    with session_scope(open_database(db_url)) as session:
        row = store.require_fact(session, project, slug)
        data = values.fact_to_dict(row, project.memory_dir)
        data["last_hit_at"] = row.last_hit_at.isoformat() + "Z" if row.last_hit_at else None
        data["number"] = store.listed_number(session, row)
        return data


def move(
    db_url: str,
    project: Project,
    slug: str,
    *,
    before: str | None,
    after: str | None,
    section: str | None,
) -> Moved:
    """Move a fact in the curated order and/or into a section (`""` clears it)."""
    from subrosa.memory import store

    with _orm_mutation(db_url, project) as session:
        row = store.move(session, project, slug, before=before, after=after, section=section)
        session.flush()
        fact = values.fact_to_dict(row, project.memory_dir)
        return Moved(fact, store.listed_number(session, row))


def wikilink_report(memory_dir: Path, slug: str | None) -> list[dict[str, object]]:
    """Each [[wikilink]] of leaf `slug` (None: of every leaf) and the leaf it resolves to
    (None when it dangles)."""
    from subrosa.memory.leaf import list_leaf_files, read_leaf_text
    from subrosa.memory.witness import resolve_wikilink, wikilinks

    files = list_leaf_files(memory_dir)
    stems = {p.stem for p in files}
    targets = files if slug is None else [resolve_leaf_path(f"{slug}.md", memory_dir)]
    root = memory_dir.resolve()
    report: list[dict[str, object]] = []
    for path in targets:
        body = read_leaf_text(memory_dir, path.name, root) or ""
        for target in wikilinks(body):
            resolved = resolve_wikilink(target, stems)
            report.append({"slug": path.stem, "target": target, "resolved": resolved})
    return report
