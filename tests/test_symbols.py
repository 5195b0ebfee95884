"""Words unicode61 cuts away are searchable (issue 12): `C++`, `C#`, `g++`, and emoji
(`🚀`, `✅`, a ZWJ sequence), on both engines; an archive from before migration 0014
finds them once migrated; hostile texts of symbols stay bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subrosa.cjk import RUN_BREAK, cjk_index_text
from subrosa.query import parse_query, query_units
from subrosa.schema import SCHEMA_HEAD
from subrosa.terms import (
    MAX_JOINED_EMOJI,
    MAX_SYMBOLS,
    identifier_terms,
    identifiers,
    index_terms,
    shown,
    symbol_words,
)
from tests.conftest import Db, RunCli, write_leaf
from tests.test_archive import _ingest, _record, _search, _transcript

pytestmark = pytest.mark.engines

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # 👨‍👩‍👧
THUMBS = "\U0001f44d\U0001f3fd"  # 👍🏽


def _uuids(results: list[dict[str, Any]]) -> list[str]:
    return [str(r.get("uuid")) for r in results]


def _archive(run: RunCli) -> None:
    _transcript(
        "s-1.jsonl",
        _record("cpp", "The parser is written in C++ with templates.", session="s-1"),
        _record("flag1", "run it pinned: taskset -c 0 python bench.py", session="s-2"),
        _record("flag2", "stat -c %s file and stat -c %y file", session="s-3"),
        _record("choice", "A) Text Server B) Web Server C) Voice Server", session="s-4"),
        _record("csharp", "The plugin host is C#, the UI is F#.", session="s-5"),
        _record("gpp", "Build with g++ -O2 -std=c++17 main.cc", session="s-6"),
        _record("rocket", "Deployed to production \U0001f680 all green", session="s-7"),
        _record("check", "\u2705 tests pass \u26a0\ufe0f one warning", session="s-8"),
        _record("family", f"the family emoji {FAMILY} renders wrong", session="s-9"),
        _record(
            "apart", "a man \U0001f468 and a woman \U0001f469 and a girl \U0001f467", session="s-10"
        ),
        _record("thumbs", f"looks good {THUMBS}", session="s-11"),
    )
    _ingest(run)


@pytest.fixture
def archive(memory_dir: Path, run: RunCli) -> RunCli:
    _archive(run)
    return run


def test_cpp_ranks_above_a_bare_c(archive: RunCli) -> None:
    found = _search(archive, "C++")
    # Both C++ messages first (every word: the symbol form), then the bare `c`s.
    assert set(_uuids(found)[:2]) == {"cpp", "gpp"}
    assert {r["match"] for r in found[:2]} == {"all"}
    assert {"flag1", "flag2", "choice"} <= set(_uuids(found)[2:])  # never empty: the bare c
    assert {r["match"] for r in found[2:]} == {"some"}
    assert "**C++**" in found[0]["snippet"] or "**C++**" in found[1]["snippet"]
    assert _uuids(_search(archive, "C++ templates"))[0] == "cpp"
    assert _uuids(_search(archive, "c++17"))[0] == "gpp"
    assert _uuids(_search(archive, "g++"))[:1] == ["gpp"]


def test_csharp_and_fsharp(archive: RunCli) -> None:
    found = _search(archive, "C#")
    assert _uuids(found)[0] == "csharp" and found[0]["match"] == "all"
    assert "**C#**" in found[0]["snippet"]
    assert all(r["match"] == "some" for r in found[1:])
    assert _uuids(_search(archive, "F#"))[0] == "csharp"
    # Quoted alone, as written: the symbol word still.
    quoted = _search(archive, '"C#"')
    assert _uuids(quoted)[0] == "csharp" and quoted[0]["match"] == "all"


def test_an_emoji_alone_finds_the_messages_holding_it(archive: RunCli) -> None:
    found = _search(archive, "\U0001f680")
    assert _uuids(found) == ["rocket"]
    assert "**\U0001f680**" in found[0]["snippet"]
    assert _uuids(_search(archive, "\u2705")) == ["check"]
    # With or without its presentation selector, as people type it.
    assert _uuids(_search(archive, "\u26a0\ufe0f")) == ["check"]
    assert _uuids(_search(archive, "\u26a0")) == ["check"]
    assert _uuids(_search(archive, "deployed \U0001f680"))[0] == "rocket"
    # A skin tone is no part of what is looked for.
    assert _uuids(_search(archive, "\U0001f44d")) == ["thumbs"]
    assert _search(archive, "\U0001f9ed") == []  # 🧭: nowhere


def test_an_emoji_in_a_zwj_sequence(archive: RunCli) -> None:
    found = _search(archive, FAMILY)
    # The sequence where it is written joined; the three apart hold its pictographs,
    # not the sequence.
    assert _uuids(found)[0] == "family" and found[0]["match"] == "all"
    assert f"**{FAMILY}**" in found[0]["snippet"]
    assert "apart" not in [str(r["uuid"]) for r in found if r["match"] == "all"]
    # One of its pictographs finds it, and the one written alone.
    assert set(_uuids(_search(archive, "\U0001f469"))) == {"family", "apart"}


@pytest.mark.engines("sqlite")
def test_symbol_tokens_and_bounds() -> None:
    assert index_terms("C++, C#, F# and g++; c++17") == (
        "zzsymcpp zzsymcsharp zzsymfsharp zzsymgpp"
    )
    # Not symbol words: a longer word, a letter or third + after, a digit after #.
    assert index_terms("libc++ clang++ a++b c+++ pr#12 a#b issue#4 ## #### +++++") is None
    assert index_terms("x++; (C++) _c++") == "zzsymxpp zzsymcpp"
    assert index_terms("éc++ дc#") is None  # a letter before, to unicode61 too
    # After CJK and CJK punctuation (no spaces in Chinese and Japanese): symbol words.
    assert index_terms("用C++写，JavaScript、C#、Swift") == (
        "用 zzcjkbreak 写 zzcjkbreak java script zzsymcpp zzsymcsharp"
    )
    assert shown("zzsymcpp") == "c++" and shown("zzsymcsharp") == "c#"
    assert shown("zzemoji1f680") == "\U0001f680" and shown("zzsymbol") is None
    assert shown("zzemojiface") is None
    # Each pictograph once, no joiner, selector or skin tone; sequences apart.
    assert index_terms(f"ok \u2705 \u2705 {THUMBS} {FAMILY}") == RUN_BREAK.join(
        ["zzemoji2705", "zzemoji1f44d", "zzemoji1f468 zzemoji1f469 zzemoji1f467"]
    )
    assert index_terms("\u2139 \U0001f1e9\U0001f1ea") is None  # ℹ is a letter; flags
    # A wall of emoji, of joined emoji, of symbol words: bounded token counts.
    wall = "".join(chr(0x1F300 + i % 1500) for i in range(100_000))
    assert len((index_terms(wall) or "").split()) == 2 * MAX_SYMBOLS - 1  # with breaks
    joined = "\u200d".join(chr(0x1F300 + i % 1500) for i in range(100_000))
    assert len((index_terms(joined) or "").split()) <= MAX_SYMBOLS * (MAX_JOINED_EMOJI + 1)
    codes = " ".join(f"{a}{b}++" for a in "abcdefghij" for b in "abcdefghij" * 3)
    assert len((index_terms(codes) or "").split()) <= MAX_SYMBOLS
    assert index_terms("+" * 100_000) is None and index_terms("#" * 100_000) is None
    assert len(symbol_words(("c++" + " " * 3).encode() * 1000)) == 1000
    # Queries of symbols only are no terms; a query of 100,000 emoji is cut to MAX_UNITS.
    assert query_units(parse_query("+++++ ####")) == []
    assert len(query_units(parse_query(wall))) == 32
    assert [u.label for u in query_units(parse_query("\U0001f680" * 100_000))] == ["\U0001f680"]


@pytest.mark.engines
def test_hostile_symbol_texts_are_archived_and_searched(memory_dir: Path, run: RunCli) -> None:
    wall = "".join(chr(0x1F300 + i % 1500) for i in range(100_000))
    _transcript(
        "s-1.jsonl",
        _record("wall", wall, session="s-1"),
        _record("plus", "+++++ #### " * 1000, session="s-2"),
        _record("cpp", "C++ here", session="s-3"),
    )
    _ingest(run)
    assert _uuids(_search(run, "\U0001f300")) == ["wall"]
    assert _search(run, "+++++") == [] and _search(run, "####") == []
    assert _uuids(_search(run, "C++")) == ["cpp"]


def _main_terms(text: str) -> str | None:
    """The terms column as main's code (migration 0013) computed it: CJK characters,
    then camelCase parts."""
    cjk = cjk_index_text(text)
    parts = " ".join(identifier_terms(identifiers(text)))
    if not parts:
        return cjk
    return f"{cjk}{RUN_BREAK}{parts}" if cjk else parts


@pytest.mark.engines
def test_the_migration_indexes_an_archive_from_before(
    memory_dir: Path, db: Db, run: RunCli
) -> None:
    _archive(run)
    db.migrate("0013", down=True)
    # The archive as main's code wrote it: no symbol tokens in the terms column.
    rows = db.rows("SELECT id, text FROM messages")
    for rowid, text in rows:
        terms = _main_terms(text)
        value = "NULL" if terms is None else "'" + terms.replace("'", "''") + "'"
        db.rows(f"UPDATE messages SET terms = {value} WHERE id = {rowid}")
    assert not [
        t for (t,) in db.rows("SELECT terms FROM messages") if t and "zz" in t and "break" not in t
    ]
    run("db", "upgrade")
    terms = {u: t for u, t in db.rows("SELECT uuid, terms FROM messages")}
    assert terms["cpp"] == "zzsymcpp" and terms["rocket"] == "zzemoji1f680"
    assert terms["flag1"] is None and terms["choice"] is None
    assert set(_uuids(_search(run, "C++"))[:2]) == {"cpp", "gpp"}
    assert _uuids(_search(run, "\U0001f680")) == ["rocket"]
    assert _uuids(_search(run, FAMILY))[0] == "family"
    # Every row's terms are what a fresh ingest computes.
    for text, stored in db.rows("SELECT text, terms FROM messages"):
        assert stored == index_terms(text)


@pytest.mark.engines
def test_the_migration_tells_how_far_it_is(memory_dir: Path, db: Db, run: RunCli) -> None:
    """0014 reports to the caller's re-index bar (`subrosa db upgrade` and every command
    that opens the archive pass theirs): in message ids, from the first to the last."""
    from subrosa.config import resolve_db_url
    from subrosa.db import dispose_all, migrate

    _archive(run)
    db.migrate("0013", down=True)
    told: list[tuple[int, int]] = []
    migrate(resolve_db_url(db.url), lambda done, total: told.append((done, total)))
    dispose_all()
    ((first, last),) = db.rows("SELECT min(id), max(id) FROM messages")
    assert told and {total for _, total in told} == {last - first + 1}
    # 0014 and then 0017 (subrosa.cjk's spaced runs) each scan the ids once, each pass
    # from the first id to the last (the bar starts again for the second).
    assert sum(done for done, _ in told) == 2 * (last - first + 1)
    assert all(done > 0 for done, _ in told)
    assert db.rows("SELECT version_num FROM alembic_version") == [(SCHEMA_HEAD,)]


def test_facts_by_their_symbol_words_and_emoji(memory_dir: Path, run: RunCli) -> None:
    write_leaf(memory_dir, "cpp_style.md", "The engine is C++ with no exceptions.", body="B.")
    write_leaf(memory_dir, "release.md", "Release notes start with \U0001f680.", body="B.")
    write_leaf(memory_dir, "shell.md", "Pin cores with taskset -c 0.", body="B.")
    for slug in ("cpp_style", "release", "shell"):
        run("fact", "upsert", "--leaf", f"{slug}.md", "--hook", slug.replace("_", " "))
    _transcript("s-1.jsonl", _record("m1", "nothing here"))
    _ingest(run)
    found = _search(run, "c++", "--facts")
    assert [r["slug"] for r in found][:1] == ["cpp_style"] and found[0]["match"] == "all"
    assert "**C++**" in found[0]["snippet"]
    assert [r["match"] for r in found[1:]] == ["some"] * (len(found) - 1)
    rocket = _search(run, "\U0001f680", "--facts")
    assert [r["slug"] for r in rocket] == ["release"] and "**\U0001f680**" in rocket[0]["snippet"]
    assert _search(run, "\u2705", "--facts") == []


@pytest.mark.engines("sqlite")
def test_the_byte_test_for_emoji_finds_every_pictograph() -> None:
    from subrosa.terms import _NOT_EMOJI_LEAD, _PICTOGRAPH, _may_hold_emoji

    def may_hold(text: str) -> bool:
        data = text.encode()
        return _may_hold_emoji(data, data.translate(None, _NOT_EMOJI_LEAD))

    pictographs = [c for c in range(0x110000) if _PICTOGRAPH.match(chr(c))]
    assert len(pictographs) == 3537 - 1  # Extended_Pictographic, ℹ left out
    for code in pictographs:
        assert may_hold(f"中{chr(code)}—"), hex(code)
    # The common non-ASCII punctuation of English and CJK text is no candidate.
    assert not may_hold("— … ’ “ ” → • ─ │ ├ └ é ü 中文、。「」ア")
