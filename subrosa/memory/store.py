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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event, func, select
from sqlalchemy.orm import Session, defer

from subrosa.db import session_scope
from subrosa.errors import InvalidInput, NotFound
from subrosa.memory.leaf import Leaf
from subrosa.memory.project import Project as Project  # re-exported: store.Project
from subrosa.memory.state import STATE_KEYS, load_state, save_state, state_path
from subrosa.models import Fact
from subrosa.text import sanitize_field, truncate_bytes

HOOK_WARN_CHARS = 150
HOOK_MAX_CHARS = 300


def utcnow() -> datetime:
    """Now, as naive UTC to the second (how times are stored)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def clean_hook(raw: str, *, strict: bool = True) -> tuple[str, list[str]]:
    """Make a hook one safe line. New input (strict) warns past 150 characters and is
    refused past 300; hooks users already wrote (adopt) are kept whole."""
    hook = sanitize_field(raw)
    warnings: list[str] = []
    if not hook:
        raise InvalidInput("the hook is empty once control characters and markup are removed.")
    if strict and len(hook) > HOOK_MAX_CHARS:
        raise InvalidInput(
            f"the hook is {len(hook)} characters; keep it under {HOOK_WARN_CHARS} "
            f"(at most {HOOK_MAX_CHARS}) and put the detail in the leaf."
        )
    if len(hook) > HOOK_WARN_CHARS:
        warnings.append(f"the hook is {len(hook)} characters; aim for {HOOK_WARN_CHARS} or fewer.")
    return hook, warnings


def hook_from_description(description: str) -> str:
    """The hook a fact gets when it arrives without one: its description, trimmed."""
    hook = sanitize_field(description)
    if len(hook) > HOOK_WARN_CHARS:
        hook = hook[: HOOK_WARN_CHARS - 1].rstrip() + "…"
    return truncate_bytes(hook, 600)


# --- reading ---------------------------------------------------------------


def get_fact(session: Session, project: Project, slug: str) -> Fact | None:
    return session.scalar(select(Fact).where(Fact.project == project.key, Fact.slug == slug))


def require_fact(session: Session, project: Project, slug: str) -> Fact:
    fact = get_fact(session, project, slug)
    if fact is None:
        raise NotFound(
            f"no fact named {slug!r} in {project.memory_dir} (`subrosa fact list --all` "
            "lists them; `subrosa fact upsert SLUG --hook TEXT` registers a leaf)."
        )
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


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() + "Z" if value is not None else None


def fact_to_dict(fact: Fact, memory_dir: Path) -> dict[str, Any]:
    """The `--json` shape of a fact (PRODUCT.md's interface: keep the keys)."""
    return {
        "slug": fact.slug,
        "title": fact.title,
        "type": fact.type,
        "description": fact.description,
        "hook": fact.hook,
        "section": fact.section,
        "pinned": bool(fact.pinned),
        "status": fact.status,
        "archive_reason": fact.archive_reason,
        "archived_at": _iso(fact.archived_at),
        "hits": fact.hits,
        "position": fact.position,
        "path": str(memory_dir / fact.path),
        "created_at": _iso(fact.created_at),
        "updated_at": _iso(fact.updated_at),
    }


# --- writing ---------------------------------------------------------------


def _state_row(fact: Any) -> dict[str, Any]:
    """The sidecar row of a fact (a Fact or a plain row with the same attributes)."""
    row = {key: getattr(fact, key) for key in STATE_KEYS}
    row["pinned"] = bool(row["pinned"])
    row["archived_at"] = _iso(row["archived_at"])
    row["created_at"] = _iso(row["created_at"])
    return row


def state_rows(session: Session, project: Project) -> list[dict[str, Any]]:
    """The sidecar's rows as the database has them."""
    # Plain rows of the sidecar's columns, not Fact objects: with thousands of facts,
    # building ORM instances cost most of the time.
    columns = [getattr(Fact, key) for key in STATE_KEYS]
    query = select(*columns).where(Fact.project == project.key)
    return [_state_row(r) for r in session.execute(query.order_by(Fact.position, Fact.slug))]


def write_state(session: Session, project: Project) -> None:
    """Rewrite the sidecar from the database's rows for this project."""
    save_state(project.memory_dir, state_rows(session, project))


@contextmanager
def mutation(engine: Engine, project: Project) -> Iterator[Session]:
    """A write transaction under the project lock, followed by a sidecar rewrite when it
    changed rows (or the sidecar is missing). A transaction that changed nothing leaves
    the sidecar alone: a sidecar just pulled from git is not overwritten by a stale
    database before `subrosa rebuild` reads it."""
    with project.lock(), session_scope(engine, write=True) as session:
        flushed: list[bool] = []
        event.listen(session, "after_flush", lambda *_: flushed.append(True))
        move_legacy_rows(session, project)
        yield session
        session.flush()
        if flushed or not state_path(project.memory_dir).exists():
            write_state(session, project)


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


def renumber(session: Session, project: Project, ordered: list[Fact] | None = None) -> None:
    """Make positions dense and 1-based, in `ordered` order (default: current order)."""
    facts = ordered if ordered is not None else list_facts(session, project, status=None)
    for index, fact in enumerate(facts, start=1):
        if fact.position != index:
            fact.position = index


def _apply_leaf(fact: Fact, leaf: Leaf, *, keep_title: bool) -> None:
    fact.path = leaf.filename
    fact.type = leaf.type
    fact.description = sanitize_field(leaf.description)
    # PostgreSQL's text cannot hold NUL (SQLite's can): the cached copy gets U+FFFD for
    # it on both engines, so both hold the same. The leaf on disk keeps its bytes.
    fact.body = leaf.body.replace("\x00", "\ufffd")
    fact.content_hash = leaf.content_hash
    fact.updated_at = leaf.mtime.replace(tzinfo=None)
    if not keep_title:
        fact.title = leaf.title


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
                project=self.project.key,
                slug=leaf.slug,
                hook=hook,
                pinned=bool(pin),
                status="active",
                hits=0,
                position=self.next_position,
                created_at=now or utcnow(),
            )
            self.next_position += 1
            _apply_leaf(fact, leaf, keep_title=False)
            self.session.add(fact)
            self.by_slug[leaf.slug] = fact
            return "added", fact
        action = "restored" if fact.status == "archived" else "updated"
        fact.status = "active"
        fact.archive_reason = None
        fact.archived_at = None
        if hook is not None:
            fact.hook = hook
        if pin is not None:
            fact.pinned = pin
        refresh_from_leaf(fact, leaf)
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
    state = state or {}
    # Computed before the new row joins the session: the query would autoflush a row
    # whose position is not set yet.
    if fallback_position is None:
        fallback_position = next_position(session, project) + 10**6
    fact = None if known_new else get_fact(session, project, leaf.slug)
    if fact is None:
        fact = Fact(project=project.key, slug=leaf.slug, hits=0)
    _apply_leaf(fact, leaf, keep_title=False)
    fact.hook = hook_from_description(leaf.description)
    fact.pinned = False
    fact.status = "active"
    fact.position = fallback_position
    fact.created_at = fact.created_at or now
    apply_state(fact, state)
    session.add(fact)
    return fact


