"""Index files as others write them: every line read, none dropped.

Pure: text in, IndexLine values out. MEMORY.md is written by people and by Claude
Code's auto memory as well as by subrosa, so the reader is tolerant (other
separators, no hook, a link in the middle, emphasis, no link at all) and places
every line (issue 17: nothing a user wrote is lost):

- a bullet keeps its continuation lines (the indented lines under it, as markdown
  reads them) and their text belongs to its hook;
- lines that are no index entry (prose, a table, a code block, a quote) come back
  as prose items, one per paragraph, for the take-over to keep in a leaf;
- a heading of level 2 or more is a section, and so is a level-1 heading that is not
  the file's title (the first line of text); thematic breaks and blank lines
  separate items and hold no text.

The link grammar is the witness's (subrosa.memory.witness), so what the take-over
reads as a link is what `subrosa check` counts as one, except in a code span: a
`[text](file.md)` in backticks names no file to take over (the rewritten line escapes it,
and the witness passes). Hooks and titles are made
one safe line (subrosa.text) but keep every character: a link inside a hook is
escaped, not flattened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from subrosa.lazyre import compile_lazily
from subrosa.memory.generator import ARCHIVE_HEADER, INDEX_HEADER
from subrosa.memory.marker import INDEX_FILES
from subrosa.memory.witness import load as load_witness
from subrosa.text import sanitize_field, strip_invisible

_BULLET = compile_lazily(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
# A closing run of #s counts only after a space (CommonMark): "## C#" is the section "C#".
_HEADING = compile_lazily(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_BREAK = compile_lazily(r"^\s{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SEPARATOR = compile_lazily(r"^\s*(?:—|–|--|-|:|;|,|\||=>|->)\s*")
_EMPHASIS = compile_lazily(r"(?:\*\*|__|\*|_)?")
_TITLE_ESCAPE = compile_lazily(r"\\([\[\]`])")
# What generator.render_archive appends to an archived fact's line.
_ARCHIVED_SUFFIX = compile_lazily(r"\s*\(archived (?:\d{4}-\d{2}-\d{2}|undated): (.*)\)\s*$")
# The lines of subrosa's own headers: never someone else's prose.
_HEADER_LINES = frozenset((INDEX_HEADER + ARCHIVE_HEADER).splitlines())


@dataclass(frozen=True)
class IndexLine:
    """One item of an index file: a bullet (with its continuation lines), a line that
    links topic files, or a paragraph of prose."""

    number: int  # its first line
    text: str  # its lines as written, joined by "\n"
    section: str | None
    targets: tuple[str, ...]
    title: str | None
    hook: str
    bullet: bool
    # The file the item's leading link names (`- [Title](file.md) — hook`): the item
    # is that file's own line; any other target is mentioned in passing.
    lead: str | None = None
    # Not an index entry: a paragraph, table or code block, kept as it is.
    prose: bool = False
    # The whole item as one safe line (what a file it only mentions gets as its hook).
    whole: str = ""
    # The hook (for prose, the item) as written, on one line, only what is invisible
    # dropped: what a leaf made from the item holds as its description (`hook` is the
    # index's escaped view: `‹rev›`, `\(`).
    said: str = ""
    # The index file a one-line item leads with when it links no topic file
    # (`- [MEMORY_archive.md](MEMORY_archive.md) — older facts`): a pointer from one
    # index file to the other, which subrosa's headers give already; no fact.
    pointer: str | None = None

    @property
    def numbers(self) -> range:
        """The line numbers the item spans."""
        return range(self.number, self.number + self.text.count("\n") + 1)


def _link_text(match: re.Match[str]) -> str:
    """The text of a witness LINK match (`[text](target)`), its bracket escapes undone."""
    whole = match.group(0)
    end = whole.rfind("](", 0, match.start(1) - match.start())
    return _TITLE_ESCAPE.sub(r"\1", whole[1:end])


def plain_text(text: str) -> str:
    """An item's text with its bullet marker dropped and each link read as its text."""
    witness = load_witness()
    lines = text.splitlines() or [""]
    bullet = _BULLET.match(lines[0])
    item = " ".join([bullet.group(1) if bullet else lines[0], *lines[1:]])
    return str(witness.LINK.sub(lambda m: _link_text(m).strip("*_ "), item))


def link_targets(text: str) -> list[str]:
    """The topic files `text` links, read as the witness reads links, except in a code
    span: `[text](file.md)` in backticks is text about a link, no file to take over
    (the witness's own rule, so `subrosa check` and a take-over agree)."""
    return list(load_witness().md_targets(text))


