"""Index files as others write them: each line that links topic files, or is a bullet.

Pure: text in, IndexLine values out. MEMORY.md is written by people and by Claude
Code's auto memory as well as by subrosa, so the reader is tolerant (other
separators, no hook, a link in the middle, emphasis, no link at all) and never drops
a line it cannot place. The link grammar is the witness's (subrosa.memory.witness),
so what the take-over reads as a link is what `subrosa check` counts as one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from subrosa.memory.marker import INDEX_FILES
from subrosa.memory.witness import load as load_witness
from subrosa.text import sanitize_line

_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
# A closing run of #s counts only after a space (CommonMark): "## C#" is the section "C#".
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_SEPARATOR = re.compile(r"^\s*(?:—|–|--|-|:|;|,|\||=>|->)\s*")
_EMPHASIS = re.compile(r"(?:\*\*|__|\*|_)?")
# What generator.render_archive appends to an archived fact's line.
_ARCHIVED_SUFFIX = re.compile(r"\s*\(archived (?:\d{4}-\d{2}-\d{2}|undated): (.*)\)\s*$")


@dataclass(frozen=True)
class IndexLine:
    """One line of an index file that links topic files or is a bullet."""

    number: int
    text: str
    section: str | None
    targets: tuple[str, ...]
    title: str | None
    hook: str
    bullet: bool


def _flatten_links(text: str) -> str:
    """`see [x](x.md)` -> `see x`."""
    link = load_witness().LINK
    return str(link.sub(lambda m: m.group(0)[1 : m.group(0).index("](")], text))


def parse_line(number: int, raw: str, section: str | None) -> IndexLine | None:
    """Read one index line in the wild: `- [Title](file.md) — hook` and its many cousins
    (other separators, no hook, a link in the middle, no link at all). None for prose
    without a link, blank lines and headings."""
    witness = load_witness()
    bullet = _BULLET.match(raw)
    item = bullet.group(1) if bullet else raw.strip()
    linked = witness.md_targets(item)
    targets = tuple(t for t in linked if t not in INDEX_FILES)
    if not bullet and not targets:
        return None
    if bullet and not targets and linked:
        return None  # a bullet that only links an index file (a header pointer)
    title: str | None = None
    rest = item
    stripped = item.strip()
    emphasis = _EMPHASIS.match(stripped)  # `**[Title](file.md)** — hook`
    wrapper = emphasis.group(0) if emphasis else ""
    leading = witness.LINK.match(stripped, len(wrapper))
    if targets and leading is not None:
        text = leading.group(0)
        title = sanitize_line(text[1 : text.index("](")].strip("*_ ")) or None
        end = leading.end()
        if wrapper and stripped.startswith(wrapper, end):
            end += len(wrapper)  # **[Title](file.md)**
        rest = _SEPARATOR.sub("", stripped[end:], count=1)
    hook = sanitize_line(_flatten_links(rest))
    if not hook and not targets:
        return None  # an empty bullet
    return IndexLine(number, raw, section, targets, title, hook, bool(bullet))


def parse_index(text: str) -> list[IndexLine]:
    """Every linking line and bullet of an index file, with the `##` section it is under."""
    lines: list[IndexLine] = []
    section: str | None = None
    fenced = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        heading = _HEADING.match(raw)
        if heading and not fenced:
            if len(heading.group(1)) >= 2:
                section = sanitize_line(heading.group(2)) or None
            else:
                section = None
            continue
        parsed = parse_line(number, raw, section)
        if parsed is not None:
            lines.append(parsed)
    return lines


def split_archived_suffix(hook: str) -> tuple[str, str | None]:
    """A cold-tier line's hook without the "(archived DATE: reason)" that subrosa appends,
    and that reason (None when the hook has no such suffix)."""
    suffix = _ARCHIVED_SUFFIX.search(hook)
    if suffix is None:
        return hook, None
    return hook[: suffix.start()], suffix.group(1)


def meaningful_title(line: IndexLine, filename: str) -> str | None:
    """The link text as a title, unless it is just the filename."""
    if not line.title:
        return None
    if line.title in (filename, Path(filename).stem, f"({filename})"):
        return None
    return line.title


def foreign_lines(current: str, last_written: str | None, known_files: set[str]) -> list[int]:
    """Line numbers of `current` (a MEMORY.md subrosa wrote) that subrosa did not write.

    With the record of the last MEMORY.md written, a line is foreign when that text did not
    contain it. Without the record (a fresh clone without `.subrosa/`), only lines that
    would add something are foreign: links to files no registered fact has, and bullets
    without a link; hooks of registered facts are then left as the database has them.
    """
    if last_written is not None:
        ours = set(last_written.splitlines())
        return [n for n, line in enumerate(current.splitlines(), 1) if line not in ours]
    numbers = []
    for parsed in parse_index(current):
        if not parsed.targets or any(t not in known_files for t in parsed.targets):
            numbers.append(parsed.number)
    return numbers
