"""The facts store: registering leaves, pins, archive, curated order, and every query
the memory half runs.

Every function takes an open Session and a Project; the use cases (generate, adopt,
review, facts) and doctor open them. Changes go through `mutation()`, which holds the
project lock, commits, and then rewrites the sidecar (subrosa.memory.state) so the
memory dir alone can rebuild the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, event, func, or_, select
from sqlalchemy.orm import Session, defer

from subrosa.db import session_scope
from subrosa.errors import InvalidInput
from subrosa.memory import values
from subrosa.memory.leaf import Leaf
from subrosa.memory.project import Project as Project  # re-exported: store.Project
from subrosa.memory.state import (
    STATE_KEYS,
    load_state,
    record_seen,
    save_state,
    sqlite_database,
    state_path,
    update_state,
)

# Re-exported: the pure rules live in subrosa.memory.values, shared with the DB-API path.
from subrosa.memory.values import HOOK_MAX_CHARS as HOOK_MAX_CHARS
from subrosa.memory.values import HOOK_WARN_CHARS as HOOK_WARN_CHARS
from subrosa.memory.values import clean_hook as clean_hook
from subrosa.memory.values import fact_to_dict as fact_to_dict
from subrosa.memory.values import hook_from_description as hook_from_description
from subrosa.memory.values import utcnow as utcnow
from subrosa.models import Fact

# --- reading ---------------------------------------------------------------


def get_fact(session: Session, project: Project, slug: str) -> Fact | None:
    return session.scalar(select(Fact).where(Fact.project == project.key, Fact.slug == slug))


def require_fact(session: Session, project: Project, slug: str) -> Fact:
    fact = get_fact(session, project, slug)
    if fact is None:
        raise values.no_such_fact(slug, project.memory_dir)
    return fact


def list_facts(
    session: Session,
    project: Project,
    *,
    status: str | None = "active",
    fact_type: str | None = None,
) -> list[Fact]:
    """Facts in curated order; `status=None` lists active and archived alike."""
    query = select(Fact).where(Fact.project == project.key)
    if status is not None:
        query = query.where(Fact.status == status)
    if fact_type is not None:
        query = query.where(Fact.type == fact_type)
    return list(session.scalars(query.order_by(Fact.position, Fact.slug)))


def registered_paths(session: Session, project: Project) -> set[str]:
    """The leaf file names the project's facts are registered under."""
    return set(session.scalars(select(Fact.path).where(Fact.project == project.key)))


def registered_slugs(session: Session, project: Project) -> set[str]:
    """The slugs of the project's facts, active and archived."""
    return set(session.scalars(select(Fact.slug).where(Fact.project == project.key)))


def facts_without_body(session: Session, project: Project) -> list[Fact]:
    """Every fact of the project, its body left unloaded (in no particular order).

    Reconciling with the disk compares hashes, not bodies, and the bodies are the bulk
    of a row; a fact whose leaf changed loads its new body from the leaf anyway.
    """
    query = select(Fact).where(Fact.project == project.key).options(defer(Fact.body))
    return list(session.scalars(query))


def rows_without_body(session: Session, project: Project) -> list[Any]:
    """Every fact of the project as a plain row of every column but the body.

    For generate run again with nothing changed: no ORM objects are built, which with
    thousands of facts was most of the run.
    """
    columns = [getattr(Fact, c.name) for c in Fact.__table__.columns if c.name != "body"]
    query = select(*columns).where(Fact.project == project.key)
    return list(session.execute(query).all())


# --- writing ---------------------------------------------------------------


def state_rows(session: Session, project: Project) -> list[dict[str, Any]]:
    """The sidecar's rows as the database has them."""
    # Plain rows of the sidecar's columns, not Fact objects: with thousands of facts,
    # building ORM instances cost most of the time.
    columns = [getattr(Fact, key) for key in STATE_KEYS]
    query = select(*columns).where(Fact.project == project.key)
    return [values.state_row(r) for r in session.execute(query.order_by(Fact.position, Fact.slug))]


