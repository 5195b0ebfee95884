"""Ranking, budget packing and rendering of the two index files. Pure: values in, values out.

MEMORY.md (the hot tier) holds the facts that rank highest and fit the byte budget and
the line cap, displayed in curated order; MEMORY_archive.md (the cold tier) holds every
other leaf exactly once, so the witness passes by construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NamedTuple
from urllib.parse import quote

from subrosa.errors import InvalidInput
from subrosa.lazyre import compile_lazily
from subrosa.memory.leaf import humanize
from subrosa.memory.marker import ARCHIVE, HEADER_TAG, INDEX
from subrosa.text import escape_link_text, sanitize_field

# The heading archived facts are listed under (the take-over reads it back).
ARCHIVED_SECTION = "Archived"

INDEX_HEADER = (
    f"# Memory index ({HEADER_TAG}: do not edit by hand; run `subrosa generate`)\n"
    f"One line per fact; the rest, one hop away: [{ARCHIVE}]({ARCHIVE})\n"
)
ARCHIVE_HEADER = (
    f"# Memory archive ({HEADER_TAG}: do not edit by hand; run `subrosa generate`)\n"
    f"Facts not in [{INDEX}]({INDEX}): below its budget (most important first), "
    "then archived ones.\n"
)
# Characters that would end or break a Markdown link target; the witness unquotes.
# `#` and `?` would cut the target at a fragment or query, `:` make it read as a URL
# scheme, a backtick open a code span; other characters that are not printable
# (U+2028, \x85, bidi overrides) are encoded as UTF-8 bytes.
_ENCODE = {c: f"%{ord(c):02X}" for c in " %()<>[]\\\t\n\r#?:`"}
_CLOSING_HASHES = compile_lazily(r"(?:^|\s+)#+$")
_NEEDS_ENCODING = compile_lazily("[" + re.escape("".join(_ENCODE)) + "]")


@dataclass(frozen=True)
class Entry:
    """What the generator needs to know about one fact."""

    slug: str
    filename: str
    title: str
    hook: str
    type: str
    updated_at: datetime
    position: int
    section: str | None = None
    pinned: bool = False
    archived: bool = False
    archive_reason: str | None = None
    archived_at: datetime | None = None
    hits: int = 0


class TooLong(NamedTuple):
    """A fact no rank brings into MEMORY.md: its line (`section` None) or, when the line
    alone would fit, its section heading is more than the budget has room for."""

    slug: str
    line_bytes: int
    section: str | None = None


@dataclass
class Plan:
    """The result: who went where, and the text of both files."""

    included: list[Entry]
    below_budget: list[Entry]
    archived: list[Entry]
    pinned_left_out: list[Entry]
    memory_md: str
    archive_md: str
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    # The hot tier again, in rank order (pinned first): what to keep when MEMORY.md must
    # be cut shorter (the SessionStart hook's context cap).
    ranked: list[Entry] = field(default_factory=list)
    # Facts whose line and heading are more than MEMORY.md's budget leaves for one (a
    # title or a section name of thousands of characters). No rank brings them in; they
    # stay in the cold tier, and generate names them and what to shorten.
    too_long: list[TooLong] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return len(self.memory_md.encode("utf-8"))

    @property
    def lines(self) -> int:
        return self.memory_md.count("\n")


def link_target(filename: str) -> str:
    """A filename as a Markdown link target (the few breaking characters percent-encoded)."""
    if _NEEDS_ENCODING.search(filename) is None and filename.isprintable():
        return filename
    return "".join(
        _ENCODE.get(c) or (c if c.isprintable() else quote(c, safe="")) for c in filename
    )


def index_line(entry: Entry, suffix: str = "") -> str:
    """`- [Title](file.md) — hook`: title and hook sanitized so they add no line or link
    (brackets kept: escaped in the title, broken apart where they would link in the hook)."""
    title = escape_link_text(sanitize_field(entry.title) or humanize(entry.slug))
    hook = sanitize_field(entry.hook + suffix)
    line = f"- [{title}]({link_target(entry.filename)})"
    return f"{line} — {hook}" if hook else line


def section_name(entry: Entry) -> str | None:
    """The heading a fact is shown under; a trailing ` #` run would read as Markdown's
    closing sequence, so it is dropped."""
    if not entry.section:
        return None
    return _CLOSING_HASHES.sub("", sanitize_field(entry.section)) or None


def _overhead(section: str | None) -> tuple[int, int]:
    """Bytes and lines a block costs before its first line: a blank line (and a heading)."""
    if section is None:
        return 1, 1
    return 1 + len(f"## {section}\n".encode()), 2


def rank_key(entry: Entry, weights: Mapping[str, int]) -> tuple[int, int, float, int, str]:
    """Pinned first, then type weight, then the newest change, then most hits; ties by slug."""
    return (
        0 if entry.pinned else 1,
        -weights.get(entry.type, 0),
        -_ts(entry.updated_at),
        -entry.hits,
        entry.slug,
    )


def select(
    ranked: list[Entry], budget: int, max_lines: int, lines: Mapping[str, str] | None = None
) -> tuple[set[str], list[Entry]]:
    """Walk the ranking and take each fact whose line still fits; repeat until nothing more
    fits (a heading paid for by a later fact can make room for an earlier one). Returns the
    slugs taken and the pinned facts left out."""
    used_bytes = len(INDEX_HEADER.encode())
    used_lines = INDEX_HEADER.count("\n")
    if used_bytes > budget or used_lines > max_lines:
        raise InvalidInput(
            f"the budget must leave room for the {used_bytes}-byte, {used_lines}-line header; "
            "raise --budget or --max-lines."
        )
    taken: set[str] = set()
    paid: set[str | None] = set()
    lines = lines if lines is not None else {e.slug: index_line(e) for e in ranked}
    costs = {e.slug: len(lines[e.slug].encode()) + 1 for e in ranked}
    changed = True
    while changed:
        changed = False
        for entry in ranked:
            if entry.slug in taken:
                continue
            section = section_name(entry)
            extra_bytes, extra_lines = (0, 0) if section in paid else _overhead(section)
            cost_bytes = costs[entry.slug] + extra_bytes
            if used_bytes + cost_bytes <= budget and used_lines + 1 + extra_lines <= max_lines:
                taken.add(entry.slug)
                paid.add(section)
                used_bytes += cost_bytes
                used_lines += 1 + extra_lines
                changed = True
    return taken, [e for e in ranked if e.pinned and e.slug not in taken]


def render_index(included: list[Entry], lines: Mapping[str, str] | None = None) -> str:
    """MEMORY.md: the header, unsectioned facts, then each section, all in curated order."""
    blocks: dict[str | None, list[Entry]] = {None: []}
    for entry in sorted(included, key=lambda e: (e.position, e.slug)):
        blocks.setdefault(section_name(entry), []).append(entry)
    parts = [INDEX_HEADER]
    for section, members in blocks.items():
        if not members:
            continue
        parts.append("\n" if section is None else f"\n## {section}\n")
        parts.extend((lines[e.slug] if lines else index_line(e)) + "\n" for e in members)
    return "".join(parts)


def _archived_suffix(entry: Entry) -> str:
    when = entry.archived_at.date().isoformat() if entry.archived_at else "undated"
    reason = sanitize_field(entry.archive_reason or "") or "no reason given"
    return f" (archived {when}: {reason})"


def render_archive(
    below: list[Entry],
    archived: list[Entry],
    unreadable: Iterable[tuple[str, str]] = (),
    lines: Mapping[str, str] | None = None,
) -> str:
    """MEMORY_archive.md: facts below the budget in rank order, archived ones, unreadable leaves."""
    parts = [ARCHIVE_HEADER]
    if below:
        parts.append("\n## Below budget\n")
        parts.extend((lines[e.slug] if lines else index_line(e)) + "\n" for e in below)
    if archived:
        parts.append(f"\n## {ARCHIVED_SECTION}\n")
        parts.extend(index_line(e, _archived_suffix(e)) + "\n" for e in archived)
    unreadable = list(unreadable)
    if unreadable:
        parts.append("\n## Unreadable leaves\n")
        for filename, problem in unreadable:
            shown = escape_link_text(sanitize_field(filename))
            parts.append(f"- [{shown}]({link_target(filename)}) — ")
            parts.append(f"{sanitize_field(problem)}\n")
    return "".join(parts)


def plan(
    entries: Iterable[Entry],
    *,
    budget: int,
    max_lines: int,
    weights: Mapping[str, int],
    unreadable: Iterable[tuple[str, str]] = (),
) -> Plan:
    """Select, then render both files. Deterministic: the same entries give the same bytes."""
    entries = list(entries)
    active = [e for e in entries if not e.archived]
    archived_entries = [e for e in entries if e.archived]
    ranked = sorted(active, key=lambda e: rank_key(e, weights))
    lines = {e.slug: index_line(e) for e in ranked}
    taken, pinned_left_out = select(ranked, budget, max_lines, lines)
    included = sorted((e for e in ranked if e.slug in taken), key=lambda e: (e.position, e.slug))
    below = [e for e in ranked if e.slug not in taken]
    too_long = [
        TooLong(e.slug, len(lines[e.slug].encode()), _heading_to_blame(e, lines[e.slug], budget))
        for e in below
        if not fits_alone(e, lines[e.slug], budget)
    ]
    archived_sorted = sorted(
        archived_entries,
        key=lambda e: (-(_ts(e.archived_at)), e.slug),
    )
    unreadable = sorted(unreadable)
    return Plan(
        included=included,
        below_budget=below,
        archived=archived_sorted,
        pinned_left_out=pinned_left_out,
        memory_md=render_index(included, lines),
        archive_md=render_archive(below, archived_sorted, unreadable, lines),
        unreadable=unreadable,
        ranked=[e for e in ranked if e.slug in taken],
        too_long=too_long,
    )


def fits_alone(entry: Entry, line: str, budget: int) -> bool:
    """Whether `line` (`entry`'s) is short enough for a MEMORY.md of `budget` bytes
    holding nothing else: a line too long to fit is the line's to shorten. (A --max-lines
    too small for the header and one line leaves every fact below the budget, none of
    them too long: that is the cap's doing, not the line's.)"""
    extra_bytes, _ = _overhead(section_name(entry))
    return len(INDEX_HEADER.encode()) + extra_bytes + len(line.encode()) + 1 <= budget


def _heading_to_blame(entry: Entry, line: str, budget: int) -> str | None:
    """The section name of a fact that does not fit alone, when its line would fit
    without the heading: the name is what to shorten, not the line."""
    section = section_name(entry)
    if section is None or not fits_alone(replace(entry, section=None), line, budget):
        return None
    return section


def _ts(value: datetime | None) -> float:
    if value is None:
        return 0.0
    return (value.replace(tzinfo=None) - datetime(1970, 1, 1)).total_seconds()
