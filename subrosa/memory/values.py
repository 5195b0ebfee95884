"""A fact as plain values: what a leaf, a sidecar row or a `fact` command makes of its
row, and what the row shows as (`--json`, the sidecar). Pure; standard library only.

The facts table is written by two paths: SQLAlchemy (subrosa.memory.store: every
engine, and every use case) and the DB-API (subrosa.memory.rows: SQLite only, for the
commands the extraction skill runs once per fact and for `generate`, which must not
pay ~0.4 s to import SQLAlchemy). Both take every column value from here, so they
cannot come to disagree on what an upsert, a pin or a leaf changed on disk means.
A fact here is any object with the model's attributes: an ORM Fact or a rows.FactRow.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subrosa.errors import InvalidInput, NotFound
from subrosa.memory.state import STATE_KEYS
from subrosa.text import sanitize_field, truncate_bytes

if TYPE_CHECKING:
    from subrosa.memory.generator import Entry
    from subrosa.memory.leaf import Leaf

HOOK_WARN_CHARS = 150
HOOK_MAX_CHARS = 300
# A section name is a `## NAME` heading in MEMORY.md, paid for from its budget: a name of
# thousands of characters would keep every fact under it out of the index.
SECTION_MAX_CHARS = 100


def utcnow() -> datetime:
    """Now, as naive UTC to the second (how times are stored)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def iso(value: datetime | None) -> str | None:
    """A stored time as the interface shows it: ISO 8601 with a Z."""
    return value.isoformat() + "Z" if value is not None else None