def parse_item(
    number: int, lines: list[str], section: str | None, *, code: bool = False
) -> IndexLine | None:
    """Read one index item in the wild: `- [Title](file.md) — hook` and its many cousins
    (other separators, no hook, a link in the middle, no link at all, continuation
    lines). None for an empty bullet; an item that links no topic file and is no
    bullet (or a bullet that only links an index file: a `pointer` when it leads with
    that link) is prose, and so is one that holds a fenced code block (`code`: its
    links are examples, as the witness reads them)."""
    witness = load_witness()
    raw = "\n".join(lines)
    bullet = _BULLET.match(lines[0])
    first = bullet.group(1) if bullet else lines[0].strip()
    item = " ".join([first.strip(), *(line.strip() for line in lines[1:])]).strip()
    linked = [] if code else link_targets(item)
    targets = tuple(t for t in linked if t not in INDEX_FILES)
    if not targets and (not bullet or linked):
        hook = sanitize_field(item)
        if not hook:
            return None
        pointer = _leading_index_file(item) if linked and len(lines) == 1 else None
        return IndexLine(
            number, raw, section, (), None, hook, bool(bullet), prose=True, whole=hook,
            said=_as_written(item), pointer=pointer,
        )  # fmt: skip
    title: str | None = None
    lead: str | None = None
    rest = item
    emphasis = _EMPHASIS.match(item)  # `**[Title](file.md)** — hook`
    wrapper = emphasis.group(0) if emphasis else ""
    leading = witness.LINK.match(item, len(wrapper))
    lead_targets = witness.md_targets(leading.group(0)) if leading else []
    if leading is not None and lead_targets and lead_targets[0] in targets:
        lead = lead_targets[0]
        title = sanitize_field(_link_text(leading).strip("*_ ")) or None
        end = leading.end()
        if wrapper and item.startswith(wrapper, end):
            end += len(wrapper)  # **[Title](file.md)**
        rest = _SEPARATOR.sub("", item[end:], count=1)
    hook = sanitize_field(rest)
    if not hook and not targets:
        return None  # an empty bullet
    whole = sanitize_field(item)
    return IndexLine(
        number, raw, section, targets, title, hook, bool(bullet), lead, whole=whole,
        said=_as_written(rest),
    )  # fmt: skip


def _as_written(text: str) -> str:
    """`text` on one line, its words as written (see IndexLine.said)."""
    return " ".join(strip_invisible(text).split())


def _leading_index_file(item: str) -> str | None:
    """The index file `item` (a bullet's text, its marker dropped) links first thing, as
    in `[older facts](MEMORY_archive.md) — …` or `**[MEMORY.md](MEMORY.md)**`."""
    witness = load_witness()
    emphasis = _EMPHASIS.match(item)
    leading = witness.LINK.match(item, len(emphasis.group(0)) if emphasis else 0)
    found = witness.md_targets(leading.group(0)) if leading else []
    return found[0] if found and found[0] in INDEX_FILES else None


def parse_line(number: int, raw: str, section: str | None) -> IndexLine | None:
    """One line read on its own (see parse_item)."""
    return parse_item(number, [raw], section)


def parse_index(text: str) -> list[IndexLine]:
    """Every item of an index file, in order, with the section it is under: bullets
    (continuation lines included), linking lines, and paragraphs of prose."""
    items: list[IndexLine] = []
    section: str | None = None
    pending: list[str] = []
    start = 0
    kind: str | None = None  # "bullet" or "prose" while an item is open
    fence: str | None = None  # the opening run while inside a fenced block
    code = False  # the open item holds a fenced block: its links are text
    witness = load_witness()
    seen_text = False

    def flush() -> None:
        nonlocal pending, kind, code
        if pending:
            parsed = parse_item(start, pending, section, code=code)
            if parsed is not None:
                items.append(parsed)
        pending, kind, code = [], None, False

    def begin(number: int, new_kind: str, line: str) -> None:
        nonlocal start, kind
        flush()
        start, kind = number, new_kind
        pending.append(line)

    for number, raw in enumerate(text.splitlines(), start=1):
        if fence is not None:
            pending.append(raw)
            if witness.fence_closes(raw, fence):
                fence = None
            continue
        opener = witness.FENCE.match(raw)
        if opener:
            if kind == "prose":
                pending.append(raw)
            else:
                begin(number, "prose", raw)
            fence, code = opener.group(1), True
            seen_text = True
            continue
        if not raw.strip() or _BREAK.match(raw):
            flush()
            continue
        heading = _HEADING.match(raw)
        if heading:
            flush()
            if len(heading.group(1)) >= 2 or seen_text:
                section = sanitize_field(heading.group(2)) or None
            seen_text = True
            continue
        seen_text = True
        if _BULLET.match(raw):
            begin(number, "bullet", raw)
        elif kind == "bullet" and raw[:1] in (" ", "\t"):
            pending.append(raw)  # a continuation line: part of the bullet above
        elif any(t not in INDEX_FILES for t in link_targets(raw)):
            begin(number, "line", raw)  # a line that links a topic file stands alone
        elif kind == "prose":
            pending.append(raw)
        else:
            begin(number, "prose", raw)
    flush()
    return items


