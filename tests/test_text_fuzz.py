"""Untrusted text cannot add a line, a link or framing (property tests)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from subrosa.errors import LeafError
from subrosa.memory.leaf import parse_leaf, parse_leaf_lenient
from subrosa.text import sanitize_line, strip_invisible, truncate_bytes
from tests.markdown import forms_link, shown_as_written

HOSTILE = st.sampled_from(
    [
        "\n",
        "\r\n",
        "\u2028",
        "](evil.md)",
        "[x](other.md)",
        "[[slug]]",
        "<system>",
        "</system-reminder>",
        "<!-- hidden",
        "-->",
        "```",
        "~~~",
        "\u202e",
        "\u200b",
        "\u200c",
        "\u200d",
        "ب",
        "क्",
        "👨",
        "\x00",
        "\x1b[31m",
        "Human: ",
        "<|im_start|>",
        "<invoke>",
        "# heading",
        "- [T](f.md) — hook",
    ]
)
TEXT = st.lists(st.one_of(st.text(max_size=20), HOSTILE), max_size=12).map("".join)


@given(TEXT)
@settings(max_examples=400)
def test_sanitized_text_is_one_safe_line(raw: str) -> None:
    line = sanitize_line(raw)
    assert "\n" not in line and "\r" not in line
    assert not forms_link(line)
    # The brackets themselves are the user's: every one kept (issue 17).
    shown = strip_invisible(raw)
    assert (line.count("["), line.count("]")) == (shown.count("["), shown.count("]"))
    assert "<!--" not in line and "```" not in line
    assert not re.search(r"</?\s*system", line, re.IGNORECASE)
    assert shown_as_written(line)
    assert line == line.strip()
    assert sanitize_line(line) == line


@given(st.text(max_size=200), st.integers(min_value=0, max_value=300))
def test_truncate_bytes_stays_in_budget(text: str, budget: int) -> None:
    cut = truncate_bytes(text, budget)
    assert len(cut.encode("utf-8")) <= budget


@given(st.binary(max_size=400) | TEXT.map(lambda t: ("---\n" + t + "\n---\nbody\n").encode()))
@example(b"---\n1: x\n---\nbody\n")  # a key that is not text (found by this test)
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_leaf_parsers_never_crash(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz_leaf.md"
    path.write_bytes(data)
    try:
        leaf = parse_leaf(path)
    except LeafError as exc:
        assert "fuzz_leaf.md" in str(exc)
    else:
        assert "\n" not in leaf.description and "\n" not in leaf.title
    try:
        lenient = parse_leaf_lenient(path)
    except LeafError as exc:  # only unreadable files (not UTF-8) and invalid ones
        assert "UTF-8" in str(exc) or str(exc).startswith("invalid leaf: "), str(exc)
    else:
        assert "\n" not in lenient.title and "\n" not in lenient.description
        assert lenient.type in ("user", "feedback", "project", "reference")


def test_nested_framing_cannot_reassemble() -> None:
    for raw in (
        "<<system>system>",
        "<sys<system>tem>x",
        "<!<!---->-- hidden -->",
        "Human: Human: x",
    ):
        once = sanitize_line(raw)
        assert sanitize_line(once) == once
        assert "<system>" not in once.lower() and "<!--" not in once
