"""Property tests for ranking, packing and rendering (subrosa.memory.generator), no database."""

from __future__ import annotations

import dataclasses
import tempfile
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.config import DEFAULT_TYPE_WEIGHTS, FACT_TYPES
from subrosa.memory import generator
from subrosa.memory.generator import Entry
from subrosa.memory.witness import load, md_targets

TEXT = st.text(
    alphabet=st.sampled_from(list("abcdefgh xyz-—;:[]()<>`\n#한국어기억✓é")), max_size=160
)
START = datetime(2026, 1, 1)


@st.composite
def entries(draw: st.DrawFn) -> list[Entry]:
    count = draw(st.integers(min_value=0, max_value=60))
    result = []
    for n in range(count):
        archived = draw(st.booleans()) and draw(st.booleans())
        result.append(
            Entry(
                slug=f"leaf_{n:03d}",
                filename=draw(st.sampled_from([f"leaf_{n:03d}.md", f"leaf {n:03d} (x).md"])),
                title=draw(TEXT),
                hook=draw(TEXT),
                type=draw(st.sampled_from(FACT_TYPES)),
                updated_at=START + timedelta(hours=draw(st.integers(0, 50))),
                position=draw(st.integers(1, 100)),
                section=draw(st.sampled_from([None, None, "Laws", "한국어 섹션", "#"])),
                pinned=draw(st.booleans()) and draw(st.booleans()),
                archived=archived,
                archive_reason=draw(TEXT) if archived else None,
                archived_at=START if archived else None,
                hits=draw(st.integers(0, 5)),
            )
        )
    return result


def _plan(items: list[Entry], budget: int, max_lines: int) -> generator.Plan:
    return generator.plan(items, budget=budget, max_lines=max_lines, weights=DEFAULT_TYPE_WEIGHTS)


@settings(max_examples=150, deadline=None)
@given(entries(), st.integers(250, 6_000), st.integers(4, 60))
def test_budget_cap_bijection_and_determinism(items: list[Entry], budget: int, cap: int) -> None:
    result = _plan(items, budget, cap)
    assert result.bytes <= budget and result.lines <= cap
    assert result.memory_md.encode() == _plan(list(reversed(items)), budget, cap).memory_md.encode()
    refs = Counter(md_targets(result.memory_md) + md_targets(result.archive_md))
    refs.pop("MEMORY.md", None)
    assert refs.pop("MEMORY_archive.md") == 1
    assert refs == Counter(e.filename for e in items)
    assert {e.slug for e in result.included} | {e.slug for e in result.below_budget} == {
        e.slug for e in items if not e.archived
    }


@settings(max_examples=150, deadline=None)
@given(entries(), st.integers(250, 4_000), st.integers(4, 40))
def test_no_left_out_fact_would_still_fit(items: list[Entry], budget: int, cap: int) -> None:
    """Nothing was displaced: every fact below the budget would break it if added now, so a
    lower-ranked fact never took the place of a higher-ranked one that fits."""
    result = _plan(items, budget, cap)
    for left_out in result.below_budget:
        bigger = generator.render_index([*result.included, left_out])
        assert len(bigger.encode()) > budget or bigger.count("\n") > cap


@settings(max_examples=60, deadline=None)
@given(entries(), st.integers(250, 4_000))
def test_the_witness_passes_on_what_was_written(items: list[Entry], budget: int) -> None:
    with tempfile.TemporaryDirectory() as raw:
        directory = Path(raw)
        for entry in items:
            (directory / entry.filename).write_text("---\ndescription: x\n---\n", encoding="utf-8")
        result = _plan(items, budget, 200)
        (directory / "MEMORY.md").write_text(result.memory_md, encoding="utf-8")
        (directory / "MEMORY_archive.md").write_text(result.archive_md, encoding="utf-8")
        verdict = load().witness(directory, max_bytes=budget)
        assert verdict["ok"], verdict


def test_rank_order() -> None:
    def entry(slug: str, **kw: object) -> Entry:
        values: dict[str, object] = {
            "slug": slug,
            "filename": f"{slug}.md",
            "title": slug,
            "hook": "h",
            "type": "reference",
            "updated_at": START,
            "position": 1,
        }
        values.update(kw)
        return Entry(**values)  # type: ignore[arg-type]

    items = [
        entry("old_pinned", pinned=True, updated_at=START - timedelta(days=900)),
        entry("feedback", type="feedback"),
        entry("newer", updated_at=START + timedelta(days=1)),
        entry("hit", hits=9),
        entry("b_tie"),
        entry("a_tie"),
    ]
    ranked = sorted(items, key=lambda e: generator.rank_key(e, DEFAULT_TYPE_WEIGHTS))
    assert [e.slug for e in ranked] == ["old_pinned", "feedback", "newer", "hit", "a_tie", "b_tie"]


@settings(max_examples=150, deadline=None)
@given(entries())
def test_the_take_over_parser_reads_back_what_was_rendered(items: list[Entry]) -> None:
    from subrosa.memory.indexfile import parse_index

    active = [e for e in items if not e.archived]
    text = generator.render_index(active)
    parsed = [line for line in parse_index(text) if not line.prose]  # prose: the header
    shown = sorted(active, key=lambda e: (generator.section_name(e) is not None, 0))
    assert sorted(t for line in parsed for t in line.targets) == sorted(e.filename for e in shown)
    by_file = {line.targets[0]: line for line in parsed}
    for entry in active:
        line = by_file[entry.filename]
        assert line.lead == entry.filename
        assert line.hook == generator.sanitize_field(entry.hook)
        assert line.section == generator.section_name(entry)
        # The title read back renders the same line (brackets and all: issue 17).
        again = dataclasses.replace(entry, title=line.title or "")
        assert generator.index_line(again) == generator.index_line(entry)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_take_over_parser_never_fails(text: str) -> None:
    from subrosa.memory.indexfile import parse_index

    for line in parse_index(text):
        assert "\n" not in line.hook and all(
            t.endswith((".md", ".MD", ".Md", ".mD")) for t in line.targets
        )
