"""Leaf files: one fact per markdown file with YAML frontmatter (document 000).

Read tolerantly, write canonically. `parse_leaf` is the strict reader behind
`fact upsert`; `parse_leaf_lenient` is for memories users already have (adopt,
and generate's reconcile), which must be registered even when malformed.
`read_leaf_text` is the one raw reader (capped, never through a symlink out of the
memory dir) for commands that only look at the text; `content_hash` is the one
definition of the hash that tells a changed leaf from an unchanged one. The rest of
the memory half reads leaves only through this module.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from subrosa.config import FACT_TYPES
from subrosa.errors import InvalidLeaf, LeafError
from subrosa.fsutil import atomic_write_bytes, atomic_write_text
from subrosa.lazyre import compile_lazily
from subrosa.memory.marker import INDEX_FILES, new_file_mode
from subrosa.text import line_break_in, sanitize_field, strip_invisible

MAX_LEAF_BYTES = 1024 * 1024
_HEADING = compile_lazily(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONTMATTER_START = compile_lazily(r"\A---[ \t]*\r?\n")
# python-frontmatter's YAML boundary, which subrosa used until it split leaves itself.
_BOUNDARY = compile_lazily(r"^-{3,}\s*$", re.MULTILINE)
# The line that closes a frontmatter block, searched for after the opening `---`.
_CLOSING = compile_lazily(r"^---[ \t]*\r?$", re.MULTILINE)
_TYPE_PREFIX = compile_lazily(r"^(user|feedback|project|reference)[_-]")
# A file changed this recently may change again within its file system's timestamp
# granularity (1 s on ext3 and HFS+, 2 s on FAT) without its stat changing: its stat is
# not trusted to say "unchanged" (see stat_key).
_RACY_NS = 3_000_000_000


class FrontmatterError(ValueError):
    """Frontmatter that is not YAML (or holds an alias); the message is YAML's first line."""


class NotAMapping(Exception):
    """Frontmatter that is valid YAML but not `key: value` lines with text keys."""


_KINDS = {bool: "true/false", int: "a number", float: "a number", list: "a list", dict: "a mapping"}


def _kind(value: object) -> str:
    if isinstance(value, datetime):
        return "a date and time"
    if type(value).__name__ == "date":
        return "a date"
    return _KINDS.get(type(value), type(value).__name__)


def _check_shape(data: object) -> None:
    """Refuse frontmatter that parses but is no mapping of text keys (python-frontmatter
    dropped a list silently and failed on a key like `2026-01-05:` or `0:`)."""
    if data is None:
        return  # `---` then `---`: empty, reported as such
    if isinstance(data, str):
        raise NotAMapping("its frontmatter is a line of text, not `key: value` lines")
    if not isinstance(data, dict):
        raise NotAMapping(f"its frontmatter is {_kind(data)}, not `key: value` lines")
    for key in data:
        if key is None:
            raise NotAMapping("its frontmatter has an empty key (`: value`)")
        if not isinstance(key, str):
            raise NotAMapping(
                f"its frontmatter key {str(key)!r} is {_kind(key)}, not text (quote it: '{key}': …)"
            )


def load_frontmatter(fm: str) -> Any:
    """YAML frontmatter, without aliases (`*name`); raises FrontmatterError.

    Most frontmatter is a few `key: text` lines, which `_plain_mapping` reads without
    yaml (~0.1 ms of PyYAML's constructor per leaf, and its ~20 ms import, are most of
    registering a few thousand leaves); anything else goes to yaml itself, imported
    here on first use.

    Nine lines of nested aliases (a "billion laughs") load into a small shared graph,
    but `str()` of it never finishes: a hostile leaf would hang every command that
    reads it. No leaf needs an alias, so one is refused. Every alias starts with `*`:
    frontmatter without one is loaded at once (with libyaml's C loader where it is
    there); one with a `*` is scanned for alias events first (cheap, in C) rather than
    loaded by a pure-Python loader, 5x slower.
    """
    plain = _plain_mapping(fm)
    if plain is not None:
        return plain
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if "*" in fm:
            for event in yaml.parse(fm, Loader=loader):
                if isinstance(event, yaml.AliasEvent):
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise FrontmatterError(
                        f"line {line}: YAML aliases (*name) are not allowed in a leaf"
                    )
        return yaml.load(fm, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise FrontmatterError(_yaml_problem(exc)) from None
    except RecursionError:  # `[[[[…` in the pure-Python loader (libyaml has a limit)
        raise FrontmatterError("nested too deeply") from None


def _yaml_problem(exc: Exception) -> str:
    """What is wrong and where, in one line: `line 3: mapping values are not allowed
    here`, not yaml's first line alone ("while scanning a quoted scalar"). The
    frontmatter starts on the `---` line, so its line numbers are the file's."""
    problem = getattr(exc, "problem", None)
    if not problem:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    context = getattr(exc, "context", None)
    mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}: " if mark is not None else ""
    said = f"{where}{problem}" + (f" {context}" if context else "")
    if "mapping values are not allowed" in problem:
        # The usual cause: an unquoted description holding `: `, as in `weight: 1`.
        said += "; put a value holding ': ' in quotes"
    return said


