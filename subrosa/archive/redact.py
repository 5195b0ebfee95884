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
# A value nested deeper than this is encoded and redacted as text.
MAX_DEPTH = 32


def _same(text: str) -> str:
    return text


def scan(lowered: str) -> dict[str, list[int]]:
    """Where each trigger occurs in `lowered`: what secrets.find_triggers finds, in one pass."""
    matches = _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
    if not matches:
        return {}
    # Built from the few matches, not from a list per trigger (forty of them).
    found: dict[str, list[int]] = {}
    for pattern, start, _ in matches:
        trigger = TRIGGERS[pattern]
        starts = found.get(trigger)
        if starts is None:
            found[trigger] = [start]
        else:
            starts.append(start)
    return found


def spans(text: str) -> list[Span]:
    """The secrets in `text` (secrets.find_spans, with the automaton's scan)."""
    hits = scan(lower(text))
    return secrets.find_spans(text, hits) if hits else []


def may_hold_secret(text: str) -> bool:
    """False when `text` surely holds no secret: no trigger, no invisible character."""
    return bool(scan(lower(text))) or secrets.has_invisible(text)


@dataclass
class Redactor:
    """Redacts text and structured values, and counts what it replaced, by kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        found = secrets.look_through(text, spans)
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
