"""Making untrusted text safe to put on one line of an index the agent will read.

Hooks, descriptions and titles come from transcripts, tool output and web pages.
Written into MEMORY.md they are loaded into every future session, so they must not
be able to add a line, a link, or role/system framing of their own. Standard
library only: the hooks use this too.
"""

from __future__ import annotations

import re
import unicodedata

# Tags that frame roles or instructions for a model, or hide/execute content when
# rendered. Other angle-bracket text (`git show <rev>:<path>`) is left alone: it is
# common in real hooks and harmless as text.
_FRAMING_TAGS = (
    "system|system-reminder|system_prompt|systemprompt|user|assistant|human|ai|bot|"
    "instructions?|important|prompt|context|document|documents|tool_use|tool_result|"
    "tool_call|function_calls?|function_results?|invoke|parameter|thinking|"
    "command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    "user-prompt-submit-hook|im_start|im_end|script|style|iframe|img|a|svg|object|embed|"
    "details|summary|br|hr|div|span|p"
)
_TAG = re.compile(
    rf"</?\s*(?:[A-Za-z][\w.-]*:)?(?:{_FRAMING_TAGS})\b[^<>]*/?>|<\|[^<>|]*\|>",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_FENCE = re.compile(r"`{3,}|~{3,}")
_ROLE_PREFIX = re.compile(r"^\s*(?:system|assistant|human|user)\s*:\s*", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def strip_invisible(text: str) -> str:
    """Drop control and format characters (bidi overrides, zero-width marks)."""
    if text.isprintable():
        return text  # nothing to drop or replace (the common case, and much faster)
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "\n\r\t\v\f\x85\u2028\u2029":
            out.append(" ")
        elif category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(ch)
    return "".join(out)


def neutralize_links(text: str) -> str:
    """Square brackets become parentheses, so no `[x](y.md)` link or `[[wikilink]]` survives."""
    return text.replace("[", "(").replace("]", ")")


def one_line(text: str) -> str:
    """Collapse every run of whitespace (newlines included) into one space, and trim."""
    return _SPACES.sub(" ", text).strip()


def _already_clean(text: str) -> bool:
    """True when sanitize_line would return `text` unchanged (checked without regexes:
    the index renders thousands of lines that are almost always clean)."""
    return (
        text.isprintable()  # so its only whitespace is " "
        and "<" not in text
        and "[" not in text
        and "]" not in text
        and "```" not in text
        and "~~~" not in text
        and "  " not in text
        and text == text.strip()
        and _ROLE_PREFIX.match(text) is None
    )


def sanitize_line(text: str, *, keep_links: bool = False) -> str:
    """Untrusted text as one safe line: no control characters, newlines, comments,
    code fences, role framing or (unless `keep_links`) Markdown links."""
    if _already_clean(text):
        return text
    # Removing one tag can join the text around it into another (`<<system>system>`
    # leaves `<system>`), so repeat until nothing changes; every pass only removes,
    # so this ends, and the result is a fixed point (sanitizing twice changes nothing).
    previous = None
    cleaned = text
    while previous != cleaned:
        previous = cleaned
        cleaned = _sanitize_once(cleaned, keep_links)
    return cleaned


def _sanitize_once(text: str, keep_links: bool) -> str:
    cleaned = strip_invisible(text)
    cleaned = _COMMENT.sub(" ", cleaned)
    cleaned = _TAG.sub(" ", cleaned)
    cleaned = _FENCE.sub(" ", cleaned)
    if not keep_links:
        cleaned = neutralize_links(cleaned)
    cleaned = one_line(cleaned)
    return _ROLE_PREFIX.sub("", cleaned)


def terminal_line(text: str, *, keep_spaces: bool = False) -> str:
    """Untrusted text safe to print as (part of) one line on a terminal: line breaks
    become spaces and control, format, private-use and unassigned characters go, so an
    escape sequence loses its ESC and prints as inert text. Runs of whitespace are
    collapsed unless `keep_spaces` (a transcript line shown with its indentation)."""
    cleaned = strip_invisible(text)
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
    return encoded[:room].decode("utf-8", errors="ignore").rstrip() + ellipsis
