"""The frontmatter mender (subrosa.memory.frontfix), pure: whatever else a leaf's
frontmatter holds, mending it keeps every line it need not change, byte for byte and in
its order, and leaves a leaf the strict reader takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.memory.frontfix import Unfixable, mend, restate
from subrosa.memory.leaf import parse_leaf

# Lines a person writes in frontmatter that YAML reads: none gives name, description
# or type, so none needs changing.
KEPT = [
    "# a comment",
    "tags: [a, b]",
    "tags2:\n  - one\n  - 'two'",
    "list_at_key:\n- x\n- y",
    '"quoted key": yes',
    "'single': 'it''s'",
    "summary: |\n  line one\n\n  line three",
    "folded: >\n  folded\n  text",
    "base: &anchor x",
    "flow: {k: v, n: 1}",
    "when: 2026-01-05",
    "empty:",
    "déjà: vu  # trailing comment",
    "number: 010",
]
# What is broken or missing, and each line as it is after the fix (None: dropped).
BROKEN = [
    ("description: set weight: 1 here", "description: 'set weight: 1 here'"),
    ('description: "open quote', "description: '\"open quote'"),
    ("description: |\n  two\n  lines", "description: two lines"),
    ("description: ok\nmetadata:\n\ttype: user", "description: ok\nmetadata:\n  type: user"),
    ("description: ok", "description: ok"),  # only the type is missing
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(KEPT), max_size=6, unique=True),
    st.sampled_from(BROKEN),
    st.integers(0, 6),
    st.sampled_from(["\n", "\r\n"]),
)
def test_mending_keeps_every_line_it_need_not_change(
    kept: list[str], broken: tuple[str, str], where: int, newline: str
) -> None:
    before, after = broken
    entries = [*kept]
    entries.insert(min(where, len(entries)), before)
    text = "---\n" + "\n".join(entries) + "\n---\n\nBody.\n"
    mended = mend(text.replace("\n", newline), "x", "unused", "project", newline)
    assert mended is not None
    expected_lines = [*kept]
    expected_lines.insert(min(where, len(expected_lines)), after)
    head, _, rest = mended.partition(f"{newline}---{newline}")
    assert rest == f"{newline}Body.{newline}"
    lines = head.split(newline)[1:]
    # Every line kept, in order; the broken one as `after`; at most name and type added.
    kept_lines = "\n".join(kept).split("\n") if kept else []
    assert [line for line in lines if line in kept_lines] == kept_lines
    assert after in "\n".join(lines)
    written = "\n".join([*kept, after]).split("\n")
    added = [line for line in lines if line not in written]
    assert set(added) <= {"name: x", "metadata:", "  type: project"}
    path = Path("/nonexistent/project_x.md")
    leaf = parse_leaf(path, given=mended.encode())
    assert leaf.body == "Body."


@pytest.mark.parametrize(
    ("frontmatter", "said"),
    [
        ("description: d\ntype: note", "none of"),
        ("description: [a, b]\ntype: user", "not a line of text"),
        ("description: d\nref: &r a\nother: *r\ntype: user", "alias"),
        ("description: d\ndescription: |\n  e\n  f\ntype: user", "twice"),
        ("description: d\nmetadata: {owner: me}", "metadata"),
    ],
)
def test_what_only_dropping_words_could_fix_is_refused(frontmatter: str, said: str) -> None:
    with pytest.raises(Unfixable, match=said):
        mend(f"---\n{frontmatter}\n---\nBody\n", "x", "d", "project", "\n")


def test_no_frontmatter_block_is_left_to_the_caller() -> None:
    assert mend("Just text.\n", "x", "d", "project", "\n") is None
    assert mend("---\nname: x\nno closing line\n", "x", "d", "project", "\n") is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (  # CRLF, a top-level type, a comment: each line but the two set stays
            "---\r\nname: a  # mine\r\ntype: user\r\ndescription: old\r\n---\r\nbody\r\n",
            "---\r\nname: a  # mine\r\ntype: project\r\ndescription: New d\r\n---\r",
        ),
        (  # no description, no type: added where the canonical shape has them
            "---\nname: a\nx: 1\n---\nb",
            "---\nname: a\ndescription: New d\nx: 1\nmetadata:\n  type: project\n---",
        ),
        ("---\nname: a\nmetadata: {type: user}\n---\nb\n", None),  # no line to change
        ("---\n- a list\n---\nb\n", None),
        ("no frontmatter\n", None),
    ],
)
def test_restate_sets_description_and_type_and_keeps_the_rest(
    before: str, after: str | None
) -> None:
    assert restate(before, "New d", "project") == after
