"""Secret redaction: what a transcript held that must never reach the archive.

The rules are subrosa.secrets' (standard library, shared with `fact upsert` and the
witness); this module only finds their triggers faster: every trigger in one
Aho-Corasick automaton, one pass over the lowercased text, so the rules only run on
the few texts that could hold a secret (ingest reads gigabytes, and forty `find`
scans of every message would dominate it). Each rule then tries one bounded match
where its triggers are, so redaction is linear in the text's length.

A secret becomes `[REDACTED:<kind>]`; for `key=value` shapes only the value goes.
Structured input (a tool call's JSON arguments) is redacted value by value before
it is encoded: a value under a key that names a secret (`"password": "…"`) goes
whole, and every string is redacted as text, so an escaped quote (`\\"`) in the
encoding can never hide one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import ahocorasick_rs

from subrosa import secrets
from subrosa.secrets import KIND_NAMES, TRIGGERS, Span, lower

__all__ = ["KIND_NAMES", "Redactor", "redact", "scan", "spans"]

# A DFA: forty short patterns make a small one, and it scans a quarter faster than
# the default NFA. Overlapping matches: every occurrence of every trigger, so no
# keyword inside another (`pass` in `requirepass`) is missed.
_AUTOMATON = ahocorasick_rs.AhoCorasick(
    list(TRIGGERS), implementation=ahocorasick_rs.Implementation.DFA
)


# The same triggers over UTF-8 bytes, and after them the UTF-8 forms of the invisible
# characters secrets.look_through looks through (U+E0000-U+E0FFF: every sequence that
# starts F3 A0), so one pass over a text's bytes tells both whether a trigger occurs
# and whether it holds an invisible character (_look). Bytes, because the automaton
# reads a str as UTF-8 and maps each offset back to characters: a third of its time on
# ASCII text, three times as much on the rest.
_INVISIBLE_UTF8 = sorted(
    {
        b"\xf3\xa0" if code >> 12 == 0xE0 else chr(code).encode()
        for lo, hi in secrets.INVISIBLE
        for code in range(lo, hi + 1)
    }
)
_BYTES_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(
    [trigger.encode() for trigger in TRIGGERS] + _INVISIBLE_UTF8,
    implementation=ahocorasick_rs.Implementation.DFA,
)
_TRIGGER_COUNT = len(TRIGGERS)
# A value nested deeper than this is encoded and redacted as text.
MAX_DEPTH = 32


def _same(text: str) -> str:
    return text


def scan(lowered: str) -> dict[str, list[int]]:
    """Where each trigger occurs in `lowered`: what secrets.find_triggers finds, in one pass."""
    return _found(_AUTOMATON.find_matches_as_indexes(lowered, overlapping=True))


def _found(matches: list[tuple[int, int, int]]) -> dict[str, list[int]]:
    """The triggers' matches as scan returns them (an invisible character's left out)."""
    if not matches:
        return {}
    # Built from the few matches, not from a list per trigger (forty of them).
    found: dict[str, list[int]] = {}
    for pattern, start, _ in matches:
        if pattern >= _TRIGGER_COUNT:
            continue
        trigger = TRIGGERS[pattern]
        starts = found.get(trigger)
        if starts is None:
            found[trigger] = [start]
        else:
            starts.append(start)
    return found


def _look(text: str) -> tuple[dict[str, list[int]], bool]:
    """scan(lower(text)) and secrets.has_invisible(text), from one pass over the bytes.

    The triggers are ASCII, and lower() maps ASCII letters as bytes.lower() does and
    every other character to one that is not ASCII, but for the Kelvin sign (to `k`;
    `İ` lowercases to two characters, and then lower() lowers ASCII only): so outside
    that one case the text's UTF-8 bytes, lowercased, hold the triggers where lower(text)
    holds them, a byte's offset turned into a character's by decoding what comes before
    it. The invisible characters are found in the same pass by their UTF-8 forms."""
    if text.isascii():
        return _found(_BYTES_AUTOMATON.find_matches_as_indexes(text.encode().lower(), True)), False
    if "\u212a" in text:
        return scan(lower(text)), secrets.has_invisible(text)
    data = text.encode()
    matches = _BYTES_AUTOMATON.find_matches_as_indexes(data.lower(), True)
    if not matches:
        return {}, False
    invisible = any(pattern >= _TRIGGER_COUNT for pattern, _, _ in matches)
    starts = sorted({start for pattern, start, _ in matches if pattern < _TRIGGER_COUNT})
    if not starts:
        return {}, invisible
    # Each start is an ASCII byte, so each piece decoded is whole characters.
    chars: dict[int, int] = {}
    byte = char = 0
    for start in starts:
        char += len(data[byte:start].decode())
        byte, chars[start] = start, char
    kept = [(p, chars[start], end) for p, start, end in matches if p < _TRIGGER_COUNT]
    return _found(kept), invisible


def spans(text: str) -> list[Span]:
    """The secrets in `text` (secrets.find_spans, with the automaton's scan)."""
    hits = scan(lower(text))
    return secrets.find_spans(text, hits) if hits else []


def may_hold_secret(text: str) -> bool:
    """False when `text` surely holds no secret: no trigger, no invisible character."""
    hits, invisible = _look(text)
    return bool(hits) or invisible


@dataclass
class Redactor:
    """Redacts text and structured values, and counts what it replaced, by kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        # secrets.look_through(text, spans), with one pass for the triggers and the
        # invisible characters (_look).
        hits, invisible = _look(text)
        if invisible:
            found = secrets.look_through(text, spans)
        else:
            found = secrets.find_spans(text, hits) if hits else []
        if not found:
            return text
        self.counts.update(span.kind for span in found)
        return secrets.replace(text, found)

    def value(self, value: object, prepare: Callable[[str], str] = _same, depth: int = 0) -> object:
        """A decoded JSON value with every string (`prepare`d first) redacted; a string
        under a key that names a secret is replaced whole when it looks like one.
        Deeper than MAX_DEPTH, a value is left out."""
        if isinstance(value, str):
            return self(prepare(value))
        if depth >= MAX_DEPTH:
            return "[… nested too deep]"
        if isinstance(value, dict):
            out: dict[object, object] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    out[key] = self.value(item, prepare, depth + 1)
                    continue
                name = prepare(key)
                kind = secrets.secret_value(name, prepare(item)) if isinstance(item, str) else None
                if kind is not None:
                    self.counts[kind] += 1
                    out[self(name)] = f"[REDACTED:{kind}]"
                else:
                    out[self(name)] = self.value(item, prepare, depth + 1)
            return out
        if isinstance(value, list):
            return [self.value(item, prepare, depth + 1) for item in value]
        return value

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str) -> str:
    """`text` with every secret replaced (when the counts are not needed)."""
    return Redactor()(text)