# `key: text`, a key YAML reads as a string (and the text after one or more spaces).
_PLAIN_LINE = compile_lazily(r"([A-Za-z][A-Za-z0-9_-]{0,127}):(?: +(.*))?")
# Plain words YAML 1.1 (PyYAML's resolver) reads as booleans or null, not as text.
_YAML_WORDS = frozenset(
    ("yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False")
    + ("FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL")
)


def _plain_text(value: str) -> str | None:
    """`value` when YAML reads it, unquoted in a block mapping, as exactly this text;
    else None. Only the plainest case: it starts with a letter (no indicator, number,
    date or sign), is printable (no tab, no line separator), holds no `: ` or ` #`
    (a mapping, a comment) and is not a word YAML makes a boolean or null."""
    value = value.rstrip(" ")
    if not value or not value[0].isalpha() or not value.isprintable() or value in _YAML_WORDS:
        return None
    if ": " in value or " #" in value or value.endswith(":"):
        return None
    return value


def _plain_mapping(fm: str) -> dict[str, Any] | None:
    """The mapping frontmatter holds when it is only `key: text` lines and mappings of
    them one level deep (`metadata:` then indented `type: project`), read without yaml;
    None for anything else (quotes, lists, comments, numbers, continued lines...), which
    yaml then reads. Tests hold the two readers to the same result."""
    result: dict[str, Any] = {}
    open_key: str | None = None  # a top-level key with no text: its mapping may follow
    indent = 0
    for line in fm.split("\n"):
        if not line.strip(" "):
            continue
        stripped = line.lstrip(" ")
        depth = len(line) - len(stripped)
        match = _PLAIN_LINE.fullmatch(stripped)
        if match is None or match.group(1) in _YAML_WORDS:
            return None
        key, raw = match.groups()
        if depth == 0:
            if raw is not None and not raw.strip(" "):
                raw = None
            open_key = key if raw is None else None
            indent = 0
            text = None if raw is None else _plain_text(raw)
            if raw is not None and text is None:
                return None
            result[key] = text
            continue
        if open_key is None or (indent and depth != indent) or raw is None:
            return None
        indent = depth
        text = _plain_text(raw)
        if text is None:
            return None
        nested = result[open_key]
        if nested is None:
            nested = result[open_key] = {}
        nested[key] = text
    return result


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """A leaf's metadata and content, as python-frontmatter's `loads` read them (its
    YAML boundary, its stripping, CRLF made LF), without its import. Raises
    FrontmatterError for frontmatter that is not YAML, NotAMapping for YAML that is no
    mapping of text keys (a list, a line of text, a key like `1:`)."""
    text = text.replace("\r\n", "\n").strip()
    parts = _BOUNDARY.split(text, 2)
    if len(parts) < 3:
        return {}, text
    _, fm, content = parts
    data = load_frontmatter(fm)
    _check_shape(data)
    return (dict(data) if isinstance(data, dict) else {}), content.strip()


# A line that gives a key: `key:`, `"key":`, indented under its parent (`  type: x`).
_KEY_LINE = compile_lazily(r"( *)(['\"]?)([^\s'\"#:\-?][^'\":]*?)\2[ \t]*:(?:[ \t]|$)")


def duplicate_keys(fm: str) -> list[str]:
    """The keys frontmatter `fm` gives twice, at the top level (`description`) or one
    level in (`metadata.type`): YAML keeps the last without a word, so the first is
    the user's text no reader shows. A scan of the lines finds them (leaves rarely have
    any, and it costs no yaml import); when the frontmatter is not the plain kind, yaml's
    composer rules out lines of a block text that only look like keys (frontmatter YAML
    cannot read keeps the scan's answer: `_salvaged` reads it line by line too)."""
    found: list[str] = []
    top: set[str] = set()
    parent: str | None = None
    nested: set[str] = set()
    depth: int | None = None
    for line in fm.replace("\r\n", "\n").split("\n"):
        match = _KEY_LINE.match(line)
        if match is None:
            continue
        indent, key = len(match.group(1)), match.group(3).strip()
        if indent == 0:
            if key in top:
                found.append(key)
            top.add(key)
            parent, nested, depth = key, set(), None
        elif parent is not None and depth in (None, indent):
            depth = indent
            if key in nested:
                found.append(f"{parent}.{key}")
            nested.add(key)
    found = list(dict.fromkeys(found))
    if found and _plain_mapping(fm) is None:
        composed = _composed_duplicates(fm)
        if composed is not None:
            found = [key for key in found if key in composed]
    return found


