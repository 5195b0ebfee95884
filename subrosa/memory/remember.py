"""The remember use case: a fact an agent states whole (slug, type, description, body),
written as a leaf in the canonical shape (a leaf already there keeps the frontmatter
lines other than its description and type), registered, and indexed.

The agent's text is untrusted, so it meets exactly what `subrosa fact upsert` applies
to a leaf a person wrote (subrosa.memory.facts.upsert: the strict leaf parser, the
refusal of a secret in the description or hook, the hook sanitized and capped), and a
refusal leaves the memory dir as it was: the leaf is written under the project lock
and put back (or removed) when the upsert refuses it. A few refusals come first, so
that nothing is written for them: a slug that is no plain file name, a description of
several lines or over the hook's cap, and a secret anywhere, the body included (the
leaf sits beside MEMORY.md, which is meant for git; `fact upsert` reads a leaf a
person already saved, so it has no body to refuse).

A new fact's hook is its description; an existing fact keeps the hook it has (a person
may have curated it). Then the index is generated as `subrosa generate` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from subrosa.config import FACT_TYPES, Settings
from subrosa.errors import InvalidInput, NotFound, SubrosaError
from subrosa.lazyre import compile_lazily
from subrosa.memory import facts
from subrosa.memory.generate import run_generate
from subrosa.memory.leaf import MAX_LEAF_BYTES, render_leaf, restore_leaf, write_leaf
from subrosa.memory.marker import INDEX, INDEX_FILES
from subrosa.memory.project import Project
from subrosa.memory.store import HOOK_MAX_CHARS
from subrosa.secrets import find_secret
from subrosa.text import line_break_in

# A slug is a file name in the memory dir and a link target in MEMORY.md: plain ASCII
# letters, digits, `_` and `-`, so no path, dot file, or markup can be spelled in it.
SLUG = compile_lazily(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass
class Remembered:
    """What remember did: the fact, where it landed, and the index after it."""

    action: str  # added | updated | restored
    slug: str
    path: Path
    pinned: bool
    in_index: bool  # listed in MEMORY.md (else in MEMORY_archive.md, below the budget)
    index_written: bool
    index_bytes: int
    index_lines: int
    budget: int
    max_lines: int
    warnings: list[str] = field(default_factory=list)


def check_slug(slug: str) -> str:
    """`slug` (a trailing `.md` dropped) when it can name a leaf; InvalidInput otherwise."""
    slug = slug.strip().removesuffix(".md")
    if not SLUG.fullmatch(slug):
        raise InvalidInput(
            f"slug {slug[:120]!r}: use 1 to 100 ASCII letters, digits, '_' or '-', "
            "starting with a letter or digit (e.g. deploy_needs_vpn)."
        )
    if f"{slug}.md" in INDEX_FILES:
        raise InvalidInput(f"slug {slug!r}: names an index file subrosa generates, not a leaf.")
    return slug


def _refuse_before_writing(fact_type: str, description: str, body: str) -> None:
    if fact_type not in FACT_TYPES:
        raise InvalidInput(f"type {fact_type!r}: expected one of {', '.join(FACT_TYPES)}.")
    if not description.strip():
        raise InvalidInput("description: empty; say in one line what the fact is.")
    if line_break_in(description) is not None:
        raise InvalidInput("description: several lines; it must be one line.")
    if len(description.strip()) > HOOK_MAX_CHARS:
        raise InvalidInput(
            f"description: {len(description.strip())} characters; keep it under 150 "
            f"(at most {HOOK_MAX_CHARS}) and put the detail in the body."
        )
    if not body.strip():
        raise InvalidInput("body: empty; put the fact itself there (why, and how to apply it).")
    for label, text in (("description", description), ("body", body)):
        kind = find_secret(text)
        if kind is not None:
            raise InvalidInput(
                f"the {label} holds a secret ({kind}); the memory dir and MEMORY.md are "
                "meant for git, so it is refused. Say where the secret is kept instead."
            )
    size = len(render_leaf("x", description, fact_type, body).encode("utf-8"))
    if size > MAX_LEAF_BYTES:
        raise InvalidInput(f"body: the leaf would be {size:,} bytes, over {MAX_LEAF_BYTES:,}.")


def remember(
    db_url: str,
    project: Project,
    *,
    slug: str,
    fact_type: str,
    description: str,
    body: str,
    pin: bool,
    settings: Settings,
) -> Remembered:
    """Write the leaf `<slug>.md`, register it (as `fact upsert` would) and generate the
    index. A refusal raises InvalidInput with the memory dir left as it was."""
    slug = check_slug(slug)
    _refuse_before_writing(fact_type, description, body)
    description = description.strip()
    project.memory_dir.mkdir(parents=True, exist_ok=True)
    path = project.memory_dir / f"{slug}.md"
    with project.lock():
        try:
            facts.show(db_url, project, slug)
            hook = None  # a registered fact keeps its hook
        except NotFound:
            hook = description
        previous = write_leaf(path, description, fact_type, body)
        try:
            done = facts.upsert(db_url, project, path.name, hook=hook, pin=pin)
        except BaseException:
            restore_leaf(path, previous)
            raise
        warnings = list(done.warnings)
        try:
            outcome = run_generate(
                db_url,
                project,
                budget=settings.budget,
                max_lines=settings.max_lines,
                weights=settings.type_weights,
            )
        except SubrosaError as exc:
            # The fact is saved and registered; only the index is behind.
            warnings.append(f"{INDEX} was not regenerated: {exc}")
            return Remembered(
                done.action,
                slug,
                path,
                bool(done.fact["pinned"]),
                False,
                False,
                0,
                0,
                settings.budget,
                settings.max_lines,
                warnings,
            )
    plan = outcome.plan
    return Remembered(
        done.action,
        slug,
        path,
        bool(done.fact["pinned"]),
        slug in {entry.slug for entry in plan.included},
        True,
        plan.bytes,
        plan.lines,
        settings.budget,
        settings.max_lines,
        warnings,
    )
