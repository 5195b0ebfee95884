"""subrosa.tomlsubset reads the plain settings files most users keep as tomllib does,
and leaves everything else to tomllib."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.tomlsubset import loads

REJECTED = object()


def _typed(value: object) -> object:
    """`value` with every leaf's type beside it (True == 1 in Python; not in TOML)."""
    if isinstance(value, dict):
        return [(key, _typed(item)) for key, item in value.items()]
    return (type(value).__name__, value)


def _tomllib(text: str) -> object:
    try:
        return _typed(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return REJECTED


def _agrees(text: str) -> bool:
    """What loads() gives is tomllib's table; None passes it on. Whether loads() took it."""
    mine = loads(text)
    if mine is not None:
        assert _typed(mine) == _tomllib(text), text
    return mine is not None


def test_the_documented_settings_files_are_read_as_tomllib_reads_them() -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "settings.md"
    [example] = re.findall(r"```toml\n(.*?)```", docs.read_text(), re.S)
    assert _agrees(example)
    assert loads(example) == tomllib.loads(example)
    team = 'db = "postgresql+psycopg://me:pw@db.example.com:5432/team?sslmode=require"\n'
    crlf = "# mine\r\nbudget = 20000\r\n\r\n[type_weights]\r\nfeedback = -1 # no\r\n"
    tabs = "\t[ projects ]\t# names\n\t\"~/a b\"\t=\t'x # y'\t\nc-d_9 = true\nE = false"
    for text in (team, crlf, tabs, "", "\n\n# only a comment", "a = +0\nb = -7\nc = ''"):
        assert _agrees(text), text


def test_shapes_it_does_not_read_go_to_tomllib() -> None:
    """Read by tomllib (or rejected by it), never by loads()."""
    for text in (
        "a.b = 1",  # a dotted key
        "[a.b]",
        "[[a]]",
        "a = [1, 2]",
        "a = { b = 1 }",
        "a = 1.5",
        "a = 1_000",
        "a = 0x1f",
        "a = 1979-05-27",
        'a = "tab\\tescaped"',
        'a = """multi"""',
        "a = '''multi'''",
        "a = 1\na = 2",  # a key twice: tomllib says so
        "[a]\n[a]",
        "a = 1\n[a]",
        "a = 007",
        "a = 1\r",  # a CR that ends no line
        "a = 1\x00",
        "\ufeffa = 1",
        "a = 1 b",
        "a = TRUE",
        "a = ١",  # an Arabic-Indic digit: int() takes it, TOML does not
        "a = " + "9" * 31,
    ):
        assert loads(text) is None, text


_BARE = st.text("abcXYZ019_-", min_size=0, max_size=6)
_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))
_STRING_BODY = st.text(_CHARS | st.sampled_from(['"', "'", "\\", "#", "\t", "\r", "="]), max_size=8)


@st.composite
def _keys(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["bare", "basic", "literal", "dotted", "odd"]))
    body = draw(_STRING_BODY)
    if kind == "bare":
        return draw(_BARE)
    if kind == "basic":
        return f'"{body}"'
    if kind == "literal":
        return f"'{body}'"
    if kind == "dotted":
        return f"{draw(_BARE)}.{draw(_BARE)}"
    return body


@st.composite
def _values(draw: st.DrawFn) -> str:
    return draw(
        st.one_of(
            st.integers(-(10**35), 10**35).map(str),
            st.integers(0, 99).map(lambda n: f"+{n}"),
            st.sampled_from(
                ["true", "false", "True", "0", "00", "-0", "+", "1_0", "1.5", "inf", "nan"]
                + ["0x1f", "1979-05-27", "[1, 2]", "{ a = 1 }", "[]", "''", '""', '"""x"""']
            ),
            _STRING_BODY.map(lambda body: f'"{body}"'),
            _STRING_BODY.map(lambda body: f"'{body}'"),
            _STRING_BODY,
        )
    )


_SPACE = st.sampled_from(["", " ", "\t", "  ", " \t"])
_COMMENT = st.one_of(st.just(""), _STRING_BODY.map(lambda body: f"#{body}"))


@st.composite
def _lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["pair", "pair", "pair", "header", "blank", "comment", "junk"]))
    before, around, after = draw(_SPACE), draw(_SPACE), draw(_SPACE)
    if kind == "pair":
        key, value = draw(_keys()), draw(_values())
        return f"{before}{key}{around}={draw(_SPACE)}{value}{after}{draw(_COMMENT)}"
    if kind == "header":
        opening, closing = draw(st.sampled_from([("[", "]"), ("[[", "]]"), ("[", "")]))
        return f"{before}{opening}{around}{draw(_keys())}{after}{closing}{draw(_COMMENT)}"
    if kind == "blank":
        return before
    if kind == "comment":
        return f"{before}{draw(_COMMENT)}"
    return draw(_STRING_BODY)


@st.composite
def _files(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_lines(), max_size=8))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from(["", newline, "\r", "\n\n"]))


# 30,000 examples run by hand: 2,674 files read by loads(), the rest passed on, 0 that
# differ from tomllib; the suite runs fewer (its time).
@settings(max_examples=600)
@given(_files())
def test_every_file_it_reads_tomllib_reads_the_same(text: str) -> None:
    _agrees(text)


@settings(max_examples=1000)
@given(st.text(st.sampled_from("ab =#\"'[]\n\r\t.01+-_\\") | _CHARS, max_size=40))
def test_any_text_it_reads_tomllib_reads_the_same(text: str) -> None:
    _agrees(text)