def write_state(session: Session, project: Project) -> None:
    """Rewrite the sidecar from the database's rows for this project."""
    save_state(project.memory_dir, state_rows(session, project))


@contextmanager
def mutation(engine: Engine, project: Project, *, whole: bool = False) -> Iterator[Session]:
    """A write transaction under the project lock, the sidecar brought in step before it
    commits (a kill between the two leaves the sidecar ahead, which generate then takes
    from).

    A change to a few facts (`whole=False`: upsert, pin, archive, move) rewrites only the
    lines of the facts it touched (subrosa.memory.state.update_state), so it does not
    render every fact, and a transaction that changed nothing leaves the sidecar alone: a
    sidecar just pulled from git is not overwritten by a stale database before `subrosa
    rebuild` reads it. `whole` (generate, which has taken the sidecar's values first)
    writes the whole file from the database wherever it differs: one sorted line a fact.
    Once committed, the lines written (or the whole file) are this clone's record of the
    sidecar as it agrees with the database (state.record_seen).
    """
    database = database_of(engine)
    with project.lock():
        with session_scope(engine, write=True) as session:
            touched: set[str] = set()
            added: set[str] = set()  # facts inserted, none of that slug deleted before
            deleted: set[str] = set()

            def note(session: Session, *_: Any) -> None:
                for obj in (*session.new, *session.dirty, *session.deleted):
                    if isinstance(obj, Fact):
                        touched.add(obj.slug)
                deleted.update(obj.slug for obj in session.deleted if isinstance(obj, Fact))
                added.update(obj.slug for obj in session.new if isinstance(obj, Fact))

            event.listen(session, "before_flush", note)
            move_legacy_rows(session, project)
            yield session
            session.flush()
            written: list[dict[str, Any]] | None = []
            if whole or not state_path(project.memory_dir).exists():
                write_state(session, project)
                written = None
            elif touched:
                written = write_state_lines(session, project, touched, frozenset(added - deleted))
        # Committed: the sidecar's lines written agree with the database.
        if written != []:
            record_seen(project.memory_dir, database, written)


def database_of(bind: Engine | Connection) -> str:
    """The database as this clone's record of the sidecar names it (state.seen_path):
    the SQLite file, or the server's host, port and database, whoever connects."""
    url = bind.engine.url
    backend = url.get_backend_name()
    if backend == "sqlite":
        return sqlite_database(url.database or ":memory:")
    host = url.host or str(url.query.get("host") or "")
    return f"{backend}://{host}:{url.port or ''}/{url.database or ''}"


LINES_LIMIT = 500  # more facts changed than this: the whole file, from one query


def write_state_lines(
    session: Session, project: Project, slugs: set[str], added: frozenset[str] = frozenset()
) -> list[dict[str, Any]] | None:
    """The sidecar lines of `slugs` as the database has them now, which it returns; the
    whole file (and None) when a fact is gone (update_state only replaces and adds
    lines) or there are many."""
    if len(slugs) > LINES_LIMIT:
        write_state(session, project)
        return None
    columns = [getattr(Fact, key) for key in STATE_KEYS]
    query = select(*columns).where(Fact.project == project.key, Fact.slug.in_(sorted(slugs)))
    rows = [values.state_row(row) for row in session.execute(query.order_by(Fact.slug))]
    if len(rows) < len(slugs) or not update_state(project.memory_dir, rows, added):
        write_state(session, project)
        return None
    return rows