def _composed_duplicates(fm: str) -> set[str] | None:
    """The keys given twice, as yaml's composer sees the mapping (no value is built);
    None when it cannot read `fm`."""
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(fm, Loader=loader)
    except (yaml.YAMLError, RecursionError):
        return None
    found: set[str] = set()

    def walk(node: Any, prefix: str, levels: int) -> None:
        if not isinstance(node, yaml.MappingNode) or not levels:
            return
        seen: set[str] = set()
        for key, value in node.value:
            name = f"{prefix}{key.value}" if isinstance(key, yaml.ScalarNode) else ""
            if name in seen:
                found.add(name)
            seen.add(name)
            walk(value, f"{name}.", levels - 1)

    walk(root, "", 2)
    return found


def frontmatter_text(text: str) -> str | None:
    """The frontmatter block of a leaf's text (between its `---` lines), or None."""
    if not _FRONTMATTER_START.match(text):
        return None
    return _between_boundaries(text)


def _between_boundaries(text: str) -> str | None:
    """What python-frontmatter's boundaries enclose in `text` (CRLF made LF, stripped,
    as split_frontmatter reads it), or None when it has no two."""
    parts = _BOUNDARY.split(text.replace("\r\n", "\n").strip(), 2)
    return parts[1] if len(parts) == 3 else None


def _duplicate_warnings(text: str, *, salvaged: bool = False) -> list[str]:
    """A warning for each key a leaf's frontmatter gives twice, saying which one counts:
    YAML's last, or, for frontmatter YAML cannot read, the first (`_salvaged`)."""
    fm = frontmatter_text(text)
    if fm is None:
        return []
    which = "first" if salvaged else "last"
    warnings = []
    for key in duplicate_keys(fm):
        parent, _, child = key.rpartition(".")
        where = f"{child}: under {parent}:" if parent else f"{key}:"
        warnings.append(
            f"gives {where} twice in its frontmatter; the {which} is used "
            "(delete the one you do not mean)"
        )
    return warnings