def _state_values(state: dict[str, Any]) -> dict[str, Any]:
    """A sidecar row as Fact attributes; keys it does not give usable values for are left out."""
    values: dict[str, Any] = {}
    for key in ("title", "hook"):
        text = sanitize_field(str(state.get(key) or ""))
        if text:
            values[key] = text
    if "section" in state:
        values["section"] = sanitize_field(str(state["section"] or "")) or None
    if "pinned" in state:
        values["pinned"] = bool(state["pinned"])
    if "status" in state:
        archived = state["status"] == "archived"
        values["status"] = "archived" if archived else "active"
        reason = sanitize_field(str(state.get("archive_reason") or "")) or None
        values["archive_reason"] = reason if archived else None
        values["archived_at"] = _parse_time(state.get("archived_at")) if archived else None
    if isinstance(state.get("position"), int):
        values["position"] = state["position"]
    created = _parse_time(state.get("created_at"))
    if created is not None:
        values["created_at"] = created
    return values


def apply_state(fact: Fact, state: dict[str, Any]) -> bool:
    """Take what only subrosa knows from a sidecar row into `fact` (registering from disk,
    or the sidecar changed under the database, e.g. by a git pull). True when it changed."""
    changed = False
    for key, value in _state_values(state).items():
        if getattr(fact, key) != value:
            setattr(fact, key, value)
            changed = True
    return changed


def refresh_from_leaf(fact: Fact, leaf: Leaf) -> None:
    """Take a changed leaf's description, type, body and hash (and its title when the leaf
    names one); what only subrosa knows is kept."""
    _apply_leaf(fact, leaf, keep_title=not leaf.explicit_title)


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.removesuffix("Z"))
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except (ValueError, OverflowError):  # "9999-12-31T23:59:59-14:00" is past year 9999 in UTC
        return None


def archive(
    session: Session, project: Project, slug: str, reason: str | None, now: datetime | None = None
) -> Fact:
    """Soft-delete: the fact leaves the index for the cold tier; the leaf stays on disk."""
    fact = require_fact(session, project, slug)
    fact.status = "archived"
    fact.archive_reason = sanitize_field(reason) if reason else "archived by hand"
    fact.archived_at = now or utcnow()
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
        fact.section = sanitize_field(section) or None
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
