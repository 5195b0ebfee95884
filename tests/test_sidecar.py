"""The sidecar between two generates: the `fact` commands rewrite only the lines of the
facts they change (their cost must not grow with the number of facts): a new fact's
line is appended, a known fact's line replaced where it is. Readers take a slug's last
line, `generate` sorts them back, and a line torn by a power cut is neither read nor
built upon."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.memory.state import load_state, render_state, save_state, state_path, update_state

_slugs = st.text(
    alphabet=st.sampled_from(list('abz_-09é東"\\') + ["\u2028", "\x85"]), min_size=1, max_size=6
)


def _row(slug: str, hook: str) -> dict[str, object]:
    return {
        "slug": slug,
        "title": slug.title(),
        "hook": hook,
        "section": None,
        "pinned": False,
        "status": "active",
        "archive_reason": None,
        "archived_at": None,
        "position": 1,
        "created_at": "2026-01-01T00:00:00Z",
    }


def _sidecar(memory_dir: Path, text: str) -> Path:
    path = state_path(memory_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_slugs, st.text(max_size=8), max_size=12),
    st.lists(st.dictionaries(_slugs, st.text(max_size=8), min_size=1, max_size=3), max_size=4),
)
def test_updated_lines_read_as_the_whole_file_would(
    tmp_path_factory: object, before: dict[str, str], changes: list[dict[str, str]]
) -> None:
    """Any run of updates leaves one line per fact, each fact's line the one a whole
    rewrite would hold, the lines of facts known before still in their places."""
    memory_dir = Path(tmp_path_factory.mktemp("m"))  # type: ignore[attr-defined]
    path = _sidecar(memory_dir, render_state([_row(s, h) for s, h in before.items()]))
    after = dict(before)
    for change in changes:
        assert update_state(memory_dir, [_row(s, h) for s, h in change.items()])
        after.update(change)
    rows = [_row(s, h) for s, h in after.items()]
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == len(after)
    assert load_state(memory_dir) == {str(r["slug"]): r for r in rows}
    known = [json.loads(line)["slug"] for line in lines[: len(before)]]
    assert known == sorted(before)
    save_state(memory_dir, rows)
    assert path.read_text(encoding="utf-8") == render_state(rows)


def test_a_line_torn_by_a_power_cut_is_skipped_then_cut(tmp_path: Path) -> None:
    whole = render_state([_row("a", "kept")])
    torn = json.dumps(_row("b", "torn"))[:37]
    path = _sidecar(tmp_path, whole + torn)
    assert load_state(tmp_path) == {"a": _row("a", "kept")}
    assert update_state(tmp_path, [_row("c", "new")])
    new = json.dumps(_row("c", "new"), ensure_ascii=False)
    assert path.read_text(encoding="utf-8") == whole + new + "\n"


def test_a_whole_last_line_without_its_line_end_is_kept(tmp_path: Path) -> None:
    """A hand-written sidecar may lack the final newline: that line is data, not a tear."""
    _sidecar(tmp_path, json.dumps(_row("a", "by hand")))
    assert update_state(tmp_path, [_row("b", "new")])
    assert load_state(tmp_path) == {"a": _row("a", "by hand"), "b": _row("b", "new")}


def test_a_line_written_by_hand_is_outranked_not_edited(tmp_path: Path) -> None:
    """A line subrosa did not write (other spacing) is not replaced in place: the new
    line is appended, and wins as a slug's last line."""
    by_hand = '{"hook": "old", "slug": "a"}'
    path = _sidecar(tmp_path, by_hand + "\n")
    assert update_state(tmp_path, [_row("a", "new")])
    assert path.read_text(encoding="utf-8").startswith(by_hand + "\n")
    assert load_state(tmp_path)["a"]["hook"] == "new"


def test_there_is_nothing_to_update_without_a_sidecar(tmp_path: Path) -> None:
    assert not update_state(tmp_path, [_row("a", "x")])
    assert not state_path(tmp_path).exists()


def test_a_new_fact_is_appended_without_reading_the_sidecar(tmp_path: Path) -> None:
    """A fact the database did not have gets its line appended unread (what makes a new
    fact's upsert cost the same at any size); a line the sidecar had for it already (a
    killed run's) is outranked, as the last line of a slug wins; a torn tail is cut."""
    whole = render_state([_row("a", "old"), _row("b", "kept")])
    path = _sidecar(tmp_path, whole + json.dumps(_row("c", "torn"))[:20])
    assert update_state(tmp_path, [_row("a", "new"), _row("d", "fresh")], frozenset({"a", "d"}))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[:2] == whole.split("\n")[:2] and len(lines) == 5 and lines[-1] == ""
    assert load_state(tmp_path) == {
        "a": _row("a", "new"),
        "b": _row("b", "kept"),
        "d": _row("d", "fresh"),
    }


def test_values_of_the_wrong_kind_in_a_hand_edited_line_are_not_used() -> None:
    # A merge resolved by hand may leave `"pinned": "no"`: a string is no boolean, and
    # must not pin the fact; a list is no section name.
    from subrosa.memory.values import state_values

    got = state_values({"slug": "a", "pinned": "no", "section": ["a", "b"], "hook": "h"})
    assert got == {"hook": "h"}
    assert state_values({"slug": "a", "pinned": False, "section": None}) == {
        "pinned": False,
        "section": None,
    }
