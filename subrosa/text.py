"""Making untrusted text safe to store, show, or put where the agent will read it.

Hooks, descriptions and titles come from transcripts, tool output and web pages; so
does every archived message. Written into MEMORY.md they are loaded into every future
session, injected by SessionStart, or read back by the extraction skill from
`transcript show`, so they must not be able to add a line, a link, a tag, or a
terminal escape of their own. Standard library only: the hooks use this too.

The rule is an allowlist: what reaches MEMORY.md, the archive and injected context is
plain text, plus the markdown subrosa writes itself (`- [Title](leaf.md) — hook`,
`## Section`, its headers). Everything else is made inert, and the user's text is
kept readable:

- Removed, because it is not text: control characters (ESC sequences whole: colours,
  OSC 52 clipboard writes, OSC 8 hidden links), format characters (bidi controls,
  zero-width marks, the Unicode tag characters U+E0000–E007F), variation selectors
  and the other default-ignorable code points, surrogates, private-use characters.
  One text or emoji presentation selector (U+FE0E, U+FE0F) stays right after a
  character that has both forms (❤️, ⚠️, a keycap 1️⃣): it is how the user wrote it.
  In one-line contexts every line break becomes a space. A zero-width joiner or
  non-joiner (U+200D, U+200C) stays where it spells: alone between two letters of a
  script that joins or shapes (Persian `می‌خواهم`), or between two emoji (👨‍👩‍👧).
- Escaped, because it is text that would otherwise be markup: a `<` that would open
  a tag, a comment, a special token or an autolink (`<system>`, `</x>`, `<!--`,
  `<?x`, `<|im_start|>`, `<https://…>`) becomes `‹`, and the `>` that closes it
  `›`. A `<` counts as one when a letter, `_`, `/`, `!`, `?` or `|` follows it,
  checked after NFKC (`<ⓢys>`, `<ｓｙｓ>`); its fullwidth and small forms (`＜`,
  `﹤`: what NFKC maps to `<`) and the entities `&lt;`, `&#60;`, `&#x3c;` count too.
  So `Vec<String>` reads `Vec‹String›` and `git show <rev>:<path>` reads
  `git show ‹rev›:‹path›`, while `a < b`, `x<=y` and `i < 10` are left alone.
- In one-line contexts (index lines): the brackets stay, but where two would join
  into a link (`](`, `[[`) a backslash goes between them (`[x]\\(y.md)`,
  `[\\[w]]`), so no `[x](y)` link or `[[wikilink]]` forms (and a hand-written
  index line that is a link definition, `[y]: url`, reads `[y]\\: url`), and
  `players[pid]` or an Erlang list `[{Type, Value}, ...]` reads as written (issue 17:
  the text is the user's; never substitute). Inside a link's text (a title) every
  bracket is escaped. Code fences go, and a leading `System:` / `Human:` role prefix
  goes; in a field of a line subrosa writes (sanitize_field: an index line's title or
  hook, a heading) both stay, as no such field starts a line.
- In the views (terminal_line: `search`, `transcript show` and `list`, the MCP tools,
  paths in hook messages) the same backslash goes where brackets would join
  (escape_links), and nothing else of the line changes but what the rules above drop
  or escape; the views frame or indent each line so that none starts a block, and
  where untrusted text must start one (an id in a listing), escape_block_start puts a
  backslash before what would open a heading, fence, quote, list or definition.
"""

from __future__ import annotations

import re
import unicodedata

from subrosa.lazyre import compile_lazily

