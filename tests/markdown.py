"""What a markdown reader makes of a line: the links in it, by CommonMark (markdown-it-py,
which rich already brings) and by the witness's grammar.

Issue 17 keeps a user's square brackets in the index (`players[pid]`) instead of turning
them into parentheses; the tests then check the rule that matters, not a proxy: a
fragment of user text forms no link, reference link or `[[wikilink]]`, whoever reads it.
"""

from __future__ import annotations

import re
import unicodedata

from markdown_it import MarkdownIt

from subrosa.memory.witness import load

_MD = MarkdownIt("commonmark")
# Two brackets that would join into a link: inline `](`, wikilink `[[`.
_JOIN = re.compile(r"(?<!\\)\]\(|(?<!\\)\[\[")
# A link definition (`[y]: url`), without which `[x][y]` is no link: only a whole line.
_DEFINITION = re.compile(r"^\s{0,3}\[(?:\\.|[^\[\]\\])*\]:")
# An item as the generator renders it; the title may hold backslash escapes.
ITEM = re.compile(r"^- \[((?:\\.|[^\[\]\\])*)\]\(([^\s()<>]+)\)(?: — (.*))?$")
# A link to a leaf file beside the index (what SessionStart keeps of a foreign index).
LEAF_LINK = re.compile(r"\[(?:\\.|[^\[\]\\])*\]\([^\s()]*\.md(?:#[^\s()]*)?\)")


def links(text: str) -> list[str]:
    """The targets of every link or image CommonMark reads in `text` (one line)."""
    found = []
    for token in _MD.parseInline(text):
        for child in token.children or ():
            if child.type in ("link_open", "image"):
                found.append(str(child.attrs.get("href") or child.attrs.get("src") or ""))
    return found


def forms_link(text: str, *, whole_line: bool = False) -> bool:
    """True when `text` holds a link for CommonMark, the witness, or a wikilink reader
    (or, when it is a `whole_line`, is a link definition)."""
    witness = load()
    return bool(
        links(text)
        or witness.LINK.search(text)
        or witness.WIKILINK.search(text)
        or _JOIN.search(text)
        or (whole_line and _DEFINITION.match(text))
    )


def shown_as_written(text: str, *, spaces: bool = False) -> bool:
    """Every character of `text` is one a reader sees (printable, or a space: with
    `spaces` any space character, as a view that keeps a line's indent shows), but for a
    zero-width joiner or non-joiner that spells (docs/security.md): one alone, between
    two visible characters that are not ASCII. No run of invisible characters, none at
    an end, none between ASCII letters: nowhere to hide a payload."""
    for i, ch in enumerate(text):
        if ch.isprintable() or ch == " " or (spaces and unicodedata.category(ch) == "Zs"):
            continue
        if ch not in "\u200c\u200d" or not 0 < i < len(text) - 1:
            return False
        before, after = text[i - 1], text[i + 1]
        if not all(
            c.isprintable() and not c.isascii() and not c.isspace() for c in (before, after)
        ):
            return False
    return True


# What CommonMark makes of a document that is more than plain lines of text: the blocks a
# line can open (a heading, a fence, a quote, a list, raw HTML, a rule) and the inline
# links, images and tags. Paragraphs, text, emphasis and code spans are not in it.
_ACTIVE_BLOCKS = {
    "heading_open",
    "fence",
    "code_block",
    "blockquote_open",
    "bullet_list_open",
    "ordered_list_open",
    "html_block",
    "hr",
}
_ACTIVE_INLINE = {"link_open", "image", "html_inline"}


def active_markdown(text: str) -> list[str]:
    """Every construct CommonMark reads in the whole of `text` beyond paragraphs of
    text (see _ACTIVE_BLOCKS and _ACTIVE_INLINE; a link definition too, which renders
    as nothing), each as `type: what it holds`, plus every `[[wikilink]]` and link the
    witness reads; empty when the text is inert."""
    found = []
    env: dict[str, dict[str, object]] = {}
    tokens = _MD.parse(text, env)
    found += [f"definition: {label}" for label in env.get("references", {})]
    for token in tokens:
        if token.type in _ACTIVE_BLOCKS:
            found.append(f"{token.type}: {token.content or token.markup}")
        for child in token.children or ():
            if child.type in _ACTIVE_INLINE:
                target = child.attrs.get("href") or child.attrs.get("src") or child.content
                found.append(f"{child.type}: {target}")
    witness = load()
    found += [f"witness link: {m.group(0)}" for m in witness.LINK.finditer(text)]
    found += [f"wikilink: {m.group(0)}" for m in witness.WIKILINK.finditer(text)]
    return found