def move_legacy_rows(session: Session, project: Project) -> int:
    """File the facts still under the memory dir's path (the key before projects had
    names, or before the repository got a remote) under the project's key. A fact both
    keys hold (another clone's, already filed) keeps the filed row and gains the other's
    hits. Returns how many rows moved."""
    if project.key == project.path_key:
        return 0
    old = list(session.scalars(select(Fact).where(Fact.project == project.path_key)))
    if not old:
        return 0
    filed = {f.slug: f for f in session.scalars(select(Fact).where(Fact.project == project.key))}
    moved = 0
    for fact in old:
        twin = filed.get(fact.slug)
        if twin is None:
            fact.project = project.key
            moved += 1
        else:
            twin.hits += fact.hits
            session.delete(fact)
    session.flush()
    return moved


def next_position(session: Session, project: Project) -> int:
    current = session.scalar(select(func.max(Fact.position)).where(Fact.project == project.key))
    return int(current or 0) + 1


def listed_number(session: Session, fact: Fact) -> int:
    """The number `fact list` shows `fact` at: its place among its project's facts of its
    status, in curated order (the positions count the archived facts too)."""
    earlier = or_(
        Fact.position < fact.position,
        and_(Fact.position == fact.position, Fact.slug <= fact.slug),
    )
    query = select(func.count()).where(
        Fact.project == fact.project, Fact.status == fact.status, earlier
    )
    return int(session.scalar(query) or 0)


def renumber(session: Session, project: Project, ordered: list[Fact] | None = None) -> None:
    """Make positions dense and 1-based, in `ordered` order (default: current order)."""
    facts = ordered if ordered is not None else list_facts(session, project, status=None)
    for index, fact in enumerate(facts, start=1):
        if fact.position != index:
            fact.position = index


