"""The sidecar between two generates: the `fact` commands append a line per fact they
change (their cost must not grow with the number of facts), readers take a slug's
last line, `generate` folds them back into one sorted line per fact, and a line torn
by a power cut is neither read nor built upon."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.memory.state import (
    append_state,
    fold_state,
    load_state,
    render_state,
    save_state,
    state_path,
)

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
def test_appended_lines_read_as_the_whole_file_would(
    tmp_path_factory: object, before: dict[str, str], changes: list[dict[str, str]]
) -> None:
    memory_dir = Path(tmp_path_factory.mktemp("m"))  # type: ignore[attr-defined]
    path = _sidecar(memory_dir, render_state([_row(s, h) for s, h in before.items()]))
    after = dict(before)
    for change in changes:
        assert append_state(memory_dir, [_row(s, h) for s, h in change.items()])
        after.update(change)
    rows = [_row(s, h) for s, h in after.items()]
    assert load_state(memory_dir) == {str(r["slug"]): r for r in rows}
    exact = path.read_text(encoding="utf-8") == render_state(rows)
    assert fold_state(memory_dir, rows) == ("same" if exact else "folded")
    save_state(memory_dir, rows)
    assert fold_state(memory_dir, rows) == "same"
    assert path.read_text(encoding="utf-8") == render_state(rows)


def test_a_sidecar_changed_under_the_database_differs(tmp_path: Path) -> None:
    _sidecar(tmp_path, render_state([_row("a", "theirs")]))
    assert fold_state(tmp_path, [_row("a", "ours")]) == "differs"
    assert fold_state(tmp_path, [_row("a", "theirs"), _row("b", "x")]) == "differs"
    assert fold_state(tmp_path / "none", [_row("a", "theirs")]) == "differs"


def test_a_line_torn_by_a_power_cut_is_skipped_then_cut(tmp_path: Path) -> None:
    whole = render_state([_row("a", "kept")])
    torn = json.dumps(_row("b", "torn"))[:37]
    path = _sidecar(tmp_path, whole + torn)
    assert load_state(tmp_path) == {"a": _row("a", "kept")}
    assert append_state(tmp_path, [_row("c", "new")])
    assert (
        path.read_text(encoding="utf-8")
        == whole + json.dumps(_row("c", "new"), ensure_ascii=False) + "\n"
    )


def test_a_whole_last_line_without_its_line_end_is_kept(tmp_path: Path) -> None:
    """A hand-written sidecar may lack the final newline: that line is data, not a tear."""
    last = json.dumps(_row("a", "by hand"))
    _sidecar(tmp_path, last)
    assert append_state(tmp_path, [_row("b", "new")])
    assert load_state(tmp_path) == {"a": _row("a", "by hand"), "b": _row("b", "new")}


def test_there_is_nothing_to_append_to_without_a_sidecar(tmp_path: Path) -> None:
    assert not append_state(tmp_path, [_row("a", "x")])
    assert not state_path(tmp_path).exists()