def stat_key(st: os.stat_result, now_ns: int | None = None) -> str | None:
    """What a leaf's stat says about its content: size, mtime (ns) and inode, or None when
    it changed too recently to be trusted (_RACY_NS). Equal keys mean an unchanged leaf,
    so `generate` reads and hashes only leaves whose key changed (as git's index does)."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    if now_ns - st.st_mtime_ns < _RACY_NS:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


Read = tuple[bytes, os.stat_result]  # a leaf's bytes, and its stat taken before reading


class Leaf:
    """What a leaf file says, plus what subrosa derives from it.

    A plain class rather than a dataclass: importing dataclasses (and inspect with it)
    cost ~15 ms of CPU, a fifth of a whole `fact upsert`."""

    __slots__ = (
        "path",
        "slug",
        "name",
        "title",
        "type",
        "description",
        "body",
        "content_hash",
        "mtime",
        "extra",
        "warnings",
        "explicit_title",
        "stat",
        "rel",
    )

    def __init__(
        self,
        *,
        path: Path,
        slug: str,
        name: str,
        title: str,
        type: str,
        description: str,
        body: str,
        content_hash: str,
        mtime: datetime,
        extra: dict[str, Any] | None = None,
        warnings: list[str] | None = None,
        explicit_title: bool = False,
        stat: str | None = None,
        rel: str | None = None,
    ) -> None:
        self.path = path
        self.slug = slug
        self.name = name
        self.title = title
        self.type = type
        self.description = description
        self.body = body
        self.content_hash = content_hash
        self.mtime = mtime
        self.extra = extra if extra is not None else {}
        self.warnings = warnings if warnings is not None else []
        # True when the leaf names its title (a `title:` key or a `# heading`), so an
        # update refreshes the title; otherwise the registered title is kept.
        self.explicit_title = explicit_title
        # stat_key of the file, taken before it was read (None: too recent to trust,
        # or a leaf a dry run would write).
        self.stat = stat
        # A note in a subfolder that the index links (`notes/x.md`): its path from the
        # memory dir, which is also its slug without `.md`.
        self.rel = rel

    @property
    def filename(self) -> str:
        return self.rel or self.path.name


def slug_for(path: Path) -> str:
    """A fact's slug is its leaf's filename without `.md` (what `[[wikilinks]]` name)."""
    return path.stem


def humanize(stem: str) -> str:
    """`no_python_use_rust` -> `No Python Use Rust`: a title when the leaf offers none.

    A leading type prefix (`feedback_`, `user-` …) is dropped: the type is shown anyway,
    and the title should say what the fact is about.
    """
    words = re.split(r"[_\-\s]+", _TYPE_PREFIX.sub("", stem) or stem)
    # Sanitized: a file name is untrusted text too, and this lands in the index.
    return sanitize_field(" ".join(w[:1].upper() + w[1:] for w in words if w)) or "Untitled"


def resolve_leaf_path(given: str | os.PathLike[str], memory_dir: Path) -> Path:
    """Take FILE as given, or relative to the memory dir when it does not exist as given;
    refuse anything that is not a `.md` file directly inside the memory dir."""
    candidate = Path(given).expanduser()
    if not candidate.exists() and not candidate.is_absolute():
        candidate = memory_dir / candidate
    shown = candidate
    if candidate.suffix != ".md":
        raise LeafError(shown, "is not a .md file (name a leaf by its SLUG or as FILE.md)")
    root = memory_dir.resolve()
    try:
        real = candidate.resolve()
    except OSError as exc:
        raise LeafError(shown, f"cannot be resolved ({exc.strerror})") from None
    if real.parent != root or candidate.absolute().parent.resolve() != root:
        if real.is_relative_to(root) and candidate.absolute().parent.resolve() != root:
            raise LeafError(
                shown,
                "is in a subfolder of the memory dir: such a note is registered through "
                "the MEMORY.md line that links it (`subrosa generate`)",
            )
        raise LeafError(
            shown,
            f"is outside the memory dir {memory_dir} (move it there, or point --memory-dir "
            "at its folder)",
        )
    if not real.exists():
        raise LeafError(
            shown, f"does not exist (write the leaf first; `ls {memory_dir}` shows the leaves)"
        )
    if not real.is_file():
        raise LeafError(shown, "is not a regular file")
    if real.name in INDEX_FILES:
        raise LeafError(shown, "is an index file that subrosa generates, not a leaf")
    problem = filename_problem(real.name)
    if problem:
        raise LeafError(shown, problem)
    return root / real.name


def filename_problem(name: str) -> str | None:
    """Why a leaf's file name cannot be registered, or None.

    The name becomes the fact's slug and a link target in MEMORY.md: bytes that are
    not UTF-8 cannot be stored or written there, and control or invisible characters
    (newlines, bidi overrides) could forge a line or hide what the link names. A
    zero-width joiner or non-joiner that spells (`کتاب‌ها.md`) is part of the name, as
    the sanitizer keeps it in text (subrosa.text.strip_invisible); anywhere else it is
    refused too.
    """
    categories = {unicodedata.category(ch) for ch in name}
    if "Cs" in categories:
        return "has a file name that is not UTF-8; rename it"
    if categories & {"Cc", "Zl", "Zp"} or ("Cf" in categories and not _spelled(name)):
        return "has control or invisible characters in its file name; rename it"
    return None


def _spelled(name: str) -> bool:
    """Whether every format character of `name` is a joiner the sanitizer keeps."""
    kept = strip_invisible(name)
    invisible = [ch for ch in name if unicodedata.category(ch) == "Cf"]
    return all(ch in "\u200c\u200d" for ch in invisible) and len(invisible) == sum(
        ch in "\u200c\u200d" for ch in kept
    )


def content_hash(raw: bytes) -> str:
    """The hash a fact keeps of its leaf's bytes: equal hashes mean an unchanged leaf."""
    return hashlib.sha256(raw).hexdigest()


def hash_leaf_file(directory: str, filename: str) -> str:
    """`content_hash` of the leaf `filename` in `directory` (OSError when unreadable).

    Plain strings and open(), not Path: generate hashes every leaf on each run, and with
    thousands of leaves Path objects were a visible part of its time.
    """
    with open(os.path.join(directory, filename), "rb") as handle:
        return content_hash(handle.read())


def read_leaf_text(memory_dir: Path, filename: str, root: Path | None = None) -> str | None:
    """The leaf as it is on disk now, at most MAX_LEAF_BYTES (+1) of it, bad bytes replaced;
    None when it is gone, not a regular file, unreadable, or a symlink that leads out of
    the memory dir (never read a file outside it). `root` is the resolved memory dir, for
    callers reading many leaves. A `notes/x.md` filename is a note in a subfolder."""
    root = root or memory_dir.resolve()
    if "/" in filename:
        note = subfolder_note(memory_dir, filename, root)
        if note is None:
            return None
        path = note
    else:
        path = memory_dir / Path(filename).name
    try:
        if "/" not in filename and path.is_symlink() and path.resolve().parent != root:
            return None
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(MAX_LEAF_BYTES + 1)
    except OSError:
        return None
    return raw.decode("utf-8", errors="replace")