def stray_headings(text: str, items: list[IndexLine], numbers: set[int]) -> list[IndexLine]:
    """The headings among lines `numbers` of `text` (lines others wrote), which no item
    holds: a take-over has nothing to put them in, so they come back as prose items to
    report (a renamed or added `## Section`), never dropped unsaid."""
    held = {n for item in items for n in item.numbers}
    raw = text.splitlines()
    headings = [n for n in range(1, len(raw) + 1) if n not in held and _HEADING.match(raw[n - 1])]
    taken = [item.number for item in items if any(n in numbers for n in item.numbers)]
    stray = []
    for n, after in zip(headings, [*headings[1:], len(raw) + 1], strict=True):
        # A heading over a line taken over gives that new fact its section: it is used.
        if n in numbers and not any(n < number < after for number in taken):
            line = raw[n - 1]
            stray.append(
                IndexLine(n, line, None, (), None, sanitize_field(line), False, prose=True)
            )
    return stray


def split_archived_suffix(hook: str) -> tuple[str, str | None]:
    """A cold-tier line's hook without the "(archived DATE: reason)" that subrosa appends,
    and that reason (None when the hook has no such suffix)."""
    suffix = _ARCHIVED_SUFFIX.search(hook)
    if suffix is None:
        return hook, None
    return hook[: suffix.start()], suffix.group(1)


def meaningful_title(line: IndexLine, filename: str) -> str | None:
    """The link text as a title, when the item is `filename`'s own line and the text is
    not just the filename."""
    if not line.title or line.lead != filename:
        return None
    name = Path(filename).name
    if line.title in (filename, name, Path(filename).stem, f"({filename})"):
        return None
    return line.title


def foreign_lines(current: str, last_written: str | None, known_files: set[str]) -> list[int]:
    """Line numbers of `current` (a MEMORY.md subrosa wrote) that subrosa did not write.

    With the record of the last MEMORY.md written, a line is foreign when that text did not
    contain it. Without the record (a fresh clone without `.subrosa/`), only lines that
    would add something are foreign: links to files no registered fact has, bullets
    without a link and prose (subrosa's own header aside); hooks of registered facts
    are then left as the database has them.
    """
    if last_written is not None:
        ours = set(last_written.splitlines())
        return [n for n, line in enumerate(current.splitlines(), 1) if line not in ours]
    numbers: list[int] = []
    for parsed in parse_index(current):
        if parsed.prose and all(line in _HEADER_LINES for line in parsed.text.splitlines()):
            continue
        if not parsed.targets or any(t not in known_files for t in parsed.targets):
            numbers.extend(parsed.numbers)
    return numbers


def _linked_order(text: str) -> list[str]:
    """The topic files `text` links, each once, in the order of their first line."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        for target in link_targets(line):
            if target not in INDEX_FILES:
                found.setdefault(target, None)
    return list(found)


def _kept_in_order(first: list[str], second: list[str], *, skip_first: bool) -> set[str]:
    """The items of a longest run common to both orders (of the same items): the rest
    are the ones that moved. Where two runs are as long (two lines swapped: either one
    moved), `skip_first` says which to take."""
    lengths = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i in range(len(first) - 1, -1, -1):
        for j in range(len(second) - 1, -1, -1):
            lengths[i][j] = (
                lengths[i + 1][j + 1] + 1
                if first[i] == second[j]
                else max(lengths[i + 1][j], lengths[i][j + 1])
            )
    kept: set[str] = set()
    i = j = 0
    while i < len(first) and j < len(second):
        if first[i] == second[j]:
            kept.add(first[i])
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] > lengths[i][j + 1] or (
            skip_first and lengths[i + 1][j] == lengths[i][j + 1]
        ):
            i += 1
        else:
            j += 1
    return kept


def undone_edits(last_written: str, current: str, new: str) -> tuple[list[str], list[str]]:
    """What rewriting an index file undoes of a hand edit: the topic files whose line
    subrosa wrote (`last_written`), someone deleted (`current`) and the new text (`new`)
    links again; and those whose line someone moved (out of the longest run of lines
    left in order; both of two lines swapped) that the new text puts under another line
    than the one they were moved under (the take-over keeps the place of a new line
    only: an existing fact's line, moved, goes back to its curated place)."""
    before, edited, after = _linked_order(last_written), _linked_order(current), _linked_order(new)
    there, coming, written = set(edited), set(after), set(before)
    restored = [t for t in before if t not in there and t in coming]
    common = [t for t in edited if t in coming and t in written]
    shared = set(common)
    ordered = [t for t in before if t in shared]
    moved = shared - (
        _kept_in_order(ordered, common, skip_first=True)
        & _kept_in_order(ordered, common, skip_first=False)
    )
    placed = [t for t in after if t in shared]
    above = {t: common[k - 1] if k else None for k, t in enumerate(common)}
    now_above = {t: placed[k - 1] if k else None for k, t in enumerate(placed)}
    return restored, [t for t in common if t in moved and above[t] != now_above[t]]
