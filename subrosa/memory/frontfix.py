"""Frontmatter changed line by line: broken frontmatter mended for `adopt
--fix-frontmatter`, and a leaf restated by `remember`. Pure, text in and out.

A leaf the strict reader refuses is still the user's text. The fix changes only the
lines that make it unreadable and adds what is missing (a name, a description, a
type), so every other line (comments, keys subrosa does not know, lists, block texts,
anchors, quoted keys) stays as written, in its place. A round trip through YAML would
reformat all of them; here YAML only reads. A `key: text` line YAML cannot read (an
unquoted `: ` in it, a stray quote) becomes the same key with the same text quoted; a
block indented with tabs is indented with spaces. A fix that could only drop or
change the user's words (an unknown type, a description that is a list, an alias) is
not made: `Unfixable` says what to mend by hand, and the leaf stays as it is.
"""

from __future__ import annotations

import re
from typing import Any

from subrosa.config import FACT_TYPES
from subrosa.lazyre import compile_lazily
from subrosa.memory.leaf import (
    _CLOSING,
    _FRONTMATTER_START,
    _KEY_LINE,
    _PLAIN_LINE,
    FrontmatterError,
    NotAMapping,
    _check_shape,
    load_frontmatter,
)
from subrosa.text import line_break_in

# A line that continues the entry above it: indented, blank, or a `- item` of a block
# list YAML allows at the key's own indent.
_CONTINUED = compile_lazily(r"[ \t]|-(?:[ \t]|$)|\r?$")


class Unfixable(ValueError):
    """The frontmatter cannot be mended without dropping or changing the user's words."""


class _Entry:
    """A top-level key with the lines under it, or a comment or blank line alone."""

    __slots__ = ("key", "lines")

    def __init__(self, key: str | None, lines: list[str]) -> None:
        self.key = key
        self.lines = lines  # as in the file, without "\n" (a CRLF file's keep their "\r")


def mend(text: str, name: str, description: str, fact_type: str, newline: str) -> str | None:
    """`text` (a leaf's whole text) with its frontmatter mended so the strict reader takes
    it: `name`, `description` and `fact_type` fill what is missing (what the lenient
    reader made of the leaf). None when `text` has no frontmatter block to mend (no
    opening or no closing `---`). Raises Unfixable."""
    opening = _FRONTMATTER_START.match(text)
    closing = _CLOSING.search(text, opening.end()) if opening else None
    if opening is None or closing is None:
        return None
    end = "\r" if newline == "\r\n" else ""
    entries = _entries(text[opening.end() : closing.start()].split("\n")[:-1])
    for number, entry in enumerate(entries):
        entries[number] = _readable(entry)
    data = _load(entries)
    _mend_type(entries, data, fact_type, end)
    _mend_description(entries, data, description, end)
    if "name" not in data:
        entries.insert(0, _Entry("name", [_line("name", name) + end]))
    lines = [line for entry in entries for line in entry.lines]
    block = "".join(line + "\n" for line in lines)
    return text[: opening.end()] + block + text[closing.start() :]


def restate(text: str, description: str, fact_type: str) -> str | None:
    """The frontmatter block of `text` (a leaf a person may have written, which an agent
    restates: `remember`) with its description and type set, every other line as
    written (comments, keys subrosa does not know, the name); None when `text` has no
    frontmatter YAML reads, or its type sits where no line can be changed."""
    opening = _FRONTMATTER_START.match(text)
    closing = _CLOSING.search(text, opening.end()) if opening else None
    if opening is None or closing is None:
        return None
    end = "\r" if text[: opening.end()].endswith("\r\n") else ""
    entries = _entries(text[opening.end() : closing.start()].split("\n")[:-1])
    data = _loads([line for entry in entries for line in entry.lines])
    if data is None or not _set_type(entries, data, fact_type, end):
        return None
    line = _Entry("description", [_line("description", description) + end])
    where = _find(entries, "description")
    if where is not None:
        entries[where] = line
    else:
        after = _find(entries, "name")
        entries.insert(0 if after is None else after + 1, line)
    block = "".join(line + "\n" for entry in entries for line in entry.lines)
    return text[: opening.end()] + block + text[closing.start() : closing.end()]


