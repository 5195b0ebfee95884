"""The table every bench script prints: figure, measured, same-run baseline, ratio, target."""

from __future__ import annotations

from collections.abc import Sequence

HEADER = ("figure", "measured", "baseline (same run)", "ratio", "target")


def print_table(rows: Sequence[Sequence[str]], header: Sequence[str] = HEADER) -> None:
    """Print `rows` as a Markdown-compatible pipe table with aligned columns."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