def is_leaf_path(rel: str) -> bool:
    """Whether `rel` may name a leaf or a note in a memory dir, by its spelling alone: a
    relative `.md` path through no `..`, hidden folder (`.subrosa/`, `.git/`) or empty
    part, its name free of what filename_problem refuses."""
    return (
        rel.lower().endswith(".md")
        and "\\" not in rel
        and not any(not part or part.startswith(".") for part in rel.split("/"))
        and filename_problem(rel) is None
    )


def subfolder_note(memory_dir: Path, rel: str, root: Path | None = None) -> Path | None:
    """The note an index line links in a subfolder of the memory dir (`notes/x.md`), or
    None when it is not one subrosa may read: a regular `.md` file inside the memory dir
    once symlinks are resolved, reached through no `..` and no hidden folder (`.subrosa/`,
    `.git/`), its name free of what filename_problem refuses."""
    parts = rel.split("/")
    if len(parts) < 2 or not is_leaf_path(rel):
        return None
    path = memory_dir.joinpath(*parts)
    try:
        real = path.resolve()
        if not real.is_relative_to(root or memory_dir.resolve()) or not real.is_file():
            return None
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None
    return path


def parse_note(
    memory_dir: Path, rel: str, given: bytes | None = None, *, read: Read | None = None
) -> Leaf:
    """Leniently parse the note `rel` in a subfolder (see subfolder_note): a fact whose
    slug is its path without `.md` (`notes/x`), so it never collides with a leaf.
    `given` and `read` as for parse_leaf."""
    leaf = parse_leaf_lenient(memory_dir.joinpath(*rel.split("/")), read, given=given)
    leaf.slug = rel[: -len(".md")]
    leaf.name = leaf.slug.replace("_", "-")
    if not leaf.explicit_title:
        leaf.title = humanize(Path(rel).stem)
    leaf.rel = rel
    # The strict reader's complaint that `name:` is not the filename means nothing here.
    leaf.warnings = [w for w in leaf.warnings if "is not the filename" not in w]
    return leaf


