"""Leaves as subrosa reads them: the frontmatter split (python-frontmatter's reading,
without its import), the stat key that lets `generate` skip unchanged leaves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.errors import InvalidLeaf, LeafError
from subrosa.memory.leaf import (
    FrontmatterError,
    NotAMapping,
    _plain_mapping,
    parse_leaf,
    parse_leaf_lenient,
    split_frontmatter,
    stat_key,
)
from tests.conftest import write_leaf


@pytest.mark.parametrize(
    ("text", "meta", "content"),
    [
        ("---\na: 1\n---\nbody\n", {"a": 1}, "body"),
        ("---\r\na: 1\r\n---\r\n\r\nbody\r\nmore\r\n", {"a": 1}, "body\nmore"),
        ("---\na: 1\n----  \n\n\nbody", {"a": 1}, "body"),
        ("---\na: 1\nno closing line", {}, "---\na: 1\nno closing line"),
        ("  \n---\nx: y\n---\nb", {"x": "y"}, "b"),
        ("---\n---\nbody", {}, "body"),
    ],
)
def test_frontmatter_is_split_as_python_frontmatter_split_it(
    text: str, meta: dict[str, object], content: str
) -> None:
    assert split_frontmatter(text) == (meta, content)


@pytest.mark.parametrize(
    "text", ["---\n- a list\n---\nbody", "---\njust text\n---\nbody", "---\n1: x\n---\nbody"]
)
def test_frontmatter_that_is_no_mapping_of_text_keys_is_refused(text: str) -> None:
    """python-frontmatter dropped a list silently and choked on a number as a key; the
    leaf is invalid instead (subrosa.memory.leaf._check_shape)."""
    with pytest.raises(NotAMapping):
        split_frontmatter(text)


_lines = st.lists(
    st.sampled_from(["---", "----", "--- ", "a: 1", "b: [x, y]", "", "text", "# Head", "\r"]),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(_lines)
def test_the_split_agrees_with_python_frontmatter(lines: list[str]) -> None:
    """Where python-frontmatter is installed (it was subrosa's dependency, always called
    with its YAML handler), both read any arrangement of boundaries, YAML and text alike;
    YAML that is no mapping (which python-frontmatter dropped) is refused instead."""
    frontmatter = pytest.importorskip("frontmatter")
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    loaded: list[object] = []

    class Recording(YAMLHandler):  # type: ignore[misc]
        def load(self, fm: str, **kwargs: object) -> object:
            loaded.append(super().load(fm, **kwargs))
            return loaded[-1]

    text = "\n".join(lines)
    try:
        post = frontmatter.loads(text, handler=Recording())
    except yaml.YAMLError:
        with pytest.raises(FrontmatterError):
            split_frontmatter(text)
        return
    if loaded and loaded[0] is not None and not isinstance(loaded[0], dict):
        with pytest.raises(NotAMapping):
            split_frontmatter(text)
        return
    assert split_frontmatter(text) == (dict(post.metadata), post.content)


def test_metadata_keys_python_frontmatter_choked_on_are_read(tmp_path: Path) -> None:
    """A `content:` or `handler:` key made python-frontmatter's Post() raise TypeError: a
    traceback for the user. They are metadata like any other; a number as a key makes
    the leaf invalid, in one sentence."""
    path = write_leaf(tmp_path, "odd.md", extra="content: x\nhandler: y\n")
    leaf = parse_leaf(path)
    assert leaf.description == "A fact worth keeping." and leaf.body == "The body."
    path = write_leaf(tmp_path, "odder.md", extra="content: x\n1: z\n")
    with pytest.raises(InvalidLeaf, match="key '1' is a number"):
        parse_leaf(path)


def test_a_stat_key_is_not_trusted_while_the_file_is_fresh(tmp_path: Path) -> None:
    path = write_leaf(tmp_path, "fresh.md")
    st_now = os.stat(path)
    assert stat_key(st_now) is None  # written a moment ago: may change within its tick
    later = st_now.st_mtime_ns + 10**10
    assert stat_key(st_now, now_ns=later) == (
        f"{st_now.st_size}:{st_now.st_mtime_ns}:{st_now.st_ino}"
    )
    assert parse_leaf(path).stat is None
    os.utime(path, ns=(st_now.st_atime_ns, st_now.st_mtime_ns - 10**10))
    assert parse_leaf(path).stat == stat_key(os.stat(path))


_KEYS = ["name", "description", "type", "metadata", "title", "a-b_c", "yes", "No", "on", "1a"]
_TEXTS = [
    "Use pnpm",
    "a plain sentence, with [brackets] {braces} and 'quotes'",
    "http://example.com/x",
    "東京 and é",
    "yes",
    "Null",
    "off",
    "42",
    "2026-01-01",
    "1e3",
    ".inf",
    "~",
    "-dash",
    "'quoted'",
    '"double"',
    "a: b",
    "a #comment",
    "trailing:",
    "tab\there",
    "x\u2028y",
    "*alias",
    "&anchor x",
    "!tag x",
    "| block",
    "> folded",
    "% d",
    "@at",
    "`tick`",
    "[a, b]",
    "{a: 1}",
    "",
    "   ",
]


@st.composite
def _frontmatter(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        indent = draw(st.sampled_from(["", "", "", "  ", "    ", "\t", " "]))
        key = draw(st.sampled_from(_KEYS))
        sep = draw(st.sampled_from([": ", ":  ", ":", " : "]))
        text = draw(st.sampled_from(_TEXTS))
        lines.append(draw(st.sampled_from([f"{indent}{key}{sep}{text}", "", "  ", "- item"])))
    return "\n".join(lines)


@settings(max_examples=1500, deadline=None)
@given(_frontmatter())
def test_plain_frontmatter_reads_as_yaml_reads_it(fm: str) -> None:
    """Frontmatter the plain reader takes is read exactly as YAML (PyYAML's safe loader)
    reads it; everything else it leaves to YAML."""
    import yaml

    plain = _plain_mapping(fm)
    if plain is None:
        return
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert plain == (yaml.load(fm, Loader=loader) or {})  # noqa: S506 - a safe loader


def test_the_usual_leaf_frontmatter_is_read_without_yaml() -> None:
    fm = "name: use-pnpm\ndescription: Use pnpm, never npm\nmetadata:\n  type: feedback\n"
    assert _plain_mapping(fm) == {
        "name": "use-pnpm",
        "description": "Use pnpm, never npm",
        "metadata": {"type": "feedback"},
    }


@pytest.mark.parametrize(
    "written",
    ["true", "no", "1e3", "010", "1_000", "12:30", ".inf", "0x1F", "2026-01-05", "3.10  # ver"],
)
def test_a_description_yaml_reads_as_no_text_is_the_text_as_written(
    tmp_path: Path, written: str
) -> None:
    # `description: true` is the user's "true", not Python's "True"; `12:30` is not 750.
    path = write_leaf(tmp_path, "note.md", written)
    expected = written.split("  #")[0]
    assert parse_leaf(path).description == expected
    assert parse_leaf_lenient(path).description == expected


@pytest.mark.parametrize("written", ["yes", "no", "12:30", "0"])
def test_a_title_yaml_reads_as_no_text_is_the_text_as_written(tmp_path: Path, written: str) -> None:
    path = write_leaf(tmp_path, "note.md", extra=f"title: {written}\n")
    assert parse_leaf(path).title == written


@pytest.mark.parametrize("written", ["[Deploy, Notes]", "{a: 1}"])
def test_a_title_yaml_reads_as_a_list_or_mapping_is_the_text_as_written(
    tmp_path: Path, written: str
) -> None:
    # It was Python's repr in MEMORY.md (`['Deploy', 'Notes']`), text nobody wrote.
    path = write_leaf(tmp_path, "note.md", extra=f"title: {written}\n")
    assert parse_leaf(path).title == written
    block = write_leaf(tmp_path, "block.md", body="# The heading", extra="title:\n  - a\n")
    leaf = parse_leaf(block)
    assert leaf.title == "The heading"
    assert any("title that is not a line of text" in w for w in leaf.warnings)


def test_frontmatter_without_its_closing_line_is_named_so(tmp_path: Path) -> None:
    # It was refused as "empty frontmatter", which sends the user looking for keys that
    # are all there.
    path = tmp_path / "note.md"
    path.write_text("---\nname: note\ndescription: A fact.\nmetadata:\n  type: project\nBody.\n")
    with pytest.raises(LeafError, match="no closing '---' line"):
        parse_leaf(path)


@pytest.mark.parametrize(("written", "nested"), [("true", True), ("010", False), ("no", True)])
def test_an_unknown_type_is_named_as_written(tmp_path: Path, written: str, nested: bool) -> None:
    # YAML reads `true` as True and `010` as 8: the error named Python's spelling.
    path = tmp_path / "note.md"
    kind = f"metadata:\n  type: {written}\n" if nested else f"type: {written}\n"
    path.write_text(f"---\nname: note\ndescription: A fact.\n{kind}---\nBody.\n")
    with pytest.raises(LeafError, match=f"has unknown type '{written}' "):
        parse_leaf(path)