def parse_time(value: object) -> datetime | None:
    """A time from a sidecar row (ISO 8601, any zone) as stored, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.removesuffix("Z"))
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except (ValueError, OverflowError):  # "9999-12-31T23:59:59-14:00" is past year 9999 in UTC
        return None


def no_such_fact(slug: str, memory_dir: Path) -> NotFound:
    """The error for a slug no fact of the memory dir has, saying how to find one."""
    return NotFound(
        f"no fact named {slug!r} in {memory_dir} (`subrosa fact list --all` "
        "lists them; `subrosa fact upsert SLUG --hook TEXT` registers a leaf)."
    )


# --- hooks ----------------------------------------------------------------------------


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


def clean_section(raw: str) -> str | None:
    """A new section name as one safe line (None: no section), refused past 100
    characters; names already given (a sidecar, an adopted index) are kept whole."""
    section = sanitize_field(raw) or None
    if section is not None and len(section) > SECTION_MAX_CHARS:
        raise InvalidInput(
            f"the section name is {len(section):,} characters; keep it to at most "
            f"{SECTION_MAX_CHARS} (it is a `## NAME` heading in MEMORY.md)."
        )
    return section


def hook_from_description(description: str) -> str:
    """The hook a fact gets when it arrives without one: its description, trimmed."""
    hook = sanitize_field(description)
    if len(hook) > HOOK_WARN_CHARS:
        hook = hook[: HOOK_WARN_CHARS - 1].rstrip() + "…"
    return truncate_bytes(hook, 600)


# --- what a row shows as -----------------------------------------------------------------


def fact_to_dict(fact: Any, memory_dir: Path) -> dict[str, Any]:
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
        "archived_at": iso(fact.archived_at),
        "hits": fact.hits,
        "position": fact.position,
        "path": str(memory_dir / fact.path),
        "created_at": iso(fact.created_at),
        "updated_at": iso(fact.updated_at),
    }


def entry_for(fact: Any) -> Entry:
    """A fact as the generator sees it."""
    from subrosa.memory.generator import Entry

    return Entry(
        slug=fact.slug,
        filename=fact.path,
        title=fact.title,
        hook=fact.hook,
        type=fact.type,
        updated_at=fact.updated_at,
        position=fact.position,
        section=fact.section,
        pinned=bool(fact.pinned),
        archived=fact.status == "archived",
        archive_reason=fact.archive_reason,
        archived_at=fact.archived_at,
        hits=fact.hits,
    )


def state_row(fact: Any) -> dict[str, Any]:
    """The sidecar row of a fact (subrosa.memory.state writes it)."""
    row = {key: getattr(fact, key) for key in STATE_KEYS}
    row["pinned"] = bool(row["pinned"])
    row["archived_at"] = iso(row["archived_at"])
    row["created_at"] = iso(row["created_at"])
    return row


# --- what changes a row ----------------------------------------------------------------


def leaf_values(leaf: Leaf, *, keep_title: bool) -> dict[str, Any]:
    """What a leaf says of its fact: path, type, description, body, hash, the time it
    changed (and its title unless `keep_title`)."""
    values: dict[str, Any] = {
        "path": leaf.filename,
        "type": leaf.type,
        "description": sanitize_field(leaf.description),
        # PostgreSQL's text cannot hold NUL (SQLite's can): the cached copy gets U+FFFD
        # for it on both engines, so both hold the same. The leaf on disk keeps its bytes.
        "body": leaf.body.replace("\x00", "\ufffd"),
        "content_hash": leaf.content_hash,
        "updated_at": leaf.mtime.replace(tzinfo=None),
        "leaf_stat": leaf.stat,
    }
    if not keep_title:
        values["title"] = leaf.title
    return values


def refreshed_values(leaf: Leaf) -> dict[str, Any]:
    """A changed leaf's description, type, body and hash (and its title when the leaf
    names one); what only subrosa knows is kept."""
    return leaf_values(leaf, keep_title=not leaf.explicit_title)


def new_fact_values(
    project_key: str, leaf: Leaf, *, hook: str, pinned: bool, position: int, now: datetime
) -> dict[str, Any]:
    """Every column of a fact registered by `fact upsert` (it joins the end of the order)."""
    return {
        "project": project_key,
        "slug": leaf.slug,
        "hook": hook,
        "section": None,
        "pinned": pinned,
        "status": "active",
        "archive_reason": None,
        "archived_at": None,
        "hits": 0,
        "position": position,
        "created_at": now,
        "last_hit_at": None,
        **leaf_values(leaf, keep_title=False),
    }


def upsert_values(
    fact: Any, leaf: Leaf, *, hook: str | None, pin: bool | None
) -> tuple[str, dict[str, Any]]:
    """`fact upsert` of a registered fact: (updated | restored, the values it gets). It
    keeps its place, and its hook and pin unless new ones are given; an archived fact
    is restored."""
    action = "restored" if fact.status == "archived" else "updated"
    values: dict[str, Any] = {"status": "active", "archive_reason": None, "archived_at": None}
    if hook is not None:
        values["hook"] = hook
    if pin is not None:
        values["pinned"] = pin
    values.update(refreshed_values(leaf))
    return action, values


def archive_values(reason: str | None, now: datetime | None = None) -> dict[str, Any]:
    """Soft-delete: the fact leaves the index for the cold tier; the leaf stays on disk."""
    return {
        "status": "archived",
        "archive_reason": sanitize_field(reason) if reason else "archived by hand",
        "archived_at": now or utcnow(),
    }


def registration_values(
    project_key: str,
    leaf: Leaf,
    state: dict[str, Any] | None,
    *,
    position: int,
    now: datetime,
    created_at: datetime | None = None,
) -> dict[str, Any]:
    """Every column of a fact registered from a leaf found on disk (generate, rebuild):
    hook from its description, after every other fact (`position`), unless its sidecar
    row says otherwise."""
    values: dict[str, Any] = {
        "project": project_key,
        "slug": leaf.slug,
        "hits": 0,
        "section": None,
        "archive_reason": None,
        "archived_at": None,
        "last_hit_at": None,
        **leaf_values(leaf, keep_title=False),
        "hook": hook_from_description(leaf.description),
        "pinned": False,
        "status": "active",
        "position": position,
        "created_at": created_at or now,
    }
    values.update(state_values(state or {}))
    return values


def state_values(state: dict[str, Any]) -> dict[str, Any]:
    """A sidecar row as column values; keys it gives no usable value for are left out."""
    values: dict[str, Any] = {}
    for key in ("title", "hook"):
        text = sanitize_field(str(state.get(key) or ""))
        if text:
            values[key] = text
    # A value of the wrong kind (a hand-resolved merge: `"pinned": "no"`) is no value.
    if "section" in state and isinstance(state["section"], str | None):
        values["section"] = sanitize_field(state["section"] or "") or None
    if isinstance(state.get("pinned"), bool):
        values["pinned"] = state["pinned"]
    if "status" in state:
        archived = state["status"] == "archived"
        values["status"] = "archived" if archived else "active"
        reason = sanitize_field(str(state.get("archive_reason") or "")) or None
        values["archive_reason"] = reason if archived else None
        values["archived_at"] = parse_time(state.get("archived_at")) if archived else None
    if isinstance(state.get("position"), int):
        values["position"] = state["position"]
    created = parse_time(state.get("created_at"))
    if created is not None:
        values["created_at"] = created
    return values


def changed(fact: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The part of `values` that differs from what `fact` holds."""
    return {key: value for key, value in values.items() if getattr(fact, key) != value}