def _set_type(entries: list[_Entry], data: dict[str, Any], fact_type: str, end: str) -> bool:
    """Set the type where the leaf gives it (`metadata:` then `  type:`, or a top-level
    `type:`), else add it as _mend_type does; False when that cannot be done by lines."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and "type" in metadata:
        where = _find(entries, "metadata")
        lines = entries[where].lines if where is not None else []
        for number, line in enumerate(lines[1:], start=1):
            match = _KEY_LINE.match(line.removesuffix("\r"))
            if match and match.group(1) and match.group(3).strip() == "type":
                lines[number] = f"{match.group(1)}type: {fact_type}{end}"
                return True
        return False
    if "type" in data:
        where = _find(entries, "type")
        if where is None:
            return False
        entries[where] = _Entry("type", [f"type: {fact_type}{end}"])
        return True
    try:
        _mend_type(entries, data, fact_type, end)
    except Unfixable:
        return False
    return True


def _entries(lines: list[str]) -> list[_Entry]:
    entries: list[_Entry] = []
    for line in lines:
        if entries and entries[-1].key is not None and _CONTINUED.match(line):
            entries[-1].lines.append(line)
            continue
        _blank_lines_apart(entries)
        key = _KEY_LINE.match(line.removesuffix("\r"))  # `metadata:\r` in a CRLF leaf
        is_key = key is not None and not line.startswith(("#", " ", "\t"))
        entries.append(_Entry(key.group(3).strip() if is_key and key else None, [line]))
    _blank_lines_apart(entries)
    return entries


def _blank_lines_apart(entries: list[_Entry]) -> None:
    """The blank lines that end the last entry as entries of their own, so a line added
    after an entry comes right after its text."""
    if not entries or entries[-1].key is None:
        return
    lines = entries[-1].lines
    blank = 0
    while blank < len(lines) - 1 and not lines[-1 - blank].strip():
        blank += 1
    if blank:
        entries.extend(_Entry(None, [line]) for line in lines[-blank:])
        del lines[-blank:]


def _loads(lines: list[str]) -> dict[str, Any] | None:
    """What YAML makes of `lines` as subrosa reads frontmatter, None when it cannot."""
    try:
        data = load_frontmatter("\n".join(line.removesuffix("\r") for line in lines))
        _check_shape(data)
    except (FrontmatterError, NotAMapping):
        return None
    return data if isinstance(data, dict) else {}


def _readable(entry: _Entry) -> _Entry:
    """`entry` as it is when YAML reads it; else mended: tabs that indent made spaces,
    or a one-line `key: text` with its text quoted. Raises Unfixable."""
    if entry.key is None or _loads(entry.lines) is not None:
        return entry
    first, rest = entry.lines[0], entry.lines[1:]
    if any(line.startswith("\t") for line in rest):
        spaced = [first] + [re.sub(r"^\t+", lambda m: "  " * len(m.group()), x) for x in rest]
        if _loads(spaced) is not None:
            return _Entry(entry.key, spaced)
    match = _PLAIN_LINE.fullmatch(first.removesuffix("\r"))
    value = (match.group(2) or "").rstrip(" \t") if match else ""
    if match is None or any(line.strip() for line in rest) or not value:
        raise Unfixable(f"its frontmatter entry `{first.strip()}` is YAML it cannot read")
    if value.startswith("*"):
        raise Unfixable(f"its frontmatter line `{first.strip()}` holds a YAML alias")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]  # what the lenient reader took (leaf._salvaged)
    mended = _line(match.group(1), value) + ("\r" if first.endswith("\r") else "")
    if _loads([mended]) is None:
        raise Unfixable(f"its frontmatter line `{first.strip()}` cannot be quoted")
    return _Entry(entry.key, [mended] + rest)


def _load(entries: list[_Entry]) -> dict[str, Any]:
    data = _loads([line for entry in entries for line in entry.lines])
    if data is None:
        raise Unfixable("its frontmatter is YAML it cannot mend line by line")
    return data


def _line(key: str, value: str) -> str:
    """`key: value` as one YAML line, the value quoted when YAML needs it to."""
    import yaml

    dumped: str = yaml.safe_dump({key: value}, allow_unicode=True, width=1_000_000)
    return dumped.rstrip("\n")


def _find(entries: list[_Entry], key: str) -> int | None:
    """The entry giving `key`: the last one, which YAML reads when it is given twice."""
    found = [n for n, entry in enumerate(entries) if entry.key == key]
    return found[-1] if found else None


def _mend_description(entries: list[_Entry], data: dict[str, Any], text: str, end: str) -> None:
    value = data.get("description")
    if isinstance(value, list | dict):
        raise Unfixable("its description is not a line of text")
    if value is not None and str(value).strip() and line_break_in(str(value).strip()) is None:
        return
    if sum(entry.key == "description" for entry in entries) > 1:
        raise Unfixable("it gives description: twice (delete the one you do not mean)")
    if isinstance(value, str) and value.strip():
        text = " ".join(value.split())  # its own words on one line
    line = _Entry("description", [_line("description", text) + end])
    where = _find(entries, "description")
    if where is not None:  # empty, or several lines: one line of the same words
        entries[where] = line
        return
    after = _find(entries, "name")
    entries.insert(0 if after is None else after + 1, line)


def _mend_type(entries: list[_Entry], data: dict[str, Any], fact_type: str, end: str) -> None:
    metadata = data.get("metadata")
    value = metadata.get("type") if isinstance(metadata, dict) else None
    value = data.get("type") if value is None else value
    if value is not None:
        if str(value) not in FACT_TYPES:
            raise Unfixable(
                f"its type {value!r} is none of {', '.join(FACT_TYPES)}, and putting "
                f"{fact_type!r} in its place would lose it"
            )
        return
    where = _find(entries, "metadata")
    if where is None:
        entries.append(_Entry("metadata", ["metadata:" + end, f"  type: {fact_type}{end}"]))
        return
    lines = entries[where].lines
    inner = [line for line in lines[1:] if line.strip()]
    if (metadata is not None and not isinstance(metadata, dict)) or (
        metadata is not None and not inner
    ):
        raise Unfixable("its metadata: is not `key: value` lines to add the type to")
    indent = re.match(r"[ ]*", inner[0]).group() if inner else "  "  # type: ignore[union-attr]
    last = max((n for n, line in enumerate(lines) if line.strip()), default=0)
    lines.insert(last + 1, f"{indent or '  '}type: {fact_type}{end}")