def _set(fact: Fact, changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        setattr(fact, key, value)


class Registrar:
    """Registers many leaves in one session with two queries in all, not two per leaf.

    Holds the project's facts by slug and the next free position; `upsert` for one
    leaf is the same code with a registrar of its own.
    """

    def __init__(self, session: Session, project: Project) -> None:
        self.session = session
        self.project = project
        with session.no_autoflush:
            self.by_slug = {f.slug: f for f in list_facts(session, project, status=None)}
        self.next_position = max((f.position for f in self.by_slug.values()), default=0) + 1

    def upsert(
        self,
        leaf: Leaf,
        *,
        hook: str | None,
        pin: bool | None = None,
        now: datetime | None = None,
    ) -> tuple[str, Fact]:
        """Register or refresh the fact for `leaf`. Returns (added|updated|restored, fact).

        A new fact needs a hook and joins the end of the curated order; an update keeps
        its place and its hook unless a new one is given; an archived fact is restored.
        """
        fact = self.by_slug.get(leaf.slug)
        if fact is None:
            if hook is None:
                raise InvalidInput(f"{leaf.path}: is not registered yet; a new fact needs --hook.")
            fact = Fact(
                **values.new_fact_values(
                    self.project.key,
                    leaf,
                    hook=hook,
                    pinned=bool(pin),
                    position=self.next_position,
                    now=now or utcnow(),
                )
            )
            self.next_position += 1
            self.session.add(fact)
            self.by_slug[leaf.slug] = fact
            return "added", fact
        action, changes = values.upsert_values(fact, leaf, hook=hook, pin=pin)
        _set(fact, changes)
        return action, fact


def upsert(
    session: Session,
    project: Project,
    leaf: Leaf,
    *,
    hook: str | None,
    pin: bool | None = None,
    now: datetime | None = None,
) -> tuple[str, Fact]:
    """Register or refresh one leaf (see Registrar.upsert)."""
    return Registrar(session, project).upsert(leaf, hook=hook, pin=pin, now=now)


def register_from_disk(
    session: Session,
    project: Project,
    leaf: Leaf,
    state: dict[str, Any] | None,
    *,
    now: datetime | None = None,
    known_new: bool = False,
    fallback_position: int | None = None,
) -> Fact:
    """Register a leaf found on disk, taking what only subrosa knew from the sidecar
    row when there is one (rebuild, and generate's reconcile).

    A fact without a sidecar position goes after every other (`fallback_position`, else
    found by a query). Callers registering many leaves pass `known_new` (no row exists
    yet) and a position, so that no query, and no flush, is issued per leaf.
    """
    now = now or utcnow()
    # Computed before the new row joins the session: the query would autoflush a row
    # whose position is not set yet.
    if fallback_position is None:
        fallback_position = next_position(session, project) + 10**6
    fact = None if known_new else get_fact(session, project, leaf.slug)
    if fact is None:
        fact = Fact(
            **values.registration_values(
                project.key, leaf, state, position=fallback_position, now=now
            )
        )
        session.add(fact)
        return fact
    _set(fact, values.leaf_values(leaf, keep_title=False))
    fact.hook = hook_from_description(leaf.description)
    fact.pinned = False
    fact.status = "active"
    fact.position = fallback_position
    fact.created_at = fact.created_at or now
    apply_state(fact, state or {})
    return fact


def apply_state(fact: Fact, state: dict[str, Any]) -> bool:
    """Take what only subrosa knows from a sidecar row into `fact` (registering from disk,
    or the sidecar changed under the database, e.g. by a git pull). True when it changed."""
    changes = values.changed(fact, values.state_values(state))
    _set(fact, changes)
    return bool(changes)


def refresh_from_leaf(fact: Fact, leaf: Leaf) -> None:
    """Take a changed leaf's description, type, body and hash (and its title when the leaf
    names one); what only subrosa knows is kept."""
    _set(fact, values.refreshed_values(leaf))


def archive(
    session: Session, project: Project, slug: str, reason: str | None, now: datetime | None = None
) -> Fact:
    """Soft-delete: the fact leaves the index for the cold tier; the leaf stays on disk."""
    fact = require_fact(session, project, slug)
    _set(fact, values.archive_values(reason, now))
    return fact


def forget(session: Session, project: Project, slug: str) -> Fact:
    """Delete one fact's row (its sidecar line goes with the mutation's rewrite); no other
    row is touched, hit counts included."""
    fact = require_fact(session, project, slug)
    session.delete(fact)
    return fact


def set_pinned(session: Session, project: Project, slug: str, pinned: bool) -> Fact:
    fact = require_fact(session, project, slug)
    fact.pinned = pinned
    return fact


def move(
    session: Session,
    project: Project,
    slug: str,
    *,
    before: str | None = None,
    after: str | None = None,
    section: str | None = None,
) -> Fact:
    """Move a fact in the curated order and/or into a section (`""` clears it)."""
    fact = require_fact(session, project, slug)
    ordered = [f for f in list_facts(session, project, status=None) if f.slug != slug]
    if section is not None:
        fact.section = values.clean_section(section)
    anchor_slug = before or after
    if anchor_slug is not None:
        if anchor_slug == slug:
            raise InvalidInput(f"cannot move {slug!r} relative to itself.")
        anchor = require_fact(session, project, anchor_slug)
        index = ordered.index(anchor) + (0 if before else 1)
    elif section is not None:
        members = [i for i, f in enumerate(ordered) if f.section == fact.section]
        index = members[-1] + 1 if members else len(ordered)
    else:
        raise InvalidInput("say where to move it: --before, --after or --section.")
    ordered.insert(index, fact)
    renumber(session, project, ordered)
    return fact


def rebuild(session: Session, project: Project, leaves: list[Leaf]) -> list[Fact]:
    """Drop this project's rows and recreate them from the leaves and the sidecar."""
    state = load_state(project.memory_dir)
    for fact in list_facts(session, project, status=None):
        session.delete(fact)
    session.flush()
    facts = [
        register_from_disk(
            session, project, leaf, state.get(leaf.slug), known_new=True, fallback_position=10**9
        )
        for leaf in leaves
    ]
    facts.sort(key=lambda f: (f.position, f.slug))
    renumber(session, project, facts)
    return facts
