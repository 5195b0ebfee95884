"""What reconciling the facts with the disk found and did (Report), and the index lines a
take-over reads (Source) or finds without a leaf (Loose). Plain values, standard library
only: subrosa.memory.takeover (SQLAlchemy) fills them, and so does generate's quick path
(subrosa.memory.quick, sqlite3), so `generate` reports the same way on either."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from subrosa.memory.indexfile import IndexLine


def lines_of(line: IndexLine, origin: str) -> str:
    """Where an item is: `line 3 of MEMORY.md`, or `lines 3–5 of MEMORY.md`."""
    numbers = line.numbers
    if len(numbers) == 1:
        return f"line {line.number} of {origin}"
    return f"lines {numbers[0]}–{numbers[-1]} of {origin}"


@dataclass
class Loose:
    """An item no leaf stands behind: a line that links a file that does not exist, a
    bullet with no link, prose, or a line whose every link has a line of its own."""

    origin: str
    line: IndexLine
    target: str | None
    # Why it cannot be placed, when it cannot (Report.unplaced).
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {
            "file": self.origin,
            "line": self.line.number,
            "target": self.target,
            "text": self.line.text,
        }
        if self.why:
            data["why"] = self.why
        return data

    def describe(self) -> str:
        """Where the item is and what is wrong with it, for a person."""
        where = f"{self.origin} {lines_of(self.line, self.origin).rsplit(' of ', 1)[0]}"
        if self.why:
            return f"{where} {self.why}"
        if self.target:
            return f"{where} links {self.target}, which does not exist"
        if self.line.prose:
            verb = "is" if len(self.line.numbers) == 1 else "are"
            return f"{where} {verb} text, not an index entry"
        if self.line.targets:
            return f"{where} only mentions files that have lines of their own"
        return f"{where} has no link"


@dataclass
class Report:
    """What a take-over did (or, in a dry run, would do)."""

    adopted: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    hooks_taken: list[str] = field(default_factory=list)
    materialized: list[str] = field(default_factory=list)
    loose: list[Loose] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    # Facts whose hook, pin, status, order… were taken from a sidecar changed under the db.
    synced: list[str] = field(default_factory=list)
    # Lines written by others that the take-over cannot place (an edit of a cold-tier
    # line, a hook for a leaf that cannot be read): reported, and their file kept.
    unplaced: list[Loose] = field(default_factory=list)
    # The facts whose leaf is on disk and readable, after the take-over (ORM Facts, or
    # rows of subrosa.memory.rows on the quick path).
    facts: list[Any] = field(default_factory=list)


@dataclass
class Source:
    """Index lines to take over: from MEMORY.md (hot) or a foreign MEMORY_archive.md (cold)."""

    origin: str
    lines: list[IndexLine]
    cold: bool = False
    # Line numbers to take over; None takes over every line (adopt).
    foreign: set[int] | None = None
    # A subrosa-written archive read without the record of what subrosa wrote (a clone
    # without .subrosa/): its "## Archived" section says which facts were archived.
    by_section: bool = False
    # Foreign lines this source cannot take over (see Report.unplaced).
    unplaced: list[IndexLine] = field(default_factory=list)

    def taken_lines(self) -> list[IndexLine]:
        if self.foreign is None:
            return self.lines
        foreign = self.foreign
        return [line for line in self.lines if any(n in foreign for n in line.numbers)]
