"""The facts as plain records, out of a database and back in (`subrosa export` /
`subrosa import`, composed by subrosa.transfer), on either engine.

A record holds every column but the row id, so what only subrosa knows travels with it:
hook, pin, status and archive reason, curated position and section, hits and the last
hit. Import keys a fact by (project, slug): one the target already has is left as it
is (the target's hook, pin and hits win), so importing twice, or into a database that
already shares the project, adds nothing twice. No memory dir is touched: the next
`generate` in a memory dir of the project reconciles its facts with its leaves and
sidecar, as after any change made elsewhere (docs/sync.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select

from subrosa.db import session_scope
from subrosa.models import Fact

# Every column a record holds, in file order.
FACT_KEYS = tuple(c.name for c in Fact.__table__.columns if c.name != "id")
TIME_KEYS = frozenset(
    c.name for c in Fact.__table__.columns if c.type.python_type is datetime and c.name != "id"
)


def _stored(key: str, value: Any) -> Any:
    """A record's value as the column takes it: a time parsed; NUL as U+FFFD, as every
    fact holds it (PostgreSQL's text cannot hold NUL; subrosa.memory.store)."""
    if key in TIME_KEYS and value is not None:
        return datetime.fromisoformat(value)
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    return value


def _value(key: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if key == "pinned":
        return bool(value)
    return value


def count_facts(engine: Engine, projects: list[str] | None) -> dict[str, int]:
    """How many facts each project has (those of `projects`, or all)."""
    from sqlalchemy import func

    query = select(Fact.project, func.count()).group_by(Fact.project)
    if projects is not None:
        query = query.where(Fact.project.in_(projects))
    with session_scope(engine) as session:
        return {str(p): int(n) for p, n in session.execute(query)}


def read_facts(engine: Engine, projects: list[str] | None) -> Iterator[dict[str, Any]]:
    """Every fact of `projects` (or all) as a record, by project and curated order."""
    columns = [getattr(Fact, key) for key in FACT_KEYS]
    query = select(*columns).order_by(Fact.project, Fact.position, Fact.slug)
    if projects is not None:
        query = query.where(Fact.project.in_(projects))
    with session_scope(engine) as session:
        for row in session.execute(query):
            yield {key: _value(key, value) for key, value in zip(FACT_KEYS, row, strict=True)}


def write_facts(engine: Engine, records: list[dict[str, Any]]) -> tuple[int, int]:
    """Add the facts the target does not have, in one transaction; (added, present)."""
    wanted = {(r["project"], r["slug"]) for r in records}
    projects = {project for project, _ in wanted}
    with session_scope(engine, write=True) as session:
        query = select(Fact.project, Fact.slug).where(Fact.project.in_(projects))
        have = {(str(project), str(slug)) for project, slug in session.execute(query)}
        added = 0
        for record in records:
            key = (record["project"], record["slug"])
            if key in have:
                continue
            have.add(key)
            values = {k: _stored(k, v) for k, v in record.items() if k in FACT_KEYS}
            session.add(Fact(**values))
            added += 1
    return added, len(records) - added