def _read_text(
    path: Path, read: Read | None = None, given: bytes | None = None
) -> tuple[bytes, str, os.stat_result | None]:
    """The leaf's bytes, its text, and its stat taken before reading (so a change made
    while it is read shows in the next stat); `read` is both when the caller has them;
    `given` the bytes of a leaf not on disk yet (what a dry run would write: no stat)."""
    st: os.stat_result | None = None
    try:
        if given is not None:
            raw = given
        else:
            st = path.stat() if read is None else read[1]
            if st.st_size > MAX_LEAF_BYTES:
                raise LeafError(
                    path, f"is {st.st_size:,} bytes, over the {MAX_LEAF_BYTES:,}-byte leaf limit"
                )
            raw = path.read_bytes() if read is None else read[0]
    except OSError as exc:
        raise LeafError(path, f"cannot be read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LeafError(path, f"is not UTF-8 text (bad byte at offset {exc.start})") from None
    return raw, text.removeprefix("\ufeff"), st


def _mtime(st: os.stat_result | None) -> datetime:
    if st is None:  # a leaf a dry run would write: it would be new now
        return datetime.now(UTC).replace(microsecond=0)
    return datetime.fromtimestamp(st.st_mtime, UTC).replace(microsecond=0)


def _stat_key(st: os.stat_result | None) -> str | None:
    return None if st is None else stat_key(st)


def _first_heading(body: str) -> str | None:
    match = _HEADING.search(body)
    return match.group(1) if match else None


def parse_leaf(path: Path, read: Read | None = None, *, given: bytes | None = None) -> Leaf:
    """Strictly parse the leaf at `path` (already resolved); raise LeafError naming the
    file (InvalidLeaf when its frontmatter is YAML but no mapping of text keys). `read`
    is its bytes and the stat taken before reading them, when the caller read it
    already; `given` its bytes when it is not on disk yet (what a dry run would write)."""
    named = filename_problem(path.name)
    if named is not None:  # as fact upsert refuses it: generate and adopt skip it, said
        raise InvalidLeaf(path, named)
    raw, text, st = _read_text(path, read, given)
    if not _FRONTMATTER_START.match(text):
        raise LeafError(path, "has no YAML frontmatter (it must start with a '---' line)")
    try:
        meta, content = split_frontmatter(text)
    except NotAMapping as exc:
        raise InvalidLeaf(path, str(exc)) from None
    except FrontmatterError as exc:
        raise LeafError(path, f"has frontmatter that is not valid YAML ({exc})") from None
    except ValueError as exc:
        raise LeafError(path, f"has unreadable frontmatter ({exc})") from None
    if not meta:
        if len(_BOUNDARY.findall(text)) < 2:
            raise LeafError(path, "has no closing '---' line after its frontmatter")
        raise LeafError(path, "has empty frontmatter (name, description and type are expected)")
    warnings: list[str] = []
    slug = slug_for(path)

    description = meta.get("description")
    if description is None or (isinstance(description, str) and not description.strip()):
        raise LeafError(path, "has no description in its frontmatter")
    if isinstance(description, list | dict):
        raise LeafError(path, "has a description that is not a line of text")
    description = _text_of(description, text, "description").strip()
    broken = line_break_in(description)
    if broken is not None:  # U+2028 breaks a line as `\r` does: the same refusal
        said = "" if broken in ("\\n", "\\r") else f" ({broken} is a line break)"
        raise LeafError(path, f"has a description of several lines{said}; it must be one line")

    fact_type = _leaf_type(path, meta, warnings, text)
    warnings.extend(_duplicate_warnings(text))

    name = meta.get("name")
    if name is None:
        warnings.append("has no name: in its frontmatter; using the filename")
        name = slug.replace("_", "-")
    name = str(name)
    # The stem as it is (gotcha_cross_repo_cwd) is as good a name as its kebab-case.
    if name not in (slug, slug.replace("_", "-")):
        warnings.append(f"name {name!r} is not the filename in kebab-case")

    known = {"name", "description", "metadata", "type", "title"}
    extra = {k: v for k, v in meta.items() if k not in known}
    title_value = meta.get("title")
    if isinstance(title_value, list | dict):  # `[a, b]` as written, never Python's repr
        fm = _between_boundaries(text)
        title_value = _salvaged(fm).get("title") if fm is not None else None
        if title_value is None:
            warnings.append("has a title that is not a line of text; it is not used")
    elif title_value is not None:
        title_value = _text_of(title_value, text, "title")
    heading = _first_heading(content)
    title = str(title_value) if title_value else heading or humanize(slug)
    warnings.extend(_secret_warnings(title, description))
    return Leaf(
        path=path,
        slug=slug,
        name=name,
        title=sanitize_field(title) or humanize(slug),
        type=fact_type,
        description=description,
        body=content,
        content_hash=content_hash(raw),
        mtime=_mtime(st),
        extra=extra,
        warnings=warnings,
        explicit_title=bool(title_value or heading),
        stat=_stat_key(st),
    )


def _leaf_type(path: Path, meta: dict[str, Any], warnings: list[str], text: str) -> str:
    metadata = meta.get("metadata")
    nested = metadata.get("type") if isinstance(metadata, dict) else None
    top = meta.get("type")
    if nested is None and top is not None:
        warnings.append("has a top-level type: (canonical is metadata.type)")
    value = nested if nested is not None else top
    if value is None:
        raise LeafError(path, f"has no type (metadata.type must be one of {', '.join(FACT_TYPES)})")
    if str(value) not in FACT_TYPES:
        written = _text_of(value, text, "type")  # `true` as written, not Python's True
        raise LeafError(
            path, f"has unknown type {written!r} (expected one of {', '.join(FACT_TYPES)})"
        )
    return str(value)


def parse_leaf_lenient(path: Path, read: Read | None = None, *, given: bytes | None = None) -> Leaf:
    """Parse a leaf users already have, never refusing one that is readable text.

    A leaf the strict reader refuses (no frontmatter, YAML that does not parse, no
    description or type) is still the user's memory: title from the first heading or
    the filename, description from the first line of text, type from a filename
    prefix such as `feedback_`, else `reference`. The reason lands in `warnings`.
    Unreadable files (not UTF-8, too large) and invalid ones (frontmatter that is YAML
    but no mapping of text keys) still raise LeafError.
    """
    try:
        return parse_leaf(path, read, given=given)
    except InvalidLeaf:
        raise
    except LeafError as strict_error:
        raw, text, st = _read_text(path, read, given)
        reason = strict_error.problem
    body = text
    meta: dict[str, Any] = {}
    warnings = [reason]
    if _FRONTMATTER_START.match(text):
        try:
            meta, body = split_frontmatter(text)
            warnings.extend(_duplicate_warnings(text))
        except (ValueError, NotAMapping) as exc:  # FrontmatterError among them
            end = _CLOSING.search(text[3:])
            body = text[3 + end.end() :] if end else text
            if isinstance(exc, FrontmatterError) and end:
                meta = _salvaged(text[3 : 3 + end.start()])
                warnings.extend(_duplicate_warnings(text, salvaged=True))
    slug = slug_for(path)
    prefix = _TYPE_PREFIX.match(path.name)
    nested = meta.get("metadata")
    candidate = nested.get("type") if isinstance(nested, dict) else meta.get("type")
    if candidate in FACT_TYPES:
        fact_type = str(candidate)
    else:
        fact_type = prefix.group(1) if prefix else "reference"
    description = meta.get("description")
    if description is not None and not isinstance(description, list | dict):
        description = _text_of(description, text, "description")
    if not isinstance(description, str) or not description.strip():
        description = _first_text_line(body) or humanize(slug)
    title = _first_heading(body) or humanize(slug)
    warnings.extend(_secret_warnings(title, description))
    return Leaf(
        path=path,
        slug=slug,
        name=str(meta.get("name") or slug.replace("_", "-")),
        title=sanitize_field(title) or humanize(slug),
        type=fact_type,
        # The user's words on one line, not sanitized: `--fix-frontmatter` writes this
        # into the leaf, and the store sanitizes what it shows (values.leaf_values).
        description=" ".join(description.split()),
        body=body,
        content_hash=content_hash(raw),
        mtime=_mtime(st),
        extra={},
        warnings=warnings,
        stat=_stat_key(st),
    )


def _secret_warnings(title: str, description: str) -> list[str]:
    """What MEMORY.md and the sidecar, both meant for git, would show of a secret in a
    leaf's title or description: kept as the user wrote it (the leaf is theirs), and
    said, as `fact upsert` refuses such a description (subrosa.secrets)."""
    from subrosa.secrets import find_secret  # not on the hooks' path

    return [
        f"its {field} holds what looks like a secret ({kind}), which MEMORY.md and"
        " .subrosa/facts.jsonl (meant for git) show; move it out of the leaf"
        for field, value in (("title", title), ("description", description))
        if (kind := find_secret(value)) is not None
    ]


def _text_of(value: object, text: str, key: str) -> str:
    """A top-level scalar of the leaf `text` as the user wrote it: YAML reads `true` as
    True, `010` as 8 and `12:30` as 750, none of which is the user's description."""
    if isinstance(value, str):
        return value
    fm = _between_boundaries(text)
    written = _salvaged(fm).get(key) if fm is not None else None
    return str(value) if written is None else re.sub(r"\s+#.*", "", written)


def _salvaged(fm: str) -> dict[str, str]:
    """From frontmatter YAML cannot read, its top-level `key: text` lines, the text as
    written (one pair of quotes around it removed): `description: set `weight: 1` in
    the config` is the user's description, whatever YAML makes of its second `: `. The
    canonical `metadata:` / `  type: T` gives `type`."""
    found: dict[str, str] = {}
    under = None  # the top-level key with no text above an indented line
    for line in fm.replace("\r\n", "\n").split("\n"):
        # Indented by spaces or by tabs (which YAML refuses, often why it cannot read it).
        indented = line.startswith((" ", "\t"))
        nested = _PLAIN_LINE.fullmatch(line.lstrip(" \t")) if indented else None
        if nested and under == "metadata" and nested.group(1) == "type" and nested.group(2):
            found.setdefault("type", nested.group(2).strip())  # the canonical metadata.type
            continue
        match = _PLAIN_LINE.fullmatch(line)  # a top-level `key: text` line
        if match is not None:
            under = None if match.group(2) else match.group(1)
        if match is None or not (value := (match.group(2) or "").rstrip(" \t")):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found.setdefault(match.group(1), value)
    return found


def _first_text_line(body: str) -> str | None:
    for line in body.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped and not stripped.startswith("---"):
            return stripped
    return None


def render_leaf(name: str, description: str, fact_type: str, body: str) -> str:
    """A leaf in the canonical shape of document 000."""
    import yaml

    header = yaml.safe_dump(
        {"name": name, "description": description, "metadata": {"type": fact_type}},
        sort_keys=False,
        allow_unicode=True,
        width=10_000,
    )
    return f"---\n{header}---\n\n{body.strip()}\n"


def rewrite_canonical(leaf: Leaf, keep: Path, *, write: bool = True) -> None:
    """Mend `leaf`'s file so the strict reader takes it (subrosa.memory.frontfix: only
    the lines that need it change; a leaf with no frontmatter gets the canonical one
    above its text), after keeping the original in directory `keep`; a copy already there
    is never overwritten, so the first original survives a second fix. Raises LeafError,
    the leaf untouched, when it cannot be mended without dropping the user's words; with
    `write` False only checks."""
    from subrosa.memory.frontfix import Unfixable, mend

    original = leaf.path.read_bytes()
    text = original.decode("utf-8")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text.removeprefix(bom)
    newline = "\r\n" if "\r\n" in text else "\n"
    name = leaf.slug.replace("_", "-")
    try:
        mended = mend(text, name, leaf.description, leaf.type, newline)
    except Unfixable as exc:
        raise LeafError(leaf.path, f"was left as it is: {exc}; mend it by hand") from None
    if mended is None:
        header = render_leaf(name, leaf.description, leaf.type, "").rstrip("\n") + "\n\n"
        mended = header.replace("\n", newline) + _body_as_written(text)
    fixed = (bom + mended).encode("utf-8")
    try:
        parse_leaf(leaf.path, given=fixed)
    except LeafError as exc:
        raise LeafError(
            leaf.path, f"was left as it is: mended, it {exc.problem}; mend it by hand"
        ) from None
    if not write:  # a dry run: said as the real run would say it, nothing written
        return
    keep.mkdir(parents=True, exist_ok=True)
    if not (keep / leaf.path.name).exists():  # the copy keeps the leaf's mode (0600 stays)
        atomic_write_bytes(keep / leaf.path.name, original, mode=leaf.path.stat().st_mode & 0o777)
    atomic_write_bytes(leaf.path, fixed)


def _body_as_written(text: str) -> str:
    """What follows a leaf's frontmatter as the file holds it (the whole text when it has
    none), only the blank lines before it left out: what `--fix-frontmatter` keeps, so an
    indented first line or a CRLF body comes through byte for byte."""
    if _FRONTMATTER_START.match(text):
        end = _CLOSING.search(text[3:])
        if end:
            text = text[3 + end.end() :]
    return re.sub(r"\A(?:[ \t]*\r?\n)+", "", text)


def list_leaf_files(memory_dir: Path) -> list[Path]:
    """Every topic `.md` file directly in the memory dir (the index files excluded), sorted
    by name: `leaf_names` as paths."""
    return [memory_dir / name for name in leaf_names(memory_dir)]


def leaf_names(memory_dir: Path) -> list[str]:
    """The file names of every topic `.md` file directly in the memory dir (the index
    files excluded), sorted.

    A symlink counts only when it resolves to a file inside the memory dir: one that
    points elsewhere would make subrosa read a file outside it. A name that is not
    UTF-8 is left out: it cannot be stored or linked (the witness still reports the
    file as unreferenced, which tells the user to rename it). Plain names from scandir,
    and a symlink resolved only when there is one: with thousands of leaves, a Path and
    a character-by-character check per name were most of a `generate` with nothing to do.
    """
    try:
        with os.scandir(memory_dir) as scan:
            entries = [e for e in scan if e.name.endswith(".md") and e.name != ".md"]
    except (FileNotFoundError, NotADirectoryError):
        return []
    root: Path | None = None
    names = []
    for entry in entries:
        name = entry.name
        if name in INDEX_FILES or not entry.is_file():
            continue
        if entry.is_symlink():
            root = root or memory_dir.resolve()
            if (memory_dir / name).resolve().parent != root:
                continue
        if not name.isascii():
            try:
                name.encode("utf-8")  # a name that is not UTF-8 holds surrogates (Cs)
            except UnicodeEncodeError:
                continue
        names.append(name)
    names.sort()
    return names


def write_leaf(path: Path, description: str, fact_type: str, body: str) -> bytes | None:
    """Write the leaf `path` in the canonical shape (name: its stem in kebab-case), for a
    fact stated whole by an agent; return the bytes it replaced, None when it is new. A
    leaf already there keeps the frontmatter lines other than its description and type
    (subrosa.memory.frontfix.restate); its body is the new one.
    A symlink or anything but a regular file at `path` is refused, never written
    through."""
    previous = None
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise LeafError(path, "is not a regular file; edit it by hand")
    if path.exists():
        previous = path.read_bytes()
    name = slug_for(path).replace("_", "-")
    text = render_leaf(name, description, fact_type, body)
    if previous is not None:  # a person's leaf: the frontmatter lines not set here stay
        text = _restated(path, previous, description, fact_type, body) or text
    atomic_write_text(path, text, new_mode=new_file_mode(path.parent))
    return previous


def _restated(
    path: Path, previous: bytes, description: str, fact_type: str, body: str
) -> str | None:
    """The leaf `previous` with its description, type and body replaced and every other
    frontmatter line kept; None when that cannot be done line by line, or would give a
    leaf the strict reader refuses (the caller writes it canonically then)."""
    from subrosa.memory.frontfix import restate

    old = previous.decode("utf-8", errors="replace")
    bom = "\ufeff" if old.startswith("\ufeff") else ""
    head = restate(old.removeprefix(bom), description, fact_type)
    if head is None:
        return None
    newline = "\r\n" if head.endswith("\r") else "\n"
    text = bom + head.removesuffix("\r") + f"\n\n{body.strip()}\n".replace("\n", newline)
    try:
        parse_leaf(path, given=text.encode("utf-8"))
    except LeafError:
        return None
    return text


def restore_leaf(path: Path, previous: bytes | None) -> None:
    """Put back what write_leaf replaced (remove the leaf it created)."""
    if previous is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_bytes(path, previous)
