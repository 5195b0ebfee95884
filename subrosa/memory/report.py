"""What reconciling the facts with the disk found and did (Report), and the index lines a
take-over reads (Source) or finds without a leaf (Loose). Plain values, standard library
only: subrosa.memory.takeover (SQLAlchemy) fills them, and so does generate's quick path
(subrosa.memory.quick, sqlite3), so `generate` reports the same way on either."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from subrosa.memory.indexfile import IndexLine


@dataclass
class Loose:
    """A line that links a file that does not exist, or a bullet with no link."""

    origin: str
    line: IndexLine
    target: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.origin,
            "line": self.line.number,
            "target": self.target,
            "text": self.line.text,
        }

    def describe(self) -> str:
        """Where the line is and what is wrong with it, for a person."""
        what = f"links {self.target}, which does not exist" if self.target else "has no link"
        return f"{self.origin} line {self.line.number} {what}"


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

    def taken_lines(self) -> list[IndexLine]:
        if self.foreign is None:
            return self.lines
        return [line for line in self.lines if line.number in self.foreign]