# Default-ignorable characters that str.isprintable() accepts (combining marks and
# letters that render as nothing).
_IGNORABLE = compile_lazily(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
# Terminal escape sequences, removed whole: CSI (colours, cursor moves), OSC (titles,
# OSC 8 links, OSC 52 clipboard writes) and the other string sequences, each bounded.
_ANSI = compile_lazily(
    r"\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]"
    r"|\x1b[\]P^_X][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)"
    r"|\x1b[ -/]{0,8}[0-~]"
)

# A `<` (or a form NFKC maps to it, or its entity) that may open a tag: an ASCII
# letter, `_`, `/`, `!`, `?` or `|` after it, or any non-ASCII character, which
# _escape_tag then checks in its NFKC form (`＜ｓｙｓ＞`, `<ⓢys>` open tags too).
_LT = "<\ufe64\uff1c"
_GT = ">\ufe65\uff1e"
_OPEN = compile_lazily(rf"(?:[{_LT}]|&(?i:lt|#0*60|#x0*3c);?)(?=[A-Za-z_/!?|]|[^\x00-\x7f])")
# The opener, and when a `>` closes it within 256 characters of the line, the body
# and the closer too. The body holds no `<`, `>`, `&` or line break, so a failed
# closer costs at most 256 steps and never overlaps the next opener's.
_TAG = compile_lazily(
    _OPEN.pattern + rf"(?:(?P<body>[^{_LT}{_GT}&\n]{{0,256}})(?:[{_GT}]|&(?i:gt|#0*62|#x0*3e);?))?"
)
# Zero-width non-joiner and joiner: format characters, but part of the spelling of
# Persian, Arabic-script and Indic words and of emoji sequences (strip_invisible).
_JOINERS = "\u200c\u200d"
# Scripts that join or shape, whose spelling uses them: Arabic (and its supplements and
# presentation forms), Syriac, Thaana, N'Ko, the Indic scripts from Devanagari to
# Sinhala, Tibetan, Myanmar, Khmer, Mongolian, the Brahmic scripts of U+A800-ABFF and
# of the supplementary plane (Brahmi, Kaithi, Sharada, ...).
_JOINING_SCRIPT = compile_lazily(
    "[\u0600-\u08ff\u0900-\u0dff\u0f00-\u0fff\u1000-\u109f\u1780-\u18af"
    "\ua800-\uabff\ufb50-\ufdff\ufe70-\ufefe\U00011000-\U00011fff]"
)
# Emoji and their modifiers (skin tones), and the symbols emoji sequences join
# (U+2640 female sign, U+2764 heart, U+2695 staff of Aesculapius, ...).
_EMOJI = compile_lazily("[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]")
_VARIATION_SELECTOR = compile_lazily("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Text and emoji presentation (VS15, VS16): kept once after a character that has both
# forms (strip_invisible); the other variation selectors go (a run of them after any
# character is how text is hidden in an emoji).
_PRESENTATION = "\ufe0e\ufe0f"
# Characters outside _EMOJI's blocks with an emoji form: keycap bases, ©, ®, ‼, ⁉,
# ™, ℹ, arrows, Ⓜ, squares and triangles, ⤴, ⤵, 〰, 〽, ㊗, ㊙.
_EMOJI_BASES = frozenset(
    "#*0123456789\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194\u2195\u2196\u2197"
    "\u2198\u2199\u21a9\u21aa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb\u25fc\u25fd"
    "\u25fe\u2934\u2935\u3030\u303d\u3297\u3299"
)
# Where strip_invisible dropped a character, while it decides about joiners (NUL: a
# control character, never left in its output).
_GONE = "\x00"
OPEN_MARK = "‹"
CLOSE_MARK = "›"

_FENCE = compile_lazily(r"`{3,}|~{3,}")
_ROLE_PREFIX = compile_lazily(r"^\s*(?:system|assistant|human|user)\s*:\s*", re.IGNORECASE)
_SPACES = compile_lazily(r"\s+")
# Where two brackets would join into a link: `](` (inline) or `[[` (wikilink). The
# second character gets a backslash. (`a[i][j]` stays: a reference link `[x][y]` needs
# a definition line `[y]: url`, which no line subrosa writes can be, and which
# sanitize_index_line breaks in a hand-written index.)
_LINK_JOIN = compile_lazily(r"(?<=\])\(|(?<=\[)\[")
_SUSPECT = compile_lazily(rf"\]\(|\[\[|[{_LT}]|&(?i:lt|#)|```|~~~")


def escape_tags(text: str) -> str:
    """Every `<` that would open a tag, a comment or an autolink as `‹`, and the `>`
    that closes it (within 256 characters on the same line) as `›`."""
    if _OPEN.search(text) is None:
        return text
    return _TAG.sub(_escape_tag, text)


def _escape_tag(match: re.Match[str]) -> str:
    body = match.group("body")
    # The character after the opener: the body's first, or the one after the match.
    after = body[:1] if body else match.string[match.end() : match.end() + 1]
    if not after.isascii() and not _opens_tag(after):
        return match.group(0)
    return OPEN_MARK if body is None else f"{OPEN_MARK}{body}{CLOSE_MARK}"


def _opens_tag(char: str) -> bool:
    """`char` after a `<` opens a tag once NFKC-normalized (a letter, `_`, `/`, `!`, `?`, `|`)."""
    first = unicodedata.normalize("NFKC", char)[:1]
    return first.isalpha() or first in "_/!?|"


def strip_invisible(text: str) -> str:
    """One line's worth of text with what is not text dropped: escape sequences,
    control, format, private-use, unassigned and default-ignorable characters; every
    kind of line break becomes a space. A zero-width joiner or non-joiner that spells
    something stays (see _joins)."""
    if text.isprintable() and _IGNORABLE.search(text) is None:
        return text  # nothing to drop or replace (the common case, and much faster)
    out = []
    joiners = False
    for ch in _ANSI.sub("", text):
        if ch in "\n\r\t\v\f\x85\u2028\u2029":
            out.append(" ")
        elif ch in _JOINERS:
            out.append(ch)
            joiners = True
        elif (
            ch in _PRESENTATION
            and out
            and out[-1] not in _PRESENTATION
            and _has_emoji_form(out[-1])
        ):
            # Text or emoji presentation of the character before (❤️, ⚠️, 1️⃣, the
            # rainbow flag's 🏳️): its spelling, one selector after one such character.
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") or _IGNORABLE.match(ch):
            # What goes leaves a mark a joiner beside it sees (a run of invisible
            # characters is no spelling), but for a variation selector, which emoji
            # sequences hold.
            if not _VARIATION_SELECTOR.match(ch):
                out.append(_GONE)
        else:
            out.append(ch)
    if joiners:
        last = len(out) - 1
        out = [
            ch
            for i, ch in enumerate(out)
            if ch != _GONE
            and (ch not in _JOINERS or (0 < i < last and _joins(_base(out, i), out[i + 1])))
        ]
    return "".join(out).replace(_GONE, "")


def _has_emoji_form(char: str) -> bool:
    """Whether a presentation selector after `char` spells something: an emoji or a
    symbol with an emoji form, or a keycap's base (#, *, a digit). In _EMOJI's blocks
    only the symbols (So) have one: not the skin tones (🏻, Sk), brackets (⌈), math
    signs (⎛) or circled digits (❶) that share them."""
    if char in _EMOJI_BASES:
        return True
    return _EMOJI.match(char) is not None and unicodedata.category(char) == "So"


def _base(out: list[str], at: int) -> str:
    """The character a joiner at `at` follows, past a presentation selector (❤️‍🔥)."""
    before = out[at - 1]
    return out[at - 2] if before in _PRESENTATION and at >= 2 else before


def _joins(before: str, after: str) -> bool:
    """Whether a joiner between `before` and `after` (what is left of the text around
    it) is spelling: both letters or marks of a script that joins or shapes (a ZWNJ in
    Persian `می‌خواهم`, a ZWJ after a Devanagari virama), or both emoji (a family,
    a skin tone, a flag's rainbow). Anywhere else (at an end, beside a space, between
    ASCII or CJK letters, beside another joiner) it is invisible and goes: a hidden
    payload needs runs of invisible characters, and one joiner between two letters
    that use it carries no more than the spelling the reader sees."""
    if _EMOJI.match(before) and _EMOJI.match(after):
        return True
    return (
        _JOINING_SCRIPT.match(before) is not None
        and _JOINING_SCRIPT.match(after) is not None
        and unicodedata.category(before)[0] in "LM"
        and unicodedata.category(after)[0] in "LM"
    )


def escape_links(text: str) -> str:
    """Every bracket kept, with a backslash where two would join into a link: `](` reads
    `]\\(` and `[[` reads `[\\[`, so no `[x](y.md)` link or `[[wikilink]]` survives
    (for CommonMark, and for the witness's grammar)."""
    if "[" not in text and "]" not in text:
        return text
    return _LINK_JOIN.sub(lambda m: "\\" + m.group(0), text)


def escape_link_text(text: str) -> str:
    """`text` fit to stand inside a link's brackets (`[text](leaf.md)`): every bracket
    and backtick not already escaped gets a backslash (a backtick in the title could
    open a code span that swallows the link), and a backslash at the end is doubled (it
    would escape the closing bracket)."""
    if "[" not in text and "]" not in text and "`" not in text and not text.endswith("\\"):
        return text
    out: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif ch in "[]`":
            out.append("\\" + ch)
        else:
            out.append(ch)
    if escaped:
        out.append("\\")
    return "".join(out)


# What str.splitlines() (and editors, and a reader of MEMORY.md) breaks a line at.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def line_break_in(text: str) -> str | None:
    """How the first line break in `text` is said (`U+2028 LINE SEPARATOR`, `\\r`), or
    None when `text` is one line."""
    found = next((ch for ch in text if ch in LINE_BREAKS), None)
    if found is None:
        return None
    if found in "\n\r":
        return repr(found)[1:-1]
    import unicodedata

    name = unicodedata.name(found, "")
    return f"U+{ord(found):04X}" + (f" {name}" if name else "")


def one_line(text: str) -> str:
    """Collapse every run of whitespace (newlines included) into one space, and trim."""
    return _SPACES.sub(" ", text).strip()


def _plain(text: str) -> bool:
    """Whether `text` is one line that strip_invisible and one_line leave as it is, and
    starts with no role prefix: a clean line, markup aside."""
    return (
        text.isprintable()  # so its only whitespace is " "
        and _IGNORABLE.search(text) is None
        and "  " not in text
        and text == text.strip()
        and _ROLE_PREFIX.match(text) is None
    )


def _already_clean(text: str) -> bool:
    """True when sanitize_line would return `text` unchanged (checked with one cheap
    scan: the index renders thousands of lines that are almost always clean)."""
    return _SUSPECT.search(text) is None and _plain(text)


def sanitize_line(text: str, *, keep_links: bool = False) -> str:
    """Untrusted text as one safe line: no control characters, newlines, tags, code
    fences, role framing or (unless `keep_links`) Markdown links."""
    if _already_clean(text):
        return text
    # One pass can join the text around what it removed into something new (`~~\u200b~`
    # becomes a fence), so repeat until nothing changes; the result is a fixed point
    # (sanitizing twice changes nothing).
    previous = None
    cleaned = text
    while previous != cleaned:
        previous = cleaned
        cleaned = _sanitize_once(cleaned, keep_links)
    return cleaned


def _sanitize_once(text: str, keep_links: bool, field: bool = False) -> str:
    cleaned = escape_tags(strip_invisible(text))
    if not field:
        cleaned = _FENCE.sub(" ", cleaned)
    if not keep_links:
        cleaned = escape_links(cleaned)
    cleaned = one_line(cleaned)
    return cleaned if field else _ROLE_PREFIX.sub("", cleaned)


def sanitize_field(text: str) -> str:
    """Untrusted text as a field of a line subrosa writes: the title or hook of an index
    line (`- [Title](leaf.md) — hook`), a section heading, a description, an archive
    reason. As sanitize_line (one line, no control character, tag or link), but a code
    fence and a leading role prefix (`User: prefers tabs`) stay: placed after `- [`,
    ` — ` or `## `, neither can open a block or frame a turn, and they are the user's
    words (issue 17)."""
    previous = None
    cleaned = text
    while previous != cleaned:
        previous = cleaned
        cleaned = _sanitize_once(cleaned, False, field=True)
    return cleaned


# A link in an index line: `[text](target)`, the target a plain relative path; the
# text may hold backslash escapes (`[players\\[pid\\]](x.md)`, as the generator writes).
_INDEX_LINK = compile_lazily(r"\[((?:\\[^\n]|[^\[\]\\\n]){0,512})\]\(([^\s()<>\[\]]{1,512})\)")
_SCHEME = compile_lazily(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _leaf_target(target: str) -> bool:
    """A link target that names a leaf beside the index: relative, no scheme, `.md`."""
    path = target.split("#", 1)[0]
    return (
        path.lower().endswith(".md")
        and not path.startswith(("/", "\\"))
        and _SCHEME.match(path) is None
        and ".." not in path.split("/")
    )


def sanitize_index_line(line: str) -> str:
    """A line of a MEMORY.md that subrosa may not have written, as SessionStart injects
    it: the indentation and the links to leaf files beside it are kept, everything
    else is made inert as sanitize_line does (a link elsewhere is broken by a
    backslash, a code fence goes). A line subrosa generated comes back unchanged
    unless a hook holds a code fence (the file keeps it; the injected view does not)."""
    body = line.lstrip(" ")
    if _index_line_clean(body):
        return line
    indent = line[: len(line) - len(body)]
    previous = None
    while previous != body:
        previous = body
        body = _sanitize_index_once(body)
    return indent + body if body else ""


def _index_line_clean(body: str) -> bool:
    """True when _sanitize_index_once would return `body` (an index line without its
    indent) unchanged: the fast path for the lines subrosa generates, which SessionStart
    injects by the hundred (330 lines: ~25 ms the long way). _already_clean's
    conditions, its markup test taken part by part as _sanitize_index_once takes the
    line: the text around the links and each link's title hold nothing to escape, and
    each link names a leaf beside the index."""
    if not (body and _plain(body) and _DEFINITION.match(body) is None):
        return False
    last = 0
    for link in _INDEX_LINK.finditer(body):
        if (
            not _leaf_target(link.group(2))
            or _SUSPECT.search(body, last, link.start()) is not None
            or _SUSPECT.search(link.group(1)) is not None
        ):
            return False
        last = link.end()
    return _SUSPECT.search(body, last) is None


# A link reference definition (`[label]: url`), which would make `[x][label]` a link.
_DEFINITION = compile_lazily(r"^(\[(?:\\.|[^\[\]\\]){0,999}\]):")


def escape_definition(line: str) -> str:
    """A line that starts as a link reference definition (`[y]: url`, which would make
    `[x][y]` or `[y]` anywhere in the text a link) with a backslash before its colon."""
    return _DEFINITION.sub(r"\1\\:", line) if line.startswith("[") else line


# What opens a block at the start of a line (after at most three spaces): a heading, a
# fence, a quote, a list item, a thematic break or a setext underline. Group `mark` is
# the character a backslash makes text; for an ordered list, its `.` or `)`.
_BLOCK_START = compile_lazily(
    r"^(?P<indent> {0,3})(?:\d{1,9}(?P<delimiter>[.)])(?=[ \t]|$)"
    r"|(?P<mark>#{1,6}(?=[ \t]|$)|`{3}|~{3}|>|[-+*](?=[ \t]|$)"
    r"|(?:[-*_][ \t]*){3,}$|=+[ \t]*$))"
)


def escape_block_start(line: str) -> str:
    """A line of a view that untrusted text starts (a session's id in `transcript list`,
    a slug in `stale`) with a backslash before what would open a block in markdown (`#`
    of a heading, a fence, `>`, a list's `-` or `1.`, a rule, a link definition), so it
    reads as the text it is: `\\# Obey`, `1\\. x`. Any other line is returned as it is."""
    match = _BLOCK_START.match(line)
    if match is None:
        indent = len(line) - len(line.lstrip(" "))
        return line[:indent] + escape_definition(line[indent:]) if indent <= 3 else line
    at = match.start("delimiter") if match.group("delimiter") else match.start("mark")
    return line[:at] + "\\" + line[at:]


def _sanitize_index_once(body: str) -> str:
    body = escape_definition(one_line(strip_invisible(body)))
    out: list[str] = []
    last = 0
    for link in _INDEX_LINK.finditer(body):
        out.append(_inert(body[last : link.start()]))
        if _leaf_target(link.group(2)):
            out.append(f"[{_inert(link.group(1))}]({link.group(2)})")
        else:
            out.append(_inert(link.group(0)))
        last = link.end()
    out.append(_inert(body[last:]))
    return _ROLE_PREFIX.sub("", one_line("".join(out)))


def _inert(fragment: str) -> str:
    return escape_links(_FENCE.sub(" ", escape_tags(fragment)))


def terminal_line(text: str, *, keep_spaces: bool = False) -> str:
    """Untrusted text safe to print as (part of) one line on a terminal, or for the
    agent to read: line breaks become spaces, escape sequences, control, format,
    private-use and unassigned characters go, tags are escaped (escape_tags), and
    brackets that would join into a link or an image get a backslash (escape_links,
    as in the index). Runs of whitespace are collapsed unless `keep_spaces` (a
    transcript line shown with its indentation)."""
    cleaned = escape_links(escape_tags(strip_invisible(text)))
    return cleaned if keep_spaces else one_line(cleaned)


def printable(text: str) -> str:
    """Control, format and line-separator characters shown as escapes (`\\n`, `\\u202e`),
    so an error naming a hostile file name stays one honest line on a terminal."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")
        else ch
        for ch in text
    )


def truncate_bytes(text: str, max_bytes: int, ellipsis: str = "…") -> str:
    """Cut `text` to at most `max_bytes` UTF-8 bytes at a character boundary."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    room = max_bytes - len(ellipsis.encode("utf-8"))
    if room <= 0:
        return ""
    # A joiner left at the cut joins nothing (strip_invisible would drop it next time).
    return encoded[:room].decode("utf-8", errors="ignore").rstrip().rstrip(_JOINERS) + ellipsis
