"""The fast path's parser reads `search` as the click command does, or leaves it to click."""

from __future__ import annotations

from typing import Any

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from subrosa.cli.app import cli
from subrosa.cli.fastsearch import ROOT_OPTIONS, SEARCH_OPTIONS, parse_argv
from subrosa.cli.transcripts import search

VALUES = st.sampled_from(
    ["1", "3", "0", "-1", "x", "", "user", "assistant", "2026-01-02", "--json", "dep*", "-"]
)
GOOD = {"count": ["1", "7"], "text": ["2026-01-02", "x"], "dir": ["memory"]}


def _value(draw: st.DrawFn, option: Any) -> str:
    good = list(option.choices) or GOOD[option.kind]
    return draw(st.sampled_from(good) if draw(st.integers(0, 3)) else VALUES)


@st.composite
def arguments(draw: st.DrawFn, options: tuple[Any, ...]) -> list[str]:
    """Options of `options` (some unknown), with values good and bad, `=` or apart."""
    argv: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        option = draw(st.sampled_from([*options, *options, None]))
        if option is None:
            argv.append(draw(st.sampled_from(["--nope", "-x", "--limit5", "-h"])))
        elif option.kind == "flag":
            argv.append(option.name + draw(st.sampled_from(["", "", "", "=1"])))
        elif draw(st.booleans()):
            argv.append(f"{option.name}={_value(draw, option)}")
        else:
            argv += [option.name, _value(draw, option)]
    return argv


WORDS = st.lists(st.sampled_from(["deploy", '"a phrase"', "dep*", "-", "--", "東京"]), max_size=3)


def _click_reads(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any], list[str]] | None:
    """What click makes of `argv` (root options, `search`, its options and words), or
    None when it refuses it."""
    at = argv.index("search")
    try:
        root = cli.make_context("subrosa", argv[:at] + ["search"], resilient_parsing=False)
        ctx = search.make_context("search", argv[at + 1 :])
    except (click.exceptions.Exit, click.UsageError):
        return None
    params = dict(ctx.params)
    words = list(params.pop("query"))
    return {k: root.params[k] for k in ("memory_dir", "db")}, params, words


@settings(max_examples=400, deadline=None)
@given(arguments(ROOT_OPTIONS), arguments(SEARCH_OPTIONS), WORDS, arguments(SEARCH_OPTIONS))
def test_the_fast_parser_agrees_with_click(
    root: list[str], before: list[str], words: list[str], after: list[str]
) -> None:
    argv = [*root, "search", *before, *words, *after]
    fast = parse_argv(argv)
    if fast is None:
        return  # not for the fast path: click runs, and says what is wrong
    assert fast == _click_reads(argv), argv


def test_every_search_option_is_defined_once() -> None:
    names = [p.opts[0] for p in search.params if isinstance(p, click.Option)]
    assert names == [option.name for option in SEARCH_OPTIONS]
    root = [p.opts[0] for p in cli.params if isinstance(p, click.Option)]
    assert root[:2] == [option.name for option in ROOT_OPTIONS]
